// Where the token comes from, without a Secret Service: credential helpers
// (token commands) that succeed, fail, hang or print nothing; the order
// CHATCTL_TOKEN, helper, keyring, file; no keyring (no D-Bus session, no
// prebuilt binary) and a hanging bus (a socket that accepts and never
// answers); tokens in config.json from earlier versions; auth token; the
// exit-4 messages. The tests against a real Secret Service are in
// keyring.test.ts.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { BIN, NODE, REACTIVATE, ROOT, ROTATE, errorBody, mutationBody, rotatePath, secretBody } from '../../support/fixtures.js';
import { parseErrorLine, parseStdoutJson } from '../../support/json.js';
import { buildEnv, cleanupTempDirs, runCli, tempDir, waitFor, workspace, type Workspace, type RunOptions } from '../../support/run.js';
import { execa } from 'execa';
import { type RecordingServer, startServer } from '../../support/server.js';

let server: RecordingServer;
let hangingBus: { address: string; connections(): number; close(): Promise<void> };
beforeAll(async () => {
  server = await startServer();
  hangingBus = await startHangingBus();
});
afterAll(async () => {
  await server.close();
  await hangingBus.close();
  cleanupTempDirs();
});
beforeEach(() => {
  server.reset();
  server.setHandler(() => ({ status: 200, body: mutationBody() }));
});

const HELPER_TOKEN = 'tok_helper_aGVscGVyLXRva2Vu';
/** Prints HELPER_TOKEN without the command's text holding it (a failure names the command). */
const PRINT_TOKEN = "printf '%s_%s' tok_helper aGVscGVyLXRva2Vu";
const FILE_TOKEN = 'tok_file_ZmlsZS10b2tlbg';
const ENV_TOKEN = 'tok_env_ZW52LXRva2Vu';
const NO_BUS = { DBUS_SESSION_BUS_ADDRESS: undefined };
const SHORT = { credentialLimits: { keyringMs: 400, helperMs: 400 } };

/**
 * A unix socket that takes every connection and never says a word: a D-Bus
 * that hangs. It counts the connections: whether the keyring was asked is
 * counted, not guessed from how long a run took.
 */
