// Lines of a file read in fixed-size chunks, so a manifest or journal of any
// length costs one chunk of memory. Each line is decoded on its own: a bad
// byte is reported with its line number.
import { readSync } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;
const decoder = new TextDecoder('utf-8', { fatal: true });

export interface Line {
  /** The line's text without its newline, or null when it is not valid UTF-8. */
  text: string | null;
  /** 1-based. */
  line: number;
}

/** Splits byte chunks into lines; `tooLong(line)` is called (and must throw) past maxBytes. */
export function* splitLines(chunks: Iterable<Uint8Array>, maxBytes: number, tooLong: (line: number) => never): Iterable<Line> {
  let line = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const take = (tail: Uint8Array): Line => {
    line += 1;
    const bytes = pending.length ? Buffer.concat([...pending, tail]) : tail;
    pending = [];
    pendingBytes = 0;
    // A UTF-8 byte order mark at the start of the file is not part of the line.
    const body = line === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
    try {
      return { text: decoder.decode(body), line };
    } catch {
      return { text: null, line };
    }
  };
  for (const chunk of chunks) {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      if (pendingBytes + nl - start > maxBytes) tooLong(line + 1);
      yield take(chunk.subarray(start, nl));
      start = nl + 1;
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxBytes) tooLong(line + 1);
      // Copied: the reader reuses its buffer for the next chunk.
      pending.push(Buffer.from(chunk.subarray(start)));
    }
  }
  if (pendingBytes > 0) yield take(new Uint8Array(0));
}

/** The bytes of an open file from its start, one reused chunk at a time. */
export function* fileChunks(fd: number): Iterable<Uint8Array> {
  const buf = Buffer.alloc(CHUNK_BYTES);
  for (let position = 0; ; ) {
    const n = readSync(fd, buf, 0, buf.length, position);
    if (n <= 0) return;
    position += n;
    yield buf.subarray(0, n);
  }
}
