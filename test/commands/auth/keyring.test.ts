// The system keyring, for real: a D-Bus session of its own
// (dbus-run-session) with gnome-keyring's Secret Service, unlocked with a
// test password, HOME and the XDG folders in a temporary folder; the user's
// own keyring is never touched. What is checked: where the token lands
// (keyring or file, never both), what `auth status` and `secret-tool` show,
// moving a token stored by an earlier version into the keyring, logout, a
// missing entry, and the exit-4 message for a keyring token.
//
// Needs dbus-run-session (dbus), gnome-keyring-daemon (gnome-keyring) and
// secret-tool (libsecret-tools); .ci/run installs them. Where they are
// missing the tests are skipped with a warning, unless
// CHATCTL_REQUIRE_KEYRING_TESTS is set (as .ci/run sets it): then their
// absence fails the suite.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { BIN, NODE, REACTIVATE, ROOT, errorBody, mutationBody } from '../../support/fixtures.js';
import { sandbox } from '../../support/sandbox.js';
import { execa } from 'execa';
import { parseStdoutJson } from '../../support/json.js';
import { keyringLookup, keyringTestsRequired, KEYRING_PATH as PATH, missingKeyringTools, startKeyringSession, warnIfKeyringSkipped, type KeyringSession } from '../../support/keyring-session.js';
import { cleanupTempDirs, runCli, tempDir, workspace, type RunOptions, type Workspace } from '../../support/run.js';
import { type RecordingServer, startServer } from '../../support/server.js';

const missing = missingKeyringTools();
const required = keyringTestsRequired;
warnIfKeyringSkipped('test/commands/auth/keyring.test.ts', missing);

test('where CHATCTL_REQUIRE_KEYRING_TESTS is set (CI), dbus-run-session, gnome-keyring-daemon and secret-tool are there', () => {
  expect(required ? missing : []).toEqual([]);
});

