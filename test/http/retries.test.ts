// What is retried, how often, how long it waits, and what
// the Idempotency-Key and x-request-id do across attempts.
import { describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../src/api/schemas.js';
import { UUID_V4, errorBody, mutationBody, scopeEnv, secretBody } from '../support/fixtures.js';
import { parseErrorLine, parseStdoutJson } from '../support/json.js';
import { runCli } from '../support/run.js';
import { closedPort, useRecordingServer } from '../support/server.js';
import { limitRecordingTransport, virtualClock } from '../support/fakes.js';

const server = useRecordingServer();

const E0 = EVENT_TYPES[0];
const CREATE = ['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E0];
const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap'];
const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '4'];

const rateLimited = (retryAfter = '0') => ({
  status: 429,
  headers: { 'Retry-After': retryAfter },
  body: errorBody('rate_limit_exceeded'),
});
const unavailable = (retryAfter = '0') => ({
  status: 503,
  headers: { 'Retry-After': retryAfter },
  body: errorBody('service_unavailable'),
});

describe('429 and 503 are retried', () => {
  test('create: 429, 429, 201 → success; same Idempotency-Key and body, new x-request-id each attempt', async () => {
    server.enqueue(rateLimited(), rateLimited(), { status: 201, body: secretBody() });
    const r = await runCli([...CREATE, '--json', '--max-retries', '2'], { env: scopeEnv(server.url), inject: virtualClock() });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(secretBody());
    expect(server.requests).toHaveLength(3);
    const keys = server.requests.map((q) => q.headers['idempotency-key']);
    expect(keys[0]).toMatch(UUID_V4);
    expect(new Set(keys).size).toBe(1);
    const ids = server.requests.map((q) => q.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(3);
    expect(new Set(server.requests.map((q) => q.body)).size).toBe(1);
    expect(new Set(server.requests.map((q) => q.url)).size).toBe(1);
  });

  test('rotate: 503 then 200 → success, same Idempotency-Key', async () => {
    server.enqueue(unavailable(), { status: 200, body: secretBody() });
    const r = await runCli([...ROTATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.headers['idempotency-key']).toBe(server.requests[1]!.headers['idempotency-key']);
    expect(server.requests[0]!.headers['x-request-id']).not.toBe(server.requests[1]!.headers['x-request-id']);
  });

  test('reactivate: 503 then 200 → success, no Idempotency-Key on either attempt', async () => {
    server.enqueue(unavailable(), { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    for (const q of server.requests) expect(q.headers['idempotency-key']).toBeUndefined();
  });

  test('--idempotency-key is kept on every retry', async () => {
    const key = 'c0ffee00-1111-4222-8333-444455556666';
    server.enqueue(rateLimited(), { status: 201, body: secretBody() });
    const r = await runCli([...CREATE, '--json', '--max-retries', '1', '--idempotency-key', key], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests.map((q) => q.headers['idempotency-key'])).toEqual([key, key]);
  });
});

describe('retries run out', () => {
  test('create: 429 always, --max-retries 2 → 3 attempts, exit 11, message names the Idempotency-Key', async () => {
    server.setHandler(() => rateLimited());
    const r = await runCli([...CREATE, '--secret-file', 'out.secret', '--max-retries', '2'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(3);
    const key = server.requests[0]!.headers['idempotency-key'] as string;
    expect(key).toMatch(UUID_V4);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    expect(r.stderr).toContain(key);
    expect(r.stdout).toBe('');
  });

  test('create --json: exhaustion error line, code rate_limit_exceeded, names the key', async () => {
    server.setHandler(() => rateLimited());
    const r = await runCli([...CREATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(2);
    const line = parseErrorLine(r.stderr);
    expect(line.exitCode).toBe(11);
    expect(line.error.code).toBe('rate_limit_exceeded');
    expect(line.error.status).toBe(429);
    expect(r.stderr).toContain(server.requests[0]!.headers['idempotency-key'] as string);
    expect(r.stdout).toBe('');
  });

  test('rotate: 503 always, --max-retries 1 → 2 attempts, exit 12, message names the key', async () => {
    server.setHandler(() => unavailable());
    const r = await runCli([...ROTATE, '--secret-file', 'out.secret', '--max-retries', '1'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(2);
    expect(r.stderr).toContain(server.requests[0]!.headers['idempotency-key'] as string);
  });

  test('reactivate: 503 always, --max-retries 0 → exactly 1 attempt, exit 12', async () => {
    server.setHandler(() => unavailable());
    const r = await runCli([...REACTIVATE, '--max-retries', '0'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(1);
  });

  test('default is 4 retries (5 attempts)', async () => {
    server.setHandler(() => rateLimited());
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(5);
  });

  test('CHATCTL_MAX_RETRIES=1 → 2 attempts; --max-retries beats it', async () => {
    server.setHandler(() => unavailable());
    const a = await runCli(REACTIVATE, { env: scopeEnv(server.url, { CHATCTL_MAX_RETRIES: '1' }) });
    expect(a.exitCode).toBe(12);
    expect(server.requests).toHaveLength(2);
    server.requests.length = 0;
    const b = await runCli([...REACTIVATE, '--max-retries', '2'], {
      env: scopeEnv(server.url, { CHATCTL_MAX_RETRIES: '1' }),
    });
    expect(b.exitCode).toBe(12);
    expect(server.requests).toHaveLength(3);
  });

  test('global option before the subcommand: --max-retries 1 → 2 attempts', async () => {
    server.setHandler(() => unavailable());
    const r = await runCli(['--max-retries', '1', ...REACTIVATE], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(2);
  });
});

describe('Retry-After', () => {
  // The one real wait of this file: it proves the real sleep is wired. Not
  // timed: the server and chatctl share this process's timers, which fire in
  // the order they fall due, so a 1 s timer the server starts as it answers
  // has fired before chatctl's own wait of 1 s (started later) ends.
  test('seconds: Retry-After 1 is honoured, with the real sleep', async () => {
    let serverSecond = false;
    let secondAfterIt: boolean | undefined;
    server.enqueue(
      () => {
        setTimeout(() => (serverSecond = true), 1000);
        return rateLimited('1');
      },
      () => {
        secondAfterIt = serverSecond;
        return { status: 200, body: mutationBody() };
      },
    );
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(secondAfterIt).toBe(true);
  });

  // The waits below are chatctl's own: its clock and sleep are injected, so
  // each wait is recorded to the millisecond instead of slept. (The test
  // above proves the real sleep is the one a process uses.)
  test("HTTP date: waits until that time, on chatctl's clock", async () => {
    const clock = virtualClock(Date.UTC(2026, 10, 23, 12, 0, 0, 250));
    server.enqueue(
      () => ({
        status: 503,
        headers: { 'Retry-After': new Date(clock.now() + 1750).toUTCString() },
        body: errorBody('service_unavailable'),
      }),
      { status: 200, body: mutationBody() },
    );
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    // The date has whole seconds (12:00:02): from 12:00:00.250 that is 1.75 s.
    expect(clock.waits).toEqual([1750]);
  });

  test('Retry-After 120 is not waited for: one attempt, exit 11 at once, message says 120', async () => {
    server.setHandler(() => rateLimited('120'));
    const clock = virtualClock();
    const r = await runCli([...REACTIVATE, '--max-retries', '3'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(1);
    expect(clock.waits).toEqual([]);
    expect(r.stderr).toContain('120');
  });

  test('Retry-After 120 with --json: error line carries 120, exit 11', async () => {
    server.setHandler(() => rateLimited('120'));
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '3'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(1);
    const line = parseErrorLine(r.stderr);
    expect(line.exitCode).toBe(11);
    expect(JSON.stringify(line)).toContain('120');
  });
  test('Retry-After 61 (just over 60 s) is not waited for either', async () => {
    server.setHandler(() => rateLimited('61'));
    const r = await runCli([...REACTIVATE, '--max-retries', '3'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(11);
    expect(server.requests).toHaveLength(1);
    expect(r.stderr).toContain('61');
  });

  test('an HTTP date ten minutes ahead is not waited for: one attempt, exit 12', async () => {
    const clock = virtualClock();
    server.setHandler(() => unavailable(new Date(clock.now() + 600_000).toUTCString()));
    const r = await runCli([...REACTIVATE, '--max-retries', '3'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(1);
    expect(clock.waits).toEqual([]);
  });

  test('an HTTP date in the past: retried without waiting', async () => {
    const clock = virtualClock();
    server.enqueue(unavailable(new Date(clock.now() - 60_000).toUTCString()), { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(clock.waits.every((ms) => ms === 0)).toBe(true);
  });

  test('no Retry-After: full-jitter backoff, base 0.5 s (waits at most 0.5 s then 1 s)', async () => {
    server.setHandler(() => ({ status: 503, body: errorBody('service_unavailable') }));
    // The highest the random source can give: each wait at its ceiling.
    const top = { ...virtualClock(), random: () => 0.999999 };
    const r = await runCli([...REACTIVATE, '--max-retries', '2'], { env: scopeEnv(server.url), inject: top });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(3);
    expect(top.waits).toHaveLength(2);
    expect(top.waits[0]).toBeGreaterThan(450);
    expect(top.waits[0]).toBeLessThanOrEqual(500);
    expect(top.waits[1]).toBeGreaterThan(950);
    expect(top.waits[1]).toBeLessThanOrEqual(1000);
    // Full jitter: the lowest the random source can give waits (next to) nothing.
    server.reset();
    server.setHandler(() => ({ status: 503, body: errorBody('service_unavailable') }));
    const bottom = { ...virtualClock(), random: () => 0 };
    await runCli([...REACTIVATE, '--max-retries', '2'], { env: scopeEnv(server.url), inject: bottom });
    expect(bottom.waits).toHaveLength(2);
    expect(Math.max(...bottom.waits)).toBeLessThan(50);
  });

  test('an unparseable Retry-After falls back on backoff (retried, short wait)', async () => {
    const clock = virtualClock();
    server.enqueue(rateLimited('soon-ish'), { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(clock.waits).toHaveLength(1);
    expect(clock.waits[0]).toBeLessThanOrEqual(500);
  });
});

describe('other statuses are not retried', () => {
  for (const [status, code] of [
    [400, 'validation_failed'],
    [401, 'authentication_failed'],
    [403, 'permission_denied'],
    [404, 'resource_not_found'],
    [409, 'webhook_endpoint_version_conflict'],
    [422, 'validation_failed'],
    [500, 'internal_error'],
  ] as const) {
    test(`${status} → exactly one request`, async () => {
      server.setHandler(() => ({ status, headers: { 'Retry-After': '0' }, body: errorBody(code) }));
      const r = await runCli([...REACTIVATE, '--json', '--max-retries', '3'], { env: scopeEnv(server.url) });
      expect(r.exitCode).not.toBe(0);
      expect(server.requests).toHaveLength(1);
    });
  }
});

describe('network failures', () => {
  test('connection refused → exit 12, code network_error, status and requestId null', async () => {
    const port = await closedPort();
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '0'], {
      env: scopeEnv(`http://127.0.0.1:${port}`),
    });
    expect(r.exitCode).toBe(12);
    const line = parseErrorLine(r.stderr);
    expect(line.exitCode).toBe(12);
    expect(line.error.code).toBe('network_error');
    expect(line.error.status).toBeNull();
    expect(line.error.requestId).toBeNull();
    expect(r.stdout).toBe('');
  });

  test('connection refused in human mode → exit 12, chatctl: message', async () => {
    const port = await closedPort();
    const r = await runCli([...REACTIVATE, '--max-retries', '0'], { env: scopeEnv(`http://127.0.0.1:${port}`) });
    expect(r.exitCode).toBe(12);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    expect(r.stdout).toBe('');
  });

  test('a reset before any response is retried', async () => {
    server.enqueue({ destroy: true }, { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url), inject: virtualClock() });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(parseStdoutJson(r.stdout)).toEqual(mutationBody());
  });

  test('resets on every attempt: --max-retries 2 → 3 attempts, exit 12, network_error', async () => {
    server.setHandler(() => ({ destroy: true }));
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '2'], { env: scopeEnv(server.url), inject: virtualClock() });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(3);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('network_error');
    expect(line.error.status).toBeNull();
  });

  // Attempt timeouts are real timers on the socket: these run at 0.3 s
  // (--timeout takes fractions of a second) rather than the 1 s a user
  // would more likely give.
  test('an attempt that times out is retried: hang, then 200 → success', async () => {
    server.enqueue({ hang: true }, { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--timeout', '0.3', '--max-retries', '1'], {
      env: scopeEnv(server.url),
      inject: virtualClock(),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(parseStdoutJson(r.stdout)).toEqual(mutationBody());
  });

  test('--timeout 0.3 against a silent server, --max-retries 1 → 2 attempts, exit 12, code timeout', async () => {
    server.setHandler(() => ({ hang: true }));
    const { transport, limits } = limitRecordingTransport();
    const r = await runCli([...REACTIVATE, '--json', '--timeout', '0.3', '--max-retries', '1'], {
      env: scopeEnv(server.url),
      inject: { ...virtualClock(), transport },
    });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(2);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('timeout');
    expect(line.error.status).toBeNull();
    expect(line.exitCode).toBe(12);
    // Each attempt had its own 0.3 s (the transport's timer fires at that
    // limit: test/http/network-faults.test.ts, on virtual timers).
    expect(limits).toEqual([300, 300]);
    expect(line.error.message).toContain('no complete response within 0.3 s; gave up after 2 attempts');
  });

  test('a body that stalls after the headers counts against --timeout (exit 12, timeout)', async () => {
    server.setHandler(() => ({ status: 200, body: mutationBody(), stallAfterBytes: 10 }));
    const { transport, limits } = limitRecordingTransport();
    const r = await runCli([...REACTIVATE, '--json', '--timeout', '0.3', '--max-retries', '0'], {
      env: scopeEnv(server.url),
      inject: { transport },
    });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(1);
    expect(parseErrorLine(r.stderr).error).toMatchObject({ code: 'timeout', message: 'the server answered 200 but no complete response within 0.3 s' });
    expect(limits).toEqual([300]);
    expect(r.stdout).toBe('');
  });

  test('CHATCTL_TIMEOUT=0.3 works like --timeout 0.3', async () => {
    server.setHandler(() => ({ hang: true }));
    const { transport, limits } = limitRecordingTransport();
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '0'], {
      env: scopeEnv(server.url, { CHATCTL_TIMEOUT: '0.3' }),
      inject: { transport },
    });
    expect(r.exitCode).toBe(12);
    expect(server.requests).toHaveLength(1);
    expect(parseErrorLine(r.stderr).error.code).toBe('timeout');
    expect(limits).toEqual([300]);
  });
});

describe('on a TTY each wait is announced', () => {
  test('a retried run writes one line more to the terminal than the same run without a retry: the attempt, its answer and the wait', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    // stdin, stdout and stderr all terminals: what the terminal would show is stdout and stderr together.
    const tty = { stdin: true, stdout: true, stderr: true };
    const plainRun = await runCli([...REACTIVATE, '--no-input'], { env: scopeEnv(server.url), tty });
    expect(plainRun.exitCode).toBe(0);
    server.reset();
    server.enqueue(rateLimited('0'), { status: 200, body: mutationBody() });
    const retriedRun = await runCli([...REACTIVATE, '--no-input', '--max-retries', '1'], { env: scopeEnv(server.url), tty });
    expect(retriedRun.exitCode).toBe(0);
    expect(server.requests).toHaveLength(2);
    const plain = plainRun.stdout + plainRun.stderr;
    const retried = retriedRun.stdout + retriedRun.stderr;
    const lines = (t: string) => t.split(/\r?\n/).filter((l) => l.trim() !== '');
    const extra = lines(retried).filter((l) => !lines(plain).includes(l));
    expect(extra, retried).toEqual(['chatctl: attempt 1 of 2 got 429 rate limited (request id req_err_rate_limit_exceeded); retrying in 0.0 s']);
  });
});

describe('retry waits are announced in human mode whether or not stderr is a TTY', () => {
  test('off a TTY (CI logs): one line per wait with attempt, status, request id and wait; stdout untouched', async () => {
    server.enqueue(unavailable('1'), rateLimited('0'), { status: 200, body: mutationBody() });
    // stderr is not a terminal, as in CI; the 1 s wait is recorded, not slept.
    const clock = virtualClock();
    const r = await runCli([...REACTIVATE, '--max-retries', '3'], { env: scopeEnv(server.url), tty: { stderr: false }, inject: clock });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(clock.waits).toEqual([1000, 0]);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toEqual([
      'chatctl: attempt 1 of 4 got 503 service unavailable (request id req_err_service_unavailable); retrying in 1.0 s',
      'chatctl: attempt 2 of 4 got 429 rate limited (request id req_err_rate_limit_exceeded); retrying in 0.0 s',
    ]);
    expect(r.stdout).not.toContain('retrying');
  });

  test('a connection failure names our x-request-id of that attempt', async () => {
    server.enqueue({ destroy: true }, { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--max-retries', '1'], { env: scopeEnv(server.url), inject: virtualClock() });
    expect(r.exitCode, r.stderr).toBe(0);
    const sentId = server.requests[0]!.headers['x-request-id'] as string;
    expect(r.stderr).toMatch(new RegExp(`^chatctl: attempt 1 of 2 failed: .* \\(request id ${sentId}\\); retrying in \\d+\\.\\d s\\n`));
  });

  test('--quiet silences them (and the error is still reported); --json mutes them too', async () => {
    server.enqueue(unavailable('0'), { status: 200, body: mutationBody() });
    const quiet = await runCli([...REACTIVATE, '--quiet', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(quiet.exitCode, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(server.requests).toHaveLength(2);

    server.reset();
    server.setHandler(() => unavailable('0'));
    const failed = await runCli(['--quiet', ...REACTIVATE, '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(failed.exitCode).toBe(12);
    expect(failed.stderr).toMatch(/^chatctl: error: server says service_unavailable; gave up after 2 attempts\n/);
    expect(failed.stderr).not.toContain('retrying');

    server.reset();
    server.enqueue(unavailable('0'), { status: 200, body: mutationBody() });
    const json = await runCli([...REACTIVATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(json.exitCode).toBe(0);
    expect(json.stderr).toBe('');
  });
});

describe('--deadline bounds the whole command', () => {
  test('--deadline 2 against a server that keeps answering 503 (Retry-After 1) → exit 12 by ~2 s, the key in the JSON and the message', async () => {
    server.setHandler(() => unavailable('1'));
    const clock = virtualClock();
    const r = await runCli([...CREATE, '--json', '--deadline', '2'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(12);
    const line = parseErrorLine(r.stderr);
    const key = server.requests[0]!.headers['idempotency-key'] as string;
    expect(key).toMatch(UUID_V4);
    expect(line).toMatchObject({ exitCode: 12, idempotencyKey: key, error: { code: 'timeout', status: null, requestId: null } });
    expect(line.error.message).toContain("the command's deadline of 2 s");
    expect(line.error.message).toContain(`--idempotency-key '${key}'`);
    // Attempts at 0 s and 1 s; the next would come after the deadline, so it stops at once.
    expect(server.requests).toHaveLength(2);
    expect(clock.waits).toEqual([1000]);
    expect(r.stdout).toBe('');
  });

  test('slow 503s: the last attempt is cut at the deadline (CHATCTL_DEADLINE=1) → exit 12 at 1 s', async () => {
    // On chatctl's clock, answers take 0.4 s: attempts at 0, 0.4 and 0.8 s.
    // The third never answers, so only the deadline can end it: its limit
    // is what is left, 0.2 s, a real timer.
    const clock = virtualClock();
    server.setHandler((_q, index) => {
      if (index === 2) return { hang: true };
      clock.advance(400);
      return unavailable('0');
    });
    const { transport, limits } = limitRecordingTransport();
    const r = await runCli([...ROTATE, '--secret-file', 'out.secret', '--max-retries', '100'], {
      env: scopeEnv(server.url, { CHATCTL_DEADLINE: '1' }),
      inject: { ...clock, transport },
    });
    expect(r.exitCode, r.stderr).toBe(12);
    const key = server.requests[0]!.headers['idempotency-key'] as string;
    expect(r.stderr).toContain("the command's deadline of 1 s was reached during attempt 3 of 101");
    expect(r.stderr).toContain(`--idempotency-key '${key}'`);
    expect(r.stderr).toContain('hint: allow more time with --deadline SECONDS');
    expect(server.requests).toHaveLength(3);
    expect(limits).toEqual([1000, 600, 200]);
  });

  test('a bad --deadline is a usage error (exit 2), a bad CHATCTL_DEADLINE a config error (exit 3); nothing sent', async () => {
    const flag = await runCli([...REACTIVATE, '--deadline', '0'], { env: scopeEnv(server.url) });
    expect(flag.exitCode).toBe(2);
    expect(flag.stderr).toContain('--deadline');
    const env = await runCli([...REACTIVATE], { env: scopeEnv(server.url, { CHATCTL_DEADLINE: 'soon' }) });
    expect(env.exitCode).toBe(3);
    expect(env.stderr).toContain('CHATCTL_DEADLINE');
    expect(server.requests).toHaveLength(0);
  });
});

describe('"idempotencyKey" beside "exitCode" in --json error lines when the change may have been applied', () => {
  test('rotate: exhausted 503s → the key; exhausted 429s → none (nothing was applied)', async () => {
    server.setHandler(() => unavailable());
    const r503 = await runCli([...ROTATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r503.exitCode).toBe(12);
    expect(parseErrorLine(r503.stderr).idempotencyKey).toBe(server.requests[0]!.headers['idempotency-key']);
    expect(r503.stderr.trim()).toMatch(/"exitCode":12,"idempotencyKey":"[0-9a-f-]{36}"\}$/);

    server.reset();
    server.setHandler(() => rateLimited());
    const r429 = await runCli([...ROTATE, '--json', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r429.exitCode).toBe(11);
    expect(parseErrorLine(r429.stderr).idempotencyKey).toBeUndefined();
  });

  test('create: an attempt that timed out after sending → the key (--idempotency-key as given)', async () => {
    server.setHandler(() => ({ hang: true }));
    const key = 'ci-run-42-create';
    const r = await runCli([...CREATE, '--json', '--timeout', '0.3', '--deadline', '0.6', '--max-retries', '0', '--idempotency-key', key], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(12);
    expect(parseErrorLine(r.stderr)).toMatchObject({ exitCode: 12, idempotencyKey: key, error: { code: 'timeout' } });
  });

  test('reactivate never carries one (it sends no key)', async () => {
    server.setHandler(() => unavailable());
    const r = await runCli([...REACTIVATE, '--json', '--max-retries', '0'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(12);
    expect(parseErrorLine(r.stderr).idempotencyKey).toBeUndefined();
  });
});

describe('a signal after the request was sent names the key', () => {
  test('SIGTERM while create waits for its answer: it waits its grace (5 s, on the injected clock), then 143, the key beside exitCode and in the message', async () => {
    // In-process: the run is aborted as SIGTERM would, once the request has arrived; the grace passes at once.
    const sigterm = new AbortController();
    server.setHandler(() => {
      sigterm.abort('SIGTERM');
      return { hang: true };
    });
    const slept: number[] = [];
    const r = await runCli([...CREATE, '--json', '--max-retries', '0'], {
      env: scopeEnv(server.url),
      signal: sigterm.signal,
      inject: { sleep: async (ms: number) => void slept.push(ms) },
    });
    expect(slept).toEqual([5000]);
    expect(r.exitCode).toBe(143);
    const key = server.requests[0]!.headers['idempotency-key'] as string;
    const line = parseErrorLine(r.stderr);
    expect(line).toMatchObject({ exitCode: 143, idempotencyKey: key, error: { code: 'interrupted' } });
    expect(line.error.message).toBe(`terminated (SIGTERM): the request had been sent and may have been applied (Idempotency-Key ${key})`);
  });
});
