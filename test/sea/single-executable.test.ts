// The single executable (`npm run package`, scripts/package.mjs and
// src/sea/launcher.ts) as a user without Node runs it: copied alone into an
// empty folder, started there with a PATH that has no `node` and no
// node_modules anywhere near: the fast answers, completion, `chatctl
// sandbox`, create and rotate against it, and a token stored in a real
// Secret Service (gnome-keyring in a D-Bus session of the test's own) and
// used for a request; the keyring's addon is unpacked into a private
// folder, replaced when its bytes are not the embedded ones, and not
// unpacked into a folder others can write.
//
// Real processes: the executable is the thing under test. It is built once
// per set of inputs (the sources of dist/, the packaging script, this Node)
// into node_modules/.cache/chatctl/sea/<Node version>/ (`package.mjs
// --cached`, which `npm run bench` uses too), where later runs find it current
// (a few seconds in a fresh clone, nothing after); .ci/run runs it on Node 20
// and again on Node 24.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NODE, PKG_VERSION, ROOT } from '../support/fixtures.js';
import { keyringLookup, keyringTestsRequired, missingKeyringTools, startKeyringSession, warnIfKeyringSkipped, type KeyringSession } from '../support/keyring-session.js';
import { cleanupTempDirs, tempDir, waitFor } from '../support/run.js';
import { scaled } from '../support/slowdown.js';

const missing = missingKeyringTools();
warnIfKeyringSkipped('test/sea/single-executable.test.ts', missing);

let folder: string;
let exe: string;
let home: string;
/** A PATH without node: only the tools a shell destination uses, linked one by one. */
let path: string;

beforeAll(() => {
  const built = execFileSync(NODE, [join(ROOT, 'scripts', 'package.mjs'), '--cached'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 }).trim();
  const root = tempDir('sea');
  folder = join(root, 'empty');
  home = join(root, 'home');
  const bin = join(root, 'bin');
  for (const d of [folder, home, bin]) mkdirSync(d);
  exe = join(root, 'chatctl');
  copyFileSync(built, exe);
  chmodSync(exe, 0o755);
  for (const tool of ['sh', 'cat']) execFileSync('ln', ['-s', execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(bin, tool)]);
  path = bin;
}, scaled(300_000));
afterAll(() => cleanupTempDirs());

