// Where values come from, profiles, stored tokens,
// the config folder and file, and configuration errors (exit 3, nothing sent).
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { NODE, ROOT, TOKEN, mutationBody, scopeEnv } from '../../support/fixtures.js';
import { parseErrorLine, parseStdoutJson } from '../../support/json.js';
import { type Workspace, buildEnv, tempDir, cleanupTempDirs, listFiles, fileMode, runCli, workspace } from '../../support/run.js';
import { type RecordingServer, closedPort, startServer } from '../../support/server.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await startServer();
  server.setHandler(() => ({ status: 200, body: mutationBody() }));
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});
beforeEach(() => {
  server.requests.length = 0;
});

const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--json'];
const tokenOf = (name: string) => `tok_stored_${name}_c3RvcmVkLXRva2Vu`;
const path = (org: string, app: string, env: string) => `/v1/organizations/${org}/applications/${app}/environments/${env}/webhook-endpoints/we_1/reactivate`;

async function expectConfigError(args: string[], env: Record<string, string | undefined>, ws?: Workspace): Promise<Awaited<ReturnType<typeof runCli>>> {
  const r = await runCli(args, { env, ws });
  expect(r.exitCode, r.stderr).toBe(3);
  expect(server.requests).toHaveLength(0);
  expect(r.stdout).toBe('');
  if (args.includes('--json')) {
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('config_error');
    expect(line.error.status).toBeNull();
    expect(line.error.requestId).toBeNull();
    expect(line.exitCode).toBe(3);
  } else {
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
  }
  return r;
}