describe.runIf(missing.length === 0)('against gnome-keyring in a D-Bus session of its own', () => {
  let server: RecordingServer;
  let session: KeyringSession;
  /** The session's variables: what chatctl and secret-tool need to find the keyring. */
  let busEnv: Record<string, string>;

  beforeAll(async () => {
    server = await startServer();
    session = await startKeyringSession();
    busEnv = session.busEnv;
  });

  afterAll(async () => {
    await server?.close();
    session?.stop();
    cleanupTempDirs();
  });

  beforeEach(() => {
    server.reset();
    server.setHandler(() => ({ status: 200, body: mutationBody() }));
  });

  const KEYRING_TOKEN = 'tok_keyring_a2V5cmluZy10b2tlbg';
  const OLD_TOKEN = 'tok_old_b2xkLWZpbGUtdG9rZW4';
  let names = 0;
  /** A profile name of its own per test: the keyring is shared by the whole file. */
  const freshName = () => `kr-${process.pid}-${++names}`;

  const run = (args: string[], ws: Workspace, opts: Omit<RunOptions, 'ws'> = {}) => runCli(args, { ws, ...opts, env: { ...busEnv, ...opts.env } });
  const configOf = (ws: Workspace) => JSON.parse(readFileSync(join(ws.configDir, 'config.json'), 'utf8')) as { profiles: Record<string, Record<string, string>> };
  /** What the Secret Service holds for the profile, as its own tool reads it (undefined: no entry). */
  const lookup = (profile: string): string | undefined => {
    const r = keyringLookup(session, profile);
    if (r.status === 0) return r.stdout;
    expect(r.stderr).toBe(''); // exit 1 with nothing said: no such entry
    return undefined;
  };
  const bearer = () => server.requests.map((r) => r.headers.authorization);

  function profileIn(ws: Workspace, name: string, fields: Record<string, string> = {}): void {
    mkdirSync(ws.configDir, { recursive: true, mode: 0o700 });
    chmodSync(ws.configDir, 0o700);
    const p = { baseUrl: server.url, organizationId: 'org_1', applicationId: 'app_1', environmentKey: 'prod', ...fields };
    writeFileSync(join(ws.configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: name, profiles: { [name]: p } }, null, 2) + '\n', { mode: 0o600 });
  }

  test('auth login: the token in the keyring only; secret-tool, auth status, doctor and a request agree', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    const login = await run(['auth', 'login', '--with-token'], ws, { input: `${KEYRING_TOKEN}\n` });
    expect(login.exitCode, login.stderr).toBe(0);
    expect(login.stderr).toContain(`token stored in profile "${name}" (the current profile) in the system keyring (service chatctl, account ${name})`);
    expect(login.stderr).not.toContain('warning');
    expect(lookup(name)).toBe(KEYRING_TOKEN);
    const stored = configOf(ws).profiles[name]!;
    expect(stored.tokenStorage).toBe('keyring');
    expect(stored.token).toBeUndefined();
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).not.toContain(KEYRING_TOKEN);

    const status = await run(['auth', 'status', '--json'], ws);
    expect(status.exitCode, status.stderr).toBe(0);
    expect(parseStdoutJson(status.stdout)).toMatchObject({ tokenSource: 'keyring', tokenStored: true, tokenReadable: true, profiles: [{ name, tokenSource: 'keyring' }] });
    expect((await run(['auth', 'status'], ws)).stdout).toContain(`token:        in the system keyring, profile "${name}"; read just now\n`);
    expect(status.stdout).not.toContain(KEYRING_TOKEN);

    const reactivate = await run(REACTIVATE, ws);
    expect(reactivate.exitCode, reactivate.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${KEYRING_TOKEN}`]);

    const doctor = await run(['doctor', '--json'], ws);
    const check = (parseStdoutJson(doctor.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks.find((c) => c.name === 'token');
    expect(check).toMatchObject({ status: 'ok', detail: `stored in the system keyring (service chatctl, account ${name}) for profile "${name}"; doctor does not send it` });

    expect(await run(['auth', 'token'], ws)).toMatchObject({ exitCode: 0, stdout: `${KEYRING_TOKEN}\n` });
  });

  test('through the packaged bin too: the bundle finds the binding in node_modules', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN, spawn: true })).exitCode).toBe(0);
    expect(lookup(name)).toBe(KEYRING_TOKEN);
    const r = await run(REACTIVATE, ws, { spawn: true });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${KEYRING_TOKEN}`]);
  });

  test('a token stored in config.json by an earlier version works, and auth login moves it to the keyring (never both)', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name, { token: OLD_TOKEN });
    expect((await run(REACTIVATE, ws)).exitCode).toBe(0);
    expect(bearer()).toEqual([`Bearer ${OLD_TOKEN}`]);
    const login = await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN });
    expect(login.exitCode, login.stderr).toBe(0);
    expect(login.stderr).toContain('its earlier copy in config.json was removed');
    expect(configOf(ws).profiles[name]).toMatchObject({ tokenStorage: 'keyring' });
    expect(configOf(ws).profiles[name]!.token).toBeUndefined();
    expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).not.toContain(OLD_TOKEN);
    expect(lookup(name)).toBe(KEYRING_TOKEN);
  });

  test('--insecure-storage after the keyring: the file, and the keyring entry removed (never both)', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    expect(lookup(name)).toBe(KEYRING_TOKEN);
    const r = await run(['auth', 'login', '--with-token', '--insecure-storage'], ws, { input: OLD_TOKEN });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(configOf(ws).profiles[name]).toMatchObject({ token: OLD_TOKEN });
    expect(configOf(ws).profiles[name]!.tokenStorage).toBeUndefined();
    expect(lookup(name)).toBeUndefined();
    expect(parseStdoutJson((await run(['auth', 'status', '--json'], ws)).stdout)).toMatchObject({ tokenSource: 'file' });
  });

  test('auth logout removes the keyring entry and the config mark', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    const r = await run(['auth', 'logout'], ws);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`token removed from profile "${name}" (its system keyring entry was deleted)`);
    expect(lookup(name)).toBeUndefined();
    expect(configOf(ws).profiles[name]!.tokenStorage).toBeUndefined();
    const after = await run(REACTIVATE, ws);
    expect(after.exitCode).toBe(3);
    expect(server.requests).toHaveLength(0);
  });

  test("profile remove takes the profile's keyring entry with it", async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    expect(lookup(name)).toBe(KEYRING_TOKEN);
    const r = await run(['profile', 'remove', name], ws);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('from the system keyring');
    expect(lookup(name)).toBeUndefined();
  });

  test("an entry removed behind chatctl's back: exit 3 naming the profile and the next step, nothing sent", async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    expect(spawnSync('secret-tool', ['clear', 'service', 'chatctl', 'username', name], { env: { PATH, ...busEnv } }).status).toBe(0);
    const r = await run(REACTIVATE, ws);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain(`profile "${name}" keeps its token in the system keyring, but there is no entry`);
    expect(r.stderr).toContain(`chatctl auth login --profile ${name}`);
    expect(server.requests).toHaveLength(0);
    // auth status reads the entry too, so `auth status >/dev/null || chatctl auth login` logs in.
    const status = await run(['auth', 'status'], ws);
    expect(status.exitCode).toBe(3);
    expect(status.stderr).toContain(`profile "${name}" keeps its token in the system keyring, but there is no entry`);
  });

  test('CHATCTL_TOKEN comes before the keyring entry', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    expect((await run(REACTIVATE, ws, { env: { CHATCTL_TOKEN: OLD_TOKEN } })).exitCode).toBe(0);
    expect(bearer()).toEqual([`Bearer ${OLD_TOKEN}`]);
  });

  test('exit 4 with a keyring token: names the keyring entry and auth login for the profile', async () => {
    const ws = workspace();
    const name = freshName();
    profileIn(ws, name);
    expect((await run(['auth', 'login', '--with-token'], ws, { input: KEYRING_TOKEN })).exitCode).toBe(0);
    server.setHandler(() => ({ status: 401, body: errorBody('authentication_failed', 'the bearer token is not valid') }));
    const r = await run(REACTIVATE, ws);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain(`the token came from profile "${name}"'s entry in the system keyring`);
    expect(r.stderr).toContain(`next: chatctl auth login --profile ${name}`);
    expect(r.stderr).not.toContain(KEYRING_TOKEN);
  });
});

