// Issue 5, item 3: SIGINT/SIGTERM during a request or a retry wait end at
// once (130 / 143) with no half-written secret file; a closed stdout ends
// quietly (no stack trace, no EPIPE).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { execa } from 'execa';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { BIN, CREATE, CSRF, NODE, ROTATE, SECRET, TOKEN, csrfScopeEnv, secretBody } from '../support/fixtures.js';
import { leaks, parseErrorLine, stackTrace } from '../support/json.js';
import { buildEnv, cleanupTempDirs, signalPending, spawnCli, waitFor, workspace } from '../support/run.js';
import { RecordingServer, json } from '../support/server.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});
beforeEach(async () => {
  server.dropConnections();
  server.reset();
});

type Sig = 'SIGINT' | 'SIGTERM';

/**
 * Counts answers written out in full: wrap a response with it, and
 * `count` says when the answer has left the server (its 'finish'), so a
 * signal sent then lands while chatctl reads it or waits out its
 * Retry-After; either must end the run at once.
 */
function sentCounter() {
  const wrap = Object.assign(
    (res: ServerResponse) => {
      res.once('finish', () => wrap.count++);
      return res;
    },
    { count: 0 },
  );
  return wrap;
}

/**
 * Starts create/rotate --json --secret-file, waits until the server holds
 * `hits` requests (and, if given, until `sent` says the answer left the
 * server), sends the signal, and reports how it ended. Not timed: each run
 * waits on something that would outlast the child's own limit (a request
 * with --timeout 30 that is never answered, a Retry-After of 30 s), so only
 * the signal can end it with the signal's exit code and `interrupted`.
 */
async function interrupt(args: string[], signal: Sig, opts: { hits?: number; sent?: () => boolean; maxRetries?: string; twice?: boolean } = {}) {
  const ws = workspace();
  const secretFile = join(ws.cwd, 'new.whsec');
  const { child } = spawnCli([...args, '--json', '--secret-file', secretFile, '--max-retries', opts.maxRetries ?? '1', '--timeout', '30'], {
    ws,
    env: csrfScopeEnv(server.url),
  });
  await waitFor(() => server.hits >= (opts.hits ?? 1), 10_000, 'the request to arrive');
  if (opts.sent) await waitFor(opts.sent, 10_000, 'the answer to be sent');
  child.kill(signal);
  if (opts.twice) {
    // A sent create or rotate waits for its answer after the first signal; the second abandons it.
    await waitFor(() => !signalPending(child.pid!, signal), 10_000, 'chatctl to take the first signal');
    child.kill(signal);
  }
  const r = await child;
  return { r, secretFile, ws, stderr: String(r.stderr ?? ''), stdout: String(r.stdout ?? '') };
}

function expectInterrupted(out: Awaited<ReturnType<typeof interrupt>>, exitCode: 130 | 143) {
  expect(out.r.exitCode, out.stderr).toBe(exitCode);
  expect(out.r.timedOut).toBe(false);
  expect(stackTrace(out.stderr), out.stderr).toBeUndefined();
  expect(leaks(out.stderr, [TOKEN, SECRET, CSRF])).toEqual([]);
  const line = parseErrorLine(out.stderr);
  expect(line.error.code).toBe('interrupted');
  expect(line.exitCode).toBe(exitCode);
  expect(out.stdout).toBe('');
  // No secret file, and no temporary file beside it.
  expect(existsSync(out.secretFile)).toBe(false);
  expect(readdirSync(out.ws.cwd)).toEqual([]);
}

describe('signals', () => {
  test('SIGINT twice during a request that never answers (the first waits for the answer) → 130, no secret file, the key named', async () => {
    server.reset(() => {
      /* hang */
    });
    const out = await interrupt(CREATE, 'SIGINT', { twice: true });
    expectInterrupted(out, 130);
    expect(server.hits).toBe(1);
    expect(parseErrorLine(out.stderr).idempotencyKey).toEqual(expect.any(String));
  });

  test('SIGTERM twice during a request that never answers → 143, no secret file', async () => {
    server.reset(() => {
      /* hang */
    });
    const out = await interrupt(ROTATE, 'SIGTERM', { twice: true });
    expectInterrupted(out, 143);
  });

  test('SIGINT during a Retry-After: 30 wait (503) with --secret-file → 130 at once, no file, no second attempt', async () => {
    const answered = sentCounter();
    server.reset((_q, res) => json(answered(res), 503, { error: { code: 'service_unavailable', message: 'busy', requestId: 'r1', details: {} } }, { 'Retry-After': '30' }));
    const out = await interrupt(CREATE, 'SIGINT', { sent: () => answered.count >= 1 });
    expectInterrupted(out, 130);
    expect(server.hits).toBe(1);
  });

  test('SIGTERM during a Retry-After: 30 wait (429) → 143 at once, no file', async () => {
    const answered = sentCounter();
    server.reset((_q, res) => json(answered(res), 429, { error: { code: 'rate_limit_exceeded', message: 'slow down', requestId: 'r1', details: {} } }, { 'Retry-After': '30' }));
    const out = await interrupt(ROTATE, 'SIGTERM', { sent: () => answered.count >= 1 });
    expectInterrupted(out, 143);
    expect(server.hits).toBe(1);
  });

  test('SIGINT during a backoff wait after a reset (no Retry-After) → 130, no file', async () => {
    // Backoff is random in [0, 0.5 s) for each retry; once a second attempt
    // has arrived, the CLI is in its retry loop, waiting or connecting, when
    // the signal lands.
    server.reset((req) => req.socket.destroy());
    const out = await interrupt(CREATE, 'SIGINT', { hits: 2, maxRetries: '30' });
    expectInterrupted(out, 130);
  });

  test('SIGINT while the success body is still arriving → 130, no secret file', async () => {
    const body = JSON.stringify(secretBody());
    server.reset((_q, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) });
      res.write(body.slice(0, 40));
    });
    const out = await interrupt(CREATE, 'SIGINT', { twice: true });
    expectInterrupted(out, 130);
  });

  test('a second SIGINT while the first is being handled still ends the process with 130', async () => {
    server.reset(() => {
      /* hang */
    });
    const ws = workspace();
    const { child } = spawnCli([...CREATE, '--json', '--secret-file', join(ws.cwd, 's'), '--timeout', '30'], { ws, env: csrfScopeEnv(server.url) });
    await waitFor(() => server.hits >= 1);
    child.kill('SIGINT');
    // Two signals still pending together are one to the process: the second comes once the first was taken.
    await waitFor(() => !signalPending(child.pid!, 'SIGINT'), 10_000, 'chatctl to take the first SIGINT');
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(stackTrace(String(r.stderr))).toBeUndefined();
    expect(existsSync(join(ws.cwd, 's'))).toBe(false);
  });
});

