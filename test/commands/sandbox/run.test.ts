import { describe, expect, it } from 'vitest';
import { runSandboxCommand, type SandboxCommandOptions } from '../../../src/commands/sandbox/run.js';
import { waitFor } from '../../support/run.js';

const defaults: SandboxCommandOptions = { host: '127.0.0.1', port: 0, endpointLimit: 10, rateLimit: 0, json: true };

function harness() {
  const out: string[] = [];
  const err: string[] = [];
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  return { io: { stdout: (s: string) => void out.push(s), stderr: (s: string) => void err.push(s) }, out, err, stopped, stop };
}

async function firstLine(out: string[]): Promise<string> {
  await waitFor(() => out.join('').includes('\n'), 10_000, 'the first line');
  return out.join('').split('\n')[0]!;
}

describe('runSandboxCommand', () => {
  it('--json: prints exactly one JSON line, serves, and stops cleanly', async () => {
    const h = harness();
    const done = runSandboxCommand({ ...defaults, token: 'tok-1', endpointLimit: 1 }, h.io, h.stopped);
    const info = JSON.parse(await firstLine(h.out));
    expect(Object.keys(info)).toEqual(['baseUrl', 'token', 'organizationId', 'applicationId', 'environmentKey']);
    expect(info).toMatchObject({ token: 'tok-1', organizationId: 'org_sandbox', applicationId: 'app_sandbox', environmentKey: 'sandbox' });

    const res = await fetch(`${info.baseUrl}/_sandbox/faults`, { headers: { authorization: 'Bearer tok-1' } });
    expect(res.status).toBe(200);

    h.stop();
    expect(await done).toBe(0);
    expect(h.out.join('')).toBe(JSON.stringify(info) + '\n');
    expect(h.err).toEqual([]);
    await expect(fetch(`${info.baseUrl}/_sandbox/faults`)).rejects.toThrow();
  });

  it('human mode: base URL, token, scope and export lines; requests logged on stderr', async () => {
    const h = harness();
    const done = runSandboxCommand({ ...defaults, json: false, token: 'tok-2' }, h.io, h.stopped);
    await firstLine(h.out);
    const text = h.out.join('');
    const baseUrl = /base URL\s+(\S+)/.exec(text)?.[1];
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(text).toContain('tok-2');
    expect(text).toContain(`export CHATCTL_BASE_URL=${baseUrl} CHATCTL_TOKEN=tok-2 CHATCTL_ORG=org_sandbox CHATCTL_APP=app_sandbox CHATCTL_ENV=sandbox`);
    await fetch(`${baseUrl}/v1/whatever`, { method: 'POST' });
    // A delivery (to a port where nothing listens) is logged too.
    const auth = { authorization: 'Bearer tok-2', origin: 'https://x.example', 'x-service-csrf': '1', 'content-type': 'application/json', 'idempotency-key': 'k1' };
    const created = await fetch(`${baseUrl}/v1/organizations/org_sandbox/applications/app_sandbox/environments/sandbox/webhook-endpoints`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'n', destinationUrl: 'http://127.0.0.1:9/in', eventTypes: ['chat.message.created.v1'] }),
    });
    const id = ((await created.json()) as { data: { endpoint: { id: string } } }).data.endpoint.id;
    expect((await fetch(`${baseUrl}/_sandbox/endpoints/${id}/deliver`, { method: 'POST', headers: auth, body: '{"eventType":"chat.message.created.v1"}' })).status).toBe(200);
    h.stop();
    expect(await done).toBe(0);
    expect(h.err.join('')).toMatch(/POST \/v1\/whatever -> 401 req_/);
    expect(h.err.join('')).toMatch(/ deliver chat\.message\.created\.v1 to http:\/\/127\.0\.0\.1:9\/in \(1 signature\) -> ECONNREFUSED: .* msg_\S+\n/);
    expect(h.err.join('')).toContain('stopped');
  });

  it('--rate-limit and --latency are in force from the start', async () => {
    const h = harness();
    const done = runSandboxCommand({ ...defaults, token: 'tok-3', rateLimit: 7, latencyMs: 30 }, h.io, h.stopped);
    const info = JSON.parse(await firstLine(h.out));
    const res = await fetch(`${info.baseUrl}/_sandbox/faults`, { headers: { authorization: 'Bearer tok-3' } });
    expect(((await res.json()) as { data: { faults: object } }).data.faults).toMatchObject({ rateLimit: 7, delayMs: 30 });
    h.stop();
    expect(await done).toBe(0);
  });

  it('quotes an unusual token for the shell', async () => {
    const h = harness();
    const done = runSandboxCommand({ ...defaults, json: false, token: "it's$x" }, h.io, h.stopped);
    await firstLine(h.out);
    h.stop();
    await done;
    expect(h.out.join('')).toContain(`CHATCTL_TOKEN='it'\\''s$x'`);
  });

  it.each(['0.0.0.0', '192.168.1.10', 'example.com', '::'])('refuses the non-loopback host %s with exit 2', async (host) => {
    const h = harness();
    expect(await runSandboxCommand({ ...defaults, host }, h.io, h.stopped)).toBe(2);
    expect(h.out).toEqual([]);
    const error = JSON.parse(h.err.join(''));
    expect(error).toMatchObject({ error: { code: 'usage_error', status: null, requestId: null }, exitCode: 2 });
    expect(error.error.message).toContain('loopback');
  });

  it('refuses a port in use and bad numbers with exit 2', async () => {
    const first = harness();
    const running = runSandboxCommand(defaults, first.io, first.stopped);
    const port = Number(new URL(JSON.parse(await firstLine(first.out)).baseUrl).port);
    const second = harness();
    expect(await runSandboxCommand({ ...defaults, port, json: false }, second.io, second.stopped)).toBe(2);
    expect(second.err.join('')).toMatch(/EADDRINUSE.*--port/);
    first.stop();
    expect(await running).toBe(0);

    const bad = harness();
    expect(await runSandboxCommand({ ...defaults, endpointLimit: -3, json: false }, bad.io, bad.stopped)).toBe(2);
    expect(bad.err.join('')).toMatch(/^chatctl sandbox: endpoint limit/);
  });
});
