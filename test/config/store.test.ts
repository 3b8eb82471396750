import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { openConfigStore } from '../../src/config/store.js';
import { writeWithConf } from '../../src/config/conf-writer.js';
import { configDir, parseConfigData, profileOf } from '../../src/config/schema.js';
import { CliError } from '../../src/errors/cli-error.js';
import { makeFolders } from '../../src/system/files.js';
import { cleanupTempDirs, runCli } from '../support/run.js';

afterAll(cleanupTempDirs);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-store-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;

describe('config store', () => {
  it('a missing file reads as empty; the first write makes folder 0700 and file 0600', async () => {
    const cfgDir = join(dir, 'nested', 'chatctl');
    const s = openConfigStore(cfgDir);
    expect(s.read()).toEqual({});
    await s.update((d) => ({ ...d, profiles: { a: { baseUrl: 'https://x' } } }));
    expect(mode(cfgDir)).toBe(0o700);
    expect(mode(join(cfgDir, 'config.json'))).toBe(0o600);
    expect(s.read().profiles?.a?.baseUrl).toBe('https://x');
  });

  it('a corrupt file is exit 3 naming the file, and is never overwritten', async () => {
    const path = join(dir, 'config.json');
    writeFileSync(path, '{"profiles": {', { mode: 0o600 });
    const s = openConfigStore(dir);
    for (const action of [async () => s.read(), () => s.update(() => ({}))]) {
      try {
        await action();
        throw new Error('expected a failure');
      } catch (e) {
        expect(e).toBeInstanceOf(CliError);
        expect((e as CliError).exitCode).toBe(3);
        expect((e as CliError).message).toContain(path);
      }
    }
    expect(readFileSync(path, 'utf8')).toBe('{"profiles": {');
  });

  it('a file of the wrong shape is a config error too', () => {
    writeFileSync(join(dir, 'config.json'), '{"profiles": {"a": {"baseUrl": 5}}}');
    expect(() => openConfigStore(dir).read()).toThrow(/unexpected shape at profiles\.a\.baseUrl/);
  });

  it('tightens a folder or file readable by group or others, and says so', async () => {
    mkdirSync(join(dir, 'c'), { mode: 0o755 });
    chmodSync(join(dir, 'c'), 0o755);
    writeFileSync(join(dir, 'c', 'config.json'), '{}');
    chmodSync(join(dir, 'c', 'config.json'), 0o644);
    const warnings: string[] = [];
    const s = openConfigStore(join(dir, 'c'), { warn: (m) => warnings.push(m) });
    await s.update((d) => d);
    expect(mode(join(dir, 'c'))).toBe(0o700);
    expect(mode(join(dir, 'c', 'config.json'))).toBe(0o600);
    expect(warnings.join('\n')).toMatch(/tightened/);
  });

  it('a reader never fails while another process keeps replacing config.json (atomic renames, as writers do)', async () => {
    const cfg = join(dir, 'cfg');
    mkdirSync(cfg, { mode: 0o700 });
    writeFileSync(join(cfg, 'config.json'), '{"version":1}', { mode: 0o600 });
    // Replaces the file as fast as it can (temporary file, then rename)
    // until the reader has seen enough of its versions: counted, not timed.
    const stop = join(dir, 'stop');
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `
      const fs = require('node:fs');
      const [dir, stop] = process.argv.slice(1);
      for (let i = 0; i < 1e6 && !fs.existsSync(stop); i++) {
        const tmp = dir + '/config.json.tmp' + (i % 2);
        fs.writeFileSync(tmp, JSON.stringify({ version: 1, profiles: { ['p' + i]: { baseUrl: 'https://x/' + i } } }), { mode: 0o600 });
        fs.renameSync(tmp, dir + '/config.json');
      }
    `,
        cfg,
        stop,
      ],
      { stdio: 'ignore' },
    );
    let swapping = true;
    const exited = new Promise((r) => swapper.on('exit', r)).then(() => (swapping = false));
    const store = openConfigStore(cfg);
    const seen = new Set<string>();
    const failures: string[] = [];
    // Reads while the swapper runs, until 50 of its versions were read whole.
    while (swapping && seen.size < 50) {
      for (let i = 0; i < 20; i++) {
        try {
          seen.add(Object.keys(store.read().profiles ?? {}).join());
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
      await new Promise((r) => setImmediate(r));
    }
    writeFileSync(stop, '');
    await exited;
    expect(seen.size).toBeGreaterThanOrEqual(50); // the reads came between the swapper's replacements
    expect(failures.slice(0, 3)).toEqual([]);
  });

  it('eight processes updating at once all land', async () => {
    const run = promisify(execFile);
    const script = `
      import { openConfigStore } from ${JSON.stringify(new URL('../../src/config/store.ts', import.meta.url).pathname)};
      const s = openConfigStore(process.argv[2]);
      await s.update((d) => ({ ...d, profiles: { ...(d.profiles ?? {}), ['p' + process.argv[3]]: { baseUrl: 'https://x/' + process.argv[3] } } }));
    `;
    const file = join(dir, 'writer.mts');
    writeFileSync(file, script);
    // vitest's loader is not available to a child process: bundle the writer once with esbuild.
    const { buildSync } = await import('esbuild');
    const out = join(dir, 'writer.mjs');
    buildSync({ entryPoints: [file], bundle: true, platform: 'node', format: 'esm', outfile: out, logLevel: 'silent' });
    const cfg = join(dir, 'cfg');
    await Promise.all(Array.from({ length: 8 }, (_, i) => run(process.execPath, [out, cfg, String(i)])));
    const profiles = openConfigStore(cfg).read().profiles ?? {};
    expect(Object.keys(profiles).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7']);
  });
});

function configFailure(fn: () => unknown): CliError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    expect((e as CliError).exitCode).toBe(3);
    return e as CliError;
  }
  throw new Error('expected a failure');
}

