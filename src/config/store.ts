// config.json: profiles, the current profile and stored tokens.
// - folder 0700, file 0600, whatever the umask;
// - every change is read-modify-write under a lock file, and lands with an
//   atomic rename, so concurrent `chatctl profile set` runs all land and a
//   crash never leaves half a file;
// - a corrupt or unreadable file is a configuration error naming the file,
//   and is never overwritten.
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from '../random.js';
import { configError } from '../errors/cli-error.js';
import { configFile } from './paths.js';
import { configSchema, type ConfigData } from './schema.js';
import type { Context } from '../context.js';

const LOCK_WAIT_MS = 10_000;
const LOCK_STALE_MS = 30_000;

export interface ConfigStore {
  readonly path: string;
  read(): ConfigData;
  update(change: (data: ConfigData) => ConfigData | void): ConfigData;
}

/** The store a command uses: its warnings are notices (muted with --json). */
export function configStoreFor(ctx: Pick<Context, 'configDir' | 'io'>): ConfigStore {
  return openConfigStore(ctx.configDir, (m) => ctx.io.notice(`warning: ${m}`));
}

export function openConfigStore(dir: string, warn: (msg: string) => void = () => {}): ConfigStore {
  const path = configFile(dir);
  return {
    path,
    read: () => readConfig(path, warn),
    update(change) {
      ensureDir(dir, warn);
      return withLock(`${path}.lock`, () => {
        const data = readConfig(path, warn);
        const next = change(data) ?? data;
        writeAtomic(path, JSON.stringify({ version: 1, ...next }, null, 2) + '\n');
        return next;
      });
    },
  };
}

function readConfig(path: string, warn: (msg: string) => void): ConfigData {
  tightenMode(dirname(path), 0o700, warn, true);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw configError(`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  tightenMode(path, 0o600, warn, true);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw configError(
      `config file ${path} is not valid JSON`,
      'fix or remove the file by hand; chatctl will not overwrite it',
    );
  }
  const parsed = configSchema().safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') || '(top level)';
    throw configError(
      `config file ${path} has an unexpected shape at ${where}`,
      'fix or remove the file by hand; chatctl will not overwrite it',
    );
  }
  return parsed.data;
}

function ensureDir(dir: string, warn: (msg: string) => void): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  tightenMode(dir, 0o700, warn, false);
}

/**
 * A folder or file with looser permissions than ours (someone's chmod, a
 * copy, a restore) is tightened, with a warning naming it; if that fails,
 * the warning says so. A path that does not exist is left to the caller.
 */
function tightenMode(path: string, mode: number, warn: (msg: string) => void, mayBeMissing: boolean): void {
  let st;
  try {
    st = statSync(path);
  } catch {
    if (!mayBeMissing) warn(`could not check the permissions of ${path}`);
    return;
  }
  if ((st.mode & 0o777 & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
    warn(`permissions of ${path} were ${(st.mode & 0o777).toString(8)}; tightened to ${mode.toString(8)}`);
  } catch {
    warn(`${path} has permissions ${(st.mode & 0o777).toString(8)}, looser than ${mode.toString(8)}, and could not be tightened`);
  }
}

function writeAtomic(path: string, text: string): void {
  const tmp = join(dirname(path), `.config.json.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    chmodSync(tmp, 0o600); // the umask may have narrowed it, never widened; be explicit
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw configError(`cannot write config file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

function withLock<T>(lockPath: string, fn: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let fd: number | undefined;
  while (fd === undefined) {
    try {
      fd = openSync(lockPath, 'wx', 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw configError(`cannot create config folder for ${lockPath}`);
      if (code !== 'EEXIST') throw configError(`cannot lock ${lockPath}: ${code}`);
      if (isStale(lockPath)) {
        rmSync(lockPath, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw configError(`config file is locked by another chatctl (${lockPath})`, 'if no other chatctl is running, remove the lock file');
      }
      sleepSync(10 + Math.floor(Math.random() * 20));
    }
  }
  try {
    writeSync(fd, String(process.pid));
    return fn();
  } finally {
    closeSync(fd);
    try {
      unlinkSync(lockPath);
    } catch {
      /* already gone: nothing to release */
    }
  }
}

function isStale(lockPath: string): boolean {
  try {
    return Date.now() - statSync(lockPath).mtimeMs > LOCK_STALE_MS;
  } catch {
    return false;
  }
}

const sleepBuffer = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleepBuffer, 0, 0, ms);
}