describe('configuration errors: exit 3, nothing sent', () => {
  for (const missing of ['CHATCTL_BASE_URL', 'CHATCTL_ORG', 'CHATCTL_APP', 'CHATCTL_ENV', 'CHATCTL_TOKEN']) {
    test(`${missing} missing (no profile either)`, async () => {
      await expectConfigError(REACTIVATE, scopeEnv(server.url, { [missing]: undefined }));
    });
  }

  test('http: base URL with a non-loopback host (human mode)', async () => {
    await expectConfigError(
      REACTIVATE.filter((a) => a !== '--json'),
      scopeEnv('http://example.com'),
    );
  });

  test('http: base URL with a non-loopback host (--json)', async () => {
    await expectConfigError(REACTIVATE, scopeEnv('http://example.com:8080'));
  });

  for (const base of ['http://127.0.0.1.example.com:9', 'http://localhost.example.com', 'http://0.0.0.0:9', 'http://10.0.0.1:9']) {
    test(`${base} is not loopback: exit 3 even for --dry-run`, async () => {
      await expectConfigError([...REACTIVATE, '--dry-run'], scopeEnv(base));
    });
  }

  test('http://127.0.0.2 is loopback (dry run accepted)', async () => {
    const r = await runCli([...REACTIVATE, '--dry-run'], { env: scopeEnv('http://127.0.0.2:9') });
    expect(r.exitCode, r.stderr).toBe(0);
    expect((parseStdoutJson(r.stdout) as { request: { url: string } }).request.url).toBe(`http://127.0.0.2:9${path('org_1', 'app_1', 'prod')}`);
  });

  test('https: base URL with any host (dry run accepted)', async () => {
    const r = await runCli([...REACTIVATE, '--dry-run'], { env: scopeEnv('https://api.example.com') });
    expect(r.exitCode, r.stderr).toBe(0);
    expect((parseStdoutJson(r.stdout) as { request: { url: string } }).request.url).toBe(`https://api.example.com${path('org_1', 'app_1', 'prod')}`);
  });

  test('unknown --profile name', async () => {
    await expectConfigError([...REACTIVATE, '--profile', 'nope'], scopeEnv(server.url));
  });

  test('unknown --profile name with an existing config', async () => {
    const ws = workspace();
    const set = await runCli(['profile', 'set', 'real', '--base-url', server.url, '--org', 'o', '--app', 'a', '--env', 'e'], { ws });
    expect(set.exitCode, set.stderr).toBe(0);
    await expectConfigError(['--profile', 'nope', ...REACTIVATE], { CHATCTL_TOKEN: TOKEN }, ws);
  });

  describe('corrupt config.json', () => {
    const corrupt = '{"profiles": {"default": {"baseUrl": "http://127.0.0.1:1",, oops\n';
    function corruptWs(): { ws: Workspace; file: string } {
      const ws = workspace();
      mkdirSync(ws.configDir, { mode: 0o700 });
      const file = join(ws.configDir, 'config.json');
      writeFileSync(file, corrupt, { mode: 0o600 });
      return { ws, file };
    }

    test('an API command exits 3 naming the file; the file is unchanged', async () => {
      const { ws, file } = corruptWs();
      const r = await expectConfigError(
        REACTIVATE.filter((a) => a !== '--json'),
        scopeEnv(server.url),
        ws,
      );
      expect(r.stderr).toContain(file);
      expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/); // no stack trace
      expect(readFileSync(file, 'utf8')).toBe(corrupt);
    });

    test('--json: config_error line naming the file', async () => {
      const { ws, file } = corruptWs();
      const r = await expectConfigError(REACTIVATE, scopeEnv(server.url), ws);
      expect(parseErrorLine(r.stderr).error.message).toContain(file);
      expect(readFileSync(file, 'utf8')).toBe(corrupt);
    });

    for (const args of [
      ['profile', 'list'],
      ['profile', 'set', 'x', '--base-url', 'https://a.example', '--org', 'o', '--app', 'a', '--env', 'e'],
      ['profile', 'use', 'default'],
      ['auth', 'logout'],
    ]) {
      test(`${args.slice(0, 2).join(' ')} exits 3 and never overwrites it`, async () => {
        const { ws, file } = corruptWs();
        const r = await runCli(args, { ws, input: '' });
        expect(r.exitCode, r.stderr).toBe(3);
        expect(r.stderr).toContain(file);
        expect(readFileSync(file, 'utf8')).toBe(corrupt);
      });
    }

    test('valid JSON of the wrong shape ([1,2]) is corrupt too', async () => {
      const ws = workspace();
      mkdirSync(ws.configDir, { mode: 0o700 });
      const file = join(ws.configDir, 'config.json');
      writeFileSync(file, '[1,2]\n', { mode: 0o600 });
      const r = await expectConfigError(REACTIVATE, scopeEnv(server.url), ws);
      expect(r.stderr).toContain(file);
      expect(readFileSync(file, 'utf8')).toBe('[1,2]\n');
    });

    test('auth login --with-token exits 3 and never overwrites it', async () => {
      const { ws, file } = corruptWs();
      const r = await runCli(['auth', 'login', '--with-token'], { ws, input: `${TOKEN}\n` });
      expect(r.exitCode).toBe(3);
      expect(readFileSync(file, 'utf8')).toBe(corrupt);
      expect(r.stdout + r.stderr).not.toContain(TOKEN);
    });
  });
});

