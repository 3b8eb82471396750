import { describe, expect, it } from 'vitest';
import { type ApiRequest, deadlineFrom, type HttpDeps, sendWithRetries } from '../../src/http/client.js';
import { TransportError } from '../../src/http/transport.js';
import { CliError } from '../../src/errors/cli-error.js';
import { scriptedTransport, sequentialUUID, virtualClock, type Answer } from '../support/fakes.js';

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
    expect(e.message).toContain("--idempotency-key 'key-123'");
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
    expect(announced).toEqual(['attempt 1 of 5 got 429 rate limited (request id r); retrying in 2.0 s']);
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

describe('retry notices (one line per wait)', () => {
  it('give the attempt, the status or failure, the request id and the wait', async () => {
    const { d, announced } = deps(
      [
        err(503, 'service_unavailable', { 'retry-after': '1' }),
        { status: 429, headers: { 'x-request-id': 'req_hdr', 'retry-after': '12' }, body: 'slow down' },
        new TransportError('connect', 'connection refused by api.example', undefined, false),
        new TransportError('timeout', 'no complete response within 1 s'),
        { status: 201, body: '{}' },
      ],
      () => 0.3,
    );
    await sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d);
    expect(announced).toEqual([
      'attempt 1 of 5 got 503 service unavailable (request id r); retrying in 1.0 s',
      'attempt 2 of 5 got 429 rate limited (request id req_hdr); retrying in 12 s',
      expect.stringMatching(/^attempt 3 of 5 failed: connection refused by api\.example \(request id 0{8}-0{4}-4000-8000-\d{12}\); retrying in 0\.6 s$/),
      expect.stringMatching(/^attempt 4 of 5 timed out after 1\.0 s \(request id [0-9a-f-]{36}\); retrying in 1\.2 s$/),
    ]);
  });
});

describe('the Idempotency-Key travels with errors where the change may have been applied', () => {
  const withKey = (e: CliError) => (e.toJSON() as { idempotencyKey?: string }).idempotencyKey;

  it('exhausted 503s, timeouts, truncated and malformed responses: the key is beside exitCode', async () => {
    const cases: Answer[][] = [
      [err(503, 'service_unavailable'), err(503, 'service_unavailable')],
      [new TransportError('timeout', 'no complete response within 1 s'), new TransportError('timeout', 'no complete response within 1 s')],
      [new TransportError('truncated', 'the connection closed before the response was complete', 201)],
      [new TransportError('malformed', "the server's response could not be read: its headers exceed the size limit")],
      // a timeout, then connection refused: the first attempt may have landed
      [new TransportError('timeout', 'no complete response within 1 s'), new TransportError('connect', 'connection refused', undefined, false)],
    ];
    for (const answers of cases) {
      const { d } = deps(answers);
      const e = await failure(sendWithRetries(req, { maxRetries: 1, timeoutMs: 1000 }, d));
      expect(withKey(e), e.message).toBe('key-123');
      const json = JSON.stringify(e.toJSON());
      expect(json).toMatch(/"exitCode":\d+,"idempotencyKey":"key-123"\}$/);
    }
  });

  it('not where nothing can have been applied: 429s, refused connections, a 409', async () => {
    const cases: Answer[][] = [
      [err(429, 'rate_limit_exceeded'), err(429, 'rate_limit_exceeded')],
      [new TransportError('connect', 'connection refused', undefined, false), new TransportError('connect', 'connection refused', undefined, false)],
      [err(409, 'webhook_endpoint_version_conflict')],
    ];
    for (const answers of cases) {
      const { d } = deps(answers);
      const e = await failure(sendWithRetries(req, { maxRetries: 1, timeoutMs: 1000 }, d));
      expect(withKey(e)).toBeUndefined();
      expect(Object.keys(e.toJSON())).toEqual(['error', 'exitCode']);
    }
  });

  it('never without a key (reactivate sends none)', async () => {
    const { d } = deps([err(503, 'service_unavailable')]);
    const e = await failure(sendWithRetries({ ...req, idempotencyKey: undefined }, { maxRetries: 0, timeoutMs: 1000 }, d));
    expect(Object.keys(e.toJSON())).toEqual(['error', 'exitCode']);
  });

  it('an interrupt after a 503 names the key; one before anything was sent does not', async () => {
    const controller = new AbortController();
    const a = deps([err(503, 'service_unavailable', { 'retry-after': '5' })]);
    a.d.signal = controller.signal;
    a.d.sleep = async () => {
      controller.abort();
      throw new Error('aborted');
    };
    const e1 = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, a.d));
    expect([e1.exitCode, e1.idempotencyKey]).toEqual([130, 'key-123']);
    expect(e1.message).toContain('Idempotency-Key key-123');
    expect(e1.hint).toContain("--idempotency-key 'key-123'");

    const b = deps([]);
    const aborted = new AbortController();
    aborted.abort();
    b.d.signal = aborted.signal;
    const e2 = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, b.d));
    expect([e2.exitCode, e2.idempotencyKey, b.transport.sent.length]).toEqual([130, undefined, 0]);
  });
});

