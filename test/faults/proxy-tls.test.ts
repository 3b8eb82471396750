// Issue 5, item 2: proxies (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, upper and
// lower case) through a CONNECT proxy on loopback, and a private CA through
// NODE_EXTRA_CA_CERTS against a self-signed HTTPS server on loopback.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CREATE,
  CSRF,
  ConnectProxy,
  REACTIVATE,
  SECRET,
  ScriptServer,
  TOKEN,
  cleanupTempDirs,
  closedPort,
  json,
  leaks,
  mutationBody,
  parseErrorLine,
  runCli,
  scopeEnv,
  secretBody,
  stackTrace,
  tempDir,
  workspace,
  type RunResult,
} from './support.js';

let certDir: string;
let certPath: string;
let tlsServer: ScriptServer;
let plainServer: ScriptServer;
let other: ScriptServer;
let proxy: ConnectProxy;

beforeAll(async () => {
  certDir = tempDir('tls');
  certPath = join(certDir, 'cert.pem');
  const keyPath = join(certDir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
      '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout', keyPath, '-out', certPath,
    ],
    { stdio: 'ignore' },
  );
  tlsServer = await new ScriptServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }).start();
  plainServer = await new ScriptServer().start();
  other = await new ScriptServer().start();
  proxy = await new ConnectProxy().start();
});
afterAll(async () => {
  await Promise.all([tlsServer.close(), plainServer.close(), other.close(), proxy.close()]);
  cleanupTempDirs();
});
beforeEach(() => {
  proxy.reset();
  for (const s of [tlsServer, plainServer, other]) {
    s.dropConnections();
    s.reset((_q, res, rec) => json(res, rec.url.endsWith('/reactivate') ? 200 : 201, rec.url.endsWith('/reactivate') ? mutationBody() : secretBody()));
  }
});

async function create(baseUrl: string, env: Record<string, string | undefined>, flags: string[] = []): Promise<RunResult & { secretFile: string }> {
  const ws = workspace();
  const secretFile = join(ws.cwd, 'new.whsec');
  const r = await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0', '--timeout', '2', ...flags], {
    ws,
    env: scopeEnv(baseUrl, env),
    // NODE_EXTRA_CA_CERTS is read by Node when a process starts.
    spawn: 'NODE_EXTRA_CA_CERTS' in env,
  });
  return { ...r, secretFile };
}

function expectClean(r: RunResult) {
  expect(stackTrace(r.stderr), r.stderr).toBeUndefined();
  expect(leaks(r.stderr, [TOKEN, SECRET, CSRF]), r.stderr).toEqual([]);
}

function expectDelivered(r: RunResult & { secretFile: string }) {
  expectClean(r);
  expect(r.exitCode, r.stderr).toBe(0);
  expect(readFileSync(r.secretFile, 'utf8')).toBe(SECRET);
}

const tunnelsTo = (port: number) => proxy.records.filter((p) => p.kind === 'connect' && p.target === `127.0.0.1:${port}`);
const carriedTo = (port: number) =>
  proxy.records.filter((p) => (p.kind === 'connect' ? p.target === `127.0.0.1:${port}` : p.target.startsWith(`http://127.0.0.1:${port}/`)));

