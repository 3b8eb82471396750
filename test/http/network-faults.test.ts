// Issue 5, item 1: network faults, one test per row of the fault table. Each
// runs the real bin against a scripted server on 127.0.0.1 and checks the
// exit code, the --json error code, how many attempts reached the server, that
// no secret file was left behind, and that the token and secret never reach
// stderr.
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { CREATE, CSRF, REACTIVATE, SECRET, TOKEN, errorBody, csrfScopeEnv, secretBody } from '../support/fixtures.js';
import { leaks, parseErrorLine, stackTrace } from '../support/json.js';
import { cleanupTempDirs, runCli, workspace, type RunResult } from '../support/run.js';
import { RecordingServer, closedPort, json } from '../support/server.js';
import { limitRecordingTransport } from '../support/fakes.js';
import { nodeTransport, type TransportError } from '../../src/http/transport.js';

let server: RecordingServer;
let other: RecordingServer;

beforeAll(async () => {
  server = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
  other = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
});
afterAll(async () => {
  await server.close();
  await other.close();
  cleanupTempDirs();
});
beforeEach(() => {
  server.dropConnections();
  server.reset();
  other.reset((_q, res) => json(res, 201, secretBody()));
});

/**
 * create --json --secret-file, against baseUrl, with extra flags, through
 * the real transport; `limits` is the time limit each attempt was given.
 * No test here times the run: a timeout is shown by its exit code and the
 * limit the attempt had, and "at once" by what the run did not wait for.
 * Where the timeout is not the subject, the limit is generous (30 s), so a
 * loaded machine cannot turn a quick answer into a timeout.
 */
async function create(baseUrl: string, flags: string[]): Promise<RunResult & { secretFile: string; limits: number[] }> {
  const ws = workspace();
  const secretFile = join(ws.cwd, 'new.whsec');
  const { transport, limits } = limitRecordingTransport();
  const r = await runCli([...CREATE, '--json', '--secret-file', secretFile, ...flags], { ws, env: csrfScopeEnv(baseUrl), inject: { transport } });
  return { ...r, secretFile, limits };
}

/** What every failing row shares. */
function expectFailure(r: RunResult & { secretFile?: string }, exitCode: number, code: string) {
  expect(stackTrace(r.stderr), r.stderr).toBeUndefined();
  expect(leaks(r.stderr, [TOKEN, SECRET, CSRF]), r.stderr).toEqual([]);
  const line = parseErrorLine(r.stderr);
  expect({ exit: r.exitCode, code: line.error.code, lineExit: line.exitCode }, r.stderr).toEqual({ exit: exitCode, code, lineExit: exitCode });
  expect(r.stdout).toBe('');
  if (r.secretFile) expect(existsSync(r.secretFile)).toBe(false);
  return line;
}

const HTML = (status: number, text: string) =>
  `<!DOCTYPE html>\n<html><head><title>${status} ${text}</title></head><body><center><h1>${status} ${text}</h1></center><hr><center>nginx</center></body></html>\n`;

function html(res: http.ServerResponse, status: number, text: string) {
  const body = HTML(status, text);
  res.writeHead(status, { 'Content-Type': 'text/html', 'Content-Length': String(Buffer.byteLength(body)), Server: 'nginx' });
  res.end(body);
}

