// Issue 5, item 4: the config never loses data. Concurrent `profile set`
// runs all land; a corrupt file is never overwritten; loose permissions are
// tightened with a warning.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CREATE,
  CSRF,
  ScriptServer,
  TOKEN,
  cleanupTempDirs,
  json,
  leaks,
  listAll,
  modeOf,
  parseErrorLine,
  runCli,
  scopeEnv,
  secretBody,
  stackTrace,
  workspace,
  type Workspace,
} from './support.js';

let server: ScriptServer;
beforeAll(async () => {
  server = await new ScriptServer().start();
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});
beforeEach(() => server.reset((_q, res) => json(res, 201, secretBody())));

const configPath = (ws: Workspace) => join(ws.configDir, 'config.json');

function readConfig(ws: Workspace): { profiles?: Record<string, Record<string, unknown>>; [k: string]: unknown } {
  return JSON.parse(readFileSync(configPath(ws), 'utf8'));
}

describe('concurrent writers', () => {
  test.each([1, 2, 3])('eight `profile set pN` started at once all land (round %i); 0600 file, 0700 folder, no leftovers', async () => {
    const ws = workspace();
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => runCli(['profile', 'set', `p${i}`, '--base-url', `https://x${i}.example`, '--org', `o${i}`], { ws })),
    );
    for (const r of runs) {
      expect(r.exitCode, r.stderr).toBe(0);
      expect(stackTrace(r.stderr)).toBeUndefined();
    }
    const cfg = readConfig(ws);
    expect(Object.keys(cfg.profiles ?? {}).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7']);
    for (let i = 0; i < 8; i++) {
      expect(cfg.profiles![`p${i}`]).toMatchObject({ baseUrl: `https://x${i}.example`, organizationId: `o${i}` });
    }
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(modeOf(ws.configDir)).toBe(0o700);
    expect(listAll(ws.configDir)).toEqual(['config.json']); // no lock, no temporary file
  });

  test('eight concurrent writers of different kinds (profile set on new and on the same profile, auth login) all land', async () => {
    const ws = workspace();
    await runCli(['profile', 'set', 'base', '--base-url', 'https://b.example', '--org', 'o'], { ws });
    const runs = await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => runCli(['profile', 'set', `q${i}`, '--base-url', 'https://q.example', '--org', 'o'], { ws })),
      runCli(['auth', 'login', '--with-token', '--profile', 'base'], { ws, input: `${TOKEN}\n` }),
      runCli(['profile', 'set', 'base', '--app', 'a1'], { ws }),
      runCli(['profile', 'set', 'base', '--env', 'e1'], { ws }),
    ]);
    for (const r of runs) expect(r.exitCode, r.stderr).toBe(0);
    const cfg = readConfig(ws);
    expect(Object.keys(cfg.profiles ?? {}).sort()).toEqual(['base', 'q0', 'q1', 'q2', 'q3', 'q4']);
    expect(cfg.profiles!.base).toMatchObject({ baseUrl: 'https://b.example', organizationId: 'o', applicationId: 'a1', environmentKey: 'e1', token: TOKEN });
    expect(modeOf(configPath(ws))).toBe(0o600);
  });
});

