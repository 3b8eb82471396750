// chatctl doctor as a new user runs it: the real bin/chatctl.js against the
// sandbox (all ok, exit 0, the token never sent), a dead port (exit 12), a
// self-signed https server (exit 12, then ok with NODE_EXTRA_CA_CERTS), and
// a stored profile whose sources it names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createHttps, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { cleanupTempDirs, runCli, tempDir, workspace } from '../../support/run.js';
import { startSandbox, type RunningSandbox } from '../../../src/sandbox/server.js';
import type { RecordedRequest } from '../../../src/sandbox/state.js';

let sandbox: RunningSandbox;
const seen: RecordedRequest[] = [];
let tlsServer: Server;
let tlsPort = 0;
let certPath = '';

beforeAll(async () => {
  sandbox = await startSandbox({ onRequest: (r) => seen.push(r) });
  const dir = tempDir('doctor-tls');
  certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', keyPath, '-out', certPath],
    { stdio: 'ignore' },
  );
  tlsServer = createHttps({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('nothing here');
  });
  await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r));
  tlsPort = (tlsServer.address() as AddressInfo).port;
});
afterAll(async () => {
  await sandbox.close();
  tlsServer.closeAllConnections();
  await new Promise((r) => tlsServer.close(r));
  cleanupTempDirs();
});

const sandboxEnv = () => ({
  CHATCTL_BASE_URL: sandbox.baseUrl,
  CHATCTL_TOKEN: sandbox.token,
  CHATCTL_ORG: sandbox.organizationId,
  CHATCTL_APP: sandbox.applicationId,
  CHATCTL_ENV: sandbox.environmentKey,
});

async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

interface Doc {
  checks: { name: string; status: string; detail: string }[];
}
const status = (doc: Doc, name: string) => doc.checks.find((c) => c.name === name)?.status;
const detail = (doc: Doc, name: string) => doc.checks.find((c) => c.name === name)?.detail;

describe('doctor --json', () => {
  it('against the sandbox: every check ok, exit 0, and the token never sent', async () => {
    seen.length = 0;
    const r = await runCli(['doctor', '--json'], { env: sandboxEnv() });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.checks.map((c) => c.name)).toEqual([
      'config folder',
      'config file',
      'profile',
      'scope',
      'token',
      'settings',
      'base URL',
      'proxy',
      'DNS',
      'TCP',
      'TLS',
      'round trip',
      'clock',
      'Node.js',
    ]);
    for (const c of doc.checks) {
      expect(Object.keys(c)).toEqual(['name', 'status', 'detail']);
      expect(c.status, `${c.name}: ${c.detail}`).toBe('ok');
    }
    expect(detail(doc, 'token')).toBe('from CHATCTL_TOKEN (environment); doctor does not send it');
    expect(detail(doc, 'round trip')).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+\/ \(without the token\) answered HTTP \d{3} in \d+ ms$/);
    expect(detail(doc, 'clock')).toBe('in step with the server (within 1 s)');
    expect(r.stdout).not.toContain(sandbox.token);
    // The one request doctor made carried no credentials.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('GET');
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen[0])).not.toContain(sandbox.token);
  });

  it('against a dead port: the TCP check fails, exit 12, nothing on stderr', async () => {
    const port = await deadPort();
    const r = await runCli(['doctor', '--json'], { env: { ...sandboxEnv(), CHATCTL_BASE_URL: `http://127.0.0.1:${port}` } });
    expect(r.exitCode).toBe(12);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as Doc;
    expect(status(doc, 'TCP')).toBe('failure');
    expect(detail(doc, 'TCP')).toBe(`cannot connect to 127.0.0.1:${port}: connection refused; fix: is the server running, and the port in the base URL right? A firewall?`);
    expect(status(doc, 'round trip')).toBe('warning');
    expect(status(doc, 'Node.js')).toBe('ok');
  });

  it('a self-signed https server: TLS fails (12) naming NODE_EXTRA_CA_CERTS; with it, everything passes', async () => {
    const env = { ...sandboxEnv(), CHATCTL_BASE_URL: `https://127.0.0.1:${tlsPort}` };
    const bad = await runCli(['doctor', '--json'], { env });
    expect(bad.exitCode).toBe(12);
    const badDoc = JSON.parse(bad.stdout) as Doc;
    expect(status(badDoc, 'TLS')).toBe('failure');
    expect(detail(badDoc, 'TLS')).toMatch(/self[- ]signed|SELF_SIGNED/i);
    expect(detail(badDoc, 'TLS')).toContain('NODE_EXTRA_CA_CERTS');

    // NODE_EXTRA_CA_CERTS is read by Node when a process starts.
    const good = await runCli(['doctor', '--json'], { env: { ...env, NODE_EXTRA_CA_CERTS: certPath }, spawn: true });
    expect(good.exitCode).toBe(0);
    const doc = JSON.parse(good.stdout) as Doc;
    expect(detail(doc, 'TLS')).toMatch(/^TLSv1\.[23], certificate valid until \d{4}-\d\d-\d\d: it expires in (0 days|1 day); fix: tell the server's operators$/);
    expect(status(doc, 'TLS')).toBe('warning'); // a 2-day certificate
    expect(detail(doc, 'round trip')).toContain('answered HTTP 404');
  });
});

describe('doctor in human mode', () => {
  it('names the profile in effect and where each value comes from; exit 3 without a token', async () => {
    const ws = workspace();
    const set = await runCli(['profile', 'set', 'prod', '--base-url', sandbox.baseUrl, '--org', sandbox.organizationId, '--app', sandbox.applicationId, '--env', sandbox.environmentKey], { ws });
    expect(set.exitCode).toBe(0);
    const r = await runCli(['doctor', '--profile', 'prod'], { ws });
    expect(r.exitCode).toBe(3);
    const lines = r.stdout.split('\n');
    expect(lines).toContain('ok       profile        "prod" (named by --profile)');
    expect(lines).toContain(
      `ok       scope          base URL ${sandbox.baseUrl} (profile "prod"), org ${sandbox.organizationId} (profile "prod"), app ${sandbox.applicationId} (profile "prod"), env ${sandbox.environmentKey} (profile "prod")`,
    );
    expect(lines).toContain('failure  token          none for profile "prod" (no CHATCTL_TOKEN, none stored)');
    expect(lines).toContain('                        fix: chatctl auth login --with-token --profile prod < token.txt, or set CHATCTL_TOKEN');
    expect(lines).toContain('ok       round trip     ' + `GET ${sandbox.baseUrl}/ (without the token) answered HTTP 401 in ${/answered HTTP 401 in (\d+) ms/.exec(r.stdout)![1]} ms`);
    expect(lines.at(-2)).toBe('1 failure, 0 warnings: exit 3');

    // After auth login, nothing fails.
    const login = await runCli(['auth', 'login', '--with-token', '--profile', 'prod'], { ws, input: sandbox.token });
    expect(login.exitCode).toBe(0);
    const ok = await runCli(['doctor', '--profile', 'prod'], { ws });
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toContain('ok       token          stored in profile "prod" (config file); doctor does not send it\n');
    expect(ok.stdout.endsWith('\nall checks passed\n')).toBe(true);
    expect(ok.stdout + ok.stderr).not.toContain(sandbox.token);
  });
});
