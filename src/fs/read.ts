// Reading a file that may have become anything since it was written (a
// link, a FIFO that would block forever, a huge file): destinations read
// back, kept copies, config.json.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** The most of a destination read back: a secret file is a few dozen bytes, a dotenv file a few KiB. */
const MAX_READ_BACK_BYTES = 1024 * 1024;

/**
 * The bytes of the regular file at `path`, or undefined when it is absent,
 * unreadable, larger than `max` or anything but a regular file. Never
 * follows a link, and never blocks on what took the file's place: lstat
 * first, an open with O_NOFOLLOW | O_NONBLOCK (a FIFO opens at once and is
 * not read), then fstat to be sure it is the file looked at.
 */
export function readRegularFile(path: string, max = MAX_READ_BACK_BYTES): Buffer | undefined {
  try {
    const seen = lstatSync(path);
    if (!seen.isFile() || seen.size > max) return undefined;
    const fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.ino !== seen.ino || st.dev !== seen.dev) return undefined;
      // Sized to the file (a log may allow megabytes and hold a few lines); grown if it grew meanwhile.
      let buf = Buffer.alloc(Math.min(max, st.size) + 1);
      let got = 0;
      for (let n; (n = readSync(fd, buf, got, buf.length - got, null)) > 0; ) {
        got += n;
        if (got < buf.length) continue;
        if (buf.length > max) break;
        const bigger = Buffer.alloc(Math.min(max + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, got);
        buf = bigger;
      }
      return got > max ? undefined : buf.subarray(0, got);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Up to `size` bytes of an open file, from its start (fewer if it shrank meanwhile). */
export function readToEnd(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}