describe('profiles', () => {
  /** A config built once through the CLI, copied into each test's workspace. */
  let template: Workspace;
  let deadPort: number;

  beforeAll(async () => {
    deadPort = await closedPort();
    template = workspace();
    const run = async (args: string[], input = '') => {
      const r = await runCli(args, { ws: template, input });
      expect(r.exitCode, `${args.join(' ')}\n${r.stderr}`).toBe(0);
      expect(r.stdout + r.stderr).not.toContain(input.trim() || '\u0000');
      return r;
    };
    for (const name of ['default', 'p1', 'p2', 'p3']) {
      await run(['profile', 'set', name, '--base-url', server.url, '--org', `o_${name}`, '--app', `a_${name}`, '--env', `e_${name}`]);
    }
    await run(['profile', 'set', 'dead', '--base-url', `http://127.0.0.1:${deadPort}`, '--org', 'o_dead', '--app', 'a_dead', '--env', 'e_dead']);
    await run(['profile', 'set', 'p4', '--base-url', server.url, '--org', 'o_p4', '--app', 'a_p4', '--env', 'e_p4', '--origin', 'https://console.example.com', '--csrf-token', 'csrf_p4_value']);
    await run(['profile', 'set', 'notoken', '--base-url', server.url, '--org', 'o_nt', '--app', 'a_nt', '--env', 'e_nt']);
    await run(['auth', 'login', '--with-token'], `${tokenOf('default')}\n`);
    for (const name of ['p1', 'p2', 'p3', 'p4', 'dead']) await run(['auth', 'login', '--with-token', '--profile', name], `${tokenOf(name)}\n`);
  });

  function fresh(): Workspace {
    const ws = workspace();
    cpSync(template.configDir, ws.configDir, { recursive: true });
    // cpSync keeps the folder's mode on Node 20, not on Node 24: 0700, as chatctl made it.
    chmodSync(ws.configDir, 0o700);
    return ws;
  }

  async function reactivateIn(ws: Workspace, extraArgs: string[] = [], env: Record<string, string> = {}) {
    const r = await runCli([...REACTIVATE, ...extraArgs], { ws, env });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    return server.requests[0]!;
  }

  test('folder created with mode 0700, config.json 0600', () => {
    expect(fileMode(template.configDir)).toBe(0o700);
    expect(fileMode(join(template.configDir, 'config.json'))).toBe(0o600);
  });

  test('stored tokens live only in config.json', () => {
    const files = [...listFiles(template.configDir), ...listFiles(template.home), ...listFiles(template.cwd)];
    const config = join(template.configDir, 'config.json');
    for (const name of ['default', 'p1', 'p2', 'p3', 'p4', 'dead']) {
      const holders = files.filter((f) => readFileSync(f, 'utf8').includes(tokenOf(name)));
      expect(holders, name).toEqual([config]);
    }
  });

  test('no selection → the "default" profile and its stored token', async () => {
    const req = await reactivateIn(fresh());
    expect(req.url).toBe(path('o_default', 'a_default', 'e_default'));
    expect(req.headers['authorization']).toBe(`Bearer ${tokenOf('default')}`);
    expect(req.headers['origin']).toBe(server.url);
    expect(req.headers['x-service-csrf']).toBe('1');
  });

  test('profile use p1 → p1', async () => {
    const ws = fresh();
    expect((await runCli(['profile', 'use', 'p1'], { ws })).exitCode).toBe(0);
    const req = await reactivateIn(ws);
    expect(req.url).toBe(path('o_p1', 'a_p1', 'e_p1'));
    expect(req.headers['authorization']).toBe(`Bearer ${tokenOf('p1')}`);
  });

  test('CHATCTL_PROFILE beats profile use', async () => {
    const ws = fresh();
    expect((await runCli(['profile', 'use', 'p1'], { ws })).exitCode).toBe(0);
    const req = await reactivateIn(ws, [], { CHATCTL_PROFILE: 'p3' });
    expect(req.url).toBe(path('o_p3', 'a_p3', 'e_p3'));
    expect(req.headers['authorization']).toBe(`Bearer ${tokenOf('p3')}`);
  });

  test('--profile beats CHATCTL_PROFILE and profile use (before or after the subcommand)', async () => {
    const ws = fresh();
    expect((await runCli(['profile', 'use', 'p1'], { ws })).exitCode).toBe(0);
    const req = await reactivateIn(ws, ['--profile', 'p2'], { CHATCTL_PROFILE: 'p3' });
    expect(req.url).toBe(path('o_p2', 'a_p2', 'e_p2'));
    expect(req.headers['authorization']).toBe(`Bearer ${tokenOf('p2')}`);
    server.requests.length = 0;
    const r = await runCli(['--profile', 'p2', ...REACTIVATE], { ws, env: { CHATCTL_PROFILE: 'p3' } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests[0]!.url).toBe(path('o_p2', 'a_p2', 'e_p2'));
  });

  test('environment beats the profile, value by value', async () => {
    const req = await reactivateIn(fresh(), ['--profile', 'p2'], { CHATCTL_ORG: 'o_env', CHATCTL_TOKEN: TOKEN });
    expect(req.url).toBe(path('o_env', 'a_p2', 'e_p2'));
    expect(req.headers['authorization']).toBe(`Bearer ${TOKEN}`);
  });

  test('flag beats the environment', async () => {
    const req = await reactivateIn(fresh(), ['--profile', 'p2', '--org', 'o_flag', '--env', 'e_flag'], {
      CHATCTL_ORG: 'o_env',
      CHATCTL_ENV: 'e_env',
    });
    expect(req.url).toBe(path('o_flag', 'a_p2', 'e_flag'));
  });

  test('CHATCTL_BASE_URL beats the profile base URL; --base-url beats CHATCTL_BASE_URL', async () => {
    const ws = fresh();
    const a = await reactivateIn(ws, ['--profile', 'dead'], { CHATCTL_BASE_URL: server.url });
    expect(a.url).toBe(path('o_dead', 'a_dead', 'e_dead'));
    expect(a.headers['authorization']).toBe(`Bearer ${tokenOf('dead')}`);
    server.requests.length = 0;
    const b = await reactivateIn(ws, ['--profile', 'dead', '--base-url', server.url], {
      CHATCTL_BASE_URL: 'http://example.com',
    });
    expect(b.url).toBe(path('o_dead', 'a_dead', 'e_dead'));
  });

  test('Origin and CSRF value from the profile; environment beats them', async () => {
    const ws = fresh();
    const a = await reactivateIn(ws, ['--profile', 'p4']);
    expect(a.headers['origin']).toBe('https://console.example.com');
    expect(a.headers['x-service-csrf']).toBe('csrf_p4_value');
    server.requests.length = 0;
    const b = await reactivateIn(ws, ['--profile', 'p4'], {
      CHATCTL_ORIGIN: 'https://other.example.com',
      CHATCTL_CSRF_TOKEN: 'csrf_env_value',
    });
    expect(b.headers['origin']).toBe('https://other.example.com');
    expect(b.headers['x-service-csrf']).toBe('csrf_env_value');
  });

  test('a profile without a token → exit 3, nothing sent', async () => {
    await expectConfigError(['--profile', 'notoken', ...REACTIVATE], {}, fresh());
  });

  test('CHATCTL_TOKEN is used but never written to any file', async () => {
    const ws = fresh();
    const envToken = 'tok_from_env_ZW52LXRva2Vu';
    const req = await reactivateIn(ws, ['--profile', 'notoken'], { CHATCTL_TOKEN: envToken });
    expect(req.headers['authorization']).toBe(`Bearer ${envToken}`);
    for (const f of [...listFiles(ws.configDir), ...listFiles(ws.home), ...listFiles(ws.cwd)]) expect(readFileSync(f, 'utf8'), f).not.toContain(envToken);
  });

  test('profile show --json: no token, says whether one is stored', async () => {
    const ws = fresh();
    const withTok = await runCli(['profile', 'show', 'p1', '--json'], { ws });
    const without = await runCli(['profile', 'show', 'notoken', '--json'], { ws });
    expect(withTok.exitCode).toBe(0);
    expect(without.exitCode).toBe(0);
    expect(withTok.stdout + withTok.stderr).not.toContain(tokenOf('p1'));
    const a = parseStdoutJson(withTok.stdout);
    const b = parseStdoutJson(without.stdout);
    expect(JSON.stringify(a)).toContain('o_p1');
    expect(JSON.stringify(b)).toContain('o_nt');
    const flags = (v: unknown, out: Record<string, boolean> = {}, prefix = ''): Record<string, boolean> => {
      if (v && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          if (typeof x === 'boolean' && /token/i.test(k)) out[prefix + k] = x;
          else flags(x, out, `${prefix}${k}.`);
        }
      return out;
    };
    const fa = flags(a);
    const fb = flags(b);
    const keys = Object.keys(fa).filter((k) => fa[k] === true && fb[k] === false);
    expect(keys, `token flags: ${JSON.stringify(fa)} vs ${JSON.stringify(fb)}`).toEqual(['tokenStored']);
  });

  test('profile list --json: every profile, no tokens', async () => {
    const ws = fresh();
    const r = await runCli(['profile', 'list', '--json'], { ws });
    expect(r.exitCode).toBe(0);
    const text = JSON.stringify(parseStdoutJson(r.stdout));
    for (const name of ['default', 'p1', 'p2', 'p3', 'p4', 'notoken', 'dead']) {
      expect(text).toContain(`"${name}"`);
      expect(text).not.toContain(tokenOf(name));
    }
  });

  test('auth status --json: no token shown', async () => {
    const ws = fresh();
    const r = await runCli(['auth', 'status', '--json', '--profile', 'p1'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    parseStdoutJson(r.stdout);
    expect(r.stdout + r.stderr).not.toContain(tokenOf('p1'));
    const d = await runCli(['auth', 'status', '--debug'], { ws });
    expect(d.stdout + d.stderr).not.toContain(tokenOf('default'));
  });

  test('auth logout removes the stored token; the profile then has none (exit 3)', async () => {
    const ws = fresh();
    const out = await runCli(['auth', 'logout', '--profile', 'p1'], { ws });
    expect(out.exitCode, out.stderr).toBe(0);
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).not.toContain(tokenOf('p1'));
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).toContain(tokenOf('p2'));
    expect(fileMode(join(ws.configDir, 'config.json'))).toBe(0o600);
    await expectConfigError(['--profile', 'p1', ...REACTIVATE], {}, ws);
  });

  test('profile remove: gone from the list, and selecting it is exit 3', async () => {
    const ws = fresh();
    const rm = await runCli(['profile', 'remove', 'p2'], { ws });
    expect(rm.exitCode, rm.stderr).toBe(0);
    const list = await runCli(['profile', 'list', '--json'], { ws });
    expect(JSON.stringify(parseStdoutJson(list.stdout))).not.toContain('"p2"');
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).not.toContain(tokenOf('p2'));
    await expectConfigError(['--profile', 'p2', ...REACTIVATE], {}, ws);
  });

  test('profile remove says whether a token went with it, and how to choose a profile when the one in use is gone', async () => {
    const ws = fresh();
    const withToken = await runCli(['profile', 'remove', 'p1'], { ws });
    expect(withToken.stderr).toBe('chatctl: profile "p1" removed with its stored token\n');
    const without = await runCli(['profile', 'remove', 'notoken'], { ws });
    expect(without.stderr).toBe('chatctl: profile "notoken" removed\n');
    expect((await runCli(['profile', 'use', 'p2'], { ws })).exitCode).toBe(0);
    const current = await runCli(['profile', 'remove', 'p2'], { ws });
    expect(current.stderr).toBe('chatctl: profile "p2" removed with its stored token; "default" is in use now\n');
    expect((await runCli(['profile', 'use', 'p3'], { ws })).exitCode).toBe(0);
    expect((await runCli(['profile', 'remove', 'default'], { ws })).exitCode).toBe(0);
    const last = await runCli(['profile', 'remove', 'p3'], { ws });
    expect(last.stderr).toMatch(/^chatctl: profile "p3" removed with its stored token; no profile is in use now: choose one with chatctl profile use \w+\n$/);
    const named = /profile use (\w+)/.exec(last.stderr)![1]!;
    expect((await runCli(['profile', 'use', named], { ws })).exitCode).toBe(0);
  });

  test('CHATCTL_PROFILE naming an unknown profile → exit 3, nothing sent', async () => {
    await expectConfigError(REACTIVATE, { CHATCTL_PROFILE: 'ghost' }, fresh());
  });

  test('login via stdin for the env-selected profile stores it there', async () => {
    const ws = fresh();
    const t = 'tok_new_for_p3_bmV3LXRva2Vu';
    const r = await runCli(['auth', 'login', '--with-token'], { ws, env: { CHATCTL_PROFILE: 'p3' }, input: `${t}\n` });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(t);
    const req = await reactivateIn(ws, ['--profile', 'p3']);
    expect(req.headers['authorization']).toBe(`Bearer ${t}`);
    const other = await runCli(REACTIVATE, { ws });
    expect(other.exitCode).toBe(0);
    expect(server.requests[1]!.headers['authorization']).toBe(`Bearer ${tokenOf('default')}`);
  });
});