async function startHangingBus(): Promise<{ address: string; connections(): number; close(): Promise<void> }> {
  const path = join(tempDir('bus'), 'bus.sock');
  const sockets: Socket[] = [];
  const srv: Server = createServer((s) => void sockets.push(s));
  await new Promise<void>((resolve) => srv.listen(path, resolve));
  return {
    address: `unix:path=${path}`,
    connections: () => sockets.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

/** A workspace whose profile "prod" points at the server, with extra profile fields written straight into config.json. */
function configured(profile: Record<string, string> = {}, others: Record<string, Record<string, string>> = {}): Workspace {
  const ws = workspace();
  mkdirSync(ws.configDir, { mode: 0o700 });
  const prod = { baseUrl: server.url, organizationId: 'org_1', applicationId: 'app_1', environmentKey: 'prod', ...profile };
  writeFileSync(join(ws.configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: 'prod', profiles: { prod, ...others } }, null, 2) + '\n', { mode: 0o600 });
  chmodSync(ws.configDir, 0o700);
  return ws;
}

const configOf = (ws: Workspace) => JSON.parse(readFileSync(join(ws.configDir, 'config.json'), 'utf8')) as { profiles: Record<string, Record<string, string>> };
const bearer = () => server.requests.map((r) => r.headers.authorization);
const run = (args: string[], ws: Workspace, opts: Omit<RunOptions, 'ws'> = {}) => runCli(args, { ws, ...opts, env: { ...NO_BUS, ...opts.env } });

describe('a token command (credential helper)', () => {
  test('its output, trimmed, is the token; it runs once per run, without CHATCTL_CSRF_TOKEN and with CHATCTL_PROFILE', async () => {
    const ws = workspace();
    const count = join(ws.root, 'count');
    const ws2 = configured({ tokenCommand: `echo run >> '${count}'; printf '  %s\\n\\n' "${HELPER_TOKEN}_\${CHATCTL_PROFILE}_\${CHATCTL_CSRF_TOKEN:-nocsrf}"` });
    const r = await run(REACTIVATE, ws2, { env: { CHATCTL_CSRF_TOKEN: 'csrf_value_x' } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${HELPER_TOKEN}_prod_nocsrf`]);
    expect(readFileSync(count, 'utf8')).toBe('run\n');
    expect(r.stdout + r.stderr).not.toContain(HELPER_TOKEN);
  });

  test('set and cleared with profile set --token-command; profile show and auth status name it as the source', async () => {
    const ws = configured({ token: FILE_TOKEN });
    expect((await run(['profile', 'set', 'prod', '--token-command', `printf ${HELPER_TOKEN}`], ws)).exitCode).toBe(0);
    expect(configOf(ws).profiles.prod!.tokenCommand).toBe(`printf ${HELPER_TOKEN}`);
    const show = parseStdoutJson((await run(['profile', 'show', '--json'], ws)).stdout) as Record<string, unknown>;
    expect(show).toMatchObject({ tokenSource: 'command', tokenCommand: `printf ${HELPER_TOKEN}`, tokenStored: true });
    const status = await run(['auth', 'status', '--json'], ws);
    expect(parseStdoutJson(status.stdout)).toMatchObject({ tokenSource: 'command', profiles: [{ name: 'prod', tokenSource: 'command' }] });
    expect(status.stdout).not.toContain(HELPER_TOKEN.slice(4));
    // The command comes before the file token.
    expect((await run(REACTIVATE, ws)).exitCode).toBe(0);
    expect(bearer()).toEqual([`Bearer ${HELPER_TOKEN}`]);
    expect((await run(['profile', 'set', 'prod', '--token-command', ''], ws)).exitCode).toBe(0);
    expect(configOf(ws).profiles.prod!.tokenCommand).toBeUndefined();
    expect((await run(REACTIVATE, ws)).exitCode).toBe(0);
    expect(bearer().at(-1)).toBe(`Bearer ${FILE_TOKEN}`);
  });

  test('CHATCTL_TOKEN comes first: the helper is not run', async () => {
    const ws = workspace();
    const ran = join(ws.root, 'ran');
    const ws2 = configured({ tokenCommand: `touch '${ran}'; printf ${HELPER_TOKEN}` });
    const r = await run(REACTIVATE, ws2, { env: { CHATCTL_TOKEN: ENV_TOKEN } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${ENV_TOKEN}`]);
    expect(existsSync(ran)).toBe(false);
  });

  test.each([
    ['fails', `${PRINT_TOKEN}; ${PRINT_TOKEN} >&2; exit 7`, 'failed (exit status 7)'],
    ['prints nothing', 'true', 'printed nothing'],
    ['prints only whitespace', "printf '  \\n\\t\\n'", 'printed nothing'],
    ['prints two words', `${PRINT_TOKEN}; echo ' and more'`, 'printed something that is not a token'],
    ['is killed', 'kill -9 $$', 'was ended by SIGKILL'],
  ])('a helper that %s: exit 3 naming the profile and the command, never its output, nothing sent', async (_what, command, how) => {
    const ws = configured({ tokenCommand: command });
    const r = await run(REACTIVATE, ws);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(server.requests).toHaveLength(0);
    expect(r.stderr).toContain(`the token command of profile "prod" (`);
    expect(r.stderr).toContain(how);
    expect(r.stderr).not.toContain(HELPER_TOKEN);
    expect(r.stdout).toBe('');
  });

  test('a helper that hangs: exit 3 at the limit (shortened here), and the process it started is killed', async () => {
    const ws = workspace();
    const pidFile = join(ws.root, 'pid');
    // It sleeps an hour: only the limit ends it (the run's own would end it with another code).
    const ws2 = configured({ tokenCommand: `sleep 3600 & echo $! > '${pidFile}'; wait` });
    const r = await run(REACTIVATE, ws2, { inject: SHORT });
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.stderr).toContain('the token command of profile "prod" (sleep 3600 & echo');
    expect(r.stderr).toContain('printed no token within 0.4 s');
    expect(server.requests).toHaveLength(0);
    // The sleep is gone with its shell (or a zombie, if nobody has reaped it yet).
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const state = () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.charAt(0);
      } catch {
        return 'gone';
      }
    };
    try {
      await waitFor(() => ['gone', 'Z'].includes(state()), 20_000, 'the sleep to end with its shell');
    } finally {
      if (!['gone', 'Z'].includes(state())) process.kill(pid, 'SIGKILL');
    }
  });

  test('the 10 s limit is the default', async () => {
    const { HELPER_LIMIT_MS } = await import('../../../src/credentials/helper.js');
    const { KEYRING_LIMIT_MS } = await import('../../../src/credentials/keyring.js');
    expect([HELPER_LIMIT_MS, KEYRING_LIMIT_MS]).toEqual([10_000, 3_000]);
  });
});

