import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openConfigStore } from '../../src/config/store.js';
import { configDir } from '../../src/config/paths.js';
import { CliError } from '../../src/errors/cli-error.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-store-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;

describe('config store', () => {
  it('a missing file reads as empty; the first write makes folder 0700 and file 0600', () => {
    const cfgDir = join(dir, 'nested', 'chatctl');
    const s = openConfigStore(cfgDir);
    expect(s.read()).toEqual({});
    s.update((d) => ({ ...d, profiles: { a: { baseUrl: 'https://x' } } }));
    expect(mode(cfgDir)).toBe(0o700);
    expect(mode(join(cfgDir, 'config.json'))).toBe(0o600);
    expect(s.read().profiles?.a?.baseUrl).toBe('https://x');
  });

  it('a corrupt file is exit 3 naming the file, and is never overwritten', () => {
    const path = join(dir, 'config.json');
    writeFileSync(path, '{"profiles": {', { mode: 0o600 });
    const s = openConfigStore(dir);
    for (const action of [() => s.read(), () => s.update(() => ({}))]) {
      try {
        action();
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

  it('tightens a folder or file with looser permissions, and says so', () => {
    mkdirSync(join(dir, 'c'), { mode: 0o755 });
    chmodSync(join(dir, 'c'), 0o755);
    writeFileSync(join(dir, 'c', 'config.json'), '{}');
    chmodSync(join(dir, 'c', 'config.json'), 0o644);
    const warnings: string[] = [];
    const s = openConfigStore(join(dir, 'c'), (m) => warnings.push(m));
    s.update((d) => d);
    expect(mode(join(dir, 'c'))).toBe(0o700);
    expect(mode(join(dir, 'c', 'config.json'))).toBe(0o600);
    expect(warnings.join('\n')).toMatch(/tightened/);
  });

  it('eight processes updating at once all land', async () => {
    const run = promisify(execFile);
    const script = `
      import { openConfigStore } from ${JSON.stringify(new URL('../../src/config/store.ts', import.meta.url).pathname)};
      const s = openConfigStore(process.argv[2]);
      s.update((d) => ({ ...d, profiles: { ...(d.profiles ?? {}), ['p' + process.argv[3]]: { baseUrl: 'https://x/' + process.argv[3] } } }));
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

describe('config folder', () => {
  it('CHATCTL_CONFIG_DIR wins; otherwise the platform folder', () => {
    expect(configDir({ CHATCTL_CONFIG_DIR: '/x/y' })).toBe('/x/y');
    expect(configDir({ XDG_CONFIG_HOME: '/xdg' }, 'linux', '/home/u')).toBe('/xdg/chatctl');
    expect(configDir({}, 'linux', '/home/u')).toBe('/home/u/.config/chatctl');
    expect(configDir({}, 'darwin', '/Users/u')).toBe('/Users/u/Library/Application Support/chatctl');
    expect(configDir({ APPDATA: 'C:\\AppData' }, 'win32', 'C:\\u')).toContain('chatctl');
  });
});
