// Contract section 6, "The one-time secret". Where the secret goes is
// decided before anything is sent (plan), so a run that could not deliver it
// refuses up front; after the server applied the change, deliver() either
// puts it where planned or keeps it in <config>/recovered/ (exit 13).
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from '../random.js';
import { usageError } from '../errors/cli-error.js';

export type SecretSink =
  | { kind: 'file'; path: string; force: boolean }
  | { kind: 'json' }
  | { kind: 'tty' };

export interface SecretPlanInput {
  secretFile?: string | undefined;
  /** Where a relative --secret-file is resolved from. */
  cwd: string;
  force: boolean;
  json: boolean;
  stdoutIsTTY: boolean;
  dryRun: boolean;
}

export function planSecret(input: SecretPlanInput): SecretSink {
  if (input.force && input.secretFile === undefined) throw usageError('--force goes with --secret-file');
  if (input.secretFile !== undefined) {
    if (input.secretFile === '') throw usageError('--secret-file needs a path');
    const path = resolve(input.cwd, input.secretFile);
    checkTarget(path, input.force);
    return { kind: 'file', path, force: input.force };
  }
  if (input.json) return { kind: 'json' };
  if (input.stdoutIsTTY || input.dryRun) return { kind: 'tty' };
  throw usageError(
    'refusing to print the signing secret: standard output is not a terminal',
    'use --secret-file PATH to save it to a file (mode 0600), or --json to receive it in the JSON output',
  );
}

function checkTarget(path: string, force: boolean): void {
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw usageError(`cannot use --secret-file ${path}: ${(err as NodeJS.ErrnoException).code}`);
    }
  }
  if (st) {
    if (st.isDirectory()) throw usageError(`--secret-file ${path} is a directory`);
    if (!force) throw usageError(`--secret-file ${path} already exists`, 'choose a new path, or add --force to replace it');
  }
  let parent;
  try {
    parent = statSync(dirname(path));
  } catch {
    throw usageError(`the folder of --secret-file ${path} does not exist`);
  }
  if (!parent.isDirectory()) throw usageError(`the folder of --secret-file ${path} is not a folder`);
}

/** Writes a new file 0600, or with force replaces the target atomically. */
export function writeSecretFile(path: string, secret: string, force: boolean): void {
  if (!force) {
    writeExclusive(path, secret);
    return;
  }
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeExclusive(tmp, secret);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

function writeExclusive(path: string, content: string): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Keeps a secret that could not be saved where asked: returns its path. */
export function recoverSecret(configDir: string, endpointId: string, secret: string, now: Date): string {
  const dir = join(configDir, 'recovered');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const safeId = endpointId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64) || 'endpoint';
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `${safeId}-${stamp}-${randomBytes(3).toString('hex')}.secret`);
  writeExclusive(path, secret);
  return path;
}
