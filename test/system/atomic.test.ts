// fs/files.ts, the one write every writer uses: real files in a temporary
// folder; failures of the disk (a short write, ENOSPC, a failed fsync) are
// node:fs answering so, as a full disk would, for the span of one call.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import fs, { chmodSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, mkdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic, writeFileAtomicAsync } from '../../src/system/files.js';
import { scaled } from '../support/slowdown.js';

const real = { writeSync: fs.writeSync, fsyncSync: fs.fsyncSync };

/**
 * Runs `fn` with node:fs's `name` replaced (its named exports too, which
 * fs/files.ts imports: syncBuiltinESMExports), and puts it back at once.
 */
function withFault<K extends keyof typeof real>(name: K, impl: (typeof real)[K], fn: () => void): void {
  const mutable = fs as unknown as Record<K, unknown>;
  mutable[name] = impl;
  syncBuiltinESMExports();
  try {
    fn();
  } finally {
    mutable[name] = real[name];
    syncBuiltinESMExports();
  }
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-atomic-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;
const files = () => readdirSync(dir).sort();

function failure(fn: () => unknown): NodeJS.ErrnoException {
  try {
    fn();
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  throw new Error('expected a failure');
}

describe('replace (the default)', () => {
  it('creates or replaces the file with exactly the data, 0600 whatever the umask, and leaves nothing else', () => {
    const path = join(dir, 'f');
    const old = process.umask(0);
    try {
      writeFileAtomic(path, 'first');
      expect(mode(path)).toBe(0o600);
      writeFileSync(path, 'x');
      chmodSync(path, 0o666);
      writeFileAtomic(path, Buffer.from([0, 1, 2, 255]));
      expect(mode(path)).toBe(0o600);
      writeFileAtomic(join(dir, 'script'), 'echo', { mode: 0o644 });
      expect(mode(join(dir, 'script'))).toBe(0o644);
    } finally {
      process.umask(old);
    }
    expect([...readFileSync(path)]).toEqual([0, 1, 2, 255]);
    expect(files()).toEqual(['f', 'script']);
  });

  it.each([
    [
      'a symbolic link',
      (p: string) => {
        writeFileSync(join(dir, 'target'), 'keep');
        symlinkSync(join(dir, 'target'), p);
      },
      'a symbolic link',
    ],
    ['a dangling symbolic link', (p: string) => symlinkSync(join(dir, 'nowhere'), p), 'a symbolic link'],
    ['a folder', (p: string) => mkdirSync(p), 'a folder'],
    ['a FIFO', (p: string) => execFileSync('mkfifo', [p]), 'a FIFO (named pipe)'],
  ])('refuses %s at the target (ENOTREG), never writing through it; nothing left', (_label, make, kind) => {
    const path = join(dir, 'f');
    make(path);
    const before = files();
    const e = failure(() => writeFileAtomic(path, 'secret'));
    expect(e.code).toBe('ENOTREG');
    expect(e.message).toBe(`${path} is now ${kind}`);
    expect(files()).toEqual(before);
    if (before.includes('target')) expect(readFileSync(join(dir, 'target'), 'utf8')).toBe('keep');
    expect(lstatSync(path).isFile()).toBe(false);
  });

  it('a short write is continued: the file is whole', () => {
    const path = join(dir, 'f');
    const data = Buffer.from('0123456789'.repeat(100));
    let calls = 0;
    const short = ((fd: number, buf: Uint8Array, offset?: number, length?: number) => {
      calls += 1;
      return real.writeSync(fd, buf, offset, Math.min(length ?? buf.length, 7));
    }) as typeof fs.writeSync;
    withFault('writeSync', short, () => writeFileAtomic(path, data));
    expect(calls).toBe(Math.ceil(data.length / 7));
    expect(readFileSync(path).equals(data)).toBe(true);
  });

  it('a full disk part-way (ENOSPC): the old file stays as it was, the temporary file is removed', () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'old contents');
    let calls = 0;
    const full = ((fd: number, buf: Uint8Array, offset?: number) => {
      if (++calls === 1) return real.writeSync(fd, buf, offset, 3);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }) as typeof fs.writeSync;
    expect(failure(() => withFault('writeSync', full, () => writeFileAtomic(path, 'new contents, longer'))).code).toBe('ENOSPC');
    expect(calls).toBe(2);
    expect(readFileSync(path, 'utf8')).toBe('old contents');
    expect(files()).toEqual(['f']);
  });

  it('a failed fsync (EIO): the old file stays, nothing else left', () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'old');
    const broken = () => {
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    };
    expect(failure(() => withFault('fsyncSync', broken, () => writeFileAtomic(path, 'new'))).code).toBe('EIO');
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(files()).toEqual(['f']);
  });

  it('durable: false writes without fsync (a cache); durable, the file and then its folder are synced', () => {
    const synced: boolean[] = [];
    const counting = (fd: number) => {
      synced.push(fs.fstatSync(fd).isDirectory());
      real.fsyncSync(fd);
    };
    withFault('fsyncSync', counting, () => writeFileAtomic(join(dir, 'cache'), 'c', { durable: false }));
    expect(synced).toEqual([]);
    withFault('fsyncSync', counting, () => writeFileAtomic(join(dir, 'f'), 'x'));
    expect(synced).toEqual([false, true]);
  });
});