const baseEnv = (): Record<string, string> => ({ PATH: path, HOME: home, LANG: 'C.UTF-8', NO_COLOR: '1', XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') });

function run(args: string[], env: Record<string, string> = {}, input?: string) {
  const r = spawnSync(exe, args, { cwd: folder, env: { ...baseEnv(), ...env }, input, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the single executable, alone in an empty folder, no node on PATH', () => {
  test('the folder and PATH really have no Node: `command -v node` finds none, and nothing but the executable is beside it', () => {
    expect(spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: path } }).status).not.toBe(0);
    expect(readdirSync(folder)).toEqual([]);
  });

  test('--version, version --json ("packaging": "single-executable", its target), a help page and a completion', () => {
    expect(run(['--version'])).toEqual({ status: 0, stdout: `${PKG_VERSION}\n`, stderr: '' });
    const info = JSON.parse(run(['version', '--json']).stdout);
    expect(info).toMatchObject({
      version: PKG_VERSION,
      platform: `${process.platform}-${process.arch}`,
      node: process.version,
      packaging: 'single-executable',
      target: `${process.platform}-${process.arch}`,
    });
    expect(Object.keys(info)).toEqual(['version', 'commit', 'node', 'platform', 'packaging', 'target']);
    const help = run(['webhooks', 'rotate', '--help']);
    expect(help.stdout).toContain('--expected-version');
    expect(run(['help', 'webhooks', 'rotate'])).toEqual(help);
    expect(run(['webhooks', 'rotate', '-h'])).toEqual(help);
    expect(run(['__complete', 'bash', '--', 'webhooks', 'rot']).stdout).toMatch(/^rotate\b/m);
  });

  test('chatctl sandbox, then create and rotate against it, each secret in a file of mode 0600', async () => {
    const sandbox = spawn(exe, ['sandbox', '--port', '0', '--json'], { cwd: folder, env: baseEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      sandbox.stdout.on('data', (c: Buffer) => (out += c));
      await waitFor(() => out.includes('\n'), 30_000, 'the sandbox to print its line');
      const sb = JSON.parse(out.split('\n')[0]!) as { baseUrl: string; token: string; organizationId: string; applicationId: string; environmentKey: string };
      const scope = { CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token, CHATCTL_ORG: sb.organizationId, CHATCTL_APP: sb.applicationId, CHATCTL_ENV: sb.environmentKey };
      const created = run(['webhooks', 'create', '--name', 'sea', '--url', 'https://hooks.example.com/sea', '--event', 'chat.message.created.v1', '--secret-to', 'file:one.whsec', '--json'], scope);
      expect(created.status, created.stderr).toBe(0);
      const id = JSON.parse(created.stdout).data.endpoint.id as string;
      const rotated = run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', 'file:two.whsec', '--secret-to', 'exec:cat > three.whsec', '--json'], scope);
      expect(rotated.status, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout).data.endpoint.version).toBe(2);
      const secret = readFileSync(join(folder, 'two.whsec'), 'utf8');
      expect(secret).toMatch(/^\S{20,}$/);
      expect(readFileSync(join(folder, 'three.whsec'), 'utf8')).toBe(secret);
      expect(statSync(join(folder, 'two.whsec')).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(folder, 'one.whsec'), 'utf8')).not.toBe(secret);
    } finally {
      sandbox.kill('SIGTERM');
    }
    expect(await new Promise((r) => sandbox.on('close', r))).toBe(0);
  });

  test('the keyring addon is not unpacked into a cache folder that others can write: the keyring counts as absent and says why', () => {
    const cache = join(home, 'open-cache');
    mkdirSync(cache);
    chmodSync(cache, 0o777);
    const env = { CHATCTL_CACHE_DIR: cache, CHATCTL_CONFIG_DIR: join(home, 'open-config') };
    expect(run(['profile', 'set', 'open', '--base-url', 'https://api.example.com', '--org', 'o', '--app', 'a', '--env', 'e'], env).status).toBe(0);
    const r = run(['auth', 'login', '--with-token'], env, 'tok_sea_open_cache');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the cache folder ${cache} can be written by group or others; the keyring addon is not unpacked there`);
    expect(readdirSync(cache)).toEqual([]);
  });

  test('nor below a cache folder one of whose parents others can write (XDG_CACHE_HOME there): refused with the parent named', () => {
    const shared = join(home, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const env = { XDG_CACHE_HOME: join(shared, 'cache'), CHATCTL_CONFIG_DIR: join(home, 'shared-config') };
    expect(run(['profile', 'set', 'shared', '--base-url', 'https://api.example.com', '--org', 'o', '--app', 'a', '--env', 'e'], env).status).toBe(0);
    const r = run(['auth', 'login', '--with-token'], env, 'tok_sea_shared_parent');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the cache folder's parent ${shared} can be written by group or others; the keyring addon is not unpacked below it`);
    expect(readdirSync(join(shared, 'cache', 'chatctl'))).toEqual([]);
  });
});

describe.runIf(missing.length === 0 || keyringTestsRequired)('the single executable and a real Secret Service', () => {
  let session: KeyringSession;
  beforeAll(async () => {
    expect(missing).toEqual([]);
    session = await startKeyringSession();
  });
  afterAll(() => session?.stop());

  test('auth login stores the token in the keyring, from the addon unpacked into <cache>/native (0700, checked by hash); a tampered copy is replaced before loading', () => {
    const env = { ...session.busEnv, CHATCTL_CONFIG_DIR: join(home, 'kr-config'), CHATCTL_CACHE_DIR: join(home, 'kr-cache') };
    expect(run(['profile', 'set', 'kr', '--base-url', 'https://api.example.com', '--org', 'o', '--app', 'a', '--env', 'e'], env).status).toBe(0);
    const login = run(['auth', 'login', '--with-token'], env, 'tok_sea_keyring_1');
    expect(login.status, login.stderr).toBe(0);
    expect(login.stderr).not.toContain('plain text');
    expect(keyringLookup(session, 'kr').stdout).toBe('tok_sea_keyring_1');
    const native = join(home, 'kr-cache', 'native');
    expect(statSync(native).mode & 0o777).toBe(0o700);
    const [addon, ...others] = readdirSync(native);
    expect(others).toEqual([]);
    expect(addon).toMatch(/^keyring-[0-9a-f]{16}\.node$/);
    const good = readFileSync(join(native, addon!));

    // Bytes that are not the embedded addon's: replaced, then loaded.
    writeFileSync(join(native, addon!), 'not the addon');
    const token = run(['auth', 'token'], env);
    expect(token.status, token.stderr).toBe(0);
    expect(token.stdout.trim()).toBe('tok_sea_keyring_1');
    expect(readFileSync(join(native, addon!)).equals(good)).toBe(true);
    const again = run(['auth', 'login', '--with-token'], env, 'tok_sea_keyring_2');
    expect(again.status, again.stderr).toBe(0);
    expect(keyringLookup(session, 'kr').stdout).toBe('tok_sea_keyring_2');
  });
});