describe('malformed responses', () => {
  it('are invalid_response (exit 1), never retried', async () => {
    const { d, transport, clock } = deps([new TransportError('malformed', "the server's response could not be read: it does not start with an HTTP status line")]);
    const e = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000 }, d));
    expect([e.code, e.exitCode, transport.sent.length, clock.waits]).toEqual(['invalid_response', 1, 1, []]);
  });
});

describe('the whole-command deadline (virtual clock)', () => {
  it('caps each attempt at what remains, and ends with exit 12 naming the key when an attempt runs into it', async () => {
    const clock = virtualClock();
    const start = clock.now();
    const slow = (): Answer => () => {
      clock.advance(1000);
      return new TransportError('timeout', 'no complete response within 1 s');
    };
    const transport = scriptedTransport([
      err(503, 'service_unavailable', { 'retry-after': '1' }),
      () => {
        clock.advance(400);
        return new TransportError('timeout', 'no complete response within 0.6 s');
      },
      slow(),
    ]);
    const announced: string[] = [];
    const d: HttpDeps = { transport, now: clock.now, sleep: clock.sleep, randomUUID: sequentialUUID, random: () => 0.5, signal: new AbortController().signal, announce: (l) => announced.push(l) };
    const e = await failure(sendWithRetries(req, { maxRetries: 10, timeoutMs: 30_000, deadline: deadlineFrom(start, 1400) }, d));
    expect(transport.options.map((o) => o.timeoutMs)).toEqual([1400, 400]);
    expect([e.code, e.exitCode, e.idempotencyKey]).toEqual(['timeout', 12, 'key-123']);
    expect(e.message).toContain("the command's deadline of 1.4 s was reached during attempt 2 of 11");
    expect(e.message).toContain("--idempotency-key 'key-123'");
    expect(clock.now() - start).toBe(1400);
    expect(announced).toHaveLength(1);
  });

  it('a wait longer than what remains stops at once, before sleeping', async () => {
    const { d, transport, clock } = deps([err(503, 'service_unavailable', { 'retry-after': '1' }), err(503, 'service_unavailable', { 'retry-after': '5' })]);
    const start = clock.now();
    const e = await failure(sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000, deadline: deadlineFrom(start, 3000) }, d));
    expect(transport.sent).toHaveLength(2);
    expect(clock.waits).toEqual([1000]);
    expect([e.code, e.exitCode, e.idempotencyKey, e.status]).toEqual(['timeout', 12, 'key-123', null]);
    expect(e.message).toMatch(/deadline of 3 s would pass before the next attempt \(in 5\.0 s\).*last attempt got 503 service unavailable \(request id r\)/);
  });

  it('against a server that keeps answering 503 with backoff, ends at or before the deadline', async () => {
    const { d, transport, clock } = deps(
      Array.from({ length: 50 }, () => err(503, 'service_unavailable')),
      () => 0.99,
    );
    const start = clock.now();
    const e = await failure(sendWithRetries(req, { maxRetries: 50, timeoutMs: 30_000, deadline: deadlineFrom(start, 2000) }, d));
    expect(e.exitCode).toBe(12);
    expect(clock.now() - start).toBeLessThanOrEqual(2000);
    expect(transport.sent.length).toBeGreaterThan(1);
    expect(e.idempotencyKey).toBe('key-123');
  });

  it('is not reached by a run that succeeds in time', async () => {
    const { d, clock } = deps([err(503, 'service_unavailable', { 'retry-after': '1' }), { status: 201, body: '{}' }]);
    const res = await sendWithRetries(req, { maxRetries: 4, timeoutMs: 1000, deadline: deadlineFrom(clock.now(), 1500) }, d);
    expect(res.status).toBe(201);
  });
});