describe('what the store refuses (docs/configuration.md), at once and naming the path', () => {
  const cfg = () => join(dir, 'config.json');
  const seed = (text: string | Buffer = '{"version":1}\n') => writeFileSync(cfg(), text, { mode: 0o600 });

  it.each([0o777, 0o770, 0o720, 0o702])('a folder writable by group or others (mode %o) is refused, not tightened', (m) => {
    seed();
    chmodSync(dir, m);
    const e = configFailure(() => openConfigStore(dir).read());
    expect(e.message).toContain(dir);
    expect(e.message).toMatch(/can be written by/);
    expect(e.hint).toContain(`chmod 700 ${dir}`);
    expect(mode(dir)).toBe(m);
  });

  it.each([0o666, 0o620, 0o602])('a file writable by group or others (mode %o) is refused, not tightened', (m) => {
    seed();
    chmodSync(cfg(), m);
    const e = configFailure(() => openConfigStore(dir).read());
    expect(e.message).toContain(cfg());
    expect(e.hint).toContain('chmod 600');
    expect(mode(cfg())).toBe(m);
  });

  it('a folder or file owned by another user is refused (the uid is injected here; e2e uses chown)', () => {
    seed();
    const e = configFailure(() => openConfigStore(dir, { uid: 4242 }).read());
    expect(e.message).toMatch(/belongs to another user/);
    expect(e.message).toContain(dir);
  });

  it('a symbolic link is refused, not followed', () => {
    writeFileSync(join(dir, 'real.json'), '{"version":1}', { mode: 0o600 });
    symlinkSync(join(dir, 'real.json'), cfg());
    expect(configFailure(() => openConfigStore(dir).read()).message).toMatch(/config\.json is a symbolic link/);
  });

  it('a FIFO is refused without being opened (this would hang otherwise)', () => {
    execFileSync('mkfifo', ['-m', '600', cfg()]);
    expect(configFailure(() => openConfigStore(dir).read()).message).toMatch(/is a FIFO/);
  });

  it('a folder in place of the file is refused', () => {
    mkdirSync(cfg());
    expect(configFailure(() => openConfigStore(dir).read()).message).toMatch(/is a folder, not a regular file/);
  });

  it.each([
    ['invalid UTF-8', Buffer.from('{"version":1,"profiles":{"a\xff":{}}}', 'latin1'), /not valid UTF-8/],
    ['a lone surrogate encoded', Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]), /not valid UTF-8/],
    ['a byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{}')]), /not valid JSON/],
  ])('%s is refused and the file left as it is', async (_label, bytes, message) => {
    seed(bytes);
    const s = openConfigStore(dir);
    expect(configFailure(() => s.read()).message).toMatch(message);
    await expect(s.update((d) => d)).rejects.toThrow(message);
    expect(readFileSync(cfg()).equals(bytes)).toBe(true);
  });
});