describe('fault table (create --json --secret-file)', () => {
  test('connection refused (closed port) → 12 network_error, not a timeout', async () => {
    const port = await closedPort();
    const r = await create(`http://127.0.0.1:${port}`, ['--max-retries', '0', '--timeout', '30']);
    const line = expectFailure(r, 12, 'network_error');
    expect(line.error.message).toMatch(/refused/);
    // No connection, so nothing reached the server: not "may have been applied", no key to re-send.
    expect(line.error.message).not.toMatch(/may have been applied/);
    expect(line).not.toHaveProperty('idempotencyKey');
  });

  test('reset before the response (server destroys the socket) → retried, then 12 network_error', async () => {
    server.reset((req) => req.socket.destroy());
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '30']);
    const line = expectFailure(r, 12, 'network_error');
    expect(server.hits).toBe(2);
    expect(line.error.message).toMatch(/reset|hang up|ECONNRESET/i);
    expect(line.error.message).toMatch(/gave up after 2 attempts/);
    // The retry is the same operation: one Idempotency-Key, named in the message.
    const keys = new Set(server.requests.map((q) => q.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect(line.error.message).toContain(String([...keys][0]));
  });

  // The timeouts below are real timers, run at fractions of a second.
  test('headers never come → the sent create waits for its answer until --deadline (not --timeout), then 12 naming the key', async () => {
    server.reset(() => {
      /* never answer */
    });
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '0.1', '--deadline', '0.5']);
    expectFailure(r, 12, 'timeout');
    expect(r.stderr).toContain("the command's deadline of 0.5 s was reached during attempt 1 of 1, waiting for its answer");
    expect(r.stderr).toContain('--idempotency-key');
    expect(server.hits).toBe(1);
  });

  test("the transport's timer covers the attempt: it fires at its limit, not a millisecond before (virtual timers)", async () => {
    let arrived!: () => void;
    const arrival = new Promise<void>((r) => (arrived = r));
    server.reset(() => arrived()); // never answers
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let outcome: TransportError | 'answered' | undefined;
      const attempt = nodeTransport(
        { method: 'POST', url: `${server.url}/v1/x`, headers: { 'content-type': 'application/json' }, body: '{}' },
        { timeoutMs: 300, maxBodyBytes: 1024, signal: new AbortController().signal },
      ).then(
        () => (outcome = 'answered'),
        (e: TransportError) => (outcome = e),
      );
      await arrival;
      await vi.advanceTimersByTimeAsync(299);
      expect(outcome).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await attempt;
      expect(outcome).toMatchObject({ failure: 'timeout', message: 'no complete response within 0.3 s' });
    } finally {
      vi.useRealTimers();
    }
  });

  test('body stalls half-way after the headers → 12 timeout (the timeout covers the whole response)', async () => {
    const body = JSON.stringify(secretBody());
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) });
      res.write(body.slice(0, Math.floor(body.length / 2))); // half of it, then nothing
    });
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '0.3']);
    const line = expectFailure(r, 12, 'timeout');
    // The server had answered 201: the change may be applied, so it is reported, not retried.
    expect(line.error.message).toContain('the server answered 201 but the answer stalled for 0.3 s');
    expect(server.hits).toBe(1);
    expect(r.limits).toEqual([300]);
  });

  test('slow drip (headers at 0.15 s, a byte every 50 ms, never done): no stall, so --deadline ends it → 12', async () => {
    const timers: NodeJS.Timeout[] = [];
    server.reset((_q, res) => {
      timers.push(
        setTimeout(() => {
          res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': '100000' });
          res.write('{');
          timers.push(setInterval(() => res.write(' '), 50));
        }, 150),
      );
    });
    try {
      const r = await create(server.url, ['--max-retries', '0', '--timeout', '0.4', '--deadline', '0.8']);
      expectFailure(r, 12, 'timeout');
      expect(r.stderr).toContain("the command's deadline of 0.8 s was reached during attempt 1 of 1, waiting for its answer");
    } finally {
      for (const t of timers) clearInterval(t);
    }
  });

  test('truncated body (Content-Length larger than sent, then close) → 1 invalid_response, not retried', async () => {
    const body = JSON.stringify(secretBody());
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(body.length + 500) });
      res.write(body, () => res.socket?.destroy()); // once what was sent is out
    });
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '30']);
    const line = expectFailure(r, 1, 'invalid_response');
    expect(server.hits).toBe(1);
    expect(line.error.message).toMatch(/closed before the response was complete|during the response/);
    // The change may have been applied: the message names the key to re-run with.
    expect(line.error.message).toContain(String(server.requests[0]!.headers['idempotency-key']));
  });

  // Never finished: a CLI that waited for the whole body would end at its
  // --timeout with 12 timeout, not 1 invalid_response.
  test('a 2xx body over 1 MiB, streamed (64 MiB, never finished) → 1 invalid_response without waiting for it', async () => {
    let written = 0;
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => (closed = r));
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' }); // chunked: no declared length
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      res.write('{"data":{"endpoint":{"pad":"');
      const pump = () => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        // 64 MiB sent and the response is still not finished: only a CLI that
        // waits for the whole body would now sit until its timeout.
      };
      res.on('close', () => closed());
      pump();
    });
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '20']);
    const line = expectFailure(r, 1, 'invalid_response');
    expect(line.error.message).toMatch(/1048576-byte limit/);
    expect(server.hits).toBe(1);
    // chatctl hung up on the body; the server notices a moment later, long
    // before it could have sent half of it.
    await serverSawClose;
    expect(written).toBeLessThan(32 * 1024 * 1024);
  });

  test('a 2xx body that declares 2 MiB → refused from the header, 1 invalid_response', async () => {
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(2 * 1024 * 1024) });
      res.write('{"data":'); // and nothing more
    });
    // Refused from the header: had chatctl waited for the body, it would have ended at --timeout with 12.
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '20']);
    const line = expectFailure(r, 1, 'invalid_response');
    expect(line.error.message).toContain('response body of 2097152 bytes exceeds the 1048576-byte limit');
    expect(server.hits).toBe(1);
  });

  test.each([502, 504])('an HTML %i page from a proxy → 1 invalid_response, not retried', async (status) => {
    server.reset((_q, res) => html(res, status, status === 502 ? 'Bad Gateway' : 'Gateway Time-out'));
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '30']);
    const line = expectFailure(r, 1, 'invalid_response');
    expect(line.error.status).toBe(status);
    expect(line.error.message).toMatch(/HTML/);
    expect(line.error.message).not.toMatch(/<html|<h1/i);
    expect(server.hits).toBe(1);
  });

  test('an HTML 404 → 6 invalid_response', async () => {
    server.reset((_q, res) => html(res, 404, 'Not Found'));
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '30']);
    const line = expectFailure(r, 6, 'invalid_response');
    expect(line.error.status).toBe(404);
    expect(server.hits).toBe(1);
  });

  test.each([301, 302, 303, 307, 308])('a %i redirect to another origin → exit 1 naming the Location; that origin gets nothing', async (status) => {
    const location = `${other.url}/v1/stolen?from=${status}`;
    server.reset((_q, res) => {
      res.writeHead(status, { Location: location, 'Content-Length': '0' });
      res.end();
    });
    const r = await create(server.url, ['--max-retries', '1', '--timeout', '30']);
    const line = expectFailure(r, 1, 'invalid_response');
    expect(line.error.message).toContain(location);
    expect(line.error.status).toBe(status);
    expect(server.hits).toBe(1);
    expect(other.hits).toBe(0);
  });

  test('a 307 redirect on reactivate (human mode) → exit 1 naming the Location; that origin gets nothing', async () => {
    const location = `${other.url}/elsewhere`;
    server.reset((_q, res) => {
      res.writeHead(307, { Location: location, 'Content-Type': 'text/html' });
      res.end('<a href="x">moved</a>');
    });
    const r = await runCli([...REACTIVATE, '--max-retries', '1', '--timeout', '30'], { env: csrfScopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(1);
    expect(r.stderr).toContain(location);
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(leaks(r.stderr, [TOKEN, CSRF])).toEqual([]);
    expect(other.hits).toBe(0);
  });

  test('a 302 whose body is a valid API error still names the Location; that origin gets nothing', async () => {
    const location = `${other.url}/login`;
    server.reset((_q, res) => json(res, 302, errorBody('authentication_required', 'log in first'), { Location: location }));
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30']);
    expect(other.hits).toBe(0);
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(leaks(r.stderr, [TOKEN, SECRET, CSRF])).toEqual([]);
    const line = parseErrorLine(r.stderr);
    // README: "Redirects are never followed: a 3xx is an error naming its Location".
    expect(line.error.message).toContain(location);
  });

  test('hostile success body: a wide and tall endpoint record (human mode) → exit 0, secret saved', async () => {
    // 600 KB in one field and 2000 short lines in another: well under the 1 MiB limit.
    const record = { description: 'x'.repeat(600_000), tags: Array.from({ length: 2000 }, (_, i) => `t${i}`) };
    server.reset((_q, res) => json(res, 201, secretBody(SECRET, true, 'we_1', record)));
    const ws = workspace();
    const secretFile = join(ws.cwd, 'new.whsec');
    const r = await runCli([...CREATE, '--secret-file', secretFile, '--max-retries', '0', '--timeout', '30'], { ws, env: csrfScopeEnv(server.url) });
    expect(existsSync(secretFile)).toBe(true);
    expect(stackTrace(r.stderr), r.stderr).toBeUndefined();
    // Issue 10: where the secret went is part of the result, on stdout (destination and fingerprint), not a notice.
    expect({ exit: r.exitCode, stderr: r.stderr.slice(0, 300), timedOut: r.timedOut }).toEqual({ exit: 0, stderr: '', timedOut: false });
    expect(r.stdout).toContain(`file:${secretFile} (mode 0600)`);
  });

  test('control row: the same server answering 201 → exit 0, secret only in the file', async () => {
    server.reset((_q, res) => json(res, 201, secretBody()));
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toContain(SECRET);
    expect(existsSync(r.secretFile)).toBe(true);
  });

  test('the server echoes the token and the CSRF value in a 500 error (--debug) → both scrubbed from stderr', async () => {
    server.reset((q, res) => json(res, 500, errorBody('internal_error', `bad header ${String(q.headers.authorization)} csrf ${String(q.headers['x-service-csrf'])}`)));
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30', '--debug']);
    expect(r.exitCode).toBe(1);
    expect(leaks(r.stderr, [TOKEN, CSRF])).toEqual([]);
    expect(stackTrace(r.stderr)).toBeUndefined();
  });
});

