// docs/configuration.md (Output) and docs/secrets.md: --json, human mode, --dry-run, --debug, where the
// token may appear, control characters from the server, colour, closed pipes.
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../src/api/schemas.js';
import { BIN, CREATE_PATH, CSRF, NODE, TOKEN, endpointRecord, errorBody, headerOf, mutationBody, reactivatePath, rotatePath, scopeEnv, secretBody } from '../support/fixtures.js';
import { parseErrorLine, parseStdoutJson } from '../support/json.js';
import { buildEnv, runCli, waitFor, workspace } from '../support/run.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { useRecordingServer } from '../support/server.js';

const server = useRecordingServer();

const E0 = EVENT_TYPES[0];
const E1 = EVENT_TYPES[7];
const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '3'];
const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap'];
const CREATE = ['webhooks', 'create', '--name', 'Orders', '--url', 'https://h.example/in', '--event', `${E0},${E1}`];
/** stdin, stdout and stderr all claim to be terminals (in-process; test/prompts/pty.test.ts has the real one). */
const TERMINAL = { stdin: true, stdout: true, stderr: true };

describe('--json success', () => {
  test('reactivate: stdout is exactly the server envelope (unknown fields and nextCursor untouched)', async () => {
    const body = mutationBody();
    server.enqueue({ status: 200, body });
    const r = await runCli([...REACTIVATE, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(body);
  });

  test('reactivate changed:false is still success', async () => {
    const body = mutationBody('we_1', false);
    server.enqueue({ status: 200, body });
    const r = await runCli([...REACTIVATE, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(body);
  });

  test('create: stdout is exactly the server envelope with meta.nextCursor', async () => {
    const body = { ...secretBody(), meta: { requestId: 'r9', nextCursor: { after: 'x', n: 2 } } };
    server.enqueue({ status: 201, body });
    const r = await runCli([...CREATE, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(body);
  });
});

describe('global options before or after the subcommand; webhook alias', () => {
  const variants: [string, string[]][] = [
    ['--json before', ['--json', ...ROTATE]],
    ['--json after', [...ROTATE, '--json']],
    ['--json between group and command', ['webhooks', '--json', ...ROTATE.slice(1)]],
    ['alias webhook', ['webhook', ...ROTATE.slice(1), '--json']],
  ];
  for (const [label, args] of variants) {
    test(label, async () => {
      server.enqueue({ status: 200, body: secretBody() });
      const r = await runCli(args, { env: scopeEnv(server.url) });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.url).toBe(rotatePath('we_1'));
      expect(parseStdoutJson(r.stdout)).toEqual(secretBody());
    });
  }

  test('scope flags before the subcommand', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(['--org', 'o9', '--app', 'a9', '--env', 'e9', '--json', ...REACTIVATE], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests[0]!.url).toBe('/v1/organizations/o9/applications/a9/environments/e9/webhook-endpoints/we_1/reactivate');
  });

  test('--base-url flag after the subcommand', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--json', '--base-url', server.url], {
      env: scopeEnv('http://example.com'),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
  });
});

describe('--dry-run', () => {
  test('create --dry-run --json with no token: prints the request, sends nothing, redacts CSRF', async () => {
    const r = await runCli([...CREATE, '--dry-run', '--json'], {
      env: scopeEnv(server.url, { CHATCTL_TOKEN: undefined, CHATCTL_CSRF_TOKEN: CSRF }),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    const out = parseStdoutJson(r.stdout) as {
      dryRun: unknown;
      request: { method: unknown; url: unknown; headers: Record<string, unknown>; body: unknown };
    };
    expect(out.dryRun).toBe(true);
    expect(out.request.method).toBe('POST');
    expect(out.request.url).toBe(`${server.url}${CREATE_PATH}`);
    expect(headerOf(out.request.headers, 'Authorization')).toBe('Bearer [REDACTED]');
    expect(headerOf(out.request.headers, 'x-service-csrf')).toBe('[REDACTED]');
    expect(headerOf(out.request.headers, 'Content-Type')).toBe('application/json');
    expect(headerOf(out.request.headers, 'Origin')).toBe(server.url);
    const body = typeof out.request.body === 'string' ? JSON.parse(out.request.body) : out.request.body;
    expect(body).toEqual({ name: 'Orders', destinationUrl: 'https://h.example/in', eventTypes: [E0, E1] });
    expect(r.stdout).not.toContain(CSRF);
    expect(r.stderr).not.toContain(CSRF);
  });

  test('rotate --dry-run --json with a token: token never printed', async () => {
    const r = await runCli([...ROTATE, '--dry-run', '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    const out = parseStdoutJson(r.stdout) as { dryRun: unknown; request: { url: unknown; headers: Record<string, unknown>; body: unknown } };
    expect(out.dryRun).toBe(true);
    expect(out.request.url).toBe(`${server.url}${rotatePath('we_1')}`);
    expect(headerOf(out.request.headers, 'Authorization')).toBe('Bearer [REDACTED]');
    const body = typeof out.request.body === 'string' ? JSON.parse(out.request.body) : out.request.body;
    expect(body).toEqual({ expectedVersion: 3, mode: 'overlap' });
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  test('reactivate --dry-run in human mode: request on stdout, no token, nothing sent', async () => {
    const r = await runCli([...REACTIVATE, '--dry-run'], {
      env: scopeEnv(server.url, { CHATCTL_CSRF_TOKEN: CSRF }),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    expect(r.stdout).toContain('POST');
    expect(r.stdout).toContain(reactivatePath('we_1'));
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(r.stdout + r.stderr).not.toContain(CSRF);
  });

  test('--dry-run still checks input (exit 2)', async () => {
    const r = await runCli(['webhooks', 'reactivate', 'we_1', '--expected-version', '0', '--dry-run'], {
      env: scopeEnv(server.url),
    });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
  });
});

describe('the token never appears on stdout or stderr', () => {
  const echo = () => ({
    status: 401,
    body: errorBody('authentication_failed', `token ${TOKEN} is not valid`, { token: TOKEN }),
  });

  test('human mode error that echoes the token', async () => {
    server.enqueue(echo());
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(4);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  test('--json error that echoes the token', async () => {
    server.enqueue(echo());
    const r = await runCli([...REACTIVATE, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(4);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('authentication_failed');
    expect(line.exitCode).toBe(4);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  test('--debug error that echoes the token (and the CSRF value)', async () => {
    server.enqueue(echo());
    const r = await runCli([...REACTIVATE, '--debug'], { env: scopeEnv(server.url, { CHATCTL_CSRF_TOKEN: CSRF }) });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/^\[debug\] > POST http:\/\/127\.0\.0\.1:\d+\/\S+ \(attempt 1 of \d+\)$/m);
    expect(r.stderr).toMatch(/^\[debug\] < 401 in \d+ ms$/m);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(r.stdout + r.stderr).not.toContain(CSRF);
  });

  test('--debug success: traces on stderr only, stdout exactly the envelope', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--debug', '--json'], { env: scopeEnv(server.url, { CHATCTL_CSRF_TOKEN: CSRF }) });
    expect(r.exitCode).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(mutationBody());
    expect(r.stderr).toMatch(/^\[debug\] > POST http:\/\/127\.0\.0\.1:\d+\/\S+ \(attempt 1 of \d+\)$/m);
    expect(r.stderr).toMatch(/^\[debug\] < 200 in \d+ ms$/m);
    expect(r.stderr).not.toContain(TOKEN);
    expect(r.stderr).not.toContain(CSRF);
  });

  test('--debug with retries: every attempt traced, no token', async () => {
    server.enqueue({ status: 503, headers: { 'Retry-After': '0' }, body: errorBody('service_unavailable') }, { status: 200, body: mutationBody() });
    const r = await runCli([...REACTIVATE, '--debug', '--max-retries', '1'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    // each attempt is traced: the request path shows up at least once per attempt
    expect(r.stderr.split('/webhook-endpoints/we_1/reactivate').length - 1).toBeGreaterThanOrEqual(2);
  });

  test('human success output has no token', async () => {
    server.enqueue({ status: 200, body: mutationBody() });
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });
});

describe('control characters from the server never reach the terminal raw', () => {
  const nasty = 'bad \u001b[31mred\u001b[0m \u0007bell \u009b2J c1 \u001b]0;title\u0007 end';

  test('error.message in human mode: no ESC, BEL or C1 CSI on stderr', async () => {
    server.enqueue({ status: 409, body: errorBody('webhook_endpoint_version_conflict', nasty) });
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(7);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stderr).not.toContain('\u0007');
    expect(r.stderr).not.toContain('\u009b');
    expect(r.stderr).toContain('red'); // the text itself is still shown
  });

  test('server fields in human success output: no ESC on stdout/stderr', async () => {
    const body = {
      data: { endpoint: endpointRecord('we_1', { name: nasty, destinationUrl: `https://h/${nasty}` }), changed: true },
      meta: { requestId: `req\u001b[2J` },
    };
    server.enqueue({ status: 200, body });
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(0);
    expect(r.stdout + r.stderr).not.toContain('\u001b');
    expect(r.stdout + r.stderr).not.toContain('\u0007');
    expect(r.stdout + r.stderr).not.toContain('\u009b');
  });

  test('error.message on a TTY (stdin, stdout and stderr terminals): no ESC or BEL reaches them (NO_COLOR set)', async () => {
    server.enqueue({ status: 409, body: errorBody('webhook_endpoint_version_conflict', nasty) });
    const r = await runCli([...REACTIVATE, '--no-input'], { env: scopeEnv(server.url), tty: TERMINAL });
    expect(r.exitCode).toBe(7);
    const output = r.stdout + r.stderr;
    expect(output).toContain('red');
    expect(output).not.toContain('\u001b');
    expect(output).not.toContain('\u0007');
  });
});

describe('colour', () => {
  test('no colour when stdout/stderr are not TTYs, even without NO_COLOR', async () => {
    server.enqueue({ status: 409, body: errorBody('webhook_endpoint_version_conflict') });
    const r = await runCli(REACTIVATE, { env: scopeEnv(server.url), color: true });
    expect(r.exitCode).toBe(7);
    expect(r.stdout + r.stderr).not.toContain('\u001b');
    const t = await runCli(['exit-codes'], { color: true });
    expect(t.stdout + t.stderr).not.toContain('\u001b');
  });

  // The control for the two below: on a TTY with neither switch, the same error is coloured.
  test('on a TTY with neither NO_COLOR nor --no-color: the error is coloured', async () => {
    server.enqueue({ status: 404, body: errorBody('resource_not_found') });
    const r = await runCli([...REACTIVATE, '--no-input'], { env: scopeEnv(server.url), color: true, tty: TERMINAL });
    expect(r.exitCode).toBe(6);
    expect(r.stderr).toContain('\u001b[');
  });

  test('--no-color on a TTY: no ANSI sequences (exit-codes table and an error)', async () => {
    const t = await runCli(['exit-codes', '--no-color'], { color: true, tty: TERMINAL });
    expect(t.exitCode).toBe(0);
    expect(t.stdout + t.stderr).toContain('130');
    expect(t.stdout + t.stderr).not.toContain('\u001b');
    server.enqueue({ status: 404, body: errorBody('resource_not_found') });
    const r = await runCli([...REACTIVATE, '--no-color', '--no-input'], { env: scopeEnv(server.url), color: true, tty: TERMINAL });
    expect(r.exitCode).toBe(6);
    expect(r.stdout + r.stderr).not.toContain('\u001b');
  });

  test('NO_COLOR on a TTY: no ANSI sequences', async () => {
    const t = await runCli(['exit-codes'], { env: { NO_COLOR: '1' }, color: true, tty: TERMINAL });
    expect(t.exitCode).toBe(0);
    expect(t.stdout + t.stderr).toContain('130');
    expect(t.stdout + t.stderr).not.toContain('\u001b');
    server.enqueue({ status: 404, body: errorBody('resource_not_found') });
    const r = await runCli([...REACTIVATE, '--no-input'], { env: scopeEnv(server.url, { NO_COLOR: '1' }), color: true, tty: TERMINAL });
    expect(r.exitCode).toBe(6);
    expect(r.stdout + r.stderr).not.toContain('\u001b');
  });
});

describe('closed pipe', () => {
  test('writing to a pipe whose reader is gone ends quietly (no stack trace)', async () => {
    const ws = workspace();
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const r = await execa('/bin/sh', ['-c', `${q(NODE)} ${q(BIN)} exit-codes 2>${q(ws.cwd + '/err')} | true; cat ${q(ws.cwd + '/err')}`], {
      env: buildEnv(ws),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
    });
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toBe('');
  });

  // Issue 10 changed this: stdout was the secret's only destination, so a
  // closed pipe is a failed delivery (exit 13, the secret kept), not a quiet end.
  test('--json success into a closed pipe: the secret was not delivered, so it is kept and named (exit 13)', async () => {
    const ws = workspace();
    // The answer comes once the pipe's only reader has closed its end (and
    // marked it), not after a guess at how long that takes.
    const readerGone = join(ws.root, 'reader-gone');
    server.enqueue(async () => {
      await waitFor(() => existsSync(readerGone), 20_000, 'the pipe reader to close');
      return { status: 200, body: secretBody() };
    });
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const cmd = `${q(NODE)} ${q(BIN)} ${ROTATE.map(q).join(' ')} --json 2>${q(ws.cwd + '/err')} | { exec 0<&-; : > ${q(readerGone)}; }; cat ${q(ws.cwd + '/err')}`;
    const r = await execa('/bin/sh', ['-c', cmd], {
      env: buildEnv(ws, scopeEnv(server.url)),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
    });
    const line = parseErrorLine(String(r.stdout));
    expect(line.exitCode).toBe(13);
    expect(line.error.code).toBe('secret_not_delivered');
    expect(line.error.message).toContain(`${ws.configDir}/recovered/`);
    expect(server.requests).toHaveLength(1);
  });
});