describe('the shape of config.json (parseConfigData)', () => {
  it.each([
    ['[]', '(top level)'],
    ['null', '(top level)'],
    ['{"version":2}', 'version'],
    ['{"version":"1"}', 'version'],
    ['{"currentProfile":3}', 'currentProfile'],
    ['{"profiles":[]}', 'profiles'],
    ['{"profiles":"p"}', 'profiles'],
    ['{"profiles":{"p":null}}', 'profiles.p'],
    ['{"profiles":{"p":["x"]}}', 'profiles.p'],
    ['{"profiles":{"p":{"baseUrl":"https://a"},"q":{"token":5}}}', 'profiles.q.token'],
    ['{"profiles":{"p":{"csrfToken":null}}}', 'profiles.p.csrfToken'],
  ])('%s does not fit, at %s', (text, where) => {
    expect(parseConfigData(JSON.parse(text))).toEqual({ where });
  });

  it('every field optional, unknown keys dropped, profiles in a null-prototype map', () => {
    const parsed = parseConfigData(JSON.parse('{"version":1,"currentProfile":"p","extra":true,"profiles":{"p":{"baseUrl":"https://a","token":"t","color":"red"},"__proto__":{},"q":{}}}'));
    expect('data' in parsed).toBe(true);
    const data = (parsed as { data: { version?: number; currentProfile?: string; profiles: Record<string, unknown> } }).data;
    expect(data.version).toBe(1);
    expect(data.currentProfile).toBe('p');
    expect(Object.getPrototypeOf(data.profiles)).toBeNull();
    expect(Object.keys(data.profiles).sort()).toEqual(['__proto__', 'p', 'q']);
    expect(data.profiles.p).toEqual({ baseUrl: 'https://a', token: 't' });
    expect(data.profiles.q).toEqual({});
    expect(parseConfigData({})).toEqual({ data: {} });
  });
});

describe('profile names are plain keys', () => {
  it('"constructor", "toString" and "__proto__" are absent unless stored, and stored ones are ordinary entries', async () => {
    const s = openConfigStore(dir);
    const empty = s.read();
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) expect(profileOf({ profiles: {} }, name)).toBeUndefined();
    expect(profileOf(empty, 'constructor')).toBeUndefined();
    writeFileSync(join(dir, 'config.json'), '{"profiles":{"__proto__":{"baseUrl":"https://p.example"},"constructor":{"orgId":1}}}', { mode: 0o600 });
    const data = s.read();
    expect(Object.keys(data.profiles!).sort()).toEqual(['__proto__', 'constructor']);
    expect(profileOf(data, '__proto__')).toEqual({ baseUrl: 'https://p.example' });
    expect(profileOf(data, 'constructor')).toEqual({}); // unknown fields dropped, as before
    await s.update((d) => d);
    const written = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { profiles: Record<string, unknown> };
    expect(Object.hasOwn(written.profiles, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(written.profiles, '__proto__')?.value).toEqual({ baseUrl: 'https://p.example' });
    expect(({} as Record<string, unknown>).baseUrl).toBeUndefined(); // nothing leaked onto Object.prototype
  });
});

