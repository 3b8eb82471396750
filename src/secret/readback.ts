// Reading a destination back: does it already hold exactly this secret? A
// resumed `--from` run asks before delivering a kept copy again (a file that
// holds it counts as delivered), and when no copy is left. A destination may
// have become anything since it was written (a link, a FIFO that would block
// forever, a huge file): it is opened without following links and without
// blocking, and read only if it is a regular file of a secret's size.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { readDotenvValue } from './dotenv.js';
import { fingerprint } from './fingerprint.js';
import type { Sink } from './sinks.js';

/** More than any secret or dotenv file chatctl writes: anything larger is not ours. */
const MAX_READ_BACK = 1 << 20;

/** The bytes of a regular file at `path`, or undefined (absent, a link, not a regular file, too large, unreadable). */
export function readRegularFile(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_READ_BACK) return undefined;
    return readToEnd(fd, st.size);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
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

/** Whether this destination holds the secret with this fingerprint; only files can be asked (an exec: command's store cannot). */
export function sinkHolds(sink: Sink, fp: string): boolean {
  if (sink.kind === 'file') {
    const bytes = readRegularFile(sink.path);
    return bytes !== undefined && fingerprint(bytes) === fp;
  }
  if (sink.kind === 'env-file') {
    const bytes = readRegularFile(sink.path);
    const value = bytes && readDotenvValue(bytes, sink.name);
    return value !== undefined && fingerprint(value) === fp;
  }
  return false;
}
