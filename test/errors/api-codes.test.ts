// The exit-code table (and the --json error line): every one of the
// spec's error codes to its exit code, the status fallback for bodies that are
// not a PublicErrorResponseDto, and the exit-codes table.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { PKG_VERSION, errorBody, exitCodeForApiCode, exitCodeForStatus, mutationBody, reactivatePath, scopeEnv } from '../support/fixtures.js';
import { parseErrorLine } from '../support/json.js';
import { cleanupTempDirs, runCli } from '../support/run.js';
import { type Reply, type RecordingServer, startServer } from '../support/server.js';

let server: RecordingServer;
/** Replies by endpoint id, so tests can run concurrently against one server. */
const replies = new Map<string, Reply>();

beforeAll(async () => {
  server = await startServer();
  server.setHandler((req) => {
    const m = /\/webhook-endpoints\/([^/]+)\/reactivate$/.exec(req.url);
    const reply = m ? replies.get(decodeURIComponent(m[1]!)) : undefined;
    return reply ?? { status: 597, body: 'no reply for this id' };
  });
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});

function reactivate(id: string, extra: string[] = []) {
  return runCli(['webhooks', 'reactivate', id, '--expected-version', '5', '--max-retries', '0', ...extra], {
    env: scopeEnv(server.url),
  });
}

test('the independent table names every spec code (guards this file)', () => {
  expect(ERROR_CODES).toHaveLength(59);
  expect(ERROR_CODES.filter((c) => exitCodeForApiCode(c) === null)).toEqual([]);
});

/**
 * A status chosen so that the status fallback would give a different exit code
 * than the error code: the CLI must go by the code. 429/503 keep their natural
 * status (with --max-retries 0) since those statuses are retried.
 */
function statusFor(code: string, expected: number): number {
  if (code === 'rate_limit_exceeded') return 429;
  if (code === 'service_unavailable') return 503;
  return expected === 9 ? 409 : 400;
}

describe.concurrent('each spec error code maps to its exit code (--json)', () => {
  for (const code of ERROR_CODES) {
    const expected = exitCodeForApiCode(code) ?? -1;
    const status = statusFor(code, expected);
    test(`${code} (HTTP ${status}) → exit ${expected}`, async ({ expect }) => {
      const id = `code-${code}`;
      const body = errorBody(code, `message for ${code}`, { field: 'expectedVersion', code });
      replies.set(id, { status, headers: { 'Retry-After': '0' }, body });
      const r = await reactivate(id, ['--json']);
      expect(r.exitCode).toBe(expected);
      expect(r.stdout).toBe('');
      expect(server.requestsTo(reactivatePath(id))).toHaveLength(1);
      expect(parseErrorLine(r.stderr)).toEqual({
        error: {
          code,
          message: `message for ${code}`,
          requestId: `req_err_${code}`,
          status,
          details: { field: 'expectedVersion', code },
        },
        exitCode: expected,
      });
    });
  }
});

describe.concurrent('human mode errors', () => {
  for (const [code, status] of [
    ['webhook_endpoint_version_conflict', 409],
    ['permission_denied', 403],
    ['webhook_endpoint_limit_reached', 409],
    ['internal_error', 500],
  ] as const) {
    test(`${code}: stderr starts with "chatctl: ", stdout empty, exit ${exitCodeForApiCode(code)}`, async ({ expect }) => {
      const id = `human-${code}`;
      replies.set(id, { status, body: errorBody(code, `plain words for ${code}`) });
      const r = await reactivate(id);
      expect(r.exitCode).toBe(exitCodeForApiCode(code));
      expect(r.stdout).toBe('');
      expect(r.stderr.startsWith('chatctl: ')).toBe(true);
      expect(r.stderr).toContain(`plain words for ${code}`);
    });
  }
});

test('a valid DTO with a code the spec does not list → exit 1', async () => {
  const id = 'unknown-code';
  replies.set(id, { status: 409, body: errorBody('brand_new_code') });
  const r = await reactivate(id, ['--json']);
  expect(r.exitCode).toBe(1);
  const line = parseErrorLine(r.stderr);
  expect(line.exitCode).toBe(1);
  expect(line.error.status).toBe(409);
  expect(r.stdout).toBe('');
});