describe('no auth trap: profile set, then auth login, then a command (no profile use)', () => {
  test('the first profile becomes current; login stores into it and names it; the command uses both', async () => {
    const ws = workspace();
    const set = await runCli(['profile', 'set', 'prod', '--base-url', server.url, '--org', 'o_prod', '--app', 'a_prod', '--env', 'e_prod'], { ws });
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stderr).toContain('profile "prod" saved; it is the current profile');
    const login = await runCli(['auth', 'login', '--with-token'], { ws, input: `${tokenOf('prod')}\n` });
    expect(login.exitCode, login.stderr).toBe(0);
    expect(login.stderr).toContain('token stored in profile "prod" (the current profile)');
    expect(login.stdout + login.stderr).not.toContain(tokenOf('prod'));
    const r = await runCli(REACTIVATE, { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests[0]!.url).toBe(path('o_prod', 'a_prod', 'e_prod'));
    expect(server.requests[0]!.headers['authorization']).toBe(`Bearer ${tokenOf('prod')}`);
    const cfg = JSON.parse(readFileSync(join(ws.configDir, 'config.json'), 'utf8'));
    expect(cfg.currentProfile).toBe('prod');
    expect(Object.keys(cfg.profiles)).toEqual(['prod']); // no hidden "default"
  });

  test('a second profile set does not change the current profile', async () => {
    const ws = workspace();
    await runCli(['profile', 'set', 'prod', '--base-url', server.url], { ws });
    const second = await runCli(['profile', 'set', 'staging', '--base-url', server.url], { ws });
    expect(second.stderr).toContain('profile "staging" saved');
    expect(second.stderr).not.toContain('current');
    expect(JSON.parse(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).currentProfile).toBe('prod');
  });

  test.each([
    [['--profile', 'p2'], {}, 'p2', 'named by --profile'],
    [[], { CHATCTL_PROFILE: 'p2' }, 'p2', 'named by CHATCTL_PROFILE'],
  ])('login %j %j stores into %s and says why', async (args, env, name, why) => {
    const ws = workspace();
    await runCli(['profile', 'set', 'p1', '--base-url', server.url], { ws });
    const r = await runCli(['auth', 'login', '--with-token', ...args], { ws, env, input: 'tok_named_dG9rZW4\n' });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`token stored in profile "${name}" (${why})`);
    const cfg = JSON.parse(readFileSync(join(ws.configDir, 'config.json'), 'utf8'));
    expect(cfg.profiles[name].token).toBe('tok_named_dG9rZW4');
    expect(cfg.profiles.p1.token).toBeUndefined();
  });

  test('with no profile at all, login says the token went to "default" and how to choose one', async () => {
    const r = await runCli(['auth', 'login', '--with-token'], { input: 'tok_default_ZGVm\n' });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('token stored in profile "default" (no profile chosen');
  });
});

