// Putting the one-time secret on disk: a destination holds the whole secret
// or nothing (fs/atomic.ts). Files are created exclusively with mode 0600; a
// replacement is written beside the target and renamed over it, so a reader
// never sees a half-written file and a failed write (ENOSPC) leaves the old
// one; a file this run could not finish is removed.
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { kindOf, writeFileAtomic, writeFileAtomicAsync } from '../fs/atomic.js';
import { recoveryFolder } from './record.js';
import { randomBytes } from '../system/random.js';
import { dotenvProblem, setDotenvValue } from './dotenv.js';
import { envFileProblem } from './sinks.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** `file:` — a new file 0600 holding exactly the secret, or with force a regular file replaced atomically; `offLoop`: its fsyncs on the thread pool. */
export async function writeSecretFile(path: string, secret: string, force: boolean, offLoop = false): Promise<void> {
  await (offLoop ? writeFileAtomicAsync : writeFileAtomic)(path, secret, { how: force ? 'replace' : 'exclusive' });
}

/** `env-file:` — NAME=<secret> set in the dotenv file (created if absent), rewritten atomically, 0600. */
export async function writeEnvFile(path: string, name: string, secret: string, offLoop = false): Promise<void> {
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
  await (offLoop ? writeFileAtomicAsync : writeFileAtomic)(path, setDotenvValue(content, name, secret));
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
