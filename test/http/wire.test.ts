// What the API requires of each request: request lines, headers and bodies,
// byte for byte, as the server receives them.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../src/api/schemas.js';
import { CREATE_PATH, CSRF, TOKEN, USER_AGENT, UUID_V4, mutationBody, reactivatePath, rotatePath, scopeEnv, secretBody } from '../support/fixtures.js';
import { cleanupTempDirs, runCli } from '../support/run.js';
import { type RecordedRequest, type RecordingServer, startServer } from '../support/server.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await startServer({ ipv6: true });
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});
beforeEach(() => server.reset());

const E0 = EVENT_TYPES[0];
const E1 = EVENT_TYPES[6];
const E2 = EVENT_TYPES[13];

/** Headers the API requires, plus those chatctl adds on purpose. Anything else is a finding. */
const ALLOWED = new Set(['authorization', 'content-type', 'origin', 'x-service-csrf', 'x-request-id', 'user-agent', 'idempotency-key', 'accept', 'content-length', 'host', 'connection']);

function expectCommonHeaders(req: RecordedRequest, origin: string, csrf = '1') {
  const h = req.headers;
  expect(h['authorization']).toBe(`Bearer ${TOKEN}`);
  expect(h['content-type']).toBe('application/json');
  expect(h['origin']).toBe(origin);
  expect(h['x-service-csrf']).toBe(csrf);
  expect(h['x-request-id']).toMatch(UUID_V4);
  expect(h['user-agent']).toBe(USER_AGENT);
  if (h['accept'] !== undefined) expect(h['accept']).toBe('application/json');
  expect(h['cookie']).toBeUndefined();
  const names = Object.keys(h).sort();
  expect(names.filter((n) => !ALLOWED.has(n))).toEqual([]);
  // each header sent once
  const raw = req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  expect(new Set(raw).size).toBe(raw.length);
  // a body is sent with its length, not chunked
  expect(h['transfer-encoding']).toBeUndefined();
  expect(h['content-length']).toBe(String(Buffer.byteLength(req.body)));
}

describe('create', () => {
  test('request line, headers and body are exactly as the API requires', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli(['webhooks', 'create', '--name', 'orders hook', '--url', 'https://hooks.example.com/in', '--event', E0, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe(CREATE_PATH);
    expectCommonHeaders(req, server.url);
    expect(req.headers['idempotency-key']).toMatch(UUID_V4);
    expect(req.body).toBe(JSON.stringify({ name: 'orders hook', destinationUrl: 'https://hooks.example.com/in', eventTypes: [E0] }));
  });

  test('--event repeated and comma-separated; duplicates sent once in first-seen order', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli(['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E1, '--event', `${E0},${E1}`, '--event', E2, '--event', E0, '--json'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body).toBe(JSON.stringify({ name: 'n', destinationUrl: 'https://h.example/x', eventTypes: [E1, E0, E2] }));
  });

  test('all 14 event types are accepted and sent', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli(['webhooks', 'create', '--name', 'n', '--url', 'http://h.example/x', '--event', EVENT_TYPES.join(','), '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      name: 'n',
      destinationUrl: 'http://h.example/x',
      eventTypes: [...EVENT_TYPES],
    });
  });

  test('--idempotency-key is sent verbatim', async () => {
    const key = '0b6f5a3e-2c1d-4e8f-9a7b-123456789abc';
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli(['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E0, '--idempotency-key', key, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(server.requests[0]!.headers['idempotency-key']).toBe(key);
  });

  test('each run makes a new Idempotency-Key and x-request-id', async () => {
    server.enqueue({ status: 201, body: secretBody() }, { status: 201, body: secretBody() });
    const args = ['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E0, '--json'];
    const a = await runCli(args, { env: scopeEnv(server.url) });
    const b = await runCli(args, { env: scopeEnv(server.url) });
    expect([a.exitCode, b.exitCode]).toEqual([0, 0]);
    const [r1, r2] = server.requests;
    expect(r1!.headers['idempotency-key']).not.toBe(r2!.headers['idempotency-key']);
    expect(r1!.headers['x-request-id']).not.toBe(r2!.headers['x-request-id']);
    expect(r1!.headers['idempotency-key']).not.toBe(r1!.headers['x-request-id']);
  });
});

describe('rotate', () => {
  test('request line, headers and body', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap', '--json'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe(rotatePath('we_1'));
    expectCommonHeaders(req, server.url);
    expect(req.headers['idempotency-key']).toMatch(UUID_V4);
    expect(req.body).toBe('{"expectedVersion":3,"mode":"overlap"}');
  });

  test('--mode immediate --yes sends mode immediate', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '12', '--mode', 'immediate', '--yes', '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(server.requests[0]!.body).toBe('{"expectedVersion":12,"mode":"immediate"}');
  });
});

describe('reactivate', () => {
  test('request line, headers and body; no Idempotency-Key', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '7', '--json'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe(reactivatePath('we_1'));
    expectCommonHeaders(req, server.url);
    expect(req.headers['idempotency-key']).toBeUndefined();
    expect(req.body).toBe('{"expectedVersion":7}');
  });
});

describe('Origin and x-service-csrf', () => {
  test('CHATCTL_ORIGIN and CHATCTL_CSRF_TOKEN are sent', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--json'], {
      env: scopeEnv(server.url, { CHATCTL_ORIGIN: 'https://console.example.com', CHATCTL_CSRF_TOKEN: CSRF }),
    });
    expect(r.exitCode).toBe(0);
    expectCommonHeaders(server.requests[0]!, 'https://console.example.com', CSRF);
  });

  test('Origin defaults to the base URL origin (localhost host kept as written)', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const base = `http://localhost:${server.port}`;
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--json'], {
      env: scopeEnv(base),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers['origin']).toBe(base);
    expect(server.requests[0]!.url).toBe(reactivatePath('we_1'));
  });

  test('[::1] base URL is allowed (when the machine has IPv6 loopback)', async (ctx) => {
    if (!server.ipv6) ctx.skip();
    server.enqueue({ status: 200, body: mutationBody() });
    const base = `http://[::1]:${server.port}`;
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--json'], {
      env: scopeEnv(base),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.localAddress).toBe('::1');
    expect(server.requests[0]!.headers['origin']).toBe(base);
  });
});

