// As a new user: a version conflict names the server's current version and
// the exact command to re-run; a rotation conflict says when the running
// overlap ends. The real bin/chatctl.js against a recording server that
// sends `currentVersion`, and against the sandbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { errorBody, scopeEnv } from '../../support/fixtures.js';
import { parseErrorLine } from '../../support/json.js';
import { cleanupTempDirs, runCli, tempDir } from '../../support/run.js';
import { type RecordingServer, startServer } from '../../support/server.js';
import { startSandbox, type RunningSandbox } from '../../../src/sandbox/server.js';

let server: RecordingServer;
let sandbox: RunningSandbox;
beforeAll(async () => {
  server = await startServer();
  sandbox = await startSandbox();
});
afterAll(async () => {
  await server.close();
  await sandbox.close();
  cleanupTempDirs();
});

const conflict = (details: unknown) => ({
  status: 409,
  body: errorBody('webhook_endpoint_version_conflict', 'expectedVersion does not match the current version', details as Record<string, unknown>),
});

/** The words a POSIX shell makes of a command line. */
function shellWords(line: string): string[] {
  return execFileSync('sh', ['-c', `for w in ${line}; do printf '%s\\0' "$w"; done`], { encoding: 'utf8' })
    .split('\0')
    .slice(0, -1);
}

describe('exit 7 against a server that sends currentVersion', () => {
  it('rotate: the current version and the exact command to re-run', async () => {
    server.reset();
    server.enqueue(conflict({ expectedVersion: 3, currentVersion: 5 }));
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap', '--secret-file', 'new.whsec'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(7);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('chatctl: error: expectedVersion does not match the current version\n');
    expect(r.stderr).toContain('\n  current version: 5\n');
    expect(r.stderr).toContain("\n  re-run: chatctl webhooks rotate 'we_1' --expected-version 5 --mode overlap --secret-file new.whsec\n");
  });

  it('reactivate: the same, and an id that needs quoting comes back whole from the shell', async () => {
    server.reset();
    const id = "we_it's $(x)";
    server.enqueue(conflict({ version: 9 }));
    const r = await runCli(['webhooks', 'reactivate', id, '--expected-version', '8'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(7);
    const line = /\n {2}re-run: (.*)\n/.exec(r.stderr)?.[1];
    expect(line).toBe(`chatctl webhooks reactivate 'we_it'\\''s $(x)' --expected-version 9`);
    expect(shellWords(line!)).toEqual(['chatctl', 'webhooks', 'reactivate', id, '--expected-version', '9']);
  });

  it('--json: the error line is unchanged, currentVersion in its details', async () => {
    server.reset();
    server.enqueue(conflict({ currentVersion: 5 }));
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '3', '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(7);
    const line = parseErrorLine(r.stderr);
    expect(line.error.details).toEqual({ currentVersion: 5 });
    expect(r.stderr).not.toContain('re-run');
  });

  it('details of odd shapes never crash the report', async () => {
    for (const details of [{ currentVersion: [5], endpoint: 'x' }, { currentVersion: { $gt: 1 } }, { currentVersion: '\u001b[31m7' }, { version: 1e300 }]) {
      server.reset();
      server.enqueue({ status: 409, body: { error: { code: 'webhook_endpoint_version_conflict', message: 'm', requestId: 'r', details } } });
      const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '3'], { env: scopeEnv(server.url) });
      expect(r.exitCode, JSON.stringify(details)).toBe(7);
      expect(r.stderr).not.toMatch(/\n\s+at |TypeError|\u001b/);
      expect(r.stderr).not.toContain('current version:');
    }
  });

  it('a rotation conflict gives the time the overlap ends', async () => {
    server.reset();
    server.enqueue({ status: 409, body: errorBody('webhook_secret_rotation_conflict', 'an overlap rotation is still running', { previousSecretExpiresAt: '2099-01-02T03:04:05.000Z' }) });
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap', '--secret-file', 'x'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(8);
    expect(r.stderr).toMatch(/\n {2}the running overlap ends at 2099-01-02T03:04:05\.000Z \(in \d+ h( \d+ min)?\); rotate again with --mode overlap after that\n/);
    expect(r.stderr).toContain("\n  to replace both secrets now: chatctl webhooks rotate 'we_1' --expected-version 4 --mode immediate --secret-file x --yes\n");
  });
});