describe.runIf(missing.length === 0)('docs/credentials.md, a keyring on a headless server: its lines, as the page shows them', () => {
  const page = readFileSync(join(ROOT, 'docs', 'credentials.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## A keyring on a headless server\n'), page.indexOf('\n## ', page.indexOf('\n## A keyring on a headless server\n') + 5));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

  test('log in once in a D-Bus session of its own, then a later session reads the token and sends it', async () => {
    expect(blocks).toHaveLength(3);
    expect(blocks[0]).toBe('read -rs KEYRING_PASSWORD && export KEYRING_PASSWORD\n');
    const sb = await sandbox();
    const id = (await sb.create({ name: 'doc', destinationUrl: 'https://hooks.example.com/doc', eventTypes: ['chat.message.created.v1'] })).body.data.endpoint.id as string;
    const home = tempDir('headless-home');
    const runtime = join(home, 'run');
    const bin = join(home, 'bin');
    mkdirSync(runtime, { mode: 0o700 });
    mkdirSync(bin);
    // `chatctl` on PATH, as `npm install -g .` would put it.
    writeFileSync(join(bin, 'chatctl'), `#!/bin/sh\nexec "${NODE}" "${BIN}" "$@"\n`, { mode: 0o755 });
    writeFileSync(join(home, 'token.txt'), `${sb.sb.token}\n`);
    // A server's login: HOME and XDG_RUNTIME_DIR, no D-Bus session; the password given as the first line would read it.
    const env = { PATH: `${bin}:${PATH}`, LANG: 'C.UTF-8', HOME: home, XDG_RUNTIME_DIR: runtime, KEYRING_PASSWORD: 'doc-password' };
    const sh = (script: string) => execa('bash', ['-c', script], { cwd: home, env, extendEnv: false, reject: false, timeout: 60_000 });
    const set = await sh(`chatctl profile set prod --base-url ${sb.sb.baseUrl} --org ${sb.sb.organizationId} --app ${sb.sb.applicationId} --env ${sb.sb.environmentKey}`);
    expect(set.exitCode, set.stderr).toBe(0);

    const login = await sh(blocks[1]!);
    expect(login.exitCode, login.stderr).toBe(0);
    expect(login.stderr).toContain('token stored in profile "prod" (the current profile) in the system keyring');
    expect(login.stderr).not.toContain('warning');
    expect(login.stdout).toContain('token:        in the system keyring, profile "prod"; read just now\n');
    const config = readFileSync(join(home, '.config', 'chatctl', 'config.json'), 'utf8');
    expect(JSON.parse(config).profiles.prod.tokenStorage).toBe('keyring');
    expect(config).not.toContain(sb.sb.token);

    const later = await sh(blocks[2]!.replace('we_123', id));
    expect(later.exitCode, later.stderr).toBe(0);
    expect(later.stdout).toContain('was already active; nothing changed');
    // Outside such a session there is no keyring to read: auth status says so, and the || branch runs.
    const outside = await sh('chatctl auth status >/dev/null || echo "log in again"');
    expect(outside.stdout).toBe('log in again');
    expect((await sh('chatctl auth status')).stderr).toContain('no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set');
  });
});
