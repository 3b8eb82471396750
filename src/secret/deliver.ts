// Putting the one-time secret on disk: a destination holds the whole secret
// or nothing (fs/atomic.ts). Files are created exclusively with mode 0600; a
// replacement is written beside the target and renamed over it, so a reader
// never sees a half-written file and a failed write (ENOSPC) leaves the old
// one; a file this run could not finish is removed.
import { chmodSync, closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, readFileSync, readSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeFolders } from '../config/make-folders.js';
import { kindOf, syncPath, writeFileAtomic } from '../fs/atomic.js';
import { randomBytes } from '../system/random.js';
import { dotenvProblem, setDotenvValue } from './dotenv.js';
import { readRegularFile } from '../fs/read.js';
import { envFileProblem } from './sinks.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** `file:` — a new file 0600 holding exactly the secret, or with force a regular file replaced atomically. */
export function writeSecretFile(path: string, secret: string, force: boolean): void {
  writeFileAtomic(path, secret, { how: force ? 'replace' : 'exclusive' });
}

/** `env-file:` — NAME=<secret> set in the dotenv file (created if absent), rewritten atomically, 0600. */
export function writeEnvFile(path: string, name: string, secret: string): void {
  let content = Buffer.alloc(0);
  let fd: number | undefined;
  try {
    // Non-blocking: a FIFO put there since the check would hold the open (and every signal) until a writer came.
    fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw Object.assign(new Error(`${path} is now a symbolic link`), { code });
    if (code !== 'ENOENT') throw err;
  }
  if (fd !== undefined) {
    try {
      const problem = envFileProblem(fstatSync(fd));
      if (problem) throw Object.assign(new Error(`${path} ${problem}`), { code: 'EPERM' });
      content = readFileSync(fd);
      // Checked before sending too, but the file may have changed since: a
      // rewrite of one line of a multi-line value would break the file.
      const bad = dotenvProblem(content, name);
      if (bad) throw new Error(`${path}: ${bad}`);
    } finally {
      closeSync(fd);
    }
  }
  writeFileAtomic(path, setDotenvValue(content, name, secret));
}

/**
 * `github-output:NAME` / `github-env:NAME`: the value appended to the
 * runner's file as a multi-line value, `NAME<<DELIM`, the secret, `DELIM`,
 * with DELIM random and found nowhere in the secret, so no secret can end
 * the value early or set another variable. The block goes out in one write
 * and is read back; a write that fails or falls short is cut off again
 * (the file truncated to its size before), so the runner never reads half a
 * value.
 */
export function appendGitHubValue(path: string, name: string, secret: string): void {
  let delimiter: string;
  do delimiter = `ghadelimiter_${randomBytes(16).toString('hex')}`;
  while (secret.includes(delimiter));
  const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | NOFOLLOW, 0o600);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw Object.assign(new Error(`${path} is now ${kindOf(st)}`), { code: 'ENOTREG' });
    const before = st.size;
    // A file whose last line is unfinished would swallow the first line of the block.
    const last = Buffer.alloc(1);
    const lead = before > 0 && readSync(fd, last, 0, 1, before - 1) === 1 && last[0] !== 0x0a ? '\n' : '';
    const block = Buffer.from(`${lead}${name}<<${delimiter}\n${secret}\n${delimiter}\n`, 'utf8');
    try {
      const written = writeSync(fd, block);
      if (written !== block.length) throw new Error(`only ${written} of ${block.length} bytes could be appended to ${path} (a full disk, or a file size limit)`);
      const back = Buffer.alloc(block.length);
      const read = readSync(fd, back, 0, block.length, before);
      if (read !== block.length || !back.equals(block)) throw Object.assign(new Error(`${path} does not hold the value just appended (another writer?)`), { code: 'EIO' });
    } catch (err) {
      let undone = '; the file was cut back to its size before';
      try {
        ftruncateSync(fd, before);
      } catch (cut) {
        undone = `; cutting the file back to its size before failed too (${(cut as NodeJS.ErrnoException).code ?? 'error'}): ${path} may hold part of the value`;
      }
      if (err instanceof Error) err.message += undone;
      throw err;
    }
  } finally {
    closeQuietly(fd);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already failing */
  }
}

/** A secret held under <configDir>/recovered/: where it is, and how to tidy up if it is not needed after all. */
export interface KeptSecret {
  path: string;
  /** Removes the copy, and the folders made for it if they are left empty. */
  discard(): void;
  /** The copy is where the secret stays (delivery failed): on disk before chatctl says so (best effort). */
  persist(): void;
}

/**
 * Writes the secret to a new 0600 file under <configDir>/recovered/ (folder
 * 0700). Used before delivery starts, so that no way the process can end
 * after the change was applied (a failing destination, a second Ctrl-C, a
 * kill) loses the secret; discarded once every destination holds it. That
 * copy is written without fsync (`durable: false`): the kernel keeps what a
 * dead process wrote, and an fsync on every rotation costs tens of
 * milliseconds; persist() makes it durable once it is the one place left.
 */
