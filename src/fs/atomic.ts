// Writing a file whole or not at all: the one way chatctl itself puts a file
// on disk (secret and dotenv destinations, recovery copies, lock records, the
// completion script, the launcher's code cache, and config.json where conf,
// which writes it otherwise, would write in place: config/conf-writer.ts).
//
// The data goes to a temporary file beside the target, `.NAME.<random>.tmp`,
// created exclusively (never through a link) with the mode whatever the
// umask, written in full (a short write is continued) and, when durable,
// fsynced. Then `replace` renames it over the target, only if that is a
// regular file or absent (a link, folder, FIFO, device or socket is refused,
// never followed), and fsyncs the folder when durable; `exclusive` hard-links
// it to the name, which fails (EEXIST) if the name exists, so a new file is
// never seen half-written (without hard links: created in place). On any
// failure the temporary file is removed and the target is left as it was.
// writeFileAtomicAsync is the same write with each fsync done on libuv's
// thread pool, so a run that reads answers meanwhile (rotate --from) keeps
// its event loop: the steps, their order and their failures are one
// generator's (atomicWrite), driven step by step with fsyncSync or fsync.
import { closeSync, constants, fchmodSync, fstatSync, fsync, fsyncSync, linkSync, lstatSync, openSync, renameSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from '../system/random.js';

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

/**
 * The steps of an atomic write; each value yielded is a descriptor to fsync
 * before the next step (the driver throws the fsync's error back in). Its
 * return value is the new file's inode.
 */
type Steps = Generator<number, number, void>;

/** Writes `data` to `path` whole or not at all; returns the new file's inode. */
export function writeFileAtomic(path: string, data: string | Uint8Array, opts: WriteOptions = {}): number {
  const steps = atomicWrite(path, data, opts);
  let step = steps.next();
  while (!step.done) {
    try {
      fsyncSync(step.value);
    } catch (err) {
      step = steps.throw(err);
      continue;
    }
    step = steps.next();
  }
  return step.value;
}

/** writeFileAtomic with its fsyncs on the thread pool: the event loop is not held while the disk syncs. */
export async function writeFileAtomicAsync(path: string, data: string | Uint8Array, opts: WriteOptions = {}): Promise<number> {
  const steps = atomicWrite(path, data, opts);
  let step = steps.next();
  while (!step.done) {
    const fd = step.value;
    const err = await new Promise<NodeJS.ErrnoException | null>((done) => fsync(fd, done));
    step = err ? steps.throw(err) : steps.next();
  }
  return step.value;
}

function* atomicWrite(path: string, data: string | Uint8Array, opts: WriteOptions): Steps {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const mode = opts.mode ?? 0o600;
  const durable = opts.durable ?? true;
  const folder = dirname(path);
  const tmp = join(folder, `.${basename(path).slice(0, 200)}.${randomBytes(8).toString('hex')}.tmp`);
  const ino = yield* createInPlace(tmp, bytes, mode, durable);
  let renamed = false;
  try {
    if (opts.how === 'exclusive') {
      try {
        linkSync(tmp, path);
      } catch (err) {
        if (!NO_LINK.has(codeOf(err) ?? '')) throw err;
        return yield* createInPlace(path, bytes, mode, durable);
      }
    } else {
      refuseNonRegular(path);
      renameSync(tmp, path);
      renamed = true;
      if (durable) yield* syncSteps(folder);
    }
    return ino;
  } finally {
    if (!renamed) remove(tmp);
  }
}

/**
 * Throws (code ENOTREG) when `path` is there but is not a regular file: a
 * link, folder, FIFO, device or socket is never replaced nor followed.
 */
export function refuseNonRegular(path: string): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st && !st.isFile()) throw Object.assign(new Error(`${path} is now ${kindOf(st)}`), { code: 'ENOTREG' });
}

/** A new file holding `bytes`, created exclusively; removed again if it cannot be written whole. Its inode. */
function* createInPlace(path: string, bytes: Uint8Array, mode: number, durable: boolean): Steps {
  const fd = openSync(path, CREATE, mode);
  let open = true;
  try {
    fchmodSync(fd, mode);
    // Every byte: a short write (a signal, a nearly full disk) is continued; an error is thrown.
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
    if (durable) yield fd;
    const { ino } = fstatSync(fd);
    open = false; // a failed close has released the descriptor too: never closed twice
    closeSync(fd);
    return ino;
  } catch (err) {
    if (open) {
      try {
        closeSync(fd);
      } catch {
        /* failing anyway */
      }
    }
    remove(path);
    throw err;
  }
}

/** unlink, not rmSync: rmSync loads and runs Node's recursive remover (about 0.35 ms against 0.03). */
function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* gone already */
  }
}

/** Best effort: fsyncs a file or folder (after a rename, the folder makes it durable); some file systems cannot open a folder. */
export function syncPath(path: string): void {
  const steps = syncSteps(path);
  for (let step = steps.next(); !step.done; ) {
    try {
      fsyncSync(step.value);
      step = steps.next();
    } catch (err) {
      step = steps.throw(err);
    }
  }
}

function* syncSteps(path: string): Generator<number, void, void> {
  try {
    const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)); // a FIFO put there never blocks it
    try {
      yield fd;
    } finally {
      closeSync(fd);
    }
  } catch {
    /* written already; only a crash of the machine could still lose it */
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