describe('private CA: NODE_EXTRA_CA_CERTS', () => {
  test('a self-signed HTTPS server without NODE_EXTRA_CA_CERTS → 12 network_error naming the certificate; nothing sent', async () => {
    const r = await create(tlsServer.url, {});
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toMatch(/cert|self[- ]signed|SELF_SIGNED|verify/i);
    expect(tlsServer.hits).toBe(0);
    expect(existsSync(r.secretFile)).toBe(false);
  });

  test('with NODE_EXTRA_CA_CERTS=<cert> → exit 0, the request arrives', async () => {
    const r = await create(tlsServer.url, { NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(tlsServer.hits).toBe(1);
    expect(tlsServer.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  test('https://localhost (DNS name in the certificate) with NODE_EXTRA_CA_CERTS → exit 0', async () => {
    const r = await create(`https://localhost:${tlsServer.port}`, { NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
  });
});

describe('proxies', () => {
  test.each(['HTTPS_PROXY', 'https_proxy'])('%s: https goes through a CONNECT tunnel (private CA honoured inside it)', async (name) => {
    const r = await create(tlsServer.url, { [name]: proxy.url, NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(tunnelsTo(tlsServer.port)).toHaveLength(1);
    expect(tlsServer.hits).toBe(1);
    // The tunnel is opaque: the proxy never sees the bearer token.
    expect(JSON.stringify(proxy.records)).not.toContain(TOKEN);
  });

  test('through the CONNECT proxy without NODE_EXTRA_CA_CERTS → 12 network_error; the server gets nothing', async () => {
    const r = await create(tlsServer.url, { HTTPS_PROXY: proxy.url });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toMatch(/cert|self[- ]signed|SELF_SIGNED|verify/i);
    expect(tunnelsTo(tlsServer.port)).toHaveLength(1);
    expect(tlsServer.hits).toBe(0);
  });

  test.each(['HTTP_PROXY', 'http_proxy'])('%s: an http://127.0.0.1 base URL goes through the proxy', async (name) => {
    const r = await create(plainServer.url, { [name]: proxy.url });
    expectDelivered(r);
    expect(carriedTo(plainServer.port)).toHaveLength(1);
    expect(plainServer.hits).toBe(1);
  });

  test('HTTP_PROXY alone also carries https (as undici does)', async () => {
    const r = await create(tlsServer.url, { HTTP_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(tunnelsTo(tlsServer.port)).toHaveLength(1);
  });

  test.each([
    ['NO_PROXY', '127.0.0.1', 'HTTPS_PROXY'],
    ['no_proxy', '127.0.0.1', 'https_proxy'],
    ['NO_PROXY', 'example.com,127.0.0.1', 'HTTPS_PROXY'],
    ['no_proxy', '*', 'HTTPS_PROXY'],
  ])('%s=%s bypasses %s for https', async (noName, value, proxyName) => {
    const r = await create(tlsServer.url, { [proxyName]: proxy.url, [noName]: value, NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(proxy.records).toHaveLength(0);
    expect(tlsServer.hits).toBe(1);
  });

  test.each([
    ['NO_PROXY', 'HTTP_PROXY'],
    ['no_proxy', 'http_proxy'],
  ])('%s=127.0.0.1 bypasses %s for http', async (noName, proxyName) => {
    const r = await create(plainServer.url, { [proxyName]: proxy.url, [noName]: '127.0.0.1' });
    expectDelivered(r);
    expect(proxy.records).toHaveLength(0);
    expect(plainServer.hits).toBe(1);
  });

  test('NO_PROXY naming another host does not bypass', async () => {
    const r = await create(plainServer.url, { HTTP_PROXY: proxy.url, NO_PROXY: 'example.com' });
    expectDelivered(r);
    expect(carriedTo(plainServer.port)).toHaveLength(1);
  });

  test('a proxy that refuses connections → 12 network_error, no stack, no token', async () => {
    const port = await closedPort();
    const r = await create(plainServer.url, { HTTP_PROXY: `http://127.0.0.1:${port}` });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(plainServer.hits).toBe(0);
  });

  test('a malformed proxy URL → 3 config_error naming the variable (not an internal error); nothing sent', async () => {
    const r = await create(plainServer.url, { HTTP_PROXY: 'http://[bad' });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect(plainServer.hits).toBe(0);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 3, code: 'config_error' });
    expect(line.error.message).toMatch(/HTTP_PROXY/);
  });
});

describe('the fault contract holds through the proxy transport too', () => {
  test('a redirect through the proxy is not followed: exit 1 naming the Location; the other origin gets nothing', async () => {
    const location = `${other.url}/stolen`;
    plainServer.reset((_q, res) => {
      res.writeHead(307, { Location: location, 'Content-Length': '0' });
      res.end();
    });
    const r = await create(plainServer.url, { HTTP_PROXY: proxy.url });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(line.error.message).toContain(location);
    expect(other.hits).toBe(0);
    expect(carriedTo(other.port)).toHaveLength(0);
  });

  test('a 2xx body over 1 MiB through the proxy → 1 invalid_response, promptly', async () => {
    plainServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.write('{"data":{"endpoint":{"pad":"');
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let n = 0;
      const pump = () => {
        while (n++ < 64) if (!res.write(chunk)) return void res.once('drain', pump);
      };
      pump(); // 4 MiB, never finished
    });
    const r = await create(plainServer.url, { HTTP_PROXY: proxy.url }, ['--timeout', '20']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(r.durationMs).toBeLessThan(5000);
  });

  test('a body that stalls through the proxy → 12 timeout at --timeout', async () => {
    plainServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
      res.write('{"data":');
    });
    const r = await create(plainServer.url, { HTTP_PROXY: proxy.url }, ['--timeout', '1']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'timeout' });
    expect(r.durationMs).toBeLessThan(4000);
    expect(existsSync(r.secretFile)).toBe(false);
  });

  test('a truncated body through the proxy → 1 invalid_response, not retried', async () => {
    const body = JSON.stringify(secretBody());
    plainServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(body.length + 100) });
      res.write(body);
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const r = await create(plainServer.url, { HTTP_PROXY: proxy.url }, ['--max-retries', '1']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(plainServer.hits).toBe(1);
  });

  test('reactivate through the proxy (human mode) → exit 0', async () => {
    const r = await runCli([...REACTIVATE, '--max-retries', '0', '--timeout', '2'], { env: scopeEnv(plainServer.url, { http_proxy: proxy.url }) });
    expectClean(r);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(carriedTo(plainServer.port)).toHaveLength(1);
  });
});
