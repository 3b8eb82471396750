// bin/chatctl.js's V8 code cache: keyed by the bundle's bytes, so an upgrade
// in place with the same size and mtime runs the new code; the cache folder
// is neither read nor written when another user owns it or others can write
// it. Each test runs a copy of the built package (bin/, dist/).
import { afterAll, describe, expect, test } from 'vitest';
import { execa } from 'execa';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE, ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

afterAll(() => cleanupTempDirs());

const OLD = 'no profiles yet';
const NEW = 'NO PROFILES YET'; // same length: the bundle keeps its size

/** npm gives every installed file this mtime (1985-10-26T08:15:00Z). */
const NPM_MTIME = 499162500;

/** A copy of the built package, as an install would have it. */
async function install(): Promise<string> {
  const root = tempDir('pkg');
  for (const part of ['bin', 'dist', 'package.json']) cpSync(join(ROOT, part), join(root, part), { recursive: true });
  utimesSync(join(root, 'dist', 'main.cjs'), NPM_MTIME, NPM_MTIME);
  return root;
}

/** Rewrites dist/main.cjs in place with `from` → `to` (same length) and the same normalised mtime, as an upgrade by a package manager would. */
function upgradeInPlace(pkg: string, from: string, to: string): void {
  const file = join(pkg, 'dist', 'main.cjs');
  const before = statSync(file);
  expect(before.mtimeMs).toBe(NPM_MTIME * 1000);
  const text = readFileSync(file, 'latin1');
  expect(text).toContain(from);
  const next = text.replace(from, to);
  expect(next.length).toBe(text.length);
  writeFileSync(file, next, 'latin1');
  utimesSync(file, NPM_MTIME, NPM_MTIME);
  const after = statSync(file);
  expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs]);
}

/**
 * A preload that sets the clock of a chatctl process `ms` ahead: the
 * launcher's only reference for "this bundle changed within the last two
 * seconds" is Date.now().
 */
function clockAhead(ms: number): string {
  const file = join(tempDir('clock'), 'ahead.cjs');
  writeFileSync(file, `const now = Date.now;\nDate.now = () => now() + ${ms};\n`);
  return file;
}

/** `profile list` on an empty config prints a notice from main.cjs's code: which version ran. */
async function notice(pkg: string, cacheDir: string, preload?: string): Promise<string> {
  const home = tempDir('home');
  const r = await execa(NODE, [...(preload ? ['--require', preload] : []), join(pkg, 'bin', 'chatctl.js'), 'profile', 'list'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CHATCTL_CONFIG_DIR: join(home, 'cfg'), CHATCTL_CACHE_DIR: cacheDir, NO_COLOR: '1' },
    extendEnv: false,
    reject: false,
    timeout: 20_000,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  if (r.stderr.includes(NEW)) return NEW;
  if (r.stderr.includes(OLD)) return OLD;
  throw new Error(`unexpected output: ${r.stderr}`);
}

const caches = (dir: string) => {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith('.v8'))
      .sort();
  } catch {
    return [];
  }
};