describe('a corrupt config.json is never overwritten', () => {
  const corruptions: [string, string | Buffer][] = [
    ['truncated JSON', '{"version":1,"profiles":{"prod":{"baseUrl":"https://api.exa'],
    ['valid JSON of the wrong shape', '{"version":1,"profiles":"not an object"}\n'],
    ['binary garbage', Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x22, 0x80, 0x0a])],
    ['empty file', ''],
  ];

  test.each(corruptions)('%s: profile set, auth login --with-token, webhooks create → exit 3 naming the file; bytes unchanged', async (_label, content) => {
    const ws = workspace();
    mkdirSync(ws.configDir, { mode: 0o700 });
    const file = configPath(ws);
    writeFileSync(file, content, { mode: 0o600 });
    const before = readFileSync(file);
    const secretFile = join(ws.cwd, 's.whsec');
    const runs = [
      await runCli(['--json', 'profile', 'set', 'prod', '--base-url', 'https://x.example', '--org', 'o'], { ws }),
      await runCli(['--json', 'auth', 'login', '--with-token'], { ws, input: `${TOKEN}\n` }),
      await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0'], { ws, env: scopeEnv(server.url) }),
      await runCli(['--json', 'profile', 'use', 'prod'], { ws }),
      await runCli(['--json', 'profile', 'remove', 'prod'], { ws }),
      await runCli(['--json', 'auth', 'logout'], { ws }),
    ];
    for (const r of runs) {
      expect(stackTrace(r.stderr), r.stderr).toBeUndefined();
      expect(leaks(r.stderr, [TOKEN, CSRF])).toEqual([]);
      const line = parseErrorLine(r.stderr);
      expect({ exit: r.exitCode, code: line.error.code }, r.stderr).toEqual({ exit: 3, code: 'config_error' });
      expect(line.error.message).toContain(file);
      expect(readFileSync(file).equals(before)).toBe(true);
    }
    expect(server.hits).toBe(0);
    expect(existsSync(secretFile)).toBe(false);
    expect(listAll(ws.configDir)).toEqual(['config.json']); // no lock, no temporary file left
  });
});

describe('loose permissions', () => {
  function seeded(): Workspace {
    const ws = workspace();
    mkdirSync(ws.configDir, { mode: 0o700 });
    writeFileSync(configPath(ws), JSON.stringify({ version: 1, profiles: { prod: { baseUrl: 'https://x.example', organizationId: 'o' } } }) + '\n', { mode: 0o600 });
    return ws;
  }

  test('file 0644 → tightened to 0600 with a warning, by a write (profile set)', async () => {
    const ws = seeded();
    chmodSync(configPath(ws), 0o644);
    const r = await runCli(['profile', 'set', 'prod', '--app', 'a'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
    expect(readConfig(ws).profiles!.prod).toMatchObject({ baseUrl: 'https://x.example', organizationId: 'o', applicationId: 'a' });
  });

  test('file 0644 → tightened with a warning, by a read (profile list)', async () => {
    const ws = seeded();
    chmodSync(configPath(ws), 0o644);
    const r = await runCli(['profile', 'list'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
  });

  test('folder 0755 → tightened to 0700 with a warning naming the folder (profile set)', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    const r = await runCli(['profile', 'set', 'prod', '--app', 'a'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(modeOf(ws.configDir)).toBe(0o700);
    expect(r.stderr).toMatch(/warning: .*tightened/);
    expect(r.stderr.split('\n').some((l) => l.includes('warning') && l.includes(ws.configDir) && !l.includes('config.json'))).toBe(true);
  });

  test('folder 0755 and file 0644 → both tightened, with warnings, by a webhooks run that only reads the config', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    chmodSync(configPath(ws), 0o644);
    const secretFile = join(ws.cwd, 's.whsec');
    const r = await runCli([...CREATE, '--secret-file', secretFile, '--max-retries', '0'], { ws, env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(modeOf(ws.configDir)).toBe(0o700);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
    expect(r.stderr.split('\n').some((l) => l.includes('warning') && l.includes(ws.configDir) && !l.includes('config.json'))).toBe(true);
  });

  test('with --json the same run tightens both and keeps stderr empty (it holds only an error line)', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    chmodSync(configPath(ws), 0o644);
    const secretFile = join(ws.cwd, 's.whsec');
    const r = await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0'], { ws, env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(modeOf(ws.configDir)).toBe(0o700);
    expect(r.stderr).toBe('');
  });

  test('a token stored through a 0644 file ends up only in a 0600 file', async () => {
    const ws = seeded();
    chmodSync(configPath(ws), 0o644);
    const r = await runCli(['auth', 'login', '--with-token', '--profile', 'prod'], { ws, input: `${TOKEN}\n` });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(leaks(r.stderr, [TOKEN])).toEqual([]);
    expect(modeOf(configPath(ws))).toBe(0o600);
    expect(readConfig(ws).profiles!.prod!.token).toBe(TOKEN);
  });
});