export function keepSecret(configDir: string, endpointId: string, secret: string | Buffer, now: Date, opts: { durable?: boolean; key?: string | undefined; whole?: boolean } = {}): KeptSecret {
  const dir = recoveryFolder(configDir);
  const firstMade = makeFolders(dir, 0o700);
  checkRecoveryFolder(dir);
  const data = Buffer.from(secret); // a string as UTF-8
  let path: string | undefined;
  /** The copy's inode: removed only while that file is still there (a destination may have been put in its place). */
  let ino: number | undefined;
  if (opts.key !== undefined) {
    // Named after the request's Idempotency-Key, so a resumed journal finds it
    // from the "send" record alone (a kill may come before any other record).
    // A whole odd answer gets a name of its own: a re-run that looks for the
    // secret under the key must not deliver a JSON document in its place.
    const named = keptCopyPath(configDir, endpointId, opts.key, opts.whole ? 'answer' : 'secret');
    try {
      ino = writeFileAtomic(named, data, { how: 'exclusive', durable: opts.durable ?? true });
      path = named;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (readRegularFile(named)?.equals(data)) {
        path = named; // this very secret, kept by an earlier run
        ino = lstatSync(named).ino;
      }
    }
  }
  if (path === undefined) {
    const stamp = now.toISOString().replace(/[:.]/g, '-');
    path = join(dir, `${safeName(endpointId)}-${stamp}-${randomBytes(3).toString('hex')}.secret`);
    ino = writeFileAtomic(path, data, { how: 'exclusive', durable: opts.durable ?? true });
  }
  const kept = path;
  return {
    path: kept,
    persist() {
      syncPath(kept);
      syncPath(dir);
    },
    discard() {
      // unlink, not rmSync: rmSync loads and runs Node's recursive remover
      // (about 0.35 ms against 0.03), and this runs on every delivery.
      // Only the file written here: a destination that is this very path
      // (`--force`) replaced it, and is not a copy to tidy away.
      const now = lstatSync(kept, { throwIfNoEntry: false });
      if (now && now.ino === ino) unlinkUnlessGone(kept);
      if (firstMade === undefined) return;
      for (let d = dir; ; d = dirname(d)) {
        try {
          rmdirSync(d);
        } catch {
          return; // not empty (another run's secret, the config file): kept
        }
        if (d === firstMade || dirname(d) === d) return;
      }
    },
  };
}

/**
 * recovered/ is trusted as the config folder is: a folder (not a link to
 * one) of this user's that group and others cannot write, else refused (the
 * error's message says why, for describeKeepFailure); read or search
 * permission for group or others is taken away (chmod 700). A copy is never
 * written where another user could read, replace or remove it.
 */
function checkRecoveryFolder(dir: string): void {
  const refuse = (why: string) => Object.assign(new Error(why), { code: 'EUNSAFE' });
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw refuse('is a symbolic link; secrets are kept only in a folder of its own (remove the link)');
  if (!st.isDirectory()) throw refuse(`is ${kindOf(st)}, not a folder`);
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : undefined;
  if (uid === undefined) return; // Windows: no owner to check
  const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
  if (st.uid !== uid) throw refuse(`belongs to another user (uid ${st.uid}), not to you (uid ${uid})`);
  if ((st.mode & 0o022) !== 0) throw refuse(`can be written by group or others (mode ${mode}); check its contents, then chmod 700 it`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** The folder a kept secret goes to. */
export function recoveryFolder(configDir: string): string {
  return join(configDir, 'recovered');
}

/**
 * Why no recovery copy could be written, naming the folder: the plain
 * meaning of the error, not the guesses made for a destination (an ENOENT in
 * a folder that exists, e.g. one on /proc, is not "the folder no longer
 * exists"; an EEXIST is a file where the folder should be).
 */
export function describeKeepFailure(err: unknown, configDir: string): string {
  const folder = recoveryFolder(configDir);
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const plain: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    EEXIST: 'a file stands where the folder should be',
    ENOTDIR: 'a file stands where a folder should be',
    ENOENT: 'no such file or directory',
    EIO: 'input/output error',
  };
  const reason = code && plain[code] ? `${plain[code]} (${code})` : e instanceof Error ? e.message : String(err);
  return `${folder}: ${reason}`;
}

const safeName = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64) || 'endpoint';

/** Where the copy of the secret (or of the whole odd answer) of the request with this Idempotency-Key is kept. */
export function keptCopyPath(configDir: string, endpointId: string, key: string, what: 'secret' | 'answer' = 'secret'): string {
  return join(recoveryFolder(configDir), `${safeName(endpointId)}-${safeName(key)}.${what}`);
}

/**
 * The copy an earlier run kept of the secret of the request with this key:
 * at the place its journal named (when it did), else where keepSecret puts
 * it. Its bytes and how to remove it, or undefined if it is not there.
 */
export function readKeptCopy(configDir: string, endpointId: string, key: string, journaled?: string | null): { path: string; bytes: Buffer; discard(): void } | undefined {
  for (const path of new Set([journaled ?? '', keptCopyPath(configDir, endpointId, key)])) {
    const bytes = path ? readRegularFile(path) : undefined;
    if (bytes) return { path, bytes, discard: () => unlinkUnlessGone(path) };
  }
  return undefined;
}

/** Removes a file; one that is gone already is fine. */
function unlinkUnlessGone(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