describe('malformed responses: invalid_response (exit 1), one attempt, never a connection failure', () => {
  /** A raw TCP server that answers the first bytes of each connection with `reply`, then closes. */
  async function rawServer(reply: string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
    let hits = 0;
    const s = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        hits++;
        socket.end(reply);
      });
    });
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    return {
      url: `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`,
      hits: () => hits,
      close: () => new Promise<void>((r) => s.close(() => r())),
    };
  }

  test.each([
    [
      '100 kB of response headers (HPE_HEADER_OVERFLOW)',
      'HTTP/1.1 201 Created\r\n' + Array.from({ length: 1000 }, (_, i) => `X-Pad-${i}: ${'a'.repeat(96)}\r\n`).join('') + 'Content-Length: 2\r\n\r\n{}',
      /headers exceed/,
    ],
    ['a bad status line', 'HTTZ/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}', /status line/],
    ['not HTTP at all', 'SSH-2.0-OpenSSH_9.6\r\n', /status line/],
    ['an invalid header token', 'HTTP/1.1 201 Created\r\nBad Header: x\r\nContent-Length: 2\r\n\r\n{}', /not valid HTTP\/1\.1 \(HPE_INVALID_HEADER_TOKEN\)/],
  ])('%s', async (_label, reply, reason) => {
    const raw = await rawServer(reply);
    try {
      const r = await create(raw.url, ['--max-retries', '3']);
      const line = expectFailure(r, 1, 'invalid_response');
      expect(line.error.message).toMatch(/response could not be read/);
      expect(line.error.message).toMatch(reason);
      expect(line.error.message).not.toMatch(/connect|reset/i);
      expect(raw.hits()).toBe(1);
      // Something answered: the change may have been applied.
      expect(line.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
      expect(line.error.message).toContain(line.idempotencyKey);
    } finally {
      await raw.close();
    }
  });

  test('human mode: a header overflow is one error, no retry notice', async () => {
    const raw = await rawServer('HTTP/1.1 201 Created\r\n' + `X-Big: ${'a'.repeat(100_000)}\r\n\r\n`);
    try {
      const ws = workspace();
      const r = await runCli([...CREATE, '--secret-file', join(ws.cwd, 's'), '--max-retries', '3'], { ws, env: csrfScopeEnv(raw.url), spawn: true });
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toMatch(/^chatctl: error: the server's response could not be read: its headers exceed the size limit/);
      expect(r.stderr).not.toMatch(/retrying/);
      expect(raw.hits()).toBe(1);
    } finally {
      await raw.close();
    }
  });
});