describe('no keyring: the file, and the user is told', () => {
  test('no D-Bus session: auth login stores into config.json, exits 0, and says so in one plain line naming the file, its mode, a keyring and --insecure-storage', async () => {
    const ws = configured();
    const r = await run(['auth', 'login', '--with-token'], ws, { input: `${FILE_TOKEN}\n` });
    expect(r.exitCode, r.stderr).toBe(0);
    // One line, and nothing else on stderr: where the token went (the file, its mode), why, how to use a keyring instead.
    const warning = r.stderr.slice(0, -1);
    expect(r.stderr.endsWith('\n') && !warning.includes('\n'), r.stderr).toBe(true);
    expect(warning).toBe(
      `chatctl: warning: token stored in profile "prod" (the current profile) in plain text in ${join(ws.configDir, 'config.json')} (mode 0600): no system keyring answered (no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set); ` +
        'to use a keyring instead, start one and log in again (docs/credentials.md); --insecure-storage skips trying',
    );
    expect(r.stderr).not.toMatch(/X11|autolaunch|DBus error|Platform failure/i);
    // docs/credentials.md shows this very warning (for its example path).
    const doc = readFileSync(join(ROOT, 'docs', 'credentials.md'), 'utf8');
    expect(doc).toContain(`\n  ${warning!.replace(join(ws.configDir, 'config.json'), '/home/me/.config/chatctl/config.json')}\n`);
    expect(configOf(ws).profiles.prod).toMatchObject({ token: FILE_TOKEN });
    expect(configOf(ws).profiles.prod!.tokenStorage).toBeUndefined();
    expect(r.stderr).not.toContain(FILE_TOKEN);
    // The warning is not chatter: --quiet does not hide it.
    const quiet = await run(['auth', 'login', '--with-token', '--quiet'], ws, { input: `${FILE_TOKEN}\n` });
    expect(quiet.stderr).toContain('in plain text in ');
  });

  test('--insecure-storage: the file without trying the keyring, no warning', async () => {
    const ws = configured();
    // The keyring is not tried: the hanging bus gets no connection.
    const asked = hangingBus.connections();
    const r = await run(['auth', 'login', '--with-token', '--insecure-storage'], ws, { input: FILE_TOKEN, env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('warning');
    expect(hangingBus.connections()).toBe(asked);
    expect(configOf(ws).profiles.prod!.token).toBe(FILE_TOKEN);
  });

  test('no prebuilt binary for the platform: the file, with the notice', async () => {
    const ws = configured();
    const r = await run(['auth', 'login', '--with-token'], ws, { input: FILE_TOKEN, env: { NAPI_RS_NATIVE_LIBRARY_PATH: join(ws.root, 'no-such-binding.node') } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`(mode 0600): no system keyring answered (no prebuilt keyring binary for ${process.platform}-${process.arch});`);
    expect(configOf(ws).profiles.prod!.token).toBe(FILE_TOKEN);
  });

  test('a bus that never answers: auth login gives up at the limit (shortened here) and uses the file', async () => {
    const ws = configured();
    const r = await run(['auth', 'login', '--with-token'], ws, { input: FILE_TOKEN, env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address }, inject: SHORT });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('(mode 0600): no system keyring answered (the keyring did not answer within 0.4 s);');
    expect(configOf(ws).profiles.prod!.token).toBe(FILE_TOKEN);
  });

  test('a keyring profile logging in while the bus hangs: the file, one wait only, and a warning that the old entry may remain', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    const asked = hangingBus.connections();
    const r = await run(['auth', 'login', '--with-token'], ws, { input: FILE_TOKEN, env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address }, inject: { credentialLimits: { keyringMs: 1_000 } } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(configOf(ws).profiles.prod).toEqual(expect.objectContaining({ token: FILE_TOKEN }));
    expect(configOf(ws).profiles.prod!.tokenStorage).toBeUndefined();
    expect(r.stderr).toContain('could not remove profile "prod"\'s earlier entry from the system keyring (the keyring did not answer within 1 s)');
    // One wait: the keyring was not asked again once it had not answered
    // (a keyring process started late may not have reached the bus at all).
    expect(hangingBus.connections()).toBeLessThanOrEqual(asked + 1);
  });

  test('a profile whose token is in the keyring, with a bus that never answers: exit 3 at the limit, nothing sent', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    const r = await run(REACTIVATE, ws, { env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address }, inject: SHORT });
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.stderr).toContain('cannot read the token of profile "prod" from the system keyring: the keyring did not answer within 0.4 s');
    // Not "run auth login": with no keyring answering, that would put the token in plain text in config.json.
    expect(r.stderr).toContain(
      'hint: unlock or start the system keyring (see docs/credentials.md), or set CHATCTL_TOKEN; to keep the token in config.json instead: chatctl auth login --profile prod --insecure-storage',
    );
    expect(r.stderr).not.toMatch(/auth login --profile prod(?! --insecure-storage)/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('CHATCTL_TOKEN never waits on the keyring', () => {
  test('a rotate of a keyring profile with CHATCTL_TOKEN and a hanging bus finishes promptly (a real process)', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    server.setHandler(() => ({ status: 200, body: secretBody() }));
    const asked = hangingBus.connections();
    const r = await runCli([...ROTATE, '--json'], { ws, spawn: true, env: { CHATCTL_TOKEN: ENV_TOKEN, DBUS_SESSION_BUS_ADDRESS: hangingBus.address } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests.map((q) => q.url)).toEqual([rotatePath('we_1')]);
    expect(bearer()).toEqual([`Bearer ${ENV_TOKEN}`]);
    // The keyring was not asked: the hanging bus got no connection.
    expect(hangingBus.connections()).toBe(asked);
  });

  test('a run with CHATCTL_TOKEN starts no keyring process; the same run without it does', async () => {
    // A preload that records every process the run starts.
    const dir = tempDir('spawns');
    const log = join(dir, 'spawns.log');
    const hook = join(dir, 'hook.cjs');
    writeFileSync(
      hook,
      `const cp = require('node:child_process'); const fs = require('node:fs'); const spawn = cp.spawn;
cp.spawn = function (file, args, ...rest) { fs.appendFileSync(${JSON.stringify(log)}, [file, ...(args || [])].join(' ') + '\\n'); return spawn.call(this, file, args, ...rest); };`,
    );
    const ws = configured({ tokenStorage: 'keyring' });
    const runWithHook = (env: Record<string, string | undefined>) => execa(NODE, ['-r', hook, BIN, ...REACTIVATE], { cwd: ws.cwd, env: buildEnv(ws, env), extendEnv: false, reject: false, input: '' });
    const withEnv = await runWithHook({ CHATCTL_TOKEN: ENV_TOKEN });
    expect(withEnv.exitCode, String(withEnv.stderr)).toBe(0);
    expect(existsSync(log)).toBe(false);
    const without = await runWithHook({});
    expect(without.exitCode).toBe(3); // no D-Bus session here: no keyring
    expect(readFileSync(log, 'utf8')).toMatch(/keyring-child\.cjs get chatctl prod\n$/);
  });

  test('auth status and auth token with CHATCTL_TOKEN and a hanging bus: prompt, and the env source named', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    const env = { CHATCTL_TOKEN: ENV_TOKEN, DBUS_SESSION_BUS_ADDRESS: hangingBus.address };
    const asked = hangingBus.connections();
    const status = await run(['auth', 'status'], ws, { env });
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.stdout).toContain("token:        from CHATCTL_TOKEN (environment); it overrides the profile's system keyring");
    const token = await run(['auth', 'token'], ws, { env });
    expect(token).toMatchObject({ exitCode: 0, stdout: `${ENV_TOKEN}\n` });
    expect(hangingBus.connections()).toBe(asked);
  });
});

describe('tokens stored in config.json by earlier versions', () => {
  test('a 0.1 config file: its token is sent, auth status calls it a file token, profile list says file', async () => {
    const ws = workspace();
    mkdirSync(ws.configDir, { mode: 0o700 });
    // Exactly what chatctl 0.1 wrote.
    writeFileSync(
      join(ws.configDir, 'config.json'),
      `{\n  "version": 1,\n  "currentProfile": "old",\n  "profiles": {\n    "old": {\n      "baseUrl": "${server.url}",\n      "organizationId": "org_1",\n      "applicationId": "app_1",\n      "environmentKey": "prod",\n      "token": "${FILE_TOKEN}"\n    }\n  }\n}\n`,
      { mode: 0o600 },
    );
    const r = await run(REACTIVATE, ws);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${FILE_TOKEN}`]);
    expect(parseStdoutJson((await run(['auth', 'status', '--json'], ws)).stdout)).toMatchObject({ tokenSource: 'file', tokenStored: true, token: { source: 'file', stored: true } });
    expect((await run(['profile', 'list'], ws)).stdout).toMatch(/old .* file/);
  });

  test('an unknown tokenStorage is refused as a configuration error naming the field', async () => {
    const ws = configured({ tokenStorage: 'vault' });
    const r = await run(REACTIVATE, ws, { env: { CHATCTL_TOKEN: ENV_TOKEN } });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('profiles.prod.tokenStorage');
  });
});

describe('a token command that leaves a process in the background', () => {
  test('the token it printed before exiting 0 is used at once, though that process still holds its output open', async () => {
    const ws = configured({ tokenCommand: `${PRINT_TOKEN}; sleep 5 &` });
    const r = await run(REACTIVATE, ws, { inject: SHORT });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(bearer()).toEqual([`Bearer ${HELPER_TOKEN}`]);
  });

  test('one that fails says so at once, with its status, not that it printed nothing in time', async () => {
    const r = await run(REACTIVATE, configured({ tokenCommand: `${PRINT_TOKEN}; sleep 5 & exit 7` }), { inject: SHORT });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('failed (exit status 7)');
    expect(r.stderr).not.toContain(HELPER_TOKEN);
  });
});

describe('auth token', () => {
  test('prints the token in effect and nothing else on stdout; exit 3 without one', async () => {
    const ws = configured({ token: FILE_TOKEN });
    expect(await run(['auth', 'token'], ws)).toMatchObject({ exitCode: 0, stdout: `${FILE_TOKEN}\n`, stderr: '' });
    const json = await run(['auth', 'token', '--json'], ws);
    expect(parseStdoutJson(json.stdout)).toEqual({ token: FILE_TOKEN, source: 'file', profile: 'prod' });
    const none = await run(['auth', 'token'], configured());
    expect(none.exitCode).toBe(3);
    expect(none.stderr).toContain('no token for profile "prod"');
  });

  test('stdout a terminal: --yes is required without prompts, and then it prints', async () => {
    const ws = configured({ token: FILE_TOKEN });
    const refused = await run(['auth', 'token', '--no-input'], ws, { tty: { stdin: true, stdout: true } });
    expect(refused.exitCode).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('--yes is required');
    expect(await run(['auth', 'token', '--yes'], ws, { tty: { stdin: true, stdout: true } })).toMatchObject({ exitCode: 0, stdout: `${FILE_TOKEN}\n` });
  });

  test('in GitHub Actions the token is masked first, on stderr, since stdout holds it (plain and --json)', async () => {
    const env = { GITHUB_ACTIONS: 'true' };
    const ws = configured({ token: FILE_TOKEN });
    expect(await run(['auth', 'token'], ws, { env })).toMatchObject({ exitCode: 0, stdout: `${FILE_TOKEN}\n`, stderr: `::add-mask::${FILE_TOKEN}\n` });
    const json = await run(['auth', 'token', '--json'], ws, { env: { ...env, CHATCTL_TOKEN: ENV_TOKEN } });
    expect(json.stderr).toBe(`::add-mask::${ENV_TOKEN}\n`);
    expect(parseStdoutJson(json.stdout)).toEqual({ token: ENV_TOKEN, source: 'env', profile: null });
  });
});

describe('exit 4 names where the token came from and the next step', () => {
  beforeEach(() => server.setHandler(() => ({ status: 401, body: errorBody('authentication_failed', 'the bearer token is not valid') })));

  test('CHATCTL_TOKEN over a stored token: unset it to use the stored one', async () => {
    const r = await run(REACTIVATE, configured({ token: FILE_TOKEN }), { env: { CHATCTL_TOKEN: ENV_TOKEN } });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('the token came from CHATCTL_TOKEN (the environment)');
    expect(r.stderr).toContain('next: unset CHATCTL_TOKEN to use profile "prod"\'s file token, or set it to a valid token');
  });

  test('CHATCTL_TOKEN with nothing stored: set it right, or unset it and log in', async () => {
    const r = await run(REACTIVATE, configured(), { env: { CHATCTL_TOKEN: ENV_TOKEN } });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('next: set CHATCTL_TOKEN to a valid token, or unset it and run: chatctl auth login --profile prod');
  });

  test('the file token: log in again to that profile', async () => {
    const r = await run(REACTIVATE, configured({ token: FILE_TOKEN }));
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('the token came from profile "prod"\'s file token (config.json)');
    expect(r.stderr).toContain('next: chatctl auth login --profile prod');
  });

  test('the helper: named, and the next step is to renew what it reads', async () => {
    const r = await run(REACTIVATE, configured({ tokenCommand: PRINT_TOKEN }));
    expect(r.exitCode).toBe(4);
    expect(bearer()).toEqual([`Bearer ${HELPER_TOKEN}`]);
    expect(r.stderr).toContain(`the token came from the token command of profile "prod" (${PRINT_TOKEN})`);
    expect(r.stderr).toContain("next: renew the token where the command gets it, or change it: chatctl profile set prod --token-command 'CMD'");
  });

  test('--json: the error line keeps its shape', async () => {
    const r = await run([...REACTIVATE, '--json'], configured({ token: FILE_TOKEN }));
    expect(r.exitCode).toBe(4);
    expect(Object.keys(JSON.parse(r.stderr.trim()) as object).sort()).toEqual(['error', 'exitCode']);
  });
});

describe('auth status: each profile and where its token comes from, never a value', () => {
  test('says in words what the origin and the csrf value are, with where each comes from', async () => {
    const ws = configured({ token: FILE_TOKEN });
    const human = await run(['auth', 'status'], ws);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toContain(`origin:       ${new URL(server.url).origin} (default): sent as the Origin header, which the API requires on every request\n`);
    expect(human.stdout).toContain('csrf value:   1 (default): sent as the x-service-csrf header, the anti-forgery check the API requires on every request\n');
    const set = await run(['auth', 'status'], ws, { env: { CHATCTL_ORIGIN: 'https://console.example', CHATCTL_CSRF_TOKEN: 'csrf_c2VjcmV0' } });
    expect(set.stdout).toContain('origin:       https://console.example (from CHATCTL_ORIGIN): sent as the Origin header');
    expect(set.stdout).toContain('csrf value:   set (from CHATCTL_CSRF_TOKEN): sent as the x-service-csrf header');
    expect(set.stdout).not.toContain('csrf_c2VjcmV0');
  });

  test('env, command, keyring, file and none, in human and JSON form', async () => {
    const ws = configured({ token: FILE_TOKEN }, { cmd: { tokenCommand: 'pass show x' }, kr: { tokenStorage: 'keyring' }, empty: {} });
    const json = await run(['auth', 'status', '--json'], ws);
    expect(parseStdoutJson(json.stdout)).toMatchObject({
      tokenSource: 'file',
      profiles: [
        { name: 'cmd', tokenSource: 'command' },
        { name: 'empty', tokenSource: null },
        { name: 'kr', tokenSource: 'keyring' },
        { name: 'prod', tokenSource: 'file' },
      ],
    });
    const human = await run(['auth', 'status'], ws);
    expect(human.stdout).toContain('token:        in config.json (file), profile "prod"');
    expect(human.stdout).toContain('tokens by profile:\n  cmd: token command\n  empty: no token\n  kr: system keyring\n  prod: config.json (file)\n');
    expect(json.stdout + human.stdout).not.toContain(FILE_TOKEN);
    expect((await run(['auth', 'status', '--json', '--profile', 'kr'], ws)).stdout).toContain('"tokenSource":"keyring"');
    expect(parseStdoutJson((await run(['auth', 'status', '--json'], ws, { env: { CHATCTL_TOKEN: ENV_TOKEN } })).stdout)).toMatchObject({ tokenSource: 'env' });
  });

  test('it reads the token it reports: a keyring that does not answer is exit 3 with the cause, and --json says the token is not readable', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    const env = { DBUS_SESSION_BUS_ADDRESS: hangingBus.address };
    const human = await run(['auth', 'status'], ws, { env, inject: SHORT });
    expect(human.exitCode).toBe(3);
    expect(human.stdout).toContain('token:        in the system keyring, profile "prod"; cannot be read (see the error below)\n');
    expect(human.stderr).toBe(
      'chatctl: error: cannot read the token of profile "prod" from the system keyring: the keyring did not answer within 0.4 s\n' +
        '  hint: unlock or start the system keyring (see docs/credentials.md), or set CHATCTL_TOKEN; to keep the token in config.json instead: chatctl auth login --profile prod --insecure-storage\n',
    );
    const json = await run(['auth', 'status', '--json'], ws, { env, inject: SHORT });
    expect(json.exitCode).toBe(3);
    expect(parseStdoutJson(json.stdout)).toMatchObject({
      tokenSource: 'keyring',
      tokenStored: true,
      tokenReadable: false,
      token: { source: 'keyring', stored: true, readable: false, error: { code: 'config_error', exitCode: 3, message: expect.stringContaining('did not answer within 0.4 s') } },
    });
    expect(parseErrorLine(json.stderr)).toMatchObject({ error: { code: 'config_error' }, exitCode: 3 });
  });

  test('no D-Bus at all: exit 3 in plain words; a token command that fails: exit 3 naming it; a file token or CHATCTL_TOKEN: read, exit 0', async () => {
    const noBus = await run(['auth', 'status'], configured({ tokenStorage: 'keyring' }));
    expect(noBus.exitCode).toBe(3);
    expect(noBus.stderr).toContain('cannot read the token of profile "prod" from the system keyring: no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set');
    expect(noBus.stderr).not.toMatch(/X11|autolaunch|DBus error/);
    const helper = await run(['auth', 'status', '--json'], configured({ tokenCommand: 'exit 4' }));
    expect(helper.exitCode).toBe(3);
    expect(parseStdoutJson(helper.stdout)).toMatchObject({ tokenSource: 'command', tokenReadable: false });
    expect(parseErrorLine(helper.stderr).error.message).toContain('the token command of profile "prod" (exit 4) failed (exit status 4)');
    const file = await run(['auth', 'status', '--json'], configured({ token: FILE_TOKEN }));
    expect(file.exitCode, file.stderr).toBe(0);
    expect(parseStdoutJson(file.stdout)).toMatchObject({ tokenSource: 'file', tokenReadable: true, token: { readable: true, error: null } });
    const fromEnv = await run(['auth', 'status'], configured(), { env: { CHATCTL_TOKEN: ENV_TOKEN } });
    expect(fromEnv.exitCode, fromEnv.stderr).toBe(0);
    expect(fromEnv.stdout).toContain('token:        from CHATCTL_TOKEN (environment); read just now\n');
    const none = await run(['auth', 'status', '--json'], configured());
    expect(none.exitCode).toBe(3);
    expect(parseStdoutJson(none.stdout)).toMatchObject({ tokenSource: null, tokenReadable: null });
  });

  test('auth logout of a file token leaves the keyring alone (no D-Bus wait) and clears the file', async () => {
    const ws = configured({ token: FILE_TOKEN });
    const asked = hangingBus.connections();
    const r = await run(['auth', 'logout'], ws, { env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(hangingBus.connections()).toBe(asked);
    expect(configOf(ws).profiles.prod!.token).toBeUndefined();
  });

  test('auth logout of a keyring profile whose keyring does not answer: the config no longer points at it, exit 3 saying the entry may remain', async () => {
    const ws = configured({ tokenStorage: 'keyring' });
    const r = await run(['auth', 'logout'], ws, { env: { DBUS_SESSION_BUS_ADDRESS: hangingBus.address }, inject: SHORT });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('the entry could not be removed from the system keyring');
    expect(configOf(ws).profiles.prod!.tokenStorage).toBeUndefined();
  });
});
