// chatctl doctor with everything injected: env, clock, config folder, the
// DNS/TCP/TLS probes and the HTTP transport. Each failure kind maps to its
// exit status; the token is never shown and never sent.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { doctorChecks, doctorExitCode, ProbeError, runDoctor, type Check, type DoctorDeps, type Probes } from '../../../src/commands/doctor/doctor.js';
import { CliError } from '../../../src/errors/cli-error.js';
import { readConfigChecked } from '../../../src/config/store.js';
import { resolveConnection } from '../../../src/scope/resolve.js';
import { selectProfile } from '../../../src/config/profile.js';
import { resolveRunState, type GlobalOptions } from '../../../src/run/state.js';
import { fakeContext, fakeFactory, fakeIO, scriptedTransport, type Answer } from '../../support/fakes.js';
import { runCli, workspace } from '../../support/run.js';

const TOKEN = 'tok_doctor_c2VjcmV0LXRva2Vu';
const NOW = Date.parse('2030-06-01T12:00:00.000Z');
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'chatctl-doctor-'));
  temps.push(d);
  return d;
}

const ENV = { CHATCTL_BASE_URL: 'https://api.example.com', CHATCTL_TOKEN: TOKEN, CHATCTL_ORG: 'org_1', CHATCTL_APP: 'app_1', CHATCTL_ENV: 'prod' };

function probes(over: Partial<Probes> = {}): Probes & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    lookup: async (host) => (calls.push(`lookup ${host}`), ['203.0.113.7']),
    connect: async (host, port) => void calls.push(`connect ${host}:${port}`),
    tls: async (host, port) => (calls.push(`tls ${host}:${port}`), { protocol: 'TLSv1.3', validTo: 'Jan  1 00:00:00 2031 GMT' }),
    ...over,
  };
}

interface Setup {
  env?: Record<string, string>;
  g?: GlobalOptions;
  configDir?: string;
  probes?: Probes;
  answers?: Answer[];
  uid?: number;
  node?: string;
}

async function doctor(s: Setup = {}) {
  const io = fakeIO();
  const transport = scriptedTransport(s.answers ?? [{ status: 404, headers: { date: new Date(NOW).toUTCString() }, body: '{}' }]);
  const ctx = fakeContext({ io, env: s.env ?? ENV, configDir: s.configDir ?? join(tmp(), 'cfg'), transportImpl: transport, now: () => NOW });
  const deps: DoctorDeps = { probes: s.probes ?? probes(), uid: s.uid ?? process.getuid!(), nodeVersion: s.node ?? '20.19.0' };
  const checks = await doctorChecks(resolveRunState(s.g ?? {}, ctx), ctx, deps);
  return { checks, io, ctx, deps, transport, byName: (n: string) => checks.find((c) => c.name === n)! };
}

const statuses = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c.status]));

describe('doctor, everything fine', () => {
  it('runs every check in order, all ok, exit 0', async () => {
    const { checks, transport } = await doctor();
    expect(checks.map((c) => c.name)).toEqual(['config folder', 'config file', 'profile', 'scope', 'token', 'settings', 'base URL', 'proxy', 'DNS', 'TCP', 'TLS', 'round trip', 'clock', 'Node.js']);
    expect(checks.filter((c) => c.status !== 'ok')).toEqual([]);
    expect(doctorExitCode(checks)).toBe(0);
    // The round trip is a GET of the base URL without the token.
    expect(transport.sent).toHaveLength(1);
    expect(transport.sent[0]!.method).toBe('GET');
    expect(transport.sent[0]!.url).toBe('https://api.example.com/');
    expect(JSON.stringify(transport.sent[0]!.headers)).not.toContain(TOKEN);
    expect(Object.keys(transport.sent[0]!.headers).map((h) => h.toLowerCase())).not.toContain('authorization');
  });

  it('says where each scope value and the token come from, never the token', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ currentProfile: 'prod', profiles: { prod: { baseUrl: 'https://api.example.com', organizationId: 'org_p', applicationId: 'app_p', token: TOKEN } } }),
      { mode: 0o600 },
    );
    chmodSync(dir, 0o700);
    const { byName, checks } = await doctor({ configDir: dir, env: { CHATCTL_ENV: 'staging' }, g: { app: 'app_flag' } });
    expect(byName('profile').detail).toBe('"prod" (the current profile: the first one set, or chosen with profile use)');
    expect(byName('scope').detail).toBe('base URL https://api.example.com (profile "prod"), org org_p (profile "prod"), app app_flag (--app), env staging (CHATCTL_ENV)');
    expect(byName('token').detail).toBe('stored in profile "prod" (config file); doctor does not send it');
    expect(JSON.stringify(checks)).not.toContain(TOKEN);
  });

  it('an environment token over a stored one is named as such', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ profiles: { default: { token: 'tok_stored_other' } } }), { mode: 0o600 });
    chmodSync(dir, 0o700);
    const { byName } = await doctor({ configDir: dir, g: { profile: 'default' } });
    expect(byName('profile').detail).toBe('"default" (named by --profile)');
    expect(byName('token').detail).toBe('from CHATCTL_TOKEN (environment); it overrides the token stored in profile "default"; doctor does not send it');
  });
});

