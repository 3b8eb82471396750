// readRegularFile: the whole file up to a limit, sized to the file (a log
// allowed megabytes holds a few lines), never a link or anything but a
// regular file.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegularFile } from '../../src/system/files.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

afterAll(cleanupTempDirs);

describe('readRegularFile', () => {
  it('reads the whole file at its size, up to the limit and not past it', () => {
    const d = tempDir('read');
    const p = join(d, 'f');
    for (const size of [0, 1, 4095, 4096, 70_000]) {
      const bytes = Buffer.alloc(size, 'x');
      writeFileSync(p, bytes);
      expect(readRegularFile(p, 8 * 1024 * 1024)?.equals(bytes), String(size)).toBe(true);
      expect(readRegularFile(p, size)?.length, `exactly the limit: ${size}`).toBe(size);
      if (size > 0) expect(readRegularFile(p, size - 1), `over the limit: ${size}`).toBeUndefined();
    }
  });

  it('absent, a folder or a link: undefined', () => {
    const d = tempDir('read');
    writeFileSync(join(d, 'real'), 'x');
    symlinkSync(join(d, 'real'), join(d, 'link'));
    mkdirSync(join(d, 'dir'));
    expect(readRegularFile(join(d, 'absent'))).toBeUndefined();
    expect(readRegularFile(join(d, 'dir'))).toBeUndefined();
    expect(readRegularFile(join(d, 'link'))).toBeUndefined();
    expect(readRegularFile(join(d, 'real'))?.toString()).toBe('x');
  });
});