// ---------------------------------------------------------------- pipes

/** A big create answer: the endpoint record carries ~600 KB (several MB once rendered as a table). */
const bigBody = () => secretBody(SECRET, true, 'we_1', { description: 'x'.repeat(600_000) });

/** Runs `chatctl ARGS | head …` through sh; chatctl's own status is reported on fd 3. */
async function throughHead(args: string[], head: string, env: Record<string, string | undefined>, ws = workspace()) {
  const quoted = [NODE, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const script = `{ ${quoted} 2>"$ERRFILE"; echo $? >"$RCFILE"; } | ${head} >/dev/null`;
  const errFile = join(ws.root, 'stderr.txt');
  const rcFile = join(ws.root, 'rc.txt');
  const r = await execa('sh', ['-c', script], {
    cwd: ws.cwd,
    env: { ...buildEnv(ws, env), ERRFILE: errFile, RCFILE: rcFile },
    extendEnv: false,
    reject: false,
    timeout: 20_000,
  });
  return { shExit: r.exitCode, exitCode: Number(readFileSync(rcFile, 'utf8').trim()), stderr: readFileSync(errFile, 'utf8'), ws };
}

describe('closed stdout', () => {
  test('`exit-codes | head -1` → exit 0, nothing on stderr', async () => {
    const out = await throughHead(['exit-codes'], 'head -1', {});
    expect(out.stderr).toBe('');
    expect(out.exitCode).toBe(0);
  });

  test('`completion bash | head -c 1` → exit 0, nothing on stderr', async () => {
    const out = await throughHead(['completion', 'bash'], 'head -c 1', {});
    expect(out.stderr).toBe('');
    expect(out.exitCode).toBe(0);
  });

  test('`webhooks create --json --secret-file` with a 600 KB record `| head -c 1` → quiet, and the secret is saved', async () => {
    server.reset((_q, res) => json(res, 201, bigBody()));
    const ws = workspace();
    const secretFile = join(ws.cwd, 'big.whsec');
    const out = await throughHead([...CREATE, '--json', '--secret-file', secretFile, '--max-retries', '0'], 'head -c 1', csrfScopeEnv(server.url), ws);
    expect(stackTrace(out.stderr), out.stderr).toBeUndefined();
    expect(out.stderr).toBe('');
    expect(out.exitCode).toBe(0);
    expect(readFileSync(secretFile, 'utf8')).toBe(SECRET);
  });

  test('human `webhooks create --secret-file` with a 600 KB record `| head -1` → quiet, secret saved', async () => {
    server.reset((_q, res) => json(res, 201, bigBody()));
    const ws = workspace();
    const secretFile = join(ws.cwd, 'big.whsec');
    const out = await throughHead([...CREATE, '--secret-file', secretFile, '--max-retries', '0'], 'head -1', csrfScopeEnv(server.url), ws);
    expect(stackTrace(out.stderr), out.stderr).toBeUndefined();
    expect(leaks(out.stderr, [TOKEN, SECRET])).toEqual([]);
    expect(out.exitCode).toBe(0);
    expect(readFileSync(secretFile, 'utf8')).toBe(SECRET);
  });

  test('stdout read end closed before chatctl writes (`exit-codes`, `--help`, `--version`) → quiet', async () => {
    // Four independent children (nothing shared): run side by side.
    const runs = [['exit-codes'], ['webhooks', 'create', '--help'], ['--version'], ['profile', 'list', '--json']].map(async (args) => {
      const ws = workspace();
      const child = spawn(NODE, [BIN, ...args], { cwd: ws.cwd, env: buildEnv(ws), stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy(); // the reader is gone before the first write
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
      return { args, stderr, code };
    });
    for (const { args, stderr, code } of await Promise.all(runs)) {
      expect({ args, stderr, stack: stackTrace(stderr) }).toEqual({ args, stderr: '', stack: undefined });
      expect({ args, code }).toEqual({ args, code: 0 });
    }
  });

  test('closed stdout on an error path (`--json` create against a 404) → the error line still reaches stderr', async () => {
    server.reset((_q, res) => json(res, 404, { error: { code: 'resource_not_found', message: 'nope', requestId: 'r', details: {} } }));
    const out = await throughHead([...CREATE, '--json', '--max-retries', '0'], 'head -c 1', csrfScopeEnv(server.url));
    expect(out.exitCode).toBe(6);
    expect(parseErrorLine(out.stderr).error.code).toBe('resource_not_found');
  });
});