describe('each failure, its fix and its exit status', () => {
  /** What a command's own read of the config says: its error, or its warnings. Run after doctor, whose checks must not change the files. */
  function commandRead(dir: string, uid = process.geteuid!()): { error?: CliError; warnings: string[] } {
    const warnings: string[] = [];
    try {
      readConfigChecked(dir, join(dir, 'config.json'), (m) => warnings.push(m), uid);
      return { warnings };
    } catch (err) {
      expect(err).toBeInstanceOf(CliError);
      return { error: err as CliError, warnings };
    }
  }

  it('config folder writable by others → 3, with the message and chmod a command gives', async () => {
    const dir = tmp();
    chmodSync(dir, 0o777);
    const { byName, checks } = await doctor({ configDir: dir });
    const { error } = commandRead(dir);
    expect(error?.message).toBe(`config folder ${dir} can be written by group and others (mode 777); chatctl will not use it`);
    expect(byName('config folder')).toEqual({ name: 'config folder', status: 'failure', kind: 'config', detail: error!.message, fix: error!.hint });
    expect(byName('config file')).toMatchObject({ status: 'warning', detail: 'not checked: the config folder cannot be used' });
    expect(doctorExitCode(checks)).toBe(3);
  });

  it('config folder or file owned by someone else → 3, as a command refuses it', async () => {
    const dir = tmp();
    chmodSync(dir, 0o700);
    const { byName } = await doctor({ configDir: dir, uid: 4242 });
    const { error } = commandRead(dir, 4242);
    expect(error?.message).toMatch(/belongs to another user \(uid \d+\), not to you \(uid 4242\)/);
    expect(byName('config folder')).toMatchObject({ status: 'failure', detail: error!.message, fix: error!.hint });
  });

  it('a config file that is a symlink, not UTF-8, not JSON, or of the wrong shape → 3, in the words of a command', async () => {
    for (const [content, want] of [
      ['{nope', /is not valid JSON/],
      [Buffer.from([0x7b, 0xff, 0x7d]), /is not valid UTF-8/],
      ['{"profiles":{"p":{"baseUrl":3}}}', /unexpected shape at profiles\.p\.baseUrl/],
    ] as const) {
      const dir = tmp();
      chmodSync(dir, 0o700);
      writeFileSync(join(dir, 'config.json'), content, { mode: 0o600 });
      const { byName, checks } = await doctor({ configDir: dir });
      const { error } = commandRead(dir);
      expect(error?.message).toMatch(want);
      expect(byName('config file')).toMatchObject({ status: 'failure', detail: error!.message, fix: error!.hint });
      expect(byName('config file').detail).toContain(join(dir, 'config.json'));
      expect(byName('profile').status).toBe('warning');
      expect(doctorExitCode(checks)).toBe(3);
    }
    const dir = tmp();
    chmodSync(dir, 0o700);
    writeFileSync(join(dir, 'real.json'), '{}', { mode: 0o600 });
    symlinkSync(join(dir, 'real.json'), join(dir, 'config.json'));
    const link = (await doctor({ configDir: dir })).byName('config file');
    expect(link.detail).toMatch(/is a symbolic link/);
    expect(link).toMatchObject({ detail: commandRead(dir).error!.message, fix: commandRead(dir).error!.hint });
  });

  it('a config file readable by others is a warning that changes nothing (a command tightens it), writable by others a failure', async () => {
    const dir = tmp();
    chmodSync(dir, 0o700);
    const file = join(dir, 'config.json');
    writeFileSync(file, '{}');
    chmodSync(file, 0o644);
    expect((await doctor({ configDir: dir })).byName('config file')).toEqual({
      name: 'config file',
      status: 'warning',
      detail: `${file} (mode 644, yours; 0 profiles): it may hold tokens; permissions of ${file} are 644, readable by group or others; chatctl tightens them to 600 on its next read`,
      fix: `chmod 600 ${file}`,
    });
    expect(statSync(file).mode & 0o777).toBe(0o644);
    // What a command does with the same file: tightens it, and says so.
    expect(commandRead(dir).warnings).toEqual([`permissions of ${file} were 644; tightened to 600`]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    chmodSync(file, 0o666);
    const writable = (await doctor({ configDir: dir })).byName('config file');
    expect(writable).toMatchObject({ status: 'failure', detail: commandRead(dir).error!.message });
  });

  it('a profile named but missing, scope missing, no token → 3', async () => {
    const { byName, checks } = await doctor({ env: { CHATCTL_PROFILE: 'ghost' } });
    expect(byName('profile')).toMatchObject({ status: 'failure', kind: 'config' });
    expect(byName('profile').detail).toBe('"ghost" (named by CHATCTL_PROFILE) does not exist');
    expect(byName('scope').status).toBe('failure');
    expect(byName('scope').detail).toBe('base URL missing, org missing, app missing, env missing');
    expect(byName('token')).toMatchObject({ status: 'failure', kind: 'config' });
    expect(byName('token').fix).toContain('chatctl auth login --with-token --profile ghost');
    expect(byName('base URL').status).toBe('failure');
    for (const n of ['proxy', 'DNS', 'TCP', 'TLS', 'round trip', 'clock']) expect(byName(n).detail).toBe('not checked: no usable base URL');
    expect(doctorExitCode(checks)).toBe(3);
  });

  it('a scope a command would refuse (an org of ".", an Origin a header cannot carry) → 3, in the words of the command', async () => {
    for (const env of [
      { ...ENV, CHATCTL_ORG: '.' },
      { ...ENV, CHATCTL_ORIGIN: 'https://a\u0007b.example' },
    ]) {
      const { byName, checks } = await doctor({ env });
      const flags = {};
      const refusal = (() => {
        try {
          resolveConnection(flags, env, selectProfile(flags, env, {}));
        } catch (err) {
          return err as CliError;
        }
        throw new Error('resolveConnection accepted it');
      })();
      expect(byName('scope')).toEqual({ name: 'scope', status: 'failure', kind: 'config', detail: refusal.message, fix: refusal.hint });
      expect(doctorExitCode(checks)).toBe(3);
    }
  });

  it('a token that cannot be sent → 4 (authentication)', async () => {
    const { byName, checks } = await doctor({ env: { ...ENV, CHATCTL_TOKEN: 'tok\u0007bell' } });
    expect(byName('token')).toMatchObject({ status: 'failure', kind: 'auth' });
    expect(doctorExitCode(checks)).toBe(4);
  });

  it('an http base URL off loopback → 3, nothing probed', async () => {
    const p = probes();
    const { byName, checks } = await doctor({ env: { ...ENV, CHATCTL_BASE_URL: 'http://api.example.com' }, probes: p });
    expect(byName('base URL').status).toBe('failure');
    expect(byName('base URL').detail).toContain('clear text');
    expect(p.calls).toEqual([]);
    expect(doctorExitCode(checks)).toBe(3);
  });

  it('DNS, TCP and TLS failures → 12, later network checks not run', async () => {
    const dns = await doctor({ probes: probes({ lookup: async () => Promise.reject(new ProbeError('cannot resolve api.example.com (ENOTFOUND)', 'ENOTFOUND')) }) });
    expect(statuses(dns.checks)).toMatchObject({ DNS: 'failure', TCP: 'warning', TLS: 'warning', 'round trip': 'warning', clock: 'warning', 'Node.js': 'ok' });
    expect(doctorExitCode(dns.checks)).toBe(12);
    expect(dns.transport.sent).toHaveLength(0);

    const tcp = await doctor({ probes: probes({ connect: async () => Promise.reject(new ProbeError('cannot connect to api.example.com:443: connection refused')) }) });
    expect(tcp.byName('TCP')).toMatchObject({ status: 'failure', detail: 'cannot connect to api.example.com:443: connection refused' });
    expect(doctorExitCode(tcp.checks)).toBe(12);

    const tls = await doctor({ probes: probes({ tls: async () => Promise.reject(new ProbeError('self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)', 'DEPTH_ZERO_SELF_SIGNED_CERT')) }) });
    expect(tls.byName('TLS')).toMatchObject({ status: 'failure', fix: 'a private certificate authority? point NODE_EXTRA_CA_CERTS at its PEM file' });
    expect(doctorExitCode(tls.checks)).toBe(12);
  });

  it('no answer to the round trip → 12; any HTTP answer is a round trip', async () => {
    const { TransportError } = await import('../../../src/http/transport.js');
    const dead = await doctor({ answers: [new TransportError('timeout', 'no complete response within 30 s')] });
    expect(dead.byName('round trip').status).toBe('failure');
    expect(doctorExitCode(dead.checks)).toBe(12);
    for (const status of [200, 301, 401, 404]) {
      const r = await doctor({ answers: [{ status, headers: { date: new Date(NOW).toUTCString() } }] });
      expect(r.byName('round trip').status, String(status)).toBe('ok');
      expect(r.byName('round trip').detail).toContain(`answered HTTP ${status} in 0 ms`);
    }
    expect((await doctor({ answers: [{ status: 502 }] })).byName('round trip').status).toBe('warning');
  });

  it('an old Node.js → 3', async () => {
    const { byName, checks } = await doctor({ node: '20.18.1' });
    expect(byName('Node.js')).toMatchObject({ status: 'failure', detail: 'v20.18.1 is older than 20.19' });
    expect(doctorExitCode(checks)).toBe(3);
    expect((await doctor({ node: '22.0.0' })).byName('Node.js').status).toBe('ok');
  });

  it('the first failure decides: config before network', async () => {
    const { checks } = await doctor({ env: { ...ENV, CHATCTL_TOKEN: '' }, probes: probes({ connect: async () => Promise.reject(new ProbeError('refused')) }) });
    expect(doctorExitCode(checks)).toBe(3);
  });
});

describe('Ctrl-C', () => {
  it('during a probe ends doctor with 130, not a network failure', async () => {
    const controller = new AbortController();
    const io = fakeIO();
    const ctx = fakeContext({ io, env: ENV, configDir: join(tmp(), 'cfg'), transportImpl: scriptedTransport([]), now: () => NOW, signal: controller.signal });
    const hanging: Probes = probes({
      lookup: (_host, _t, signal) => new Promise((_ok, fail) => signal.addEventListener('abort', () => fail(new ProbeError('interrupted')))),
    });
    const running = doctorChecks(resolveRunState({}, ctx), ctx, { probes: hanging, uid: process.getuid!(), nodeVersion: '20.19.0' });
    controller.abort();
    await expect(running).rejects.toMatchObject({ code: 'interrupted', exitCode: 130 });
  });
});

describe('clock and proxy', () => {
  it('measures the skew from the Date header against the middle of the exchange', async () => {
    const at = (offsetS: number) => [{ status: 404, headers: { date: new Date(NOW + offsetS * 1000).toUTCString() } }];
    expect((await doctor({ answers: at(0) })).byName('clock')).toMatchObject({ status: 'ok', detail: 'in step with the server (within 1 s)' });
    expect((await doctor({ answers: at(30) })).byName('clock')).toMatchObject({ status: 'ok', detail: "your clock is 30 s behind the server's" });
    expect((await doctor({ answers: at(-600) })).byName('clock')).toMatchObject({ status: 'warning', detail: "your clock is 10 min ahead of the server's" });
    expect((await doctor({ answers: [{ status: 404, headers: {} }] })).byName('clock').status).toBe('warning');
  });

  it('a proxy: named without its credentials; DNS and TCP go to it; NO_PROXY and loopback bypass it', async () => {
    const p = probes();
    const viaProxy = await doctor({ env: { ...ENV, HTTPS_PROXY: 'http://user:pw@proxy.corp:3128' }, probes: p });
    expect(viaProxy.byName('proxy').detail).toBe('http://proxy.corp:3128 (from HTTPS_PROXY)');
    expect(JSON.stringify(viaProxy.checks)).not.toContain('pw');
    expect(p.calls).toEqual(['lookup proxy.corp', 'connect proxy.corp:3128']);
    expect(viaProxy.byName('TLS').detail).toBe('through the proxy: the round trip below checks it');

    expect((await doctor({ env: { ...ENV, https_proxy: 'http://proxy.corp:3128', NO_PROXY: '.example.com' } })).byName('proxy').detail).toBe(
      'none: NO_PROXY entry ".example.com" matches api.example.com',
    );
    expect((await doctor({ env: { ...ENV, CHATCTL_BASE_URL: 'http://127.0.0.1:9', HTTP_PROXY: 'http://proxy.corp:3128' } })).byName('proxy').detail).toBe('none: loopback is never proxied');
    const bad = await doctor({ env: { ...ENV, HTTPS_PROXY: 'proxy.corp:3128' } });
    expect(bad.byName('proxy')).toMatchObject({ status: 'failure', kind: 'config' });
    expect(doctorExitCode(bad.checks)).toBe(3);
  });

  it('a certificate close to its end is a warning', async () => {
    const soon = await doctor({ probes: probes({ tls: async () => ({ protocol: 'TLSv1.3', validTo: 'Jun  5 12:00:00 2030 GMT' }) }) });
    expect(soon.byName('TLS')).toMatchObject({ status: 'warning', detail: 'TLSv1.3, certificate valid until 2030-06-05: it expires in 4 days' });
  });
});

describe('output', () => {
  it('human: one line each with the fix under it, a summary; the exit status through a reported error', async () => {
    const io = fakeIO();
    const ctx = fakeContext({ io, env: { ...ENV, CHATCTL_TOKEN: undefined as unknown as string }, configDir: join(tmp(), 'cfg'), transportImpl: scriptedTransport([{ status: 404 }]), now: () => NOW });
    const deps: DoctorDeps = { probes: probes(), uid: process.getuid!(), nodeVersion: '20.19.0' };
    const err = await runDoctor(fakeFactory(ctx, undefined, {}), deps).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(3);
    expect((err as CliError).reported).toBe(true);
    const lines = io.out().split('\n');
    expect(lines).toContain('failure  token          none for profile "default" (no CHATCTL_TOKEN, none stored)');
    expect(lines).toContain('                        fix: chatctl auth login --with-token --profile default < token.txt, or set CHATCTL_TOKEN');
    expect(lines.at(-2)).toBe('1 failure, 1 warning: exit 3');
    expect(io.err()).toBe('');
  });

  it('--json: {"checks":[{"name","status","detail"}]}, the fix inside the detail', async () => {
    const io = fakeIO();
    const ctx = fakeContext({ io, env: ENV, configDir: join(tmp(), 'cfg'), transportImpl: scriptedTransport([{ status: 404, headers: { date: new Date(NOW).toUTCString() } }]), now: () => NOW });
    await runDoctor(fakeFactory(ctx, undefined, { json: true }), { probes: probes(), uid: process.getuid!(), nodeVersion: '20.19.0' });
    const doc = JSON.parse(io.out());
    expect(Object.keys(doc)).toEqual(['checks']);
    for (const c of doc.checks) {
      expect(Object.keys(c)).toEqual(['name', 'status', 'detail']);
      expect(['ok', 'warning', 'failure']).toContain(c.status);
    }
    expect(io.out()).not.toContain(TOKEN);
  });
});

// Through the execute seam, as a user runs it: a typo of a stored profile
// gets the suggestion every command gives, and a keyring that does not
// answer gets a next step that does not move the token to the plain file.
describe('doctor run as a command', () => {
  const withProfiles = (profiles: Record<string, Record<string, string>>) => {
    const ws = workspace();
    mkdirSync(ws.configDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(ws.configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: Object.keys(profiles)[0], profiles }, null, 2) + '\n', { mode: 0o600 });
    return ws;
  };
  const staging = { baseUrl: 'https://staging-api.example.com', organizationId: 'org_1', applicationId: 'app_1', environmentKey: 'staging', token: TOKEN };

  it('--profile stagin: "did you mean staging?" as every command says it, not an offer to create "stagin"', async () => {
    const ws = withProfiles({ staging, prod: { ...staging, environmentKey: 'prod' } });
    const doctor = await runCli(['doctor', '--profile', 'stagin'], { ws, env: { CHATCTL_TOKEN: undefined } });
    expect(doctor.exitCode).toBe(3);
    expect(doctor.stdout).toContain('failure  profile        "stagin" (named by --profile) does not exist; profiles: staging, prod\n');
    expect(doctor.stdout).toContain('fix: did you mean staging?  (--profile staging; list profiles with: chatctl profile list)\n');
    // Nor do the scope and token checks offer to store anything in "stagin".
    expect(doctor.stdout).toContain('warning  scope          not checked: profile "stagin" does not exist (did you mean staging?)\n');
    expect(doctor.stdout).toContain('warning  token          not checked: profile "stagin" does not exist (did you mean staging?)\n');
    expect(doctor.stdout).not.toMatch(/profile set stagin|--profile stagin\b/);
    // The words of any other command with the same typo.
    const other = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--profile', 'stagin'], { ws });
    expect(other.exitCode).toBe(3);
    expect(other.stderr).toContain('did you mean staging?  (--profile staging; list profiles with: chatctl profile list)');
    // Named by CHATCTL_PROFILE: the suggestion in its words.
    const env = await runCli(['doctor', '--json'], { ws, env: { CHATCTL_PROFILE: 'stagin' } });
    const profile = (JSON.parse(env.stdout) as { checks: { name: string; detail: string }[] }).checks.find((c) => c.name === 'profile')!;
    expect(profile.detail).toContain('fix: did you mean staging?  (CHATCTL_PROFILE=staging; list profiles with: chatctl profile list)');
    // Nothing near: how to create it, as before.
    const far = await runCli(['doctor', '--profile', 'qa'], { ws });
    expect(far.stdout).toContain('fix: create it with: chatctl profile set qa --base-url URL --org ID --app ID --env KEY\n');
  });

  it('a keyring that does not answer: fix the keyring, or choose the file knowingly; never a bare auth login', async () => {
    const { token: _unused, ...noToken } = staging;
    const ws = withProfiles({ staging: { ...noToken, tokenStorage: 'keyring' } });
    const r = await runCli(['doctor'], { ws, env: { DBUS_SESSION_BUS_ADDRESS: undefined } });
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('failure  token          profile "staging" keeps its token in the system keyring, which did not answer (no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set)\n');
    expect(r.stdout).toContain(
      'fix: unlock or start the system keyring (see docs/credentials.md), or set CHATCTL_TOKEN; to keep the token in config.json instead: chatctl auth login --profile staging --insecure-storage\n',
    );
    expect(r.stdout).not.toMatch(/auth login --profile staging(?! --insecure-storage)/);
  });
});