describe("auth status: the profile in effect and why, each value and its source, the token's source", () => {
  async function status(ws: Workspace, args: string[], env: Record<string, string | undefined> = {}) {
    const r = await runCli(['auth', 'status', '--json', ...args], { ws, env });
    expect(r.stdout + r.stderr).not.toContain(tokenOf('prod'));
    expect(r.stdout + r.stderr).not.toContain('csrf_secret_value');
    return { exitCode: r.exitCode, doc: parseStdoutJson(r.stdout) as Record<string, any>, stderr: r.stderr };
  }
  async function configured(): Promise<Workspace> {
    const ws = workspace();
    await runCli(['profile', 'set', 'prod', '--base-url', 'https://prod.example', '--org', 'o_prod', '--app', 'a_prod', '--env', 'e_prod', '--csrf-token', 'csrf_secret_value'], { ws });
    await runCli(['profile', 'set', 'p', '--base-url', 'https://p.example', '--org', 'o_p'], { ws });
    await runCli(['auth', 'login', '--with-token'], { ws, input: `${tokenOf('prod')}\n` });
    return ws;
  }

  test('the current profile: values from the profile, token from config', async () => {
    const { exitCode, doc } = await status(await configured(), []);
    expect(exitCode).toBe(0);
    expect(doc).toMatchObject({
      profile: 'prod',
      profileSource: 'current',
      profileExists: true,
      baseUrl: 'https://prod.example',
      tokenStored: true,
      scope: {
        baseUrl: { value: 'https://prod.example', source: 'profile' },
        organizationId: { value: 'o_prod', source: 'profile' },
        applicationId: { value: 'a_prod', source: 'profile' },
        environmentKey: { value: 'e_prod', source: 'profile' },
        origin: { value: 'https://prod.example', source: 'default' },
        csrfToken: { source: 'profile' },
      },
      token: { source: 'file', stored: true },
    });
  });

  test('global flags are honoured: --profile p --base-url X shows X from the flag', async () => {
    const ws = await configured();
    const r = await runCli(['--profile', 'p', '--base-url', 'http://127.0.0.1:9', '--json', 'auth', 'status'], { ws, env: { CHATCTL_TOKEN: TOKEN, CHATCTL_APP: 'a_env' } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(parseStdoutJson(r.stdout)).toMatchObject({
      profile: 'p',
      profileSource: 'flag',
      baseUrl: 'http://127.0.0.1:9',
      scope: {
        baseUrl: { value: 'http://127.0.0.1:9', source: 'flag' },
        organizationId: { value: 'o_p', source: 'profile' },
        applicationId: { value: 'a_env', source: 'env' },
        environmentKey: { value: null, source: 'none' },
      },
      token: { source: 'env', stored: false },
    });
    expect(r.stdout).not.toContain(TOKEN);
    const human = await runCli(['--profile', 'p', '--base-url', 'http://127.0.0.1:9', 'auth', 'status'], { ws, env: { CHATCTL_TOKEN: TOKEN } });
    expect(human.stdout).toMatch(/profile:\s+p \(named by --profile\)/);
    expect(human.stdout).toMatch(/base URL:\s+http:\/\/127\.0\.0\.1:9 \(from --base-url\)/);
    expect(human.stdout).toMatch(/org:\s+o_p \(from profile "p"\)/);
    expect(human.stdout).toMatch(/env:\s+- \(not set\)/);
    expect(human.stdout).toMatch(/token:\s+from CHATCTL_TOKEN/);
    expect(human.stdout + human.stderr).not.toContain(TOKEN);
  });

  test('CHATCTL_PROFILE names the profile; a profile without a token is exit 3 with the sources still shown', async () => {
    const { exitCode, doc } = await status(await configured(), [], { CHATCTL_PROFILE: 'p' });
    expect(exitCode).toBe(3);
    expect(doc).toMatchObject({ profile: 'p', profileSource: 'env', token: { source: 'none', stored: false } });
  });

  test('no profile at all: "default", from the fallback', async () => {
    const { exitCode, doc } = await status(workspace(), [], { CHATCTL_TOKEN: TOKEN, CHATCTL_BASE_URL: 'https://env.example' });
    expect(exitCode).toBe(0);
    expect(doc).toMatchObject({ profile: 'default', profileSource: 'default', profileExists: false, scope: { baseUrl: { value: 'https://env.example', source: 'env' } }, token: { source: 'env' } });
  });
});

describe('config.json written by chatctl 0.1', () => {
  const fixture = join(ROOT, 'test', 'support', 'data', 'config-0.1.0.json');
  // The commands that produced the fixture with chatctl 0.1.0.
  const steps: [string[], string?][] = [
    [['profile', 'set', 'staging', '--base-url', 'https://staging.example.com/api/', '--org', 'org_s', '--app', 'app_s', '--env', 'stg']],
    [
      [
        'profile',
        'set',
        'prod',
        '--base-url',
        'https://api.example.com',
        '--org',
        'org_p',
        '--app',
        'app_p',
        '--env',
        'production',
        '--origin',
        'https://console.example.com',
        '--csrf-token',
        'csrf_p',
      ],
    ],
    [['auth', 'login', '--with-token', '--profile', 'prod'], 'tok_old_prod_Zm9v\n'],
    [['profile', 'use', 'prod']],
    [['auth', 'login', '--with-token', '--profile', 'staging'], 'tok_old_staging_YmFy\n'],
    [['profile', 'set', 'staging', '--env', '']],
  ];

  test('is read as it is (profiles, current profile, tokens)', async () => {
    const ws = workspace();
    mkdirSync(ws.configDir, { mode: 0o700 });
    writeFileSync(join(ws.configDir, 'config.json'), readFileSync(fixture), { mode: 0o600 });
    const list = await runCli(['profile', 'list', '--json'], { ws });
    expect(list.exitCode, list.stderr).toBe(0);
    const doc = parseStdoutJson(list.stdout) as { current: string; profiles: { name: string; tokenStored: boolean; environmentKey: string | null }[] };
    expect(doc.current).toBe('prod');
    expect(doc.profiles.map((p) => [p.name, p.tokenStored, p.environmentKey])).toEqual([
      ['prod', true, 'production'],
      ['staging', true, null],
    ]);
    const r = await runCli([...REACTIVATE, '--base-url', server.url], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests[0]!.url).toBe(path('org_p', 'app_p', 'production'));
    expect(server.requests[0]!.headers['authorization']).toBe('Bearer tok_old_prod_Zm9v');
    expect(server.requests[0]!.headers['x-service-csrf']).toBe('csrf_p');
  });

  test('the same commands today write the very same bytes (so chatctl 0.1 reads what this version writes)', async () => {
    const ws = workspace();
    for (const [args, input] of steps) {
      const r = await runCli(args, { ws, input: input ?? '' });
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).toBe(readFileSync(fixture, 'utf8'));
  });
});

describe('conf is loaded only by the commands that write config.json', () => {
  test('without dist/lazy/conf.cjs, every reading command works; a writing one does not', async () => {
    const pkg = tempDir('pkg');
    for (const part of ['bin', 'dist', 'package.json']) cpSync(join(ROOT, part), join(pkg, part), { recursive: true });
    const ws = workspace();
    const run = (args: string[], env: Record<string, string> = {}) =>
      execa(NODE, [join(pkg, 'bin', 'chatctl.js'), ...args], { env: buildEnv(ws, env), extendEnv: false, reject: false, input: '', timeout: 20_000 });
    expect((await run(['profile', 'set', 'prod', '--base-url', server.url, '--org', 'o', '--app', 'a', '--env', 'e'])).exitCode).toBe(0);
    rmSync(join(pkg, 'dist', 'lazy', 'conf.cjs'));
    for (const args of [['profile', 'list', '--json'], ['profile', 'show'], ['auth', 'status', '--json'], [...REACTIVATE], [...REACTIVATE, '--dry-run'], ['exit-codes']]) {
      const r = await run(args, { CHATCTL_TOKEN: TOKEN });
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect((await run(['profile', 'set', 'prod', '--app', 'x'])).exitCode).not.toBe(0);
  });
});