describe('exclusive', () => {
  it('creates a new file, 0600, with exactly the data', () => {
    const path = join(dir, 'new');
    writeFileAtomic(path, 'whsec_x', { how: 'exclusive' });
    expect(readFileSync(path, 'utf8')).toBe('whsec_x');
    expect(mode(path)).toBe(0o600);
    expect(files()).toEqual(['new']);
  });

  it.each([
    ['a regular file', (p: string) => writeFileSync(p, 'theirs')],
    ['a dangling symbolic link (never followed to create its target)', (p: string) => symlinkSync(join(dir, 'nowhere'), p)],
    ['a folder', (p: string) => mkdirSync(p)],
  ])('refuses when the name holds %s (EEXIST); nothing changed, nothing left', (_label, make) => {
    const path = join(dir, 'f');
    make(path);
    const before = files();
    expect(failure(() => writeFileAtomic(path, 'secret', { how: 'exclusive' })).code).toBe('EEXIST');
    expect(files()).toEqual(before);
    if (lstatSync(path).isFile()) expect(readFileSync(path, 'utf8')).toBe('theirs');
  });

  it('a full disk part-way: no file at the name, nothing left', () => {
    const full = () => {
      throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
    };
    expect(failure(() => withFault('writeSync', full, () => writeFileAtomic(join(dir, 'f'), 'secret', { how: 'exclusive' }))).code).toBe('ENOSPC');
    expect(files()).toEqual([]);
  });
});

describe('no reader ever sees part of a file', () => {
  it('a reader process polling the name while it is created and replaced 60 times sees nothing, or one whole version', { timeout: scaled(30_000) }, async () => {
    const path = join(dir, 'f');
    const size = 512 * 1024;
    // Reads the file as fast as it can until its stdin closes; reports what it saw.
    const reader = spawn(
      process.execPath,
      [
        '-e',
        `
      const fs = require('node:fs');
      const [path, size] = [process.argv[1], Number(process.argv[2])];
      let reads = 0, missing = 0, whole = 0; const bad = [];
      let done = false;
      process.stdin.on('end', () => (done = true)).resume();
      process.stdout.write('ready\\n');
      const loop = () => {
        for (let i = 0; i < 50; i++) {
          let b;
          try { b = fs.readFileSync(path); } catch (e) { if (e.code === 'ENOENT') { missing++; continue; } throw e; }
          reads++;
          if (b.length === size && b.every((x) => x === b[0])) whole++;
          else if (bad.length < 3) bad.push(b.length);
        }
        if (done) process.stdout.write(JSON.stringify({ reads, missing, whole, bad }) + '\\n');
        else setImmediate(loop);
      };
      loop();
    `,
        path,
        String(size),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    let out = '';
    reader.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise<void>((r) => reader.stdout.once('data', () => r()));
    // Each write yields, so the reader runs between them and during them (it is another process).
    writeFileAtomic(path, Buffer.alloc(size, 0x41), { how: 'exclusive' });
    for (let i = 0; i < 60; i++) {
      writeFileAtomic(path, Buffer.alloc(size, 0x42 + (i % 20)), { durable: i % 10 === 0 });
      await new Promise((r) => setImmediate(r));
    }
    reader.stdin.end();
    await new Promise((r) => reader.on('close', r));
    const seen = JSON.parse(out.trim().split('\n').pop()!) as { reads: number; whole: number; bad: number[] };
    expect(seen.bad).toEqual([]);
    expect(seen.reads).toBeGreaterThan(0);
    expect(seen.whole).toBe(seen.reads);
    expect(files()).toEqual(['f']);
  });
});

describe('writeFileAtomicAsync: the same write, its fsyncs on the thread pool', () => {
  const realFsync = fs.fsync;
  /** node:fs's fsync replaced for the span of `fn`. */
  async function withAsyncFsync(impl: typeof fs.fsync, fn: () => Promise<unknown>): Promise<void> {
    (fs as unknown as { fsync: unknown }).fsync = impl;
    syncBuiltinESMExports();
    try {
      await fn();
    } finally {
      (fs as unknown as { fsync: unknown }).fsync = realFsync;
      syncBuiltinESMExports();
    }
  }

  it('replace and exclusive as the sync write: 0600, exactly the data, the file then its folder synced through fs.fsync, never fsyncSync', async () => {
    const synced: boolean[] = [];
    const counting = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      synced.push(fs.fstatSync(fd).isDirectory());
      realFsync(fd, cb);
    }) as unknown as typeof fs.fsync;
    const noSync = () => {
      throw new Error('fsyncSync called');
    };
    await withAsyncFsync(counting, async () => {
      const path = join(dir, 'f');
      writeFileSync(path, 'old', { mode: 0o644 });
      const state: { p?: Promise<number> } = {};
      withFault('fsyncSync', noSync, () => {
        state.p = writeFileAtomicAsync(path, 'new');
      });
      await state.p;
      expect(readFileSync(path, 'utf8')).toBe('new');
      expect(mode(path)).toBe(0o600);
      expect(synced).toEqual([false, true]);
      await writeFileAtomicAsync(join(dir, 'n'), 'x', { how: 'exclusive' });
      await expect(writeFileAtomicAsync(join(dir, 'n'), 'y', { how: 'exclusive' })).rejects.toMatchObject({ code: 'EEXIST' });
      expect(readFileSync(join(dir, 'n'), 'utf8')).toBe('x');
    });
    expect(files()).toEqual(['f', 'n']);
  });

  it('a failed fsync (EIO): the old file stays, nothing else left', async () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'old');
    const broken = ((_fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })));
    }) as unknown as typeof fs.fsync;
    await withAsyncFsync(broken, async () => {
      await expect(writeFileAtomicAsync(path, 'new')).rejects.toMatchObject({ code: 'EIO' });
    });
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(files()).toEqual(['f']);
  });
});
