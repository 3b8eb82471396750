// The keyring's native addon for the single executable, unpacked into `<cache folder>/native/`;
// why each check keeps another user's bytes out: docs/distribution.md (the keyring).
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, renameSync, statSync, writeSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Hash } from 'node:crypto';
import { makeFolders } from '../system/files.js';

/** The addon the executable carries: its SHA-256 (hex), and its bytes, read from the assets only when needed. */
export type AddonSource = { sha256: string; bytes(): Uint8Array };

interface AddonOptions {
  /** A fresh SHA-256 (node:crypto, loaded by the caller only when needed). */
  sha256: () => Hash;
  platform?: NodeJS.Platform;
  /** Defaults to process.geteuid(); undefined (Windows) skips the owner and mode checks. */
  uid?: number;
  /** Tests only: runs between the hash and the load (the window a swap would use). */
  afterHash?: (file: string) => void;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** Loads `<cache>/native/keyring-<hash>.node`, written from `source` first unless it is this user's, private and the expected bytes. */
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

/** Every folder above `dir`: this user's or root's, and closed to group and others unless sticky and world-writable. */
function checkParents(dir: string, uid: number | undefined): void {
  if (uid === undefined) return; // Windows: no owner or mode bits to check (docs/distribution.md)
  for (let d = dirname(dir), below = dir; d !== below; below = d, d = dirname(d)) {
    const st = lstatSync(d);
    if (st.uid !== uid && st.uid !== 0) throw new Error(`the cache folder's parent ${d} belongs to another user (uid ${st.uid}); the keyring addon is not unpacked below it`);
    const sticky = (st.mode & 0o1000) !== 0 && (st.mode & 0o002) !== 0;
    if ((st.mode & 0o022) !== 0 && !sticky) throw new Error(`the cache folder's parent ${d} can be written by group or others; the keyring addon is not unpacked below it`);
  }
}

/** A folder of this user's that group and others cannot write; native/'s read access for others is taken away. */
function checkPrivate(dir: string, st: Stats, what: string, uid: number | undefined): void {
  if (st.isSymbolicLink() || !st.isDirectory()) throw new Error(`${what} ${dir} is not a folder; the keyring addon is not unpacked there`);
  if (uid === undefined) return;
  if (st.uid !== uid) throw new Error(`${what} ${dir} belongs to another user (uid ${st.uid}); the keyring addon is not unpacked there`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${what} ${dir} can be written by group or others; the keyring addon is not unpacked there`);
  if (what !== 'the cache folder' && (st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

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

/** A new file with the addon's bytes, renamed into place once read back and hashed; its descriptor. */
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

/** Whether the open file is a regular file of this user's, closed to group and others, whose bytes hash to `hash`. */
function verified(fd: number, hash: string, uid: number | undefined, options: AddonOptions): boolean {
  const st = fstatSync(fd);
  if (!st.isFile() || (uid !== undefined && (st.uid !== uid || (st.mode & 0o022) !== 0))) return false;
  const digest = options.sha256();
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (let n: number, at = 0; (n = readSync(fd, chunk, 0, chunk.length, at)) > 0; at += n) digest.update(chunk.subarray(0, n));
  return digest.digest('hex') === hash;
}
