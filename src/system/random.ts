// Random ids without loading node:crypto at start-up: the module costs about
// 2 ms on top of node:http, and a run needs 32 random bytes. They come from
// the operating system's CSPRNG (/dev/urandom) where there is one, else from
// node:crypto, loaded then.
import { closeSync, openSync, readSync } from 'node:fs';

function osRandom(size: number): Buffer | undefined {
  if (process.platform === 'win32') return undefined;
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      const buf = Buffer.alloc(size);
      let got = 0;
      while (got < size) {
        const n = readSync(fd, buf, got, size - got, null);
        if (n <= 0) return undefined;
        got += n;
      }
      return buf;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

export function randomBytes(size: number): Buffer {
  return osRandom(size) ?? process.getBuiltinModule('node:crypto').randomBytes(size);
}

/** An RFC 9562 version 4 UUID, lowercase. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
