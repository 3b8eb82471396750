// The config never loses data and is never trusted when it should not be
// (docs/configuration.md). Concurrent `profile set` runs all land, with or
// without a lock left by a killed process; a lock wait ends on Ctrl-C; a
// corrupt, foreign, shared-writable or non-regular config is exit 3 at once;
// readable-by-others permissions are tightened with a warning.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { APP, ENV, ORG, REACTIVATE, CREATE, CSRF, mutationBody, TOKEN, csrfScopeEnv, secretBody } from '../support/fixtures.js';
import { leaks, parseErrorLine, stackTrace } from '../support/json.js';
import { spawnCli, waitFor, cleanupTempDirs, deadPid, listAll, fileMode, runCli, workspace, type Workspace } from '../support/run.js';
import { RecordingServer, json } from '../support/server.js';
import { virtualClock } from '../support/fakes.js';
import { scaled } from '../support/slowdown.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
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
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => runCli(['profile', 'set', `p${i}`, '--base-url', `https://x${i}.example`, '--org', `o${i}`], { ws })));
    for (const r of runs) {
      expect(r.exitCode, r.stderr).toBe(0);
      expect(stackTrace(r.stderr)).toBeUndefined();
    }
    const cfg = readConfig(ws);
    expect(Object.keys(cfg.profiles ?? {}).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7']);
    for (let i = 0; i < 8; i++) {
      expect(cfg.profiles![`p${i}`]).toMatchObject({ baseUrl: `https://x${i}.example`, organizationId: `o${i}` });
    }
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(fileMode(ws.configDir)).toBe(0o700);
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
    expect(fileMode(configPath(ws))).toBe(0o600);
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
      await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0'], { ws, env: csrfScopeEnv(server.url) }),
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
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
    expect(readConfig(ws).profiles!.prod).toMatchObject({ baseUrl: 'https://x.example', organizationId: 'o', applicationId: 'a' });
  });

  test('file 0644 → tightened with a warning, by a read (profile list)', async () => {
    const ws = seeded();
    chmodSync(configPath(ws), 0o644);
    const r = await runCli(['profile', 'list'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
  });

  test('folder 0755 → tightened to 0700 with a warning naming the folder (profile set)', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    const r = await runCli(['profile', 'set', 'prod', '--app', 'a'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(fileMode(ws.configDir)).toBe(0o700);
    expect(r.stderr).toMatch(/warning: .*tightened/);
    expect(r.stderr.split('\n').some((l) => l.includes('warning') && l.includes(ws.configDir) && !l.includes('config.json'))).toBe(true);
  });

  test('folder 0755 and file 0644 → both tightened, with warnings, by a webhooks run that only reads the config', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    chmodSync(configPath(ws), 0o644);
    const secretFile = join(ws.cwd, 's.whsec');
    const r = await runCli([...CREATE, '--secret-file', secretFile, '--max-retries', '0'], { ws, env: csrfScopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(fileMode(ws.configDir)).toBe(0o700);
    expect(r.stderr).toMatch(/warning: .*config\.json/);
    expect(r.stderr.split('\n').some((l) => l.includes('warning') && l.includes(ws.configDir) && !l.includes('config.json'))).toBe(true);
  });

  test('with --json the same run tightens both and keeps stderr empty (it holds only an error line)', async () => {
    const ws = seeded();
    chmodSync(ws.configDir, 0o755);
    chmodSync(configPath(ws), 0o644);
    const secretFile = join(ws.cwd, 's.whsec');
    const r = await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0'], { ws, env: csrfScopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(fileMode(ws.configDir)).toBe(0o700);
    expect(r.stderr).toBe('');
  });

  test('a token stored through a 0644 file ends up only in a 0600 file', async () => {
    const ws = seeded();
    chmodSync(configPath(ws), 0o644);
    const r = await runCli(['auth', 'login', '--with-token', '--profile', 'prod'], { ws, input: `${TOKEN}\n` });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(leaks(r.stderr, [TOKEN])).toEqual([]);
    expect(fileMode(configPath(ws))).toBe(0o600);
    expect(readConfig(ws).profiles!.prod!.token).toBe(TOKEN);
  });
});

// ------------------------------------------------------------------ the lock

const lockPath = (ws: Workspace) => join(ws.configDir, 'config.json.lock');

/** Field 22 of /proc/<pid>/stat: the process start time the lock records. */
function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

function seededWs(): Workspace {
  const ws = workspace();
  mkdirSync(ws.configDir, { mode: 0o700 });
  writeFileSync(configPath(ws), JSON.stringify({ version: 1, profiles: { base: { baseUrl: 'https://b.example', token: TOKEN } } }) + '\n', { mode: 0o600 });
  return ws;
}

const staleLocks: [string, (ws: Workspace) => void][] = [
  ['a chatctl lock whose owner was killed', (ws) => writeFileSync(lockPath(ws), JSON.stringify({ pid: deadPid(), start: '1', host: hostname(), nonce: 'killed00writer' }) + '\n', { mode: 0o600 })],
  [
    'a lock whose pid now belongs to another process (start time differs)',
    (ws) => writeFileSync(lockPath(ws), JSON.stringify({ pid: process.pid, start: '1', host: hostname(), nonce: 'reused00pid' }), { mode: 0o600 }),
  ],
  [
    'an empty lock from a crash, with a token left by a killed breaker',
    (ws) => {
      writeFileSync(lockPath(ws), '', { mode: 0o600 });
      const old = Date.now() / 1000 - 10;
      utimesSync(lockPath(ws), old, old);
      const st = lstatSync(lockPath(ws));
      writeFileSync(`${lockPath(ws)}.break-i${st.ino}-m${Math.floor(st.mtimeMs)}-s0.0`, JSON.stringify({ pid: deadPid(), host: hostname() }), { mode: 0o600 });
    },
  ],
];

describe('a lock left behind by a killed process', () => {
  test.each(staleLocks)(
    '%s: 16 concurrent `profile set` all land, and nothing is left but config.json',
    async (_label, leave) => {
      const ws = seededWs();
      leave(ws);
      const runs = await Promise.all(Array.from({ length: 16 }, (_, i) => runCli(['profile', 'set', `w${i}`, '--base-url', `https://w${i}.example`, '--org', `o${i}`], { ws, timeoutMs: 60_000 })));
      for (const r of runs) {
        expect(r.exitCode, r.stderr).toBe(0);
        expect(stackTrace(r.stderr)).toBeUndefined();
      }
      const cfg = readConfig(ws);
      expect(Object.keys(cfg.profiles ?? {}).sort()).toEqual(['base', ...Array.from({ length: 16 }, (_, i) => `w${i}`)].sort());
      for (let i = 0; i < 16; i++) expect(cfg.profiles![`w${i}`]).toEqual({ baseUrl: `https://w${i}.example`, organizationId: `o${i}` });
      expect(cfg.profiles!.base).toEqual({ baseUrl: 'https://b.example', token: TOKEN });
      expect(listAll(ws.configDir)).toEqual(['config.json']);
      expect(fileMode(configPath(ws))).toBe(0o600);
    },
    120_000,
  );

  test.each(staleLocks)('%s: auth logout really removes the token', async (_label, leave) => {
    const ws = seededWs();
    leave(ws);
    const r = await runCli(['auth', 'logout', '--profile', 'base'], { ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('token removed from profile "base"');
    expect(readFileSync(configPath(ws), 'utf8')).not.toContain(TOKEN);
    expect(readConfig(ws).profiles!.base).toEqual({ baseUrl: 'https://b.example' });
    expect(listAll(ws.configDir)).toEqual(['config.json']);
  });

  test('a lock held by a live process is not broken: after the wait, exit 3 naming the lock; nothing written', async () => {
    const ws = seededWs();
    const held = JSON.stringify({ pid: process.pid, start: startTimeOf(process.pid), host: hostname(), nonce: 'held0by0test' });
    writeFileSync(lockPath(ws), held, { mode: 0o600 });
    const before = readFileSync(configPath(ws));
    // The wait is chatctl's own: on an injected clock its 10 s pass as recorded sleeps.
    const clock = virtualClock(Date.now());
    const r = await runCli(['--json', 'profile', 'set', 'x', '--org', 'o'], { ws, inject: clock });
    expect(r.exitCode, r.stderr).toBe(3);
    expect(parseErrorLine(r.stderr).error.message).toContain(lockPath(ws));
    const waited = clock.waits.reduce((a, b) => a + b, 0);
    expect(waited).toBeGreaterThanOrEqual(10_000);
    expect(waited).toBeLessThan(10_300);
    // Polling backs off: no sleep is longer than 0.2 s, and there are not thousands of them.
    expect(Math.max(...clock.waits)).toBeLessThanOrEqual(200);
    expect(clock.waits.length).toBeLessThan(200);
    expect(readFileSync(lockPath(ws), 'utf8')).toBe(held);
    expect(readFileSync(configPath(ws)).equals(before)).toBe(true);
    expect(listAll(ws.configDir).sort()).toEqual(['config.json', 'config.json.lock']);
  });
});

// Real processes and real signals; the two run side by side (each waits a
// second for the lock-wait notice).
describe.concurrent('Ctrl-C during a lock wait', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    test(`${signal} ends the wait at once with exit ${code}; no temporary file; lock and config untouched`, { timeout: scaled(30_000) }, async ({ expect }) => {
      const ws = seededWs();
      const held = JSON.stringify({ pid: process.pid, start: startTimeOf(process.pid), host: hostname(), nonce: 'held0by0test' });
      writeFileSync(lockPath(ws), held, { mode: 0o600 });
      const before = readFileSync(configPath(ws));
      const { child } = spawnCli(['auth', 'login', '--with-token', '--profile', 'base'], { ws, input: `${TOKEN}\n` });
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      await waitFor(() => stderr.includes('waiting for'), 15_000, 'the lock-wait notice');
      expect(stderr).toContain(`pid ${process.pid}`);
      // Not timed: had the signal not ended the wait, the run would have
      // waited out its 10 s and ended with 3 (the lock), not with the signal's code.
      child.kill(signal);
      const r = await child;
      expect(r.exitCode, String(r.stderr)).toBe(code);
      // chatctl's own ending, although conf (loaded before the wait) brings
      // atomically's exit hook, which listens for these signals too and
      // raises them again.
      expect(String(r.stderr)).toContain(signal === 'SIGINT' ? 'chatctl: error: interrupted\n' : 'chatctl: error: terminated (SIGTERM)\n');
      expect(stackTrace(String(r.stderr))).toBeUndefined();
      expect(leaks(String(r.stderr), [TOKEN])).toEqual([]);
      expect(listAll(ws.configDir).sort()).toEqual(['config.json', 'config.json.lock']);
      expect(readFileSync(lockPath(ws), 'utf8')).toBe(held);
      expect(readFileSync(configPath(ws)).equals(before)).toBe(true);
    });
  }
});

// ------------------------------------------------------------------ refusals

describe('a config that must not be trusted: exit 3 at once, naming it and the fix; never changed', () => {
  // "At once": on chatctl's own clock, nothing was waited for (no lock
  // wait, no retry); a refusal after a wait would show its sleeps here.
  const readRun = (ws: Workspace, clock: ReturnType<typeof virtualClock>) => runCli([...REACTIVATE, '--json', '--max-retries', '0'], { ws, env: csrfScopeEnv(server.url), inject: clock });
  const writeRun = (ws: Workspace, clock: ReturnType<typeof virtualClock>) => runCli(['--json', 'profile', 'set', 'x', '--org', 'o'], { ws, inject: clock });
  const loginRun = (ws: Workspace, clock: ReturnType<typeof virtualClock>) => runCli(['--json', 'auth', 'login', '--with-token'], { ws, input: `${TOKEN}\n`, inject: clock });

  async function expectRefused(ws: Workspace, named: string, message: RegExp, hint: RegExp) {
    for (const run of [readRun, writeRun, loginRun]) {
      const clock = virtualClock();
      const r = await run(ws, clock);
      expect(r.timedOut, 'hung').toBe(false);
      expect(clock.waits).toEqual([]);
      expect({ exit: r.exitCode, code: parseErrorLine(r.stderr).error.code }, r.stderr).toEqual({ exit: 3, code: 'config_error' });
      const line = parseErrorLine(r.stderr);
      expect(line.error.message).toContain(named);
      expect(line.error.message).toMatch(message);
      expect(leaks(r.stderr, [TOKEN, CSRF])).toEqual([]);
      const human = await runCli(['profile', 'list'], { ws });
      expect(human.exitCode).toBe(3);
      expect(human.stderr).toMatch(hint);
    }
    expect(server.hits).toBe(0);
  }

  test('config.json is a FIFO: refused without opening it (no hang)', async () => {
    const ws = seededWs();
    const file = configPath(ws);
    execFileSync('rm', [file]);
    execFileSync('mkfifo', ['-m', '600', file]);
    await expectRefused(ws, file, /is a FIFO/, /hint: remove it/);
    expect(lstatSync(file).isFIFO()).toBe(true);
    expect(listAll(ws.configDir)).toEqual(['config.json']);
  });

  test('config.json is a character device: refused', async () => {
    const ws = seededWs();
    const file = configPath(ws);
    execFileSync('rm', [file]);
    execFileSync('mknod', ['-m', '600', file, 'c', '1', '3']);
    await expectRefused(ws, file, /is a device/, /hint: remove it/);
  });

  test('config.json is a symbolic link: refused, not followed; the target untouched', async () => {
    const ws = seededWs();
    const file = configPath(ws);
    const target = join(ws.root, 'elsewhere.json');
    writeFileSync(target, readFileSync(file), { mode: 0o600 });
    execFileSync('rm', [file]);
    symlinkSync(target, file);
    const before = readFileSync(target);
    await expectRefused(ws, file, /symbolic link/, /hint: replace the link/);
    expect(readFileSync(target).equals(before)).toBe(true);
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
  });

  test('invalid UTF-8 inside otherwise valid JSON: refused, bytes unchanged', async () => {
    const ws = seededWs();
    const bytes = Buffer.concat([Buffer.from('{"version":1,"profiles":{"base":{"baseUrl":"https://b.example","organizationId":"o'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}}\n')]);
    writeFileSync(configPath(ws), bytes);
    await expectRefused(ws, configPath(ws), /not valid UTF-8/, /will not overwrite it/);
    expect(readFileSync(configPath(ws)).equals(bytes)).toBe(true);
  });

  for (const m of [0o777, 0o770, 0o707]) {
    test(`folder writable by group or others (${m.toString(8)}): refused, not tightened`, async () => {
      const ws = seededWs();
      chmodSync(ws.configDir, m);
      await expectRefused(ws, ws.configDir, /can be written by/, /chmod 700/);
      expect(fileMode(ws.configDir)).toBe(m);
    });
  }

  test('file writable by others (666): refused, not tightened', async () => {
    const ws = seededWs();
    chmodSync(configPath(ws), 0o666);
    await expectRefused(ws, configPath(ws), /can be written by group and others/, /chmod 600/);
    expect(fileMode(configPath(ws))).toBe(0o666);
  });

  test('folder owned by another user (uid 65534): refused', async () => {
    const ws = seededWs();
    chownSync(ws.configDir, 65534, 65534);
    await expectRefused(ws, ws.configDir, /belongs to another user \(uid 65534\)/, /CHATCTL_CONFIG_DIR/);
  });

  test('file owned by another user (uid 65534): refused', async () => {
    const ws = seededWs();
    chownSync(configPath(ws), 65534, 65534);
    await expectRefused(ws, configPath(ws), /belongs to another user/, /chown/);
  });
});

describe('profile names are plain keys', () => {
  test('constructor, __proto__ and toString are absent profiles: use/remove/show and --profile exit 3; nothing changes', async () => {
    const ws = seededWs();
    const before = readFileSync(configPath(ws));
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      for (const args of [
        ['profile', 'use', name],
        ['profile', 'remove', name],
        ['profile', 'show', name],
        ['--profile', name, ...REACTIVATE, '--max-retries', '0'],
        ['--profile', name, 'auth', 'status'],
      ]) {
        const r = await runCli(['--json', ...args], { ws, env: { CHATCTL_TOKEN: TOKEN } });
        expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(3);
        expect(parseErrorLine(r.stderr).error.message).toContain(`profile "${name}" does not exist`);
        expect(stackTrace(r.stderr)).toBeUndefined();
      }
    }
    expect(readFileSync(configPath(ws)).equals(before)).toBe(true);
    expect(server.hits).toBe(0);
  });

  test('a profile really called "constructor" is an ordinary profile', async () => {
    server.reset((_q, res) => json(res, 200, mutationBody()));
    const ws = seededWs();
    expect((await runCli(['profile', 'set', 'constructor', '--base-url', server.url, '--org', ORG, '--app', APP, '--env', ENV], { ws })).exitCode).toBe(0);
    expect((await runCli(['profile', 'use', 'constructor'], { ws })).exitCode).toBe(0);
    const r = await runCli([...REACTIVATE, '--json'], { ws, env: { CHATCTL_TOKEN: TOKEN } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.hits).toBe(1);
    expect(readConfig(ws).currentProfile).toBe('constructor');
  });
});
