import { describe, expect, it } from 'vitest';
import { endpointBody, errorCode, HOUR, sandbox } from '../support/sandbox.js';

describe('injected failures', () => {
  it('fails the next N API requests with 503 and Retry-After, then recovers', async () => {
    const { create, control } = await sandbox();
    const set = await control('faults', { body: { failNext: 2, status: 503, retryAfter: 2 } });
    expect(set.body.data.faults).toMatchObject({ failNext: 2, status: 503, code: 'service_unavailable', retryAfter: 2 });
    for (let i = 0; i < 2; i++) {
      const a = await create(endpointBody());
      expect(errorCode(a)).toBe('503 service_unavailable');
      expect(a.headers.get('retry-after')).toBe('2');
      expect(a.body.error.details).toEqual({ injected: true });
    }
    expect((await create(endpointBody())).status).toBe(201);
    expect((await control('faults')).body.data.faults.failNext).toBe(0);
  });

  it('answers 429 rate_limit_exceeded, without Retry-After unless asked', async () => {
    const { create, control } = await sandbox();
    await control('faults', { body: { failNext: 1, status: 429 } });
    const a = await create(endpointBody());
    expect(errorCode(a)).toBe('429 rate_limit_exceeded');
    expect(a.headers.get('retry-after')).toBeNull();
  });

  it('fails even requests that would be refused otherwise, and never control routes', async () => {
    const { call, control } = await sandbox();
    await control('faults', { body: { failNext: 1 } });
    expect((await control('faults')).status).toBe(200);
    expect(errorCode(await call('/nowhere', { headers: { authorization: 'Bearer wrong' } }))).toBe('503 service_unavailable');
  });

  it('can drop connections instead of answering', async () => {
    const { create, control } = await sandbox();
    await control('faults', { body: { failNext: 1, dropConnection: true } });
    await expect(create(endpointBody())).rejects.toThrow();
    expect((await create(endpointBody())).status).toBe(201);
    expect((await control('requests')).body.data.requests.map((r: { status: number | null }) => r.status)).toEqual([null, 201]);
  });

  it('starts with faults given as options', async () => {
    const { create } = await sandbox({ faults: { failNext: 1, status: 500 } });
    expect(errorCode(await create(endpointBody()))).toBe('500 internal_error');
  });

  it('refuses bad switches', async () => {
    const { control } = await sandbox();
    const a = await control('faults', { body: { failNext: 'lots', status: 200 } });
    expect(errorCode(a)).toBe('400 validation_failed');
    expect(a.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['failNext', 'status']);
  });
});

/**
 * Whether an answer waited `ms`, told by timer order rather than timed: the
 * sandbox runs in this process, whose timers fire in the order they fall
 * due, so a timer started as the request arrives (onRequest is called before
 * the delay) with `ms - 1` has fired before a delay of `ms` ends, and has not
 * when the answer did not wait.
 */
function delayWitness(ms: number) {
  let due = false;
  return {
    onRequest: () => void setTimeout(() => (due = true), ms - 1),
    due: () => due,
  };
}

describe('slow answers', () => {
  it('delays every API answer by delayMs', async () => {
    const witness = delayWitness(120);
    const { create, control } = await sandbox({ onRequest: witness.onRequest });
    await control('faults', { body: { delayMs: 120 } });
    expect((await create(endpointBody())).status).toBe(201);
    expect(witness.due()).toBe(true);
  });

  it('closes promptly while an answer is being delayed', async () => {
    let arrived!: () => void;
    const held = new Promise<void>((r) => (arrived = r));
    const { sb, create, control } = await sandbox({ onRequest: () => arrived() });
    await control('faults', { body: { delayMs: 600_000 } });
    const pending = create(endpointBody());
    await held; // recorded, and now waiting out its delay
    await sb.close();
    await expect(pending).rejects.toThrow();
  });
});

describe('rate limit', () => {
  it('answers 429 past a burst of N, with Retry-After in whole seconds and Retry-After-Ms', async () => {
    const { create, advance, control } = await sandbox({ rateLimit: 2 });
    expect((await create(endpointBody(1))).status).toBe(201);
    expect((await create(endpointBody(2))).status).toBe(201);
    const a = await create(endpointBody(3));
    expect(errorCode(a)).toBe('429 rate_limit_exceeded');
    expect(a.headers.get('retry-after')).toBe('1');
    expect(a.headers.get('retry-after-ms')).toBe('500');
    expect(a.body.error.details).toEqual({ limit: 2, windowSeconds: 1 });
    advance(500);
    expect((await create(endpointBody(3))).status).toBe(201);
    expect(errorCode(await create(endpointBody(4)))).toBe('429 rate_limit_exceeded');
    const { stats } = (await control('stats')).body.data;
    expect(stats).toEqual({ requests: 5, statuses: { '201': 3, '429': 2 }, rateLimited: 2 });
  });

  it("keeps a bucket per bearer token: one caller cannot use up another's", async () => {
    const { create, call, path } = await sandbox({ rateLimit: 1, token: 'tok-main' });
    expect((await create(endpointBody(1))).status).toBe(201);
    expect(errorCode(await create(endpointBody(2)))).toBe('429 rate_limit_exceeded');
    // A wrong token has its own bucket: it is refused for being wrong, not for the rate.
    const other = await call(path(), { body: endpointBody(2), headers: { authorization: 'Bearer someone-else', 'idempotency-key': 'k' } });
    expect(errorCode(other)).toBe('401 authentication_failed');
  });

  it('can be switched at run time, and its counts cleared', async () => {
    const { create, control, call } = await sandbox();
    await control('faults', { body: { rateLimit: 1 } });
    await create(endpointBody(1));
    expect(errorCode(await create(endpointBody(2)))).toBe('429 rate_limit_exceeded');
    expect((await control('stats')).body.data.stats.rateLimited).toBe(1);
    expect((await control('stats', { method: 'DELETE' })).body.data.stats).toEqual({ requests: 0, statuses: {}, rateLimited: 0 });
    // Injected 429s are answers, not rate limiting.
    await control('faults', { body: { rateLimit: 0, failNext: 1, status: 429 } });
    expect(errorCode(await create(endpointBody(2)))).toBe('429 rate_limit_exceeded');
    expect((await control('stats')).body.data.stats).toEqual({ requests: 1, statuses: { '429': 1 }, rateLimited: 0 });
    expect((await call('/_sandbox/reset', { method: 'POST', headers: { origin: undefined } })).status).toBe(200);
    expect((await control('stats')).body.data.stats.requests).toBe(0);
  });
});

