// The single executable's keyring addon (src/sea/addon.ts), unpacked and
// loaded in this process with the real addon npm installed for this
// platform: the bytes loaded are the bytes hashed even when the file at the
// path is swapped between the two (as a RENAME_EXCHANGE loop would), a
// file with other bytes is replaced, and a cache folder with a parent that
// others can write is refused (a sticky world-writable one, as /tmp, is not).
//
// glibc hands back an already-loaded library for a name it has seen, and
// /proc/self/fd/N names repeat when descriptors are reused: each load here
// leaves its descriptor number taken (`pin`) so that every load names a
// fresh one and really opens the file.
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { type AddonSource, loadAddon } from '../../src/sea/addon.js';
import { ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

const abi = process.platform === 'linux' ? '-gnu' : process.platform === 'win32' ? '-msvc' : '';
const addonPackage = `@napi-rs/keyring-${process.platform}-${process.arch}${abi}`;
const requireFromKeyring = createRequire(join(ROOT, 'node_modules', '@napi-rs', 'keyring', 'index.js'));
const pkgFile = requireFromKeyring.resolve(`${addonPackage}/package.json`);
const bytes = readFileSync(join(dirname(pkgFile), JSON.parse(readFileSync(pkgFile, 'utf8')).main));
const source: AddonSource = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: () => bytes };
const options = { sha256: () => createHash('sha256') };
const fileIn = (cache: string) => join(cache, 'native', `keyring-${source.sha256.slice(0, 16)}.node`);

const pinned: number[] = [];
/** Takes the lowest free descriptor number, the one the last load used, until the file ends. */
const pin = () => pinned.push(openSync(ROOT, 'r'));
afterAll(() => {
  for (const fd of pinned) closeSync(fd);
  cleanupTempDirs();
});

function load(cache: string, afterHash?: (file: string) => void): Record<string, unknown> {
  try {
    return loadAddon(cache, source, { ...options, afterHash }) as Record<string, unknown>;
  } finally {
    pin();
  }
}

describe('the keyring addon of the single executable', () => {
  test('is unpacked into <cache>/native (0700) as a 0700 file of its hash, and loaded', () => {
    const cache = join(tempDir('addon'), 'cache');
    const addon = load(cache);
    expect(typeof addon.Entry).toBe('function');
    expect(statSync(join(cache, 'native')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(cache, 'native'))).toEqual([`keyring-${source.sha256.slice(0, 16)}.node`]);
    expect(readFileSync(fileIn(cache)).equals(bytes)).toBe(true);
    expect(statSync(fileIn(cache)).mode & 0o777).toBe(0o700);
  });

  test('the bytes loaded are the bytes hashed: a file swapped in at the path after the hash is not what gets loaded', () => {
    const root = tempDir('addon');
    const cache = join(root, 'cache');
    // Already unpacked (by hand: a load here would leave glibc holding the path's name), so the load hashes the file that is there.
    mkdirSync(join(cache, 'native'), { recursive: true, mode: 0o700 });
    writeFileSync(fileIn(cache), bytes, { mode: 0o700 });
    const tampered = join(root, 'tampered.node');
    writeFileSync(tampered, 'not the addon: a loader that opened the path again would fail on these bytes', { mode: 0o700 });
    let swapped = false;
    const addon = load(cache, (file) => {
      renameSync(tampered, file);
      swapped = true;
    });
    expect(swapped).toBe(true);
    expect(readFileSync(fileIn(cache), 'utf8')).toMatch(/^not the addon/);
    expect(typeof addon.Entry).toBe('function');
  });

  test('the same when the file is swapped right after a fresh copy is written and hashed', () => {
    const root = tempDir('addon');
    const cache = join(root, 'cache');
    const tampered = join(root, 'tampered.node');
    writeFileSync(tampered, 'not the addon', { mode: 0o700 });
    const addon = load(cache, (file) => renameSync(tampered, file));
    expect(typeof addon.Entry).toBe('function');
  });

  test('a file with other bytes, or a link, at the path is replaced by the embedded addon before loading', () => {
    const cache = join(tempDir('addon'), 'cache');
    mkdirSync(join(cache, 'native'), { recursive: true, mode: 0o700 });
    writeFileSync(fileIn(cache), 'stale', { mode: 0o700 });
    expect(typeof load(cache).Entry).toBe('function');
    expect(readFileSync(fileIn(cache)).equals(bytes)).toBe(true);

    const other = join(dirname(cache), 'elsewhere.node');
    writeFileSync(other, bytes, { mode: 0o700 });
    const linked = join(tempDir('addon'), 'cache');
    mkdirSync(join(linked, 'native'), { recursive: true, mode: 0o700 });
    symlinkSync(other, fileIn(linked));
    expect(typeof load(linked).Entry).toBe('function');
    expect(statSync(fileIn(linked)).isFile()).toBe(true);
    expect(readFileSync(other).equals(bytes)).toBe(true);
  });

  test('a cache folder with a parent that group or others can write is refused, and nothing is unpacked below it', () => {
    const open = join(tempDir('addon'), 'shared');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const cache = join(open, 'me', 'cache', 'chatctl');
    expect(() => load(cache)).toThrow(`the cache folder's parent ${open} can be written by group or others; the keyring addon is not unpacked below it`);
    expect(existsSync(join(cache, 'native'))).toBe(false);

    chmodSync(open, 0o775);
    expect(() => load(cache)).toThrow(`the cache folder's parent ${open} can be written by group or others`);
  });

  test('the parents are checked where they really are: a link to a folder under an open parent is refused', () => {
    const root = tempDir('addon');
    const open = join(root, 'shared');
    mkdirSync(join(open, 'cache'), { recursive: true });
    chmodSync(open, 0o777);
    symlinkSync(join(open, 'cache'), join(root, 'via-link'));
    expect(() => load(join(root, 'via-link'))).toThrow(`the cache folder's parent ${open} can be written by group or others`);
  });

  test('a world-writable parent with the sticky bit (as /tmp) is allowed: no one else can rename the folder below it', () => {
    const sticky = join(tempDir('addon'), 'sticky');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    expect(typeof load(join(sticky, 'cache')).Entry).toBe('function');
  });

  test('the cache folder itself open to others is refused as before', () => {
    const cache = join(tempDir('addon'), 'cache');
    mkdirSync(cache);
    chmodSync(cache, 0o770);
    expect(() => load(cache)).toThrow(`the cache folder ${cache} can be written by group or others; the keyring addon is not unpacked there`);
  });
});
