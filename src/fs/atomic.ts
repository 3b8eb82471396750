// Writing a file whole or not at all: the one way chatctl puts a file on disk
// (secret files, dotenv files, recovery copies, config.json through conf,
// lock records, the completion script, the launcher's code cache).
//
// The data goes to a temporary file beside the target, `.NAME.<random>.tmp`,
// created exclusively and never through a link, with the given mode whatever
// the umask; it is written in full (a short write is continued) and, when
// durable, fsynced. Then it is put in place:
// - replace: renamed over the target, only if the target is a regular file or
//   absent (a symbolic link, folder, FIFO, device or socket there is refused,
//   never followed); when durable, the folder is fsynced too, so the rename
//   outlives a crash of the machine;
// - exclusive: hard-linked to the target's name, which fails (EEXIST) if the
//   name exists, so a new file is never seen empty or half-written. Where the
//   file system has no hard links, the target is created exclusively in place.
// A reader sees the old file or the whole new one. On any failure the
// temporary file is removed and the target is left as it was.
import { closeSync, constants, fchmodSync, fstatSync, fsyncSync, linkSync, lstatSync, openSync, renameSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from '../random.js';

export interface WriteOptions {
  /** The file's mode; 0600 unless said. */
  mode?: number;
  /** 'replace' (the default) an existing regular file, or create an 'exclusive' new one (EEXIST if the name is taken). */
  how?: 'replace' | 'exclusive';
  /** On disk before this returns (fsync), not only handed to the kernel; true unless said. */
  durable?: boolean;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW;
/** link() is missing on some file systems: there the new file is created in place. */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/** Writes `data` to `path` whole or not at all; returns the new file's inode. */
export function writeFileAtomic(path: string, data: string | Uint8Array, opts: WriteOptions = {}): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const mode = opts.mode ?? 0o600;
  const durable = opts.durable ?? true;
  const folder = dirname(path);
  const { tmp, ino } = createTemp(folder, basename(path), bytes, mode, durable);
  let renamed = false;
  try {
    if (opts.how === 'exclusive') {
      try {
        linkSync(tmp, path);
      } catch (err) {
        if (!NO_LINK.has(codeOf(err) ?? '')) throw err;
        return createInPlace(path, bytes, mode, durable);
      }
    } else {
      let st: Stats | undefined;
      try {
        st = lstatSync(path);
      } catch (err) {
        if (codeOf(err) !== 'ENOENT') throw err;
      }
      if (st && !st.isFile()) throw Object.assign(new Error(`${path} is now ${kindOf(st)}`), { code: 'ENOTREG' });
      renameSync(tmp, path);
      renamed = true;
      if (durable) syncFolder(folder);
    }
    return ino;
  } finally {
    if (!renamed) remove(tmp);
  }
}

function createTemp(folder: string, name: string, bytes: Uint8Array, mode: number, durable: boolean): { tmp: string; ino: number } {
  for (let tries = 0; ; tries++) {
    const tmp = join(folder, `.${name.slice(0, 200)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      return { tmp, ino: createInPlace(tmp, bytes, mode, durable) };
    } catch (err) {
      if (codeOf(err) !== 'EEXIST' || tries >= 3) throw err;
    }
  }
}

/** A new file holding `bytes`, created exclusively; removed again if it cannot be written whole. Its inode. */
function createInPlace(path: string, bytes: Uint8Array, mode: number, durable: boolean): number {
  const fd = openSync(path, CREATE, mode);
  let open = true;
  try {
    fchmodSync(fd, mode);
    writeAll(fd, bytes);
    if (durable) fsyncSync(fd);
    const { ino } = fstatSync(fd);
    open = false; // a failed close has released the descriptor too: never closed twice
    closeSync(fd);
    return ino;
  } catch (err) {
    if (open) closeQuietly(fd);
    remove(path);
    throw err;
  }
}

/** Writes every byte: a short write (a signal, a nearly full disk) is continued; an error is thrown. */
export function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** unlink, not rmSync: rmSync loads and runs Node's recursive remover (about 0.35 ms against 0.03). */
function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* gone already */
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* closed already, or failing anyway */
  }
}

/** Best effort: makes a rename durable; some file systems cannot open a folder. */
export function syncFolder(folder: string): void {
  try {
    const fd = openSync(folder, constants.O_RDONLY);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* the rename itself has happened */
  }
}

/** Whether `name` is one of this module's temporary files for the file `of` (a killed writer's leftover, once old). */
export const isTempOf = (name: string, of: string) => name.startsWith(`.${of.slice(0, 200)}.`) && name.endsWith('.tmp');

/** What a path that should be a regular file is instead, for messages. */
export function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code;
