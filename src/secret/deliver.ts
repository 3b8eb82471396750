// Putting the one-time secret on disk: a destination holds the whole secret
// or nothing (fs/atomic.ts). Files are created exclusively with mode 0600; a
// replacement is written beside the target and renamed over it, so a reader
// never sees a half-written file and a failed write (ENOSPC) leaves the old
// one; a file this run could not finish is removed.
import { closeSync, constants, fstatSync, openSync, readFileSync, rmdirSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeFolders } from '../config/make-folders.js';
import { syncPath, writeFileAtomic } from '../fs/atomic.js';
import { randomBytes } from '../random.js';
import { dotenvProblem, setDotenvValue } from './dotenv.js';
import { envFileProblem } from './sinks.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** `file:` — a new file 0600 holding exactly the secret, or with force a regular file replaced atomically. */
export function writeSecretFile(path: string, secret: string, force: boolean): void {
  writeFileAtomic(path, secret, { how: force ? 'replace' : 'exclusive' });
}

/** `env-file:` — NAME=<secret> set in the dotenv file (created if absent), rewritten atomically, 0600. */
export function writeEnvFile(path: string, name: string, secret: string): void {
  let content = Buffer.alloc(0);
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | NOFOLLOW);
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
export function keepSecret(configDir: string, endpointId: string, secret: string | Buffer, now: Date, opts: { durable?: boolean } = {}): KeptSecret {
  const dir = recoveryFolder(configDir);
  const firstMade = makeFolders(dir, 0o700);
  const safeId = endpointId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64) || 'endpoint';
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `${safeId}-${stamp}-${randomBytes(3).toString('hex')}.secret`);
  writeFileAtomic(path, secret, { how: 'exclusive', durable: opts.durable ?? true });
  return {
    path,
    persist() {
      syncPath(path);
      syncPath(dir);
    },
    discard() {
      // unlink, not rmSync: rmSync loads and runs Node's recursive remover
      // (about 0.35 ms against 0.03), and this runs on every delivery.
      try {
        unlinkSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
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

/** Keeps a secret that could not be saved where asked: returns its path. */
export function recoverSecret(configDir: string, endpointId: string, secret: string | Buffer, now: Date): string {
  return keepSecret(configDir, endpointId, secret, now).path;
}