describe('latency', () => {
  it('--latency delays every API answer, and control routes not at all', async () => {
    const witness = delayWitness(150);
    const { create, control, sb } = await sandbox({ latencyMs: 150, onRequest: witness.onRequest });
    expect((await control('faults')).body.data.faults.delayMs).toBe(150);
    expect((await create(endpointBody())).status).toBe(201);
    expect(witness.due()).toBe(true);
    // A control route is not delayed: with a latency of ten minutes, it
    // still answers while an API request waits (closing ends that wait).
    await control('faults', { body: { delayMs: 600_000 } });
    const waiting = create(endpointBody()).catch((e: Error) => e);
    expect((await control('stats')).body.data.stats.requests).toBeGreaterThanOrEqual(1);
    await sb.close();
    await waiting;
  });

  it('is refused when negative or fractional', async () => {
    await expect(sandbox({ latencyMs: -1 })).rejects.toThrow(/latency/);
    await expect(sandbox({ latencyMs: 1.5 })).rejects.toThrow(/latency/);
  });
});

describe('control routes', () => {
  it('record API requests with method, path, headers and body', async () => {
    const { sb, create, control, path } = await sandbox();
    await create(endpointBody(), { headers: { 'x-request-id': 'r-1', 'idempotency-key': 'key-1' } });
    const [entry, ...rest] = (await control('requests')).body.data.requests;
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({
      at: '2030-01-01T00:00:00.000Z',
      requestId: 'r-1',
      method: 'POST',
      path: path(),
      status: 201,
      body: JSON.stringify(endpointBody()),
    });
    expect(entry.headers).toMatchObject({ authorization: `Bearer ${sb.token}`, 'idempotency-key': 'key-1', 'x-service-csrf': '1' });
    expect((await control('requests', { method: 'DELETE' })).body.data).toEqual({ cleared: 1 });
    expect((await control('requests')).body.data.requests).toEqual([]);
  });

  it('reset forgets endpoints, keys, requests and faults', async () => {
    const { create, control } = await sandbox();
    const key = { headers: { 'idempotency-key': 'k' } };
    await create(endpointBody(), key);
    await control('faults', { body: { delayMs: 1 } });
    expect((await control('reset', { body: {} })).body.data).toEqual({ reset: true });
    expect((await control('endpoints')).body.data.endpoints).toEqual([]);
    expect((await control('requests')).body.data.requests).toEqual([]);
    expect((await control('faults')).body.data.faults.delayMs).toBe(0);
    const again = await create(endpointBody(), key);
    expect(again.status).toBe(201);
    expect(again.body.data.secretAvailable).toBe(true);
  });

  it('move the clock forward', async () => {
    const { create, rotate, control } = await sandbox();
    const { body } = await create(endpointBody());
    await rotate(body.data.endpoint.id, { expectedVersion: 1, mode: 'overlap' });
    const moved = await control('clock', { body: { advanceMs: 24 * HOUR } });
    expect(moved.body.data).toEqual({ now: '2030-01-02T00:00:00.000Z' });
    expect((await rotate(body.data.endpoint.id, { expectedVersion: 2, mode: 'overlap' })).status).toBe(200);
    expect(errorCode(await control('clock', { body: { advanceMs: -1 } }))).toBe('400 validation_failed');
  });

  it('need the sandbox token, not Origin or the anti-forgery header', async () => {
    const { control } = await sandbox();
    expect(errorCode(await control('faults', { headers: { authorization: undefined } }))).toBe('401 authentication_required');
    expect(errorCode(await control('faults', { headers: { authorization: 'Bearer nope' } }))).toBe('401 authentication_failed');
    expect(errorCode(await control('nothing-here'))).toBe('404 resource_not_found');
    expect(errorCode(await control('faults', { rawBody: '{', method: 'POST' }))).toBe('400 validation_failed');
  });

  it('are not recorded, rate limited or failed', async () => {
    const { control } = await sandbox({ rateLimit: 1, faults: { failNext: 5 } });
    for (let i = 0; i < 3; i++) expect((await control('requests')).status).toBe(200);
    expect((await control('requests')).body.data.requests).toEqual([]);
  });
});
