// Proxies (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, upper and lower case) through
// a CONNECT proxy on loopback, and a private CA through NODE_EXTRA_CA_CERTS
// against a self-signed HTTPS server on loopback.
//
// chatctl never proxies loopback (docs/configuration.md), so the proxied tests
// address the server as https://api.chatctl.test:PORT: a reserved name no DNS
// answers, which the test proxy alone maps to 127.0.0.1. A request that went
// direct by mistake fails to resolve instead of quietly succeeding.
import { afterAll, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import tls from 'node:tls';
import http from 'node:http';
import type net from 'node:net';
import { CREATE, CSRF, REACTIVATE, SECRET, TOKEN, mutationBody, csrfScopeEnv, secretBody } from '../support/fixtures.js';
import { leaks, parseErrorLine, stackTrace } from '../support/json.js';
import { cleanupTempDirs, runCli, tempDir, workspace, type RunResult } from '../support/run.js';
import { ConnectProxy, RecordingServer, closedPort, json } from '../support/server.js';
import { PROXY_ALIAS } from '../support/global-setup.js';
import { proxyTransport } from '../../src/http/proxy.js';
import { nodeTransport, parseRawAnswer } from '../../src/http/transport.js';

let certPath: string;
let tlsServer: RecordingServer;
let plainServer: RecordingServer;
let other: RecordingServer;
let proxy: ConnectProxy;
let rawTls: RawTlsServer;

/** The name the proxy alone resolves (to 127.0.0.1); the run's certificate names it. */
const ALIAS = PROXY_ALIAS;
const viaAlias = (port: number) => `https://${ALIAS}:${port}`;

/**
 * A TLS server that answers every connection with raw bytes the test sets
 * (a response node:http could never write: 100 kB of headers, a bad status
 * line). Counts the requests it read.
 */
class RawTlsServer {
  hits = 0;
  reply = Buffer.from('');
  private server!: tls.Server;
  port = 0;
  constructor(private readonly opts: { key: Buffer; cert: Buffer }) {}
  async start(): Promise<this> {
    this.server = tls.createServer(this.opts, (socket: net.Socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        this.hits++;
        socket.end(this.reply);
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }
  async close(): Promise<void> {
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

beforeAll(async () => {
  // The run's private CA (test/support/global-setup.ts): this worker trusts
  // it, as a process started with NODE_EXTRA_CA_CERTS naming it does, so runs
  // through execute() reach these servers; a process started with an
  // environment of its own trusts it only if that environment says so.
  const trusted = inject('trustedTls');
  certPath = trusted.cert;
  const keyPath = trusted.key;
  tlsServer = await new RecordingServer({ tls: { key: readFileSync(keyPath), cert: readFileSync(certPath) }, keepAliveTimeoutMs: 500 }).start();
  plainServer = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
  other = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
  proxy = await new ConnectProxy([ALIAS]).start();
  rawTls = await new RawTlsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }).start();
});
afterAll(async () => {
  await Promise.all([tlsServer.close(), plainServer.close(), other.close(), proxy.close(), rawTls.close()]);
  cleanupTempDirs();
});
beforeEach(() => {
  proxy.reset();
  rawTls.hits = 0;
  for (const s of [tlsServer, plainServer, other]) {
    s.dropConnections();
    s.reset((_q, res, rec) => json(res, rec.url.endsWith('/reactivate') ? 200 : 201, rec.url.endsWith('/reactivate') ? mutationBody() : secretBody()));
  }
});

async function create(baseUrl: string, env: Record<string, string | undefined>, flags: string[] = [], opts: { spawn?: boolean } = {}): Promise<RunResult & { secretFile: string }> {
  const ws = workspace();
  const secretFile = join(ws.cwd, 'new.whsec');
  // A generous limit: a TLS handshake through a proxy on a loaded machine
  // must not become a timeout where the timeout is not the subject.
  const r = await runCli([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0', '--timeout', '30', ...flags], {
    ws,
    env: csrfScopeEnv(baseUrl, env),
    // In-process runs trust the run's CA (see beforeAll); a test of the
    // variable itself, or of a server nobody trusts, asks for a process.
    spawn: opts.spawn ?? false,
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

const tunnelsTo = (port: number) => proxy.records.filter((p) => p.kind === 'connect' && p.target === `${ALIAS}:${port}`);

describe('private CA: NODE_EXTRA_CA_CERTS', () => {
  test('a self-signed HTTPS server without NODE_EXTRA_CA_CERTS → 12 network_error naming the certificate; nothing sent (a real process)', async () => {
    const r = await create(tlsServer.url, {}, [], { spawn: true });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toMatch(/cert|self[- ]signed|SELF_SIGNED|verify/i);
    expect(tlsServer.hits).toBe(0);
    expect(existsSync(r.secretFile)).toBe(false);
  });

  test('with NODE_EXTRA_CA_CERTS=<cert> → exit 0, the request arrives (a real process)', async () => {
    const r = await create(tlsServer.url, { NODE_EXTRA_CA_CERTS: certPath }, [], { spawn: true });
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
  test.each([
    ['HTTPS_PROXY', true],
    ['https_proxy', false],
  ] as const)('%s: https goes through a CONNECT tunnel (private CA honoured inside it; a real process: %s)', async (name, spawn) => {
    const r = await create(viaAlias(tlsServer.port), { [name]: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, [], { spawn });
    expectDelivered(r);
    expect(tunnelsTo(tlsServer.port).length).toBeLessThan(4);
    expect(tlsServer.hits).toBe(1);
    // The tunnel is opaque: the proxy never sees the bearer token.
    expect(JSON.stringify(proxy.records)).not.toContain(TOKEN);
  });

  test('through the CONNECT proxy without NODE_EXTRA_CA_CERTS → 12 network_error; the server gets nothing (a real process)', async () => {
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url }, [], { spawn: true });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toMatch(/cert|self[- ]signed|SELF_SIGNED|verify/i);
    expect(tunnelsTo(tlsServer.port).length).toBeLessThan(4);
    expect(tlsServer.hits).toBe(0);
    // Nothing reached the server: no key in the error line.
    expect(line.idempotencyKey).toBeUndefined();
  });

  test('credentials in the proxy URL go to the proxy as Proxy-Authorization, percent-decoded, and never to the server', async () => {
    const url = new URL(proxy.url);
    url.username = 'ci%20bot';
    url.password = 'p%40ss';
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: url.href, NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    const tunnels = tunnelsTo(tlsServer.port);
    expect(tunnels).toHaveLength(1);
    expect(tunnels[0]!.headers['proxy-authorization']).toBe(`Basic ${Buffer.from('ci bot:p@ss').toString('base64')}`);
    expect(tlsServer.requests[0]!.headers['proxy-authorization']).toBeUndefined();
  });

  test('a retry goes through the tunnel already open: two attempts, one CONNECT', async () => {
    // A server that announces it keeps connections for 5 s (the suite's
    // servers say 0, with which no client may reuse one).
    const trusted = inject('trustedTls');
    const server = await new RecordingServer({ tls: { key: readFileSync(trusted.key), cert: readFileSync(trusted.cert) }, keepAliveTimeoutMs: 5_000 }).start();
    try {
      let attempts = 0;
      server.reset((_q, res) => {
        if (++attempts === 1) res.writeHead(503, { 'Retry-After-Ms': '0', 'Content-Type': 'application/json' }).end('{}');
        else json(res, 201, secretBody());
      });
      const r = await create(viaAlias(server.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, ['--max-retries', '1']);
      expectDelivered(r);
      expect(server.hits).toBe(2);
      expect(tunnelsTo(server.port)).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  test('HTTP_PROXY alone also carries https (as undici does)', async () => {
    const r = await create(viaAlias(tlsServer.port), { HTTP_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(tunnelsTo(tlsServer.port).length).toBeLessThan(4);
  });

  test.each([
    ['NO_PROXY', ALIAS, 'HTTPS_PROXY'],
    ['no_proxy', ALIAS, 'https_proxy'],
    ['NO_PROXY', `example.com,${ALIAS}`, 'HTTPS_PROXY'],
    ['no_proxy', '*', 'HTTPS_PROXY'],
  ])('%s=%s bypasses %s: the request goes direct (and the reserved name does not resolve)', async (noName, value, proxyName) => {
    const r = await create(viaAlias(tlsServer.port), { [proxyName]: proxy.url, [noName]: value, NODE_EXTRA_CA_CERTS: certPath });
    expectClean(r);
    expect(proxy.records).toHaveLength(0);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toContain(ALIAS);
    expect(tlsServer.hits).toBe(0);
  });

  test('NO_PROXY naming another host does not bypass', async () => {
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url, NO_PROXY: 'example.com', NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(tunnelsTo(tlsServer.port).length).toBeLessThan(4);
  });

  test('a proxy that refuses connections → 12 network_error, no stack, no token, no key (nothing was sent)', async () => {
    const port = await closedPort();
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: `http://127.0.0.1:${port}` });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(tlsServer.hits).toBe(0);
    expect(line.idempotencyKey).toBeUndefined();
  });

  test('a proxy that refuses the tunnel (403 to CONNECT) → 12 network_error; the server gets nothing', async () => {
    const r = await create(`https://elsewhere.chatctl.test:${tlsServer.port}`, { HTTPS_PROXY: proxy.url });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(line.error.message).toContain(`the proxy refused to connect to elsewhere.chatctl.test:${tlsServer.port} (it answered 403)`);
    expect(proxy.records.map((p) => p.target)).toEqual([`elsewhere.chatctl.test:${tlsServer.port}`]);
    expect(tlsServer.hits).toBe(0);
    expect(line.idempotencyKey).toBeUndefined();
  });

  test('a malformed proxy URL → 3 config_error naming the variable (not an internal error); nothing sent', async () => {
    const r = await create(viaAlias(tlsServer.port), { HTTP_PROXY: 'http://[bad' });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect(tlsServer.hits).toBe(0);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 3, code: 'config_error' });
    expect(line.error.message).toMatch(/HTTP_PROXY/);
  });
});

describe("a record's raw tap through the tunnel", () => {
  test('direct HTTPS: the answer as the TLS socket delivered it, decrypted, before the parser', async () => {
    tlsServer.reset((_q, res) => json(res, 201, { direct: true }));
    const raws: Buffer[] = [];
    const parsed: string[] = [];
    const tap = { head: () => parsed.push('head'), chunk: () => parsed.push('chunk'), raw: (b: Buffer) => raws.push(b) };
    const res = await nodeTransport(
      { method: 'POST', url: `https://localhost:${tlsServer.port}/v1/x`, headers: { 'content-type': 'application/json', 'x-request-id': 'raw-direct' }, body: '{}' },
      { timeoutMs: 30_000, maxBodyBytes: 1 << 20, signal: new AbortController().signal, tap },
    );
    const a = parseRawAnswer(Buffer.concat(raws));
    expect(a).toMatchObject({ status: 201, whole: true });
    expect(a!.body.toString()).toBe(res.body);
    expect(parsed).toEqual([]);
  });

  test('the answer as the TLS socket delivered it (decrypted), each attempt its own; the parsed calls never come', async () => {
    tlsServer.reset((_q, res, rec) => json(res, 201, { n: tlsServer.hits, id: rec.headers['x-request-id'] }));
    const send = proxyTransport(proxy.url);
    for (const id of ['raw-1', 'raw-2']) {
      const raws: Buffer[] = [];
      const parsed: string[] = [];
      const tap = { head: () => parsed.push('head'), chunk: () => parsed.push('chunk'), raw: (b: Buffer) => raws.push(b) };
      const res = await send(
        { method: 'POST', url: `${viaAlias(tlsServer.port)}/v1/x`, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: '{}' },
        { timeoutMs: 30_000, maxBodyBytes: 1 << 20, signal: new AbortController().signal, tap },
      );
      const got = Buffer.concat(raws);
      expect(got.subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 201');
      const a = parseRawAnswer(got);
      expect(a).toMatchObject({ status: 201, whole: true });
      expect(a!.body.toString()).toBe(res.body);
      expect(JSON.parse(res.body).id).toBe(id);
      expect(parsed).toEqual([]);
    }
  });
});

describe('the proxy bundle is code-cached like the program', () => {
  test('a proxied run leaves a cache file for dist/lazy/proxy.cjs, and the next proxied run reuses it as is', async () => {
    const cacheDir = tempDir('cache');
    const env = { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath, CHATCTL_CACHE_DIR: cacheDir };
    expectDelivered(await create(viaAlias(tlsServer.port), env, [], { spawn: true }));
    const files = () => readdirSync(cacheDir).sort();
    const first = files();
    // Both are named after the V8 flag the proxy path sets (Liftoff only).
    expect(
      first.filter((f) => /^proxy-.*\.v8$/.test(f)),
      first.join(', '),
    ).toHaveLength(1);
    expect(
      first.filter((f) => /^main-.*\.v8$/.test(f)),
      first.join(', '),
    ).toHaveLength(1);
    const stamp = () => first.map((f) => `${f} ${statSync(join(cacheDir, f)).mtimeMs}`);
    const before = stamp();
    expectDelivered(await create(viaAlias(tlsServer.port), env, [], { spawn: true }));
    // Rewritten only when V8 rejects the cached data: the launcher writes these two before it
    // sets the proxy path's V8 flag, and again at exit once the flags are as at start-up.
    expect(files()).toEqual(first);
    expect(stamp()).toEqual(before);
  });
});

describe('loopback is never proxied, whatever NO_PROXY says: the token never reaches a proxy in clear text', () => {
  // One of the four as a real process: the launcher reads the proxy variables too (a V8 flag).
  test.each([
    ['HTTP_PROXY', false],
    ['http_proxy', false],
    ['HTTPS_PROXY', true],
    ['https_proxy', false],
  ] as const)('%s and an http://127.0.0.1 base URL → direct: the proxy sees nothing (a real process: %s)', async (name, spawn) => {
    const r = await create(plainServer.url, { [name]: proxy.url }, [], { spawn });
    expectDelivered(r);
    expect(proxy.records).toEqual([]);
    expect(plainServer.hits).toBe(1);
    expect(plainServer.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  test.each([
    ['http://localhost', () => `http://localhost:${plainServer.port}`, () => plainServer],
    ['https://127.0.0.1', () => tlsServer.url, () => tlsServer],
    ['https://localhost', () => `https://localhost:${tlsServer.port}`, () => tlsServer],
  ])('%s with HTTP_PROXY and HTTPS_PROXY set, NO_PROXY naming something else → direct', async (_label, url, server) => {
    const r = await create(url(), { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, NO_PROXY: 'example.com', NODE_EXTRA_CA_CERTS: certPath });
    expectDelivered(r);
    expect(proxy.records).toEqual([]);
    expect(server().hits).toBe(1);
  });

  test('http://[::1] with HTTP_PROXY set → direct', async () => {
    const hits: string[] = [];
    const v6 = http.createServer((req, res) => {
      hits.push(String(req.headers.authorization));
      req.resume();
      req.on('end', () => json(res, 201, secretBody()));
    });
    v6.listen(0, '::1');
    await once(v6, 'listening');
    try {
      const r = await create(`http://[::1]:${(v6.address() as net.AddressInfo).port}`, { HTTP_PROXY: proxy.url, NO_PROXY: '' });
      expectDelivered(r);
      expect(proxy.records).toEqual([]);
      expect(hits).toEqual([`Bearer ${TOKEN}`]);
    } finally {
      v6.closeAllConnections();
      await new Promise<void>((r) => v6.close(() => r()));
    }
  });

  test('a proxy that is down or malformed does not matter to a loopback target', async () => {
    const port = await closedPort();
    const down = await create(plainServer.url, { HTTP_PROXY: `http://127.0.0.1:${port}` });
    expectDelivered(down);
    const bad = await create(plainServer.url, { HTTP_PROXY: 'http://[bad' });
    expectDelivered(bad);
    expect(plainServer.hits).toBe(2);
  });

  test('an http: base URL off loopback is refused before anything is sent, proxy or not (exit 3)', async () => {
    const r = await create(`http://${ALIAS}:${plainServer.port}`, { HTTP_PROXY: proxy.url });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 3, code: 'config_error' });
    expect(proxy.records).toEqual([]);
    expect(plainServer.hits).toBe(0);
  });
});

describe('the fault contract holds through the proxy transport too', () => {
  test('a redirect through the proxy is not followed: exit 1 naming the Location; the other origin gets nothing', async () => {
    const location = `${other.url}/stolen`;
    tlsServer.reset((_q, res) => {
      res.writeHead(307, { Location: location, 'Content-Length': '0' });
      res.end();
    });
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath });
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(line.error.message).toContain(location);
    expect(other.hits).toBe(0);
    expect(proxy.records.filter((p) => p.target.includes(String(other.port)))).toHaveLength(0);
  });

  // Never finished: a CLI that waited for the whole body would end at --timeout with 12 timeout.
  test('a 2xx body over 1 MiB through the proxy → 1 invalid_response without waiting for it, with the key', async () => {
    tlsServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.write('{"data":{"endpoint":{"pad":"');
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let n = 0;
      const pump = () => {
        while (n++ < 64) if (!res.write(chunk)) return void res.once('drain', pump);
      };
      pump(); // 4 MiB, never finished
    });
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, ['--timeout', '20']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(line.idempotencyKey).toBe(tlsServer.requests[0]!.headers['idempotency-key']);
    expect(line.error.message).toMatch(/1048576-byte limit/);
  });

  test('a body that stalls through the proxy → 12 timeout at --timeout', async () => {
    tlsServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
      res.write('{"data":');
    });
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, ['--timeout', '0.3']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 12, code: 'timeout' });
    expect(line.error.message).toContain('the answer stalled for 0.3 s');
    expect(existsSync(r.secretFile)).toBe(false);
  });

  test('a truncated body through the proxy → 1 invalid_response, not retried', async () => {
    const body = JSON.stringify(secretBody());
    tlsServer.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(body.length + 100) });
      res.write(body, () => res.socket?.destroy()); // once what was sent is out
    });
    const r = await create(viaAlias(tlsServer.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, ['--max-retries', '1']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(tlsServer.hits).toBe(1);
  });

  test.each([
    ['100 kB of response headers', () => 'HTTP/1.1 201 Created\r\n' + Array.from({ length: 1000 }, (_, i) => `X-Pad-${i}: ${'a'.repeat(96)}\r\n`).join('') + 'Content-Length: 2\r\n\r\n{}'],
    ['a bad status line', () => 'HTTZ/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}'],
  ])('%s through the proxy → 1 invalid_response after one attempt, not a connection failure', async (_label, reply) => {
    rawTls.reply = Buffer.from(reply());
    const r = await create(viaAlias(rawTls.port), { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: certPath }, ['--max-retries', '3']);
    expectClean(r);
    const line = parseErrorLine(r.stderr);
    expect({ exit: r.exitCode, code: line.error.code }).toEqual({ exit: 1, code: 'invalid_response' });
    expect(line.error.message).toMatch(/response could not be read/);
    expect(line.error.message).not.toMatch(/connect/i);
    expect(rawTls.hits).toBe(1);
    expect(tunnelsTo(rawTls.port)).toHaveLength(1);
    expect(line.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('reactivate through the proxy (human mode) → exit 0', async () => {
    const r = await runCli([...REACTIVATE, '--max-retries', '0', '--timeout', '30'], {
      env: csrfScopeEnv(viaAlias(tlsServer.port), { https_proxy: proxy.url, NODE_EXTRA_CA_CERTS: certPath }),
    });
    expectClean(r);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(tunnelsTo(tlsServer.port).length).toBeLessThan(4);
  });
});

// `chatctl doctor` asks the transport which proxy a URL goes through
// (proxyFor in src/http/select-transport.ts): what it reports is compared
// here with where a real request of the same environment went.
describe('doctor reports the proxy a real request uses', () => {
  /** doctor --json's proxy line for the proxied base URL, then the real request (a create) with the same environment. */
  async function doctorThenRequest(env: Record<string, string>) {
    const baseUrl = viaAlias(tlsServer.port);
    const d = await runCli(['doctor', '--json'], { ws: workspace(), env: csrfScopeEnv(baseUrl, env) });
    const doc = JSON.parse(d.stdout) as { checks: { name: string; status: string; detail: string }[] };
    const proxyLine = doc.checks.find((c) => c.name === 'proxy')!;
    proxy.reset();
    const r = await create(baseUrl, env);
    expectClean(r);
    return { proxyLine, request: r, tunnels: tunnelsTo(tlsServer.port).length };
  }

  test('HTTPS_PROXY and https_proxy disagree: doctor names https_proxy, and that is the proxy the request goes through', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const live = await doctorThenRequest({ HTTPS_PROXY: dead, https_proxy: proxy.url });
    expect(live.proxyLine).toEqual({ name: 'proxy', status: 'ok', detail: `${proxy.url} (from https_proxy)` });
    expect(live.request.exitCode, live.request.stderr).toBe(0);
    expect(live.tunnels).toBe(1);

    // The other way round: doctor names the dead one, and the request fails on it.
    const deadFirst = await doctorThenRequest({ HTTPS_PROXY: proxy.url, https_proxy: dead });
    expect(deadFirst.proxyLine).toEqual({ name: 'proxy', status: 'ok', detail: `${dead} (from https_proxy)` });
    expect({ exit: deadFirst.request.exitCode, code: parseErrorLine(deadFirst.request.stderr).error.code }).toEqual({ exit: 12, code: 'network_error' });
    expect(deadFirst.tunnels).toBe(0);
  });

  test('http_proxy alone carries https too: doctor names it, and the request goes through it', async () => {
    const r = await doctorThenRequest({ http_proxy: proxy.url });
    expect(r.proxyLine).toEqual({ name: 'proxy', status: 'ok', detail: `${proxy.url} (from http_proxy)` });
    expect(r.request.exitCode, r.request.stderr).toBe(0);
    expect(r.tunnels).toBe(1);
  });

  test('a proxy variable that is not a URL: doctor fails on the one the request refuses, with the same message', async () => {
    // https_proxy is used before HTTPS_PROXY, so the bad upper-case one is never read.
    const fine = await doctorThenRequest({ https_proxy: proxy.url, HTTPS_PROXY: 'http://[bad' });
    expect(fine.proxyLine.status).toBe('ok');
    expect(fine.request.exitCode, fine.request.stderr).toBe(0);
    const bad = await doctorThenRequest({ https_proxy: 'http://[bad', HTTPS_PROXY: proxy.url });
    const line = parseErrorLine(bad.request.stderr);
    expect({ exit: bad.request.exitCode, code: line.error.code }).toEqual({ exit: 3, code: 'config_error' });
    // (The --json error line has no hint; doctor gives the fix the error carries.)
    expect(bad.proxyLine).toEqual({ name: 'proxy', status: 'failure', detail: `${line.error.message}; fix: fix or unset https_proxy` });
    expect(line.error.message).toBe('https_proxy is not an http:// or https:// proxy URL');
    expect(bad.tunnels).toBe(0);
  });

  // [NO_PROXY-like variables, whether the request goes through the proxy]
  const port = () => tlsServer.port;
  test.each<[string, () => Record<string, string>, boolean]>([
    ['NO_PROXY naming the host', () => ({ NO_PROXY: ALIAS }), false],
    ['NO_PROXY naming its domain', () => ({ NO_PROXY: 'chatctl.test' }), false],
    ['NO_PROXY naming its domain with a leading dot', () => ({ NO_PROXY: '.chatctl.test' }), false],
    ['NO_PROXY naming its domain with *.', () => ({ NO_PROXY: '*.chatctl.test' }), false],
    ['NO_PROXY naming the top-level domain', () => ({ NO_PROXY: 'test' }), false],
    ['NO_PROXY naming the host in capitals among others, with spaces', () => ({ NO_PROXY: 'example.com, API.CHATCTL.TEST' }), false],
    ['NO_PROXY naming the host and its port', () => ({ NO_PROXY: `${ALIAS}:${port()}` }), false],
    ['NO_PROXY naming the host on another port', () => ({ NO_PROXY: `${ALIAS}:1` }), true],
    ['NO_PROXY naming a name that only ends like it', () => ({ NO_PROXY: 'hatctl.test' }), true],
    ['NO_PROXY naming another host', () => ({ NO_PROXY: 'example.com' }), true],
    ['NO_PROXY=*', () => ({ NO_PROXY: '*' }), false],
    ['NO_PROXY empty', () => ({ NO_PROXY: '' }), true],
    ['no_proxy naming another host over NO_PROXY=*', () => ({ no_proxy: 'example.com', NO_PROXY: '*' }), true],
    ['no_proxy naming the host over NO_PROXY naming another', () => ({ no_proxy: ALIAS, NO_PROXY: 'example.com' }), false],
  ])('%s: doctor and the request agree', async (_label, noProxy, proxied) => {
    const { proxyLine, request, tunnels } = await doctorThenRequest({ HTTPS_PROXY: proxy.url, ...noProxy() });
    expect(proxyLine.detail.startsWith('none: ')).toBe(!proxied);
    expect(tunnels).toBe(proxied ? 1 : 0);
    if (proxied) {
      expect(proxyLine.detail).toBe(`${proxy.url} (from HTTPS_PROXY)`);
      expect(request.exitCode, request.stderr).toBe(0);
    } else {
      expect(proxyLine.detail).toMatch(new RegExp(`^none: (NO_PROXY|no_proxy) entry ".+" matches ${ALIAS.replace(/\./g, '\\.')}$`));
      // Direct, the reserved name does not resolve.
      expect(parseErrorLine(request.stderr).error.message).toContain(ALIAS);
    }
  });
});