describe('secrets the server sent never reach stderr', () => {
  const CUT_SECRET = 'whsec_CUTSECRET_0123456789abcdefghijklmnopqrstuv';

  test('--debug, a complete 201 whose JSON is cut inside the secret → no part of the secret in the trace', async () => {
    const text = JSON.stringify(secretBody(CUT_SECRET));
    const cut = text.slice(0, text.indexOf(CUT_SECRET) + CUT_SECRET.length - 4); // "…"secret":"whsec_…wxyz" minus the end
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.end(cut);
    });
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30', '--debug']);
    // Not JSON, but it names a secret and the change was applied (201): the
    // answer is kept as received, exit 13.
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stderr).toContain('a body that is not JSON but names a secret');
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(leaks(r.stderr, [TOKEN, CSRF, CUT_SECRET.slice(0, 20)]), r.stderr).toEqual([]);
  });

  test('a 409 whose error details carry a whsec_ secret → not echoed on stderr', async () => {
    server.reset((_q, res) => json(res, 409, errorBody('idempotency_conflict', 'already applied', { previous: { secret: CUT_SECRET, secretAvailable: true } })));
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30']);
    expect(r.exitCode).toBe(8);
    expect(parseErrorLine(r.stderr).error.code).toBe('idempotency_conflict');
    expect(leaks(r.stderr, [TOKEN, CSRF, CUT_SECRET]), r.stderr).toEqual([]);
  });

  test('--debug, a 201 with the secret (and an echo of the token in a header) → both redacted in the trace', async () => {
    server.reset((_q, res) => json(res, 201, secretBody(), { 'X-Echo': `Bearer ${TOKEN}` }));
    const r = await create(server.url, ['--max-retries', '0', '--timeout', '30', '--debug']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('[debug]');
    expect(leaks(r.stderr, [TOKEN, CSRF, SECRET]), r.stderr).toEqual([]);
  });
});