describe.concurrent('bodies that are not a PublicErrorResponseDto fall back on the status', () => {
  for (const status of [400, 401, 403, 404, 409, 422, 429, 503, 500, 418, 502]) {
    test(`non-JSON body, HTTP ${status} → exit ${exitCodeForStatus(status)}, code invalid_response`, async ({ expect }) => {
      const id = `plain-${status}`;
      replies.set(id, {
        status,
        headers: { 'Content-Type': 'text/html', 'Retry-After': '0' },
        body: '<html>gateway says no</html>',
      });
      const r = await reactivate(id, ['--json']);
      expect(r.exitCode).toBe(exitCodeForStatus(status));
      const line = parseErrorLine(r.stderr);
      expect(line.exitCode).toBe(exitCodeForStatus(status));
      expect(line.error.code).toBe('invalid_response');
      expect(line.error.status).toBe(status);
      expect(r.stdout).toBe('');
    });
  }

  const broken: [string, unknown][] = [
    ['empty body', ''],
    ['error is a string', { error: 'nope' }],
    ['missing requestId', { error: { code: 'resource_not_found', message: 'm', details: {} } }],
    ['missing details', { error: { code: 'resource_not_found', message: 'm', requestId: 'r' } }],
    ['details null', { error: { code: 'resource_not_found', message: 'm', requestId: 'r', details: null } }],
    ['details a string', { error: { code: 'resource_not_found', message: 'm', requestId: 'r', details: 'x' } }],
    ['code not a string', { error: { code: 7, message: 'm', requestId: 'r', details: {} } }],
    ['message missing', { error: { code: 'resource_not_found', requestId: 'r', details: {} } }],
    ['JSON array', [1, 2]],
  ];
  for (const [label, body] of broken) {
    // status 409 → 8 by fallback; the code inside (resource_not_found → 6) must not be used
    test(`${label} (HTTP 409) → exit 8, code invalid_response`, async ({ expect }) => {
      const id = `broken-${label.replace(/\s+/g, '-')}`;
      replies.set(id, {
        status: 409,
        headers: { 'Content-Type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const r = await reactivate(id, ['--json']);
      expect(r.exitCode).toBe(8);
      const line = parseErrorLine(r.stderr);
      expect(line.error.code).toBe('invalid_response');
      expect(line.error.status).toBe(409);
      expect(line.exitCode).toBe(8);
    });
  }

  test('non-JSON body in human mode: chatctl: message, exit by status', async ({ expect }) => {
    const id = 'plain-human-404';
    replies.set(id, { status: 404, headers: { 'Content-Type': 'text/plain' }, body: 'not here' });
    const r = await reactivate(id);
    expect(r.exitCode).toBe(6);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    expect(r.stdout).toBe('');
  });
});

describe.concurrent('success bodies are checked', () => {
  test('200 with a body that is not JSON → exit 1, invalid_response', async ({ expect }) => {
    const id = 'ok-not-json';
    replies.set(id, { status: 200, headers: { 'Content-Type': 'text/plain' }, body: 'OK' });
    const r = await reactivate(id, ['--json']);
    expect(r.exitCode).toBe(1);
    expect(parseErrorLine(r.stderr).error.code).toBe('invalid_response');
    expect(r.stdout).toBe('');
  });
  test('200 with an envelope missing data.changed → exit 1, invalid_response', async ({ expect }) => {
    const id = 'ok-bad-envelope';
    const body = mutationBody() as { data: Record<string, unknown> };
    delete body.data.changed;
    replies.set(id, { status: 200, body });
    const r = await reactivate(id, ['--json']);
    expect(r.exitCode).toBe(1);
    expect(parseErrorLine(r.stderr).error.code).toBe('invalid_response');
    expect(r.stdout).toBe('');
  });
});

describe('exit-codes command', () => {
  const codes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 130];
  const rowFor = (out: string, code: number) => new RegExp(`^[^0-9A-Za-z\\n]*${code}(?![0-9])`, 'm').test(out);

  test('chatctl exit-codes prints every code of the table', async () => {
    const r = await runCli(['exit-codes']);
    expect(r.exitCode).toBe(0);
    for (const c of codes) expect(rowFor(r.stdout, c), `row for ${c}`).toBe(true);
    expect(r.stdout).toContain('rate_limit_exceeded');
    expect(r.stdout).toContain('_version_conflict');
  });

  test('chatctl help exit-codes prints the table too', async () => {
    const r = await runCli(['help', 'exit-codes']);
    expect(r.exitCode).toBe(0);
    for (const c of codes) expect(rowFor(r.stdout, c), `row for ${c}`).toBe(true);
  });
});

describe('--version and --help', () => {
  test('--version prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(PKG_VERSION);
  });
  test('--version works on a subcommand', async () => {
    const r = await runCli(['webhooks', 'create', '--version']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(PKG_VERSION);
  });
  for (const args of [
    ['profile', 'set', '--version'],
    ['auth', 'status', '--version'],
    ['exit-codes', '--version'],
  ]) {
    test(`${args.join(' ')} prints the version`, async () => {
      const r = await runCli(args);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain(PKG_VERSION);
    });
  }
  // -V with anything else: the version alone and 0, as gh does, never the
  // version and then an error (found by test/fuzz/argv.test.ts, seed
  // -1846575134: `-Vh` before a word that names no command printed both, the
  // error in plain text although --json came later). Words and flags that
  // would be refused on their own do not change that.
  for (const args of [
    ['--host', '::1', '-Vh', 'exit-codes', '-h', '--json'],
    ['--bogus', '-Vh', 'nope', '--help'],
    ['help', 'nope', '-V', '--json'],
    ['help', 'help', '-V'],
    ['-V', 'help', 'help'],
    ['exit-codes', '-h', '-V'],
    ['nope', '-V', '--json'],
  ]) {
    test(`${args.join(' ')} prints the version alone and exits 0`, async () => {
      const r = await runCli(args);
      expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({ exitCode: 0, stdout: `${PKG_VERSION}\n`, stderr: '' });
    });
  }
  // Where commander reads no -V (`-hV`: -h is no option it groups), the
  // usage error alone, in JSON under --json.
  test('-hV is a usage error, one JSON line under --json', async () => {
    const r = await runCli(['--host', '::1', '-hV', 'exit-codes', '--json']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'usage_error' }, exitCode: 2 });
  });
  for (const args of [['profile', 'set', '--help'], ['auth', 'login', '--help'], ['webhooks', 'create', '--help'], ['--help']]) {
    test(`${args.join(' ')} exits 0 with help on stdout`, async () => {
      const r = await runCli(args);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: ${['chatctl', ...args.slice(0, -1)].join(' ')} \\[options\\]`));
    });
  }
  test('--help works on a subcommand and sends nothing', async () => {
    const before = server.requests.length;
    const r = await runCli(['webhooks', 'rotate', '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('--expected-version');
    expect(server.requests.length).toBe(before);
  });
});