describe('file format: chatctl 0.1 and this version read and write the same bytes', () => {
  const fixture = new URL('../support/data/config-0.1.0.json', import.meta.url);

  it('a file written by chatctl 0.1 is read, and an unchanged write gives back its exact bytes', async () => {
    const bytes = readFileSync(fixture);
    writeFileSync(join(dir, 'config.json'), bytes, { mode: 0o600 });
    const s = openConfigStore(dir);
    expect(s.read().currentProfile).toBe('prod');
    expect(profileOf(s.read(), 'staging')?.token).toBe('tok_old_staging_YmFy');
    await s.update((d) => d);
    expect(readFileSync(join(dir, 'config.json')).equals(bytes)).toBe(true);
  });

  it('conf writes the canonical document with mode 0600, replacing a 0644 file (never 0666 under umask 0)', () => {
    const file = join(dir, 'config.json');
    writeFileSync(file, '{}', { mode: 0o644 });
    chmodSync(file, 0o644);
    const old = process.umask(0);
    try {
      writeWithConf(dir, { version: 1, profiles: { a: { baseUrl: 'https://a' } } }, false);
    } finally {
      process.umask(old);
    }
    expect(mode(file)).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe('{\n  "version": 1,\n  "profiles": {\n    "a": {\n      "baseUrl": "https://a"\n    }\n  }\n}\n');
    expect(readdirSync(dir)).toEqual(['config.json']);
  });

  // conf's write (atomically) would resolve a link and write its target:
  // under the lock, right before it writes, config.json must be a regular file or absent.
  it('a symbolic link put where config.json was is refused before conf writes, its target untouched', () => {
    const target = join(dir, 'elsewhere.json');
    writeFileSync(target, '{}', { mode: 0o600 });
    mkdirSync(join(dir, 'c'), { mode: 0o700 });
    symlinkSync(target, join(dir, 'c', 'config.json'));
    let caught: unknown;
    try {
      writeWithConf(join(dir, 'c'), { version: 1 }, false);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).exitCode).toBe(3);
    expect((caught as CliError).message).toBe(`cannot write config file ${join(dir, 'c', 'config.json')}: ENOTREG`);
    expect(readFileSync(target, 'utf8')).toBe('{}');
    expect(readdirSync(join(dir, 'c'))).toEqual(['config.json']);
  });

  it('chatctl run with SNAP set (Node.js from the Snap Store), with which conf writes in place, still replaces config.json whole', async () => {
    const cfg = join(dir, 'cfg');
    mkdirSync(cfg, { mode: 0o700 });
    const file = join(cfg, 'config.json');
    writeFileSync(file, '{"version":1}\n', { mode: 0o600 });
    const before = statSync(file).ino;
    const r = await runCli(['profile', 'set', 'a', '--base-url', 'https://a.example'], { env: { CHATCTL_CONFIG_DIR: cfg, SNAP: '/snap/node/10000' }, spawn: true });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(statSync(file).ino).not.toBe(before);
    expect(JSON.parse(readFileSync(file, 'utf8')).profiles).toEqual({ a: { baseUrl: 'https://a.example' } });
  });
});

describe("conf's leftovers", () => {
  it('a temporary file a killed conf write left beside config.json is removed by the next write once a minute old; a fresh one is kept', async () => {
    writeFileSync(join(dir, 'config.json'), '{"version":1}\n', { mode: 0o600 });
    const old = join(dir, 'config.json.tmp-1764245687a1b2c3');
    const fresh = join(dir, 'config.json.tmp-1764245699d4e5f6');
    for (const f of [old, fresh]) writeFileSync(f, '{"version":1,"profiles":{"a":{"token":"tok_x"}}}', { mode: 0o600 });
    const t = Date.now() / 1000 - 120;
    utimesSync(old, t, t);
    await openConfigStore(dir).update((d) => ({ ...d, currentProfile: 'a' }));
    expect(readdirSync(dir).sort()).toEqual(['config.json', 'config.json.tmp-1764245699d4e5f6']);
  });
});

describe('config folder', () => {
  it('CHATCTL_CONFIG_DIR wins; otherwise the platform folder', () => {
    expect(configDir({ CHATCTL_CONFIG_DIR: '/x/y' })).toBe('/x/y');
    expect(configDir({ XDG_CONFIG_HOME: '/xdg' }, 'linux', '/home/u')).toBe('/xdg/chatctl');
    expect(configDir({}, 'linux', '/home/u')).toBe('/home/u/.config/chatctl');
    expect(configDir({}, 'darwin', '/Users/u')).toBe('/Users/u/Library/Application Support/chatctl');
    expect(configDir({ APPDATA: 'C:\\AppData' }, 'win32', 'C:\\u')).toContain('chatctl');
  });

  // Node's recursive mkdirSync never returns for these (it loops, growing,
  // until the process is killed): chatctl's own folder creation fails at once.
  it.each(['/proc/self/nonexistent/x', '/proc/1/foo'])('CHATCTL_CONFIG_DIR=%s: exit 3 at once, naming the folder, never a hang', async (bad) => {
    const r = await runCli(['profile', 'set', 'p', '--base-url', 'https://x.example', '--org', 'o'], { env: { CHATCTL_CONFIG_DIR: bad } });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain(`cannot create config folder ${bad}: ENOENT`);
    expect(r.stderr).toContain('point CHATCTL_CONFIG_DIR at a folder of your own');
  });

  it('makeFolders makes each missing level once (0700), says which it made first, and accepts an existing folder', () => {
    const deep = join(dir, 'a', 'b', 'c');
    expect(makeFolders(deep, 0o700)).toBe(join(dir, 'a'));
    expect([join(dir, 'a'), join(dir, 'a', 'b'), deep].map(mode)).toEqual([0o700, 0o700, 0o700]);
    expect(makeFolders(deep, 0o700)).toBeUndefined();
    writeFileSync(join(dir, 'file'), '');
    expect(() => makeFolders(join(dir, 'file', 'x'), 0o700)).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });
});
