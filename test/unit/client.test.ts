import { describe, expect, it } from 'vitest';
import { sendWithRetries, type ApiRequest, type HttpDeps } from '../../src/http/client.js';
import { TransportError } from '../../src/http/transport.js';
import { CliError } from '../../src/errors/cli-error.js';
import { scriptedTransport, sequentialUUID, virtualClock, type Answer } from './support/fakes.js';

const req: ApiRequest = {
  method: 'POST',
  url: 'https://api.example/v1/x',
  headers: { Authorization: 'Bearer t' },
  body: '{}',
  idempotencyKey: 'key-123',
};
const err = (status: number, code: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers,
  body: JSON.stringify({ error: { code, message: code, requestId: 'r', details: {} } }),
});

function deps(answers: Answer[], random = () => 0.5) {
  const clock = virtualClock();
  const transport = scriptedTransport(answers);
  const trace: string[] = [];
  const announced: string[] = [];
  const d: HttpDeps = {
    transport,
    now: clock.now,
    sleep: clock.sleep,
    randomUUID: sequentialUUID,
    random,
    signal: new AbortController().signal,
    trace: (l) => trace.push(l),
    announce: (l) => announced.push(l),
  };
  return { d, transport, clock, trace, announced };
}

async function failure(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    return e as CliError;
  }
  throw new Error('expected a failure');
}

describe('sendWithRetries', () => {
  it('returns the first 2xx; one x-request-id per attempt, the same key on each', async () => {
    const { d, transport, clock } = deps([err(503, 'service_unavailable', { 'retry-after': '3' }), err(429, 'rate_limit_exceeded'), { status: 201, body: '{}' }]);
    const res = await sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d);
    expect(res.status).toBe(201);
    expect(transport.sent).toHaveLength(3);
    const ids = transport.sent.map((r) => r.headers['x-request-id']);
    expect(new Set(ids).size).toBe(3);
    expect(clock.waits).toEqual([3000, 500]); // server's figure, then full jitter (random 0.5 × 1 s)
  });

  it('gives up after maxRetries + 1 attempts and names the Idempotency-Key', async () => {
    const { d, transport } = deps(Array.from({ length: 3 }, () => err(429, 'rate_limit_exceeded', { 'retry-after': '0' })));
    const e = await failure(sendWithRetries(req, { maxRetries: 2, timeoutMs: 1000 }, d));
    expect(transport.sent).toHaveLength(3);
    expect(e.exitCode).toBe(11);
    expect(e.code).toBe('rate_limit_exceeded');
    expect(e.message).toContain('key-123');
    expect(e.message).toContain('--idempotency-key key-123');
  });

  it('stops at once on a Retry-After over 60 s, quoting it', async () => {
    const { d, transport, clock } = deps([err(503, 'service_unavailable', { 'retry-after': '120' })]);
    const e = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d));
    expect(transport.sent).toHaveLength(1);
    expect(clock.waits).toEqual([]);
    expect(e.exitCode).toBe(12);
    expect(e.message).toContain('120 s');
  });

  it.each([400, 401, 403, 404, 409, 422, 500])('does not retry %i', async (status) => {
    const { d, transport } = deps([err(status, 'internal_error')]);
    await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d));
    expect(transport.sent).toHaveLength(1);
  });

  it('retries connection failures and timeouts, then reports network_error / timeout (exit 12)', async () => {
    const refused = () => new TransportError('connect', 'connection refused by x');
    const a = deps([refused(), refused()]);
    const e1 = await failure(sendWithRetries(req, { maxRetries: 1, timeoutMs: 1000 }, a.d));
    expect([e1.code, e1.exitCode, a.transport.sent.length]).toEqual(['network_error', 12, 2]);
    expect(a.clock.waits).toEqual([250]);
    const b = deps([new TransportError('timeout', 'no complete response within 1 s')]);
    const e2 = await failure(sendWithRetries(req, { maxRetries: 0, timeoutMs: 1000 }, b.d));
    expect([e2.code, e2.exitCode]).toEqual(['timeout', 12]);
    expect(e2.message).toContain('key-123');
  });

  it('never retries a response cut short (it may have been applied)', async () => {
    const { d, transport } = deps([new TransportError('truncated', 'the connection closed before the response was complete', 201)]);
    const e = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d));
    expect(transport.sent).toHaveLength(1);
    expect([e.code, e.exitCode]).toEqual(['invalid_response', 1]);
  });

  it('announces waits and traces attempts without the credential', async () => {
    const { d, trace, announced } = deps([err(429, 'rate_limit_exceeded', { 'retry-after': '2' }), { status: 200, body: '{"data":{"secret":"whsec_x"}}' }]);
    await sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d);
    expect(announced).toEqual(['rate limited, retrying in 2 s, attempt 2 of 5']);
    const all = trace.join('\n');
    expect(all).toContain('Authorization: Bearer [REDACTED]');
    expect(all).not.toContain('Bearer t\n');
    expect(all).not.toContain('whsec_x');
  });

  it('interrupts during a wait', async () => {
    const controller = new AbortController();
    const { d } = deps([err(503, 'service_unavailable', { 'retry-after': '5' })]);
    d.signal = controller.signal;
    d.sleep = async () => {
      controller.abort();
      throw new Error('aborted');
    };
    const e = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d));
    expect(e.exitCode).toBe(130);
  });
});

describe('error classification', () => {
  it('uses the DTO code, else the status; unknown codes exit 1', async () => {
    const cases: [Answer, number, string][] = [
      [err(409, 'webhook_endpoint_version_conflict'), 7, 'webhook_endpoint_version_conflict'],
      [err(404, 'some_new_code'), 1, 'some_new_code'],
      [{ status: 404, body: '<html>nope</html>', headers: { 'content-type': 'text/html' } }, 6, 'invalid_response'],
      [{ status: 403, body: JSON.stringify({ error: { code: 'permission_denied', message: 'm' } }) }, 5, 'invalid_response'],
      [{ status: 502, body: 'Bad Gateway' }, 1, 'invalid_response'],
      [{ status: 302, headers: { location: 'https://elsewhere.example/' }, body: '' }, 1, 'invalid_response'],
    ];
    for (const [answer, exitCode, code] of cases) {
      const { d } = deps([answer]);
      const e = await failure(sendWithRetries(req, { maxRetries: 0, timeoutMs: 1000 }, d));
      expect([e.exitCode, e.code]).toEqual([exitCode, code]);
    }
  });
  it('names the Location of a redirect', async () => {
    const { d } = deps([{ status: 307, headers: { location: 'https://elsewhere.example/x' }, body: '' }]);
    const e = await failure(sendWithRetries(req, { maxRetries: 0, timeoutMs: 1000 }, d));
    expect(e.message).toContain('https://elsewhere.example/x');
  });
});

describe('a timeout after the status line', () => {
  it('is reported with the status and the key, not retried: the server has answered', async () => {
    const { d, transport } = deps([new TransportError('timeout', 'no complete response within 1 s', 201)]);
    const e = await failure(sendWithRetries(req, { maxRetries: 3, timeoutMs: 1000 }, d));
    expect(transport.sent).toHaveLength(1);
    expect([e.code, e.exitCode, e.status]).toEqual(['timeout', 12, 201]);
    expect(e.message).toContain('key-123');
  });
});
