// STAND-IN, to be replaced at merge by the secrets branch's src/secret/
// (sinks.ts: parseSinks, sinksFor; deliver-all.ts: deliverAll;
// fingerprint.ts: fingerprint; deliver.ts: recoverSecret). The names and
// shapes here are theirs, so src/bulk/secrets.ts needs only its imports
// re-pointed. Only `file:` and `exec:` are here; `env-file:` and `stdout`
// are refused until then.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, closeSync, constants, fsyncSync, linkSync, lstatSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from '../random.js';
import { usageError } from '../errors/cli-error.js';
import type { OutStream } from '../output/io.js';
import type { Redactor } from '../output/redact.js';

export type Sink = { kind: 'file'; to: string; path: string; force: boolean } | { kind: 'exec'; to: string; command: string };

export interface SinkSettings {
  cwd: string;
  env: Record<string, string | undefined>;
  json: boolean;
  stdoutIsTTY: boolean;
  force: boolean;
  idPlaceholder?: boolean;
}

const ID = '{id}';

export function fingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16)}`;
}

export const hasIdPlaceholder = (sink: Sink): boolean => sink.kind === 'file' && sink.path.includes(ID);

export function parseSinks(specs: readonly string[], s: SinkSettings): Sink[] {
  const sinks = specs.map((spec): Sink => {
    if (spec.startsWith('file:')) {
      const raw = spec.slice(5);
      if (raw === '' || raw === '-') throw usageError(`--secret-to ${spec}: needs a file path`);
      const path = resolve(s.cwd, raw);
      return { kind: 'file', to: `file:${path}`, path, force: s.force };
    }
    if (spec.startsWith('exec:')) {
      if (spec.slice(5).trim() === '') throw usageError('--secret-to exec: needs a command');
      return { kind: 'exec', to: spec, command: spec.slice(5) };
    }
    throw usageError(`--secret-to ${spec}: not available in this build`, 'use file:PATH or exec:COMMAND');
  });
  const seen = new Set<string>();
  for (const sink of sinks) {
    if (seen.has(sink.to)) throw usageError(`--secret-to ${sink.to} is given twice`);
    seen.add(sink.to);
    if (!(s.idPlaceholder && hasIdPlaceholder(sink))) checkSink(sink, s);
  }
  return sinks;
}

export function substituteId(sink: Sink, endpointId: string): Sink {
  if (!hasIdPlaceholder(sink) || sink.kind !== 'file') return sink;
  if (!/^[A-Za-z0-9._-]+$/.test(endpointId) || endpointId === '.' || endpointId === '..')
    throw usageError(`endpoint id "${endpointId}" cannot stand for {id} in a file name`, 'use an exec: destination for it, which sees CHATCTL_ENDPOINT_ID');
  const path = sink.path.split(ID).join(endpointId);
  return { ...sink, path, to: `file:${path}` };
}

export function sinksFor(sinks: readonly Sink[], endpointId: string, s: SinkSettings): Sink[] {
  return sinks.map((sink) => {
    if (!hasIdPlaceholder(sink)) return sink;
    const concrete = substituteId(sink, endpointId);
    checkSink(concrete, s);
    return concrete;
  });
}

function checkSink(sink: Sink, s: SinkSettings): void {
  if (sink.kind === 'exec') return checkProgram(sink.command, s);
  let st;
  try {
    st = lstatSync(sink.path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw usageError(`cannot use ${sink.to}: ${(err as NodeJS.ErrnoException).code}`);
  }
  if (st) {
    if (!st.isFile()) throw usageError(`${sink.to}: not a regular file; only a regular file is replaced, even with --force`);
    if (!sink.force) throw usageError(`${sink.to}: ${sink.path} already exists`, 'choose a new path, or add --force to replace it');
  }
  try {
    if (!statSync(dirname(sink.path)).isDirectory()) throw new Error();
  } catch {
    throw usageError(`${sink.to}: the folder ${dirname(sink.path)} does not exist`);
  }
}

const SHELL_WORDS = new Set('. : [ ! { } cd command eval exec exit export false printf read set test true echo if case for while until'.split(' '));

function checkProgram(command: string, s: SinkSettings): void {
  const word = /^\s*([^\s;&|<>()]+)/.exec(command)?.[1];
  if (!word || /["'\\$`*?[\]{}~=#!]/.test(word) || SHELL_WORDS.has(word)) return;
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (word.includes('/') ? executable(resolve(s.cwd, word)) : (s.env.PATH ?? '').split(':').some((d) => executable(join(resolve(s.cwd, d || '.'), word)))) return;
  throw usageError(`--secret-to exec:…: "${word}" was not found on PATH`, 'install it, or give its full path');
}

export interface DeliverDeps {
  cwd: string;
  env: Record<string, string | undefined>;
  stdout: OutStream;
  stderr: OutStream;
  redactor: Redactor;
  signal?: AbortSignal | undefined;
  execTimeoutMs?: number | undefined;
  idPlaceholder?: boolean | undefined;
}

export interface Delivered {
  to: string;
  fingerprint: string;
}

export interface DeliveryOutcome {
  fingerprint: string;
  delivered: Delivered[];
  failures: Array<{ to: string; reason: string }>;
}

export async function deliverAll(sinks: readonly Sink[], item: { endpointId: string; secret: string }, deps: DeliverDeps): Promise<DeliveryOutcome> {
  const fp = fingerprint(item.secret);
  const outcome: DeliveryOutcome = { fingerprint: fp, delivered: [], failures: [] };
  for (const given of sinks) {
    const sink = deps.idPlaceholder ? substituteId(given, item.endpointId) : given;
    try {
      if (sink.kind === 'file') writeSecretFile(sink.path, item.secret, sink.force);
      else await runExec(sink.command, item.endpointId, item.secret, fp, deps);
      outcome.delivered.push({ to: sink.to, fingerprint: fp });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      outcome.failures.push({ to: sink.to, reason: e.code ?? e.message ?? String(err) });
    }
  }
  return outcome;
}

/** The whole secret or nothing: written beside the target, then linked (new) or renamed (--force) into place. */
function writeSecretFile(path: string, secret: string, force: boolean): void {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, secret);
    fsyncSync(fd);
    closeSync(fd);
    if (force) renameSync(tmp, path);
    else linkSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}

function runExec(command: string, endpointId: string, secret: string, fp: string, deps: DeliverDeps): Promise<void> {
  const env: Record<string, string | undefined> = { ...deps.env, CHATCTL_ENDPOINT_ID: endpointId, CHATCTL_SECRET_FINGERPRINT: fp };
  delete env.CHATCTL_TOKEN;
  return new Promise((resolvePromise, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd: deps.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), deps.execTimeoutMs ?? 60_000);
    child.stdout.on('data', (b: Buffer) => deps.stderr.write(b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => deps.stderr.write(b.toString('utf8')));
    child.stdin.on('error', () => undefined);
    child.stdin.end(secret);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise();
      else reject(new Error(signal ? `was ended by ${signal}` : `exited with status ${code}`));
    });
  });
}