describe('compile cache', () => {
  // The cache holds what a run compiled. One written by another command
  // (`sandbox`, `exit-codes`) left `webhooks rotate` compiling most of its
  // path anew on every run (about 4 ms a rotation), so each command has its
  // own; and a failing run, which went only part of the way, writes none.
  test('one cache per command, named after it, written only by a run that succeeded', async () => {
    const pkg = await install();
    const cache = join(tempDir('cache'), 'chatctl');
    const run = (args: string[]) =>
      execa(NODE, [join(pkg, 'bin', 'chatctl.js'), ...args], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tempDir('home'), CHATCTL_CONFIG_DIR: join(tempDir('cfg'), 'c'), CHATCTL_CACHE_DIR: cache, NO_COLOR: '1' },
        extendEnv: false,
        reject: false,
      });
    expect((await run(['--profile', 'prod', 'profile', 'list'])).exitCode).toBe(0);
    expect((await run(['exit-codes', '--json'])).exitCode).toBe(0);
    expect((await run(['profile', 'list'])).exitCode).toBe(0); // the same command: its cache is read, not written again
    expect((await run(['webhooks', 'rotate', '--mode', 'sideways'])).exitCode).toBe(2); // fails: no cache
    expect(caches(cache).map((n) => n.replace(/^main-.*@/, '@'))).toEqual(['@exit-codes.v8', '@profile.list.v8']);
  });

  test('old caches are pruned: those of the four newest builds stay, each with at most 32 commands; of the notes, the 16 newest', async () => {
    const pkg = await install();
    const cache = join(tempDir('cache'), 'chatctl');
    mkdirSync(cache, { recursive: true, mode: 0o700 });
    // Six older builds with two commands each, oldest first; and one build with 40 commands.
    const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 0, minutes));
    const make = (name: string, when: Date) => {
      writeFileSync(join(cache, name), 'x', { mode: 0o600 });
      utimesSync(join(cache, name), when, when);
    };
    for (const [i, b] of ['a', 'b', 'c', 'd', 'e', 'f'].entries()) for (const c of ['x', 'y']) make(`main-old${b}-v20-x64-0@${c}.v8`, at(i));
    for (let i = 0; i < 40; i++) make(`main-many-v20-x64-0@cmd${i}.v8`, at(100 + i));
    for (let i = 0; i < 20; i++) make(`bundle-${String(i).padStart(8, '0')}.sha256`, at(i));
    const r = await execa(NODE, [join(pkg, 'bin', 'chatctl.js'), 'exit-codes'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tempDir('home'), CHATCTL_CACHE_DIR: cache },
      extendEnv: false,
    });
    expect(r.exitCode).toBe(0);
    const left = caches(cache);
    const builds = [...new Set(left.map((n) => n.split('@')[0]!))];
    // This run's build, "many" (newest of the old), then "oldf" and "olde".
    expect(builds.filter((b) => b.startsWith('main-old')).sort()).toEqual(['main-olde-v20-x64-0', 'main-oldf-v20-x64-0']);
    expect(builds).toHaveLength(4);
    expect(left.filter((n) => n.startsWith('main-many-'))).toHaveLength(32);
    expect(left.filter((n) => n.startsWith('main-many-')).every((n) => Number(/cmd(\d+)/.exec(n)![1]) >= 8)).toBe(true); // the newest 32
    // Notes (one per install path): the 16 newest stay. (This run writes none: its bundle was copied just now, so it is hashed again next time.)
    const notes = readdirSync(cache).filter((n) => n.endsWith('.sha256'));
    expect(notes).toHaveLength(16);
    expect(notes.filter((n) => /^bundle-0000000[0-3]\.sha256$/.test(n))).toEqual([]);
  });

  test("the launcher's lists are the program's: the global options that take a value, the commands with subcommands", async () => {
    const { GLOBALS_WITH_VALUE } = await import('../../src/app/cli.js');
    const launcher = readFileSync(join(ROOT, 'bin', 'chatctl.js'), 'utf8');
    const list = (name: string) => {
      const listed = new RegExp(`const ${name} = \\[([^\\]]*)\\]`).exec(launcher)?.[1];
      expect(listed, `bin/chatctl.js has a list named ${name}`).toMatch(/^\s*'[^']+'(?:,\s*'[^']+')*,?\s*$/);
      return new Set([...listed!.matchAll(/'([^']+)'/g)].map((m) => m[1]));
    };
    expect(list('withValue')).toEqual(GLOBALS_WITH_VALUE);
    type Node = { name: string; aliases?: string[]; commands?: Node[] };
    const tree = JSON.parse(readFileSync(join(ROOT, 'dist', 'tree.json'), 'utf8')) as Node;
    const groups = (tree.commands ?? []).filter((c) => (c.commands ?? []).length > 0).flatMap((c) => [c.name, ...(c.aliases ?? [])]);
    expect(list('groups')).toEqual(new Set(groups));
  });

  // A hostile review: `sandbox --token T` (exit 0 on Ctrl-C) named its caches after T.
  test('a value given to a command never reaches a cache name: sandbox --token, profile show NAME', async () => {
    const pkg = await install();
    const cache = join(tempDir('cache'), 'chatctl');
    const home = tempDir('home');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CHATCTL_CONFIG_DIR: join(home, 'cfg'), CHATCTL_CACHE_DIR: cache, NO_COLOR: '1' };
    const bin = join(pkg, 'bin', 'chatctl.js');
    expect((await execa(NODE, [bin, 'profile', 'set', 'hunter2prod', '--base-url', 'https://a.example'], { env, extendEnv: false })).exitCode).toBe(0);
    expect((await execa(NODE, [bin, 'profile', 'show', 'hunter2prod'], { env, extendEnv: false })).exitCode).toBe(0);
    const sandbox = spawn(NODE, [bin, 'sandbox', '--token', 'hunter2-sandbox-token', '--port', '0', '--json'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    const exited = new Promise<number | null>((r) => sandbox.on('exit', (code) => r(code)));
    await new Promise<void>((r) => sandbox.stdout.on('data', (c: Buffer) => c.toString().includes('\n') && r()));
    sandbox.kill('SIGINT');
    expect(await exited).toBe(0);
    const names = readdirSync(cache).filter((n) => n.endsWith('.v8'));
    // main.cjs's caches, and those of the lazy bundles the commands loaded (conf, sandbox).
    expect([...new Set(names.map((n) => n.replace(/^[a-z]+-.*@/, '@')))].sort()).toEqual(['@profile.set.v8', '@profile.show.v8', '@sandbox.v8']);
    expect(names.join(' ')).not.toContain('hunter2');
  });

  test('an upgrade of dist/main.cjs in place, same size and same mtime, runs the new code', async () => {
    const pkg = await install();
    const cache = join(tempDir('cache'), 'chatctl');
    // Within two seconds of a change to the bundle's stat, every run hashes it
    // again; past them, a run remembers the hash for that stat. Every run
    // here has its clock 3 s ahead (the same preload for all, so one cache
    // name per bundle), so the bundle copied just now is already past them,
    // and the remembered hash is what the runs rely on.
    const ahead = clockAhead(3_000);
    expect(await notice(pkg, cache, ahead)).toBe(OLD);
    expect(readdirSync(cache).filter((n) => n.endsWith('.sha256'))).toHaveLength(1);
    expect(await notice(pkg, cache, ahead)).toBe(OLD); // from the cache
    expect(caches(cache)).toHaveLength(1);
    upgradeInPlace(pkg, OLD, NEW);
    expect(await notice(pkg, cache, ahead)).toBe(NEW);
    expect(await notice(pkg, cache, ahead)).toBe(NEW);
    expect(caches(cache)).toHaveLength(2);
    // …and back again, with the stat of the first version's mtime.
    upgradeInPlace(pkg, NEW, OLD);
    expect(await notice(pkg, cache, ahead)).toBe(OLD);
  });

  test('the cache folder is created 0700, its files 0600', async () => {
    const pkg = await install();
    const cache = join(tempDir('cache'), 'nested', 'chatctl');
    await notice(pkg, cache);
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    for (const n of readdirSync(cache)) expect(statSync(join(cache, n)).mode & 0o777).toBe(0o600);
  });

  describe('a folder others can write, or another user owns, is neither read nor written', () => {
    /**
     * A poisoned cache: code compiled from the NEW bundle, filed under the
     * OLD bundle's name. V8 checks only the source's length, so a run that
     * reads it prints NEW from the OLD bundle.
     */
    let made: Promise<{ pkg: string; cache: string }> | undefined;
    /** Made once; each test gets a copy of the poisoned folder (0700, this user's) to spoil. */
    async function poisoned(): Promise<{ pkg: string; cache: string }> {
      made ??= (async () => {
        const pkg = await install();
        const cache = join(tempDir('cache'), 'chatctl');
        expect(await notice(pkg, cache)).toBe(OLD);
        const [oldName] = caches(cache);
        const other = await install();
        upgradeInPlace(other, OLD, NEW);
        const otherCache = join(tempDir('cache'), 'chatctl');
        expect(await notice(other, otherCache)).toBe(NEW);
        copyFileSync(join(otherCache, caches(otherCache)[0]!), join(cache, oldName!));
        expect(await notice(pkg, cache)).toBe(NEW); // the poison works on a trusted folder
        return { pkg, cache };
      })();
      const { pkg, cache: original } = await made;
      const cache = join(tempDir('cache'), 'chatctl');
      cpSync(original, cache, { recursive: true });
      chmodSync(cache, 0o700);
      expect(await notice(pkg, cache)).toBe(NEW); // the copy is poisoned too, while trusted
      return { pkg, cache };
    }

    test('writable by others (0777): not read', async () => {
      const { pkg, cache } = await poisoned();
      chmodSync(cache, 0o777);
      expect(await notice(pkg, cache)).toBe(OLD);
    });

    test('writable by its group (0770): not read', async () => {
      const { pkg, cache } = await poisoned();
      chmodSync(cache, 0o770);
      expect(await notice(pkg, cache)).toBe(OLD);
    });

    test('owned by another user (uid 65534), mode 0700: not read', async () => {
      const { pkg, cache } = await poisoned();
      chownSync(cache, 65534, 65534);
      expect(await notice(pkg, cache)).toBe(OLD);
    });

    test.each([
      ['0777', (d: string) => chmodSync(d, 0o777)],
      ['owned by uid 65534', (d: string) => chownSync(d, 65534, 65534)],
    ])('%s: nothing is written into it', async (_label, spoil) => {
      const pkg = await install();
      const cache = join(tempDir('cache'), 'chatctl');
      mkdirSync(cache, { mode: 0o700 });
      spoil(cache);
      await notice(pkg, cache);
      await notice(pkg, cache);
      expect(readdirSync(cache)).toEqual([]);
    });
  });
});
