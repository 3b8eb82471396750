// The keyring's native addon for the single executable (src/sea/launcher.ts):
// unpacked from the executable's assets into `<cache folder>/native/` and
// loaded from there (docs/distribution.md, "The keyring addon").
//
// Two rules keep another user's bytes out of the process:
// - the file is hashed through an open file descriptor, and on Linux that
//   very descriptor is what gets loaded (/proc/self/fd/N): no path is
//   walked twice, so a folder or file swapped between the hash and the
//   load (a rename or RENAME_EXCHANGE loop) changes nothing;
// - the cache folder and every folder above it must be this user's or
//   root's and not writable by group or others, as OpenSSH's StrictModes
//   asks of ~/.ssh, with one allowance: a world-writable folder with the
//   sticky bit (/tmp), where no one else can rename or remove the folder of
//   ours below it. Where there is no /proc (macOS), the path is loaded, and
//   that rule is what keeps it ours between the hash and the load.
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, renameSync, statSync, writeSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Hash } from 'node:crypto';
import { makeFolders } from '../fs/files.js';

/** The addon the executable carries. */
export interface AddonSource {
  /** Its SHA-256, hex. */
  sha256: string;
  /** Its bytes (read from the assets only when the file on disk is not them). */
  bytes(): Uint8Array;
}

export interface AddonOptions {
  /** A fresh SHA-256 (node:crypto's createHash('sha256'), loaded by the caller only when needed). */
  sha256: () => Hash;
  /** Defaults to process.platform: on Linux the addon is loaded through /proc/self/fd. */
  platform?: NodeJS.Platform;
  /** Defaults to process.geteuid(); undefined (Windows) skips the owner and mode checks. */
  uid?: number;
  /** Tests only: runs once the bytes to load are hashed, before they are loaded (the window a swap would use). */
  afterHash?: (file: string) => void;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Loads the addon from `<cache>/native/keyring-<hash>.node`, writing that
 * file from `source` first when it is not a regular file of this user's,
 * closed to group and others, with the expected SHA-256. Throws, with a
 * sentence for the user, when the cache folder or a folder above it is not
 * safe to hold it.
 */
export function loadAddon(cache: string, source: AddonSource, options: AddonOptions): unknown {
  const uid = 'uid' in options ? options.uid : typeof process.geteuid === 'function' ? process.geteuid() : undefined;
  const platform = options.platform ?? process.platform;
  makeFolders(cache, 0o700);
  const real = realpathSync(cache);
  checkParents(real, uid);
  checkPrivate(real, statSync(real), 'the cache folder', uid);
  const dir = join(real, 'native');
  makeFolders(dir, 0o700);
  checkPrivate(dir, lstatSync(dir), 'its native/ folder', uid);
  const file = join(dir, `keyring-${source.sha256.slice(0, 16)}.node`);
  const fd = openVerified(file, source.sha256, uid, options) ?? writeFresh(dir, file, source, uid, options);
  try {
    options.afterHash?.(file);
    const module = { exports: {} };
    process.dlopen(module, platform === 'linux' ? `/proc/self/fd/${fd}` : file);
    return module.exports;
  } finally {
    closeSync(fd);
  }
}

/** Every folder above `dir` (a real path): this user's or root's, and closed to group and others unless sticky and world-writable. */
function checkParents(dir: string, uid: number | undefined): void {
  if (uid === undefined) return; // Windows: no owner or mode bits to check (docs/distribution.md)
  for (let d = dirname(dir), below = dir; d !== below; below = d, d = dirname(d)) {
    const st = lstatSync(d);
    if (st.uid !== uid && st.uid !== 0) throw new Error(`the cache folder's parent ${d} belongs to another user (uid ${st.uid}); the keyring addon is not unpacked below it`);
    const sticky = (st.mode & 0o1000) !== 0 && (st.mode & 0o002) !== 0;
    if ((st.mode & 0o022) !== 0 && !sticky) throw new Error(`the cache folder's parent ${d} can be written by group or others; the keyring addon is not unpacked below it`);
  }
}

/** A folder this user owns and that group and others cannot write (and, for native/, no link); read access for others is taken away. */
function checkPrivate(dir: string, st: Stats, what: string, uid: number | undefined): void {
  if (st.isSymbolicLink() || !st.isDirectory()) throw new Error(`${what} ${dir} is not a folder; the keyring addon is not unpacked there`);
  if (uid === undefined) return;
  if (st.uid !== uid) throw new Error(`${what} ${dir} belongs to another user (uid ${st.uid}); the keyring addon is not unpacked there`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${what} ${dir} can be written by group or others; the keyring addon is not unpacked there`);
  if (what !== 'the cache folder' && (st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** An open descriptor of `file` when it is a regular file of this user's, closed to others, whose bytes hash to `hash` (opened without following a link); else undefined. */
function openVerified(file: string, hash: string, uid: number | undefined, options: AddonOptions): number | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | NOFOLLOW);
  } catch {
    return undefined;
  }
  if (verified(fd, hash, uid, options)) return fd;
  closeSync(fd);
  return undefined;
}

/** A new file with the addon's bytes, renamed into place; its descriptor, once its bytes are read back and hashed. */
function writeFresh(dir: string, file: string, source: AddonSource, uid: number | undefined, options: AddonOptions): number {
  const temp = join(dir, `.keyring-${process.pid}-${Date.now()}.tmp`);
  const fd = openSync(temp, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o700);
  try {
    const bytes = source.bytes();
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, done);
    if (!verified(fd, source.sha256, uid, options)) throw new Error(`the keyring addon written to ${temp} does not match the one in this executable`);
    renameSync(temp, file);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Whether the open file is a regular file of this user's, closed to group and others, whose bytes (read from the start) hash to `hash`. */
function verified(fd: number, hash: string, uid: number | undefined, options: AddonOptions): boolean {
  const st = fstatSync(fd);
  if (!st.isFile() || (uid !== undefined && (st.uid !== uid || (st.mode & 0o022) !== 0))) return false;
  const digest = options.sha256();
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (let n: number, at = 0; (n = readSync(fd, chunk, 0, chunk.length, at)) > 0; at += n) digest.update(chunk.subarray(0, n));
  return digest.digest('hex') === hash;
}
