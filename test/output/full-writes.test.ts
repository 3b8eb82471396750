// Standard output on a regular file: every byte written, or an error the
// secret's delivery sees (a SyncWriteStream would report a short write as
// success). Driven with an injected writeSync; the real one is checked by
// writing a file.
import { afterAll, describe, expect, it } from 'vitest';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FullWriteStream } from '../../src/output/io.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

afterAll(() => cleanupTempDirs());

const write = (s: FullWriteStream, text: string) => new Promise<Error | null | undefined>((resolve) => s.write(text, (err) => resolve(err)));

describe('FullWriteStream', () => {
  it('goes on after a short write until every byte is written', async () => {
    const got: string[] = [];
    const s = new FullWriteStream(9, (_fd, buf, at, len) => {
      const n = Math.min(3, len);
      got.push(buf.subarray(at, at + n).toString());
      return n;
    });
    expect(await write(s, 'whsec_0123456789')).toBeFalsy();
    expect(got.join('')).toBe('whsec_0123456789');
    expect(got.length).toBe(6);
  });

  it('a write that stops short (0 bytes) or fails (ENOSPC) is an error, not success', async () => {
    let calls = 0;
    const stuck = new FullWriteStream(9, (_fd, _buf, _at, len) => (calls++ === 0 ? Math.min(4, len) : 0));
    stuck.on('error', () => undefined);
    expect((await write(stuck, 'whsec_0123456789'))?.message).toMatch(/wrote nothing of the last 12 bytes/);
    const full = new FullWriteStream(9, () => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    full.on('error', () => undefined);
    expect(await write(full, 'x')).toMatchObject({ code: 'ENOSPC' });
  });

  it('writes a real file whole', async () => {
    const path = join(tempDir('fullwrite'), 'out');
    const fd = openSync(path, 'w');
    try {
      const s = new FullWriteStream(fd);
      expect(await write(s, 'a'.repeat(100_000))).toBeFalsy();
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(path, 'utf8')).toBe('a'.repeat(100_000));
  });
});