describe('base URL', () => {
  test('a base URL with a path: requests go below it; Origin is scheme://host:port only', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--json'], {
      env: scopeEnv(`${server.url}/api`),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests[0]!.url).toBe(`/api${reactivatePath('we_1')}`);
    expect(server.requests[0]!.headers['origin']).toBe(server.url);
  });

  test('destinationUrl is sent as given (no normalisation)', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const url = 'https://Hooks.Example.COM/In/Path?x=1&y=%41';
    const r = await runCli(['webhooks', 'create', '--name', 'n', '--url', url, '--event', E0, '--json'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(server.requests[0]!.body).destinationUrl).toBe(url);
  });
});

describe('path segments are percent-encoded', () => {
  const scope = { CHATCTL_ORG: 'a/b', CHATCTL_APP: 'x y', CHATCTL_ENV: 'é' };
  const prefix = '/v1/organizations/a%2Fb/applications/x%20y/environments/%C3%A9/webhook-endpoints';

  test('reactivate with an odd endpoint id', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['webhooks', 'reactivate', 'we 1/..', '--expected-version', '1', '--json'], {
      env: scopeEnv(server.url, scope),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.url).toBe(`${prefix}/we%201%2F../reactivate`);
  });

  test('rotate with an odd endpoint id', async () => {
    // The answer names the endpoint asked for (one naming another is kept, not delivered: 13).
    server.enqueue({ status: 200, body: secretBody(undefined, undefined, 'we 1/..') });
    const r = await runCli(['webhooks', 'rotate', 'we 1/..', '--expected-version', '1', '--mode', 'overlap', '--json'], { env: scopeEnv(server.url, scope) });
    expect(r.exitCode).toBe(0);
    expect(server.requests[0]!.url).toBe(`${prefix}/we%201%2F../secret/rotate`);
  });

  test('create', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli(['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E0, '--json'], {
      env: scopeEnv(server.url, scope),
    });
    expect(r.exitCode).toBe(0);
    expect(server.requests[0]!.url).toBe(prefix);
  });

  test('scope flags override the environment and are encoded the same way', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['webhooks', 'reactivate', 'we?x#y', '--expected-version', '1', '--json', '--org', 'o%1', '--app', 'a&b', '--env', 'e+f'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(server.requests[0]!.url).toBe(`/v1/organizations/o%251/applications/a%26b/environments/e%2Bf/webhook-endpoints/we%3Fx%23y/reactivate`);
  });
});
