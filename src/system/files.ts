import { closeSync, constants, fchmodSync, fstatSync, fsync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readSync, renameSync, type Stats, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// Random bytes, reads that never follow a link or block, `mkdir -p` that ends, and the one atomic write.

/** Reads into `buf` from `got` on until it is full or the file ends (at `got` from the start with `pread`); the bytes in it then. */
function fill(fd: number, buf: Buffer, got = 0, pread = false): number {
  for (let n; got < buf.length && (n = readSync(fd, buf, got, buf.length - got, pread ? got : null)) > 0; ) got += n;
  return got;
}

// From /dev/urandom where there is one: node:crypto costs about 2 ms at start-up.
function osRandom(size: number): Buffer | undefined {
  if (process.platform === 'win32') return undefined;
  return attempt(() => {
    const fd = openSync('/dev/urandom', 'r');
    try {
      const buf = Buffer.alloc(size);
      return fill(fd, buf) === size ? buf : undefined;
    } finally {
      closeSync(fd);
    }
  });
}

export function randomBytes(size: number): Buffer {
  return osRandom(size) ?? process.getBuiltinModule('node:crypto').randomBytes(size);
}

/** RFC 9562 version 4. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** The regular file at `path`, else undefined (absent, over `max`, anything else): never follows a link nor blocks on a FIFO. */
export function readRegularFile(path: string, max = 1024 * 1024): Buffer | undefined {
  return attempt(() => {
    const seen = lstatSync(path);
    if (!seen.isFile() || seen.size > max) return undefined;
    const fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.ino !== seen.ino || st.dev !== seen.dev) return undefined;
      // Sized to the file (a log may allow megabytes and hold a few lines); grown if it grew meanwhile.
      let buf = Buffer.alloc(Math.min(max, st.size) + 1);
      let got = fill(fd, buf);
      while (got === buf.length && buf.length <= max) {
        const bigger = Buffer.alloc(Math.min(max + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, got);
        buf = bigger;
        got = fill(fd, buf, got);
      }
      return got > max ? undefined : buf.subarray(0, got);
    } finally {
      closeSync(fd);
    }
  });
}

export function readToEnd(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  return buf.subarray(0, fill(fd, buf, 0, true));
}

/** Above this many missing levels a path is refused rather than walked (no real config path is this deep). */
const MAX_DEPTH = 512;

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * `mkdir -p` that always ends: Node's recursive mkdirSync loops for ever under /proc (/proc/self/nonexistent/x
 * answers ENOENT for a child of a folder that exists). Returns the first folder created, as mkdirSync does.
 */
export function makeFolders(dir: string, mode: number): string | undefined {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    let st;
    try {
      st = statSync(d);
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') throw err;
    }
    if (st) {
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${d}'`), { code: 'ENOTDIR', syscall: 'mkdir', path: d });
      break;
    }
    missing.push(d);
    if (dirname(d) === d || missing.length > MAX_DEPTH) throw Object.assign(new Error(`ENOENT: no such file or directory, mkdir '${d}'`), { code: 'ENOENT', syscall: 'mkdir', path: d });
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      // Made meanwhile by another run: fine if it is a folder.
      if (codeOf(err) === 'EEXIST' && statSync(d).isDirectory()) continue;
      throw err;
    }
    first ??= d;
  }
  return first;
}

// The one way chatctl puts a file on disk, whole or not at all: a temporary `.NAME.<random>.tmp` beside it,
// created O_EXCL|O_NOFOLLOW with the mode whatever the umask, written in full and fsynced; then `replace`
// renames it over a regular file (anything else is refused, never followed) and fsyncs the folder, or
// `exclusive` hard-links it (EEXIST if the name is taken). On failure the target is left as it was.

/** 0600, 'replace' and durable (fsynced before this returns) unless said. */
type WriteOptions = { mode?: number; how?: 'replace' | 'exclusive'; durable?: boolean };

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW;
/** link() is missing on some file systems: there the new file is created in place. */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/** Yields each descriptor to fsync before the next step (an fsync's error is thrown back in); returns the new file's inode. */
type Steps = Generator<number, number, void>;

function drive<T>(steps: Generator<number, T, void>): T {
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

export const writeFileAtomic = (path: string, data: string | Uint8Array, opts: WriteOptions = {}): number => drive(atomicWrite(path, data, opts));

/** writeFileAtomic with its fsyncs on the thread pool, so a run reading answers meanwhile (rotate --from) keeps its event loop. */
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

export function refuseNonRegular(path: string): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st && !st.isFile()) throw Object.assign(new Error(`${path} is now ${kindOf(st)}`), { code: 'ENOTREG' });
}

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
    if (open) attempt(() => closeSync(fd));
    remove(path);
    throw err;
  }
}

/** `act`'s answer, or undefined when it throws: for what may be gone already, or is best effort. */
export function attempt<T>(act: () => T): T | undefined {
  try {
    return act();
  } catch {
    return undefined;
  }
}

/** Whether `fn` ran without throwing. */
export const works = (fn: () => unknown): boolean => attempt(() => (fn(), true)) ?? false;

/** unlink, not rmSync: rmSync loads and runs Node's recursive remover (about 0.35 ms against 0.03). */
const remove = (path: string) => attempt(() => unlinkSync(path));

/** Best effort: fsyncs a file or folder (after a rename, the folder makes it durable); some file systems cannot open a folder. */
export const syncPath = (path: string): void => drive(syncSteps(path));

function* syncSteps(path: string): Generator<number, void, void> {
  try {
    const fd = openSync(path, constants.O_RDONLY | NONBLOCK); // a FIFO put there never blocks it
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

export function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}