describe('against the sandbox', () => {
  const env = () => ({
    CHATCTL_BASE_URL: sandbox.baseUrl,
    CHATCTL_TOKEN: sandbox.token,
    CHATCTL_ORG: sandbox.organizationId,
    CHATCTL_APP: sandbox.applicationId,
    CHATCTL_ENV: sandbox.environmentKey,
  });

  it('a stale version, then the printed command works as printed; a second overlap names its end', async () => {
    const dir = tempDir('conflict');
    const created = await runCli(['webhooks', 'create', '--name', 'c', '--url', 'https://hooks.example.com/conflict', '--event', 'chat.message.created.v1', '--json'], { env: env() });
    expect(created.exitCode).toBe(0);
    const id = JSON.parse(created.stdout).data.endpoint.id as string;
    const first = await runCli(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', `${dir}/s1`], { env: env() });
    expect(first.exitCode).toBe(0);

    // Version 1 is stale now: the sandbox sends currentVersion 2.
    const stale = await runCli(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', `${dir}/s2`], { env: env() });
    expect(stale.exitCode).toBe(7);
    expect(stale.stderr).toContain('\n  current version: 2\n');
    const rerun = /\n {2}re-run: (.*)\n/.exec(stale.stderr)![1]!;
    const words = shellWords(rerun);
    expect(words.slice(0, 6)).toEqual(['chatctl', 'webhooks', 'rotate', id, '--expected-version', '2']);

    // Re-running it as printed meets the overlap still running: its end is named.
    const again = await runCli(words.slice(1), { env: env() });
    expect(again.exitCode).toBe(8);
    expect(again.stderr).toMatch(/\n {2}the running overlap ends at \d{4}-\d\d-\d\dT[\d:.]+Z \(in 2[34] h( \d+ min)?\)/);
  });
});

describe('exits 10, 11 and 12 end with the next step, against the sandbox', () => {
  const scope = (sb: RunningSandbox) => ({ CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token, CHATCTL_ORG: sb.organizationId, CHATCTL_APP: sb.applicationId, CHATCTL_ENV: sb.environmentKey });
  const create = (name: string) => ['webhooks', 'create', '--name', name, '--url', `https://hooks.example.com/${name}`, '--event', 'chat.message.created.v1', '--json'];

  it('10: the endpoint limit says to reuse an endpoint', async () => {
    const sb = await startSandbox({ endpointLimit: 1 });
    try {
      expect((await runCli(create('one'), { env: scope(sb) })).exitCode).toBe(0);
      const r = await runCli(create('two').slice(0, -1).concat('--secret-file', 'two.whsec'), { env: scope(sb) });
      expect(r.exitCode).toBe(10);
      expect(r.stderr).toContain('\n  next: the environment holds as many webhook endpoints as it allows');
      // The sandbox's own limit: it says how to raise it.
      expect(r.stderr).toContain("the environment already has 1 endpoints, this sandbox's limit (start it with --endpoint-limit N to allow more)");
    } finally {
      await sb.close();
    }
  });

  it('11: the re-run it prints, pasted once the server lets it through, succeeds', async () => {
    const sb = await startSandbox();
    try {
      const id = JSON.parse((await runCli(create('rl'), { env: scope(sb) })).stdout).data.endpoint.id as string;
      const res = await fetch(`${sb.baseUrl}/_sandbox/faults`, { method: 'POST', headers: { authorization: `Bearer ${sb.token}` }, body: JSON.stringify({ failNext: 1, status: 429 }) });
      expect(res.status).toBe(200);
      const r = await runCli(['--max-retries', '0', 'webhooks', 'reactivate', id, '--expected-version', '1'], { env: scope(sb) });
      expect(r.exitCode).toBe(11);
      const line = /\n {2}next: wait a minute, then re-run: (.*)\n/.exec(r.stderr)?.[1];
      expect(line).toBe(`chatctl webhooks reactivate '${id}' --expected-version 1`);
      const again = await runCli(shellWords(line!).slice(1), { env: scope(sb) });
      expect(again.exitCode).toBe(0);
    } finally {
      await sb.close();
    }
  });

  it('12: a refused connection points at doctor, then the re-run', async () => {
    const r = await runCli(['--max-retries', '0', 'webhooks', 'reactivate', 'we_1', '--expected-version', '2'], { env: { ...scopeEnv('http://127.0.0.1:9') } });
    expect(r.exitCode).toBe(12);
    expect(r.stderr).toContain("\n  next: check the base URL, proxy and network with: chatctl doctor\n  then re-run: chatctl webhooks reactivate 'we_1' --expected-version 2\n");
  });
});
