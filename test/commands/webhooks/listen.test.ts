// `chatctl webhooks listen`, in-process through execute with an injected
// clock: deliveries signed here with node:crypto (independently of
// src/signing/) are sent over real HTTP on 127.0.0.1, and the listener is
// stopped by aborting the run's signal, as Ctrl-C or SIGTERM does. The line
// of a delivery is written before its answer is sent, so each is there once
// the answer is. The end-to-end run of the real bin/chatctl.js against the
// sandbox is in listen-e2e.test.ts; the limits (slow senders, huge bodies,
// many connections) are in listen-limits.test.ts.
import { afterAll, describe, expect, it } from 'vitest';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { baseEnv, cleanupTempDirs, runInProcess, workspace, type InProcessResult } from '../../support/run.js';
import { leaks, parseErrorLine, stackTrace } from '../../support/json.js';
import { receiver } from '../../support/receiver.js';

afterAll(cleanupTempDirs);

const NOW = Date.parse('2030-01-01T00:00:00Z');
const T = NOW / 1000;
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const fp = (secret: string) => `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
const hmac = (secret: string, id: string, ts: string | number, body: string | Buffer) =>
  `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${id}.${ts}.`)
    .update(body)
    .digest('base64')}`;

const BODY = '{"type":"chat.message.created.v1","timestamp":"2030-01-01T00:00:00.000Z","data":{"text":"h\\u00e9llo"}}';

/** The three headers of a delivery signed with each secret in turn. */
function signed(secrets: string[], opts: { id?: string; ts?: string | number; body?: string | Buffer } = {}) {
  const id = opts.id ?? `msg_${randomBytes(6).toString('hex')}`;
  const ts = String(opts.ts ?? T);
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': secrets.map((s) => hmac(s, id, ts, opts.body ?? BODY)).join(' ') };
}

interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

function post(port: number, headers: Record<string, string>, body: string | Buffer = BODY, method = 'POST'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/hooks', method, headers: { 'content-type': 'application/json', ...headers }, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }));
    });
    req.end(body);
  });
}

/** A port nothing listens on: one the system gave and took back. */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** `chatctl webhooks listen --port 0 …` running in-process; resolves once its first line is out. */
async function listen(args: string[], files: Record<string, string>, now = () => NOW) {
  const ws = workspace();
  for (const [name, secret] of Object.entries(files)) writeFileSync(join(ws.cwd, name), secret);
  const controller = new AbortController();
  let stdout = '';
  let started!: () => void;
  const first = new Promise<void>((r) => (started = r));
  const done = runInProcess(['webhooks', 'listen', '--port', '0', ...args], {
    env: baseEnv(ws),
    cwd: ws.cwd,
    signal: controller.signal,
    inject: { now },
    onStdout: (text) => {
      stdout = text;
      if (text.includes('\n')) started();
    },
  });
  const result = done.finally(started);
  await first;
  const firstLine = stdout.split('\n')[0]!;
  const port = Number(/port (\d+)\)/.exec(firstLine)?.[1] ?? JSON.parse(firstLine || '{}').port);
  return {
    ws,
    port,
    firstLine,
    /** The delivery lines so far (after the first). */
    lines: () => stdout.split('\n').slice(1, -1),
    lastLine: () => stdout.split('\n').at(-2)!,
    send: (headers: Record<string, string>, body?: string | Buffer, method?: string) => post(port, headers, body, method),
    stop: async (reason: 'SIGINT' | 'SIGTERM' | 'SIGHUP' = 'SIGINT'): Promise<InProcessResult> => {
      controller.abort(reason);
      return result;
    },
    result,
  };
}

describe('webhooks listen', () => {
  it('verifies each delivery against every secret file and says which matched; during an overlap both files match', async () => {
    const OLD = newSecret();
    const NEW = newSecret();
    const l = await listen(['--secret-file', 'old.whsec', '--secret-file', 'new.whsec'], { 'old.whsec': OLD, 'new.whsec': NEW });
    expect(l.firstLine).toBe(`listening on http://127.0.0.1:${l.port}/ (port ${l.port}), verifying with old.whsec (${fp(OLD)}), new.whsec (${fp(NEW)}); Ctrl-C stops it`);

    // Before the rotation: signed with the old secret only.
    const before = signed([OLD], { id: 'msg_before' });
    expect(await l.send(before)).toMatchObject({ status: 204, body: '' });
    expect(l.lastLine()).toBe(`2030-01-01T00:00:00.000Z 204 msg_before chat.message.created.v1 verified: old.whsec (${fp(OLD)}) signature 1 of 1; timestamp 0 s old`);

    // During the overlap: the new secret's signature first, the old one's second; both files match.
    expect((await l.send(signed([NEW, OLD], { id: 'msg_overlap', ts: T - 3 }))).status).toBe(204);
    expect(l.lastLine()).toBe(
      `2030-01-01T00:00:00.000Z 204 msg_overlap chat.message.created.v1 verified: old.whsec (${fp(OLD)}) signature 2 of 2, new.whsec (${fp(NEW)}) signature 1 of 2; timestamp 3 s old`,
    );

    // After an immediate rotation, a delivery signed with neither secret held is refused.
    const other = newSecret();
    const refused = await l.send(signed([other], { id: 'msg_after' }));
    expect(refused.status).toBe(401);
    expect(l.lastLine()).toBe(
      `2030-01-01T00:00:00.000Z 401 msg_after chat.message.created.v1 refused (no_matching_signature): none of the 1 signatures matches old.whsec (${fp(OLD)}) or new.whsec (${fp(NEW)}); timestamp 0 s old`,
    );

    const r = await l.stop('SIGINT');
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('chatctl webhooks listen stopped: 3 received, 2 verified, 1 refused\n');
    expect(leaks(r.stdout + r.stderr, [OLD, NEW, other, OLD.slice(6), NEW.slice(6)])).toEqual([]);
  });

  it('reads each file again before every delivery: rewritten in place, replaced by a rename, gone (skipped and said), back again', async () => {
    const A = newSecret();
    const B = newSecret();
    const C = newSecret();
    const l = await listen(['--secret-file', 'hook.whsec', '--secret-file', 'spare.whsec'], { 'hook.whsec': A, 'spare.whsec': A });
    const file = join(l.ws.cwd, 'hook.whsec');

    // Rewritten in place (same inode, same size), right before the delivery.
    writeFileSync(file, B);
    expect((await l.send(signed([B], { id: 'msg_1' }))).status).toBe(204);
    expect(l.lastLine()).toBe(`2030-01-01T00:00:00.000Z 204 msg_1 chat.message.created.v1 verified: hook.whsec (${fp(B)}) signature 1 of 1; timestamp 0 s old; hook.whsec changed: now ${fp(B)}`);
    // A at once refused: only the spare still holds it.
    expect((await l.send(signed([A], { id: 'msg_2' }))).status).toBe(204);
    expect(l.lastLine()).toContain(`verified: spare.whsec (${fp(A)}) signature 1 of 1; timestamp 0 s old`);

    // Replaced by a rename over it, as rotate --secret-file FILE --force does.
    writeFileSync(join(l.ws.cwd, 'hook.whsec.tmp'), `${C}\n`);
    renameSync(join(l.ws.cwd, 'hook.whsec.tmp'), file);
    expect((await l.send(signed([C], { id: 'msg_3' }))).status).toBe(204);
    expect(l.lastLine()).toContain(`verified: hook.whsec (${fp(C)}) signature 1 of 1; timestamp 0 s old; hook.whsec changed: now ${fp(C)}`);

    // Gone: skipped, and the line says so; the other file still answers for itself.
    unlinkSync(file);
    expect((await l.send(signed([C], { id: 'msg_4' }))).status).toBe(401);
    expect(l.lastLine()).toBe(
      `2030-01-01T00:00:00.000Z 401 msg_4 chat.message.created.v1 refused (no_matching_signature): none of the 1 signatures matches spare.whsec (${fp(A)}); timestamp 0 s old; hook.whsec skipped: the file is missing`,
    );
    // Every file gone or not a secret: refused, each said.
    writeFileSync(join(l.ws.cwd, 'spare.whsec'), 'not a secret');
    expect((await l.send(signed([A], { id: 'msg_5' }))).status).toBe(401);
    expect(l.lastLine()).toBe(
      '2030-01-01T00:00:00.000Z 401 msg_5 chat.message.created.v1 refused (no_secret): no secret file holds a secret now; timestamp 0 s old; hook.whsec skipped: the file is missing; spare.whsec skipped: it does not hold a signing secret (the secret does not start with whsec_)',
    );
    // Back again.
    writeFileSync(file, C);
    expect((await l.send(signed([C], { id: 'msg_6' }))).status).toBe(204);

    const r = await l.stop('SIGTERM');
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('chatctl webhooks listen stopped: 6 received, 4 verified, 2 refused\n');
    expect(leaks(r.stdout + r.stderr, [A, B, C, 'not a secret'])).toEqual([]);
  });

  it('answers as a receiver would: 401 to a forged signature, a stale or future timestamp, 0<ts>, no v1 signature; 400 to missing headers; 405 to a GET', async () => {
    const S = newSecret();
    const l = await listen(['--secret-file', 's.whsec', '--json'], { 's.whsec': S });
    expect(JSON.parse(l.firstLine)).toEqual({ listening: `http://127.0.0.1:${l.port}/`, port: l.port });
    const good = signed([S], { id: 'msg_x' });
    const cases: [Record<string, string>, number, string][] = [
      [{ ...good, 'webhook-signature': hmac(newSecret(), 'msg_x', T, BODY) }, 401, 'no_matching_signature'],
      // The body changed by one byte.
      [signed([S], { id: 'msg_x', body: `${BODY}\n` }), 401, 'no_matching_signature'],
      [signed([S], { id: 'msg_x', ts: T - 301 }), 401, 'timestamp_too_old'],
      [signed([S], { id: 'msg_x', ts: T + 301 }), 401, 'timestamp_too_new'],
      // The signature of <ts> under webhook-timestamp: 0<ts>, and one made over "0<ts>" itself.
      [{ ...good, 'webhook-timestamp': `0${T}` }, 401, 'malformed_headers'],
      [signed([S], { id: 'msg_x', ts: `0${T}` }), 401, 'malformed_headers'],
      [{ ...good, 'webhook-signature': good['webhook-signature'].replace('v1,', 'v2,') }, 401, 'no_matching_signature'],
      [{ ...good, 'webhook-signature': 'garbage' }, 401, 'malformed_headers'],
      [{ 'webhook-id': 'msg_x', 'webhook-timestamp': String(T) }, 400, 'missing_headers'],
      [{}, 400, 'missing_headers'],
    ];
    for (const [headers, status, reason] of cases) {
      const a = await l.send(headers);
      expect([a.status, JSON.parse(l.lastLine()).reason], JSON.stringify(headers)).toEqual([status, reason]);
    }
    const stale = JSON.parse(l.lines()[2]!);
    expect(stale).toEqual({
      webhookId: 'msg_x',
      eventType: 'chat.message.created.v1',
      matched: [{ file: 's.whsec', fingerprint: fp(S), signature: 1 }],
      signatures: 1,
      skewSeconds: 301,
      status: 401,
      verified: false,
      reason: 'timestamp_too_old',
      message: `the signature matches s.whsec (${fp(S)}), but the timestamp is beyond the tolerance of 300 s`,
      time: '2030-01-01T00:00:00.000Z',
      method: 'POST',
      path: '/hooks',
      skipped: [],
      reloaded: [],
      forward: null,
    });
    expect((await l.send({}, '', 'GET')).status).toBe(405);
    expect(JSON.parse(l.lastLine())).toMatchObject({ status: 405, reason: 'method_not_allowed', method: 'GET' });
    // The good one still passes, and the line carries what matched.
    expect((await l.send(good)).status).toBe(204);
    expect(JSON.parse(l.lastLine())).toMatchObject({ status: 204, verified: true, reason: null, matched: [{ file: 's.whsec', fingerprint: fp(S), signature: 1 }], skewSeconds: 0 });

    const r = await l.stop();
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n');
    // One JSON object a line; the summary last.
    expect(lines.map((x) => JSON.parse(x))).toHaveLength(cases.length + 4);
    expect(JSON.parse(lines.at(-1)!)).toEqual({ summary: { received: cases.length + 2, verified: 1, refused: cases.length + 1, forwarded: 0, forwardFailed: 0, dropped: 0 } });
    expect(leaks(r.stdout, [S, S.slice(6)])).toEqual([]);
  });

  it('--tolerance widens the window; the injected clock is "now"', async () => {
    const S = newSecret();
    const l = await listen(['--secret-file', 's.whsec', '--tolerance', '3600'], { 's.whsec': S }, () => NOW + 3_000_000);
    expect((await l.send(signed([S]))).status).toBe(204);
    expect(l.lastLine()).toMatch(/; timestamp 3000 s old$/);
    expect((await l.send(signed([S], { ts: T - 700 }))).status).toBe(401);
    await l.stop();
  });

  it('a sender that echoes the secret in its id or body never gets it printed', async () => {
    const S = newSecret();
    const l = await listen(['--secret-file', 's.whsec'], { 's.whsec': S });
    await l.send(signed([S], { id: S.replace(/[+/=]/g, 'x').slice(0, 40) }));
    await l.send({ 'webhook-id': S, 'webhook-timestamp': String(T), 'webhook-signature': 'v1,x' }, `{"type":"${S}"}`);
    await l.send({ 'webhook-id': 'msg_1', 'webhook-timestamp': String(T), 'webhook-signature': 'v1,x' }, `{"eventType":"${S}"}`);
    const r = await l.stop();
    expect(r.exitCode).toBe(0);
    expect(leaks(r.stdout + r.stderr, [S, S.slice(6)])).toEqual([]);
  });

  it('--forward-to: verified deliveries only, byte for byte with their webhook-* headers and content type; the target answers for it; 502 when it cannot be reached', async () => {
    const S = newSecret();
    const target = await receiver();
    target.answerWith(202, 'taken');
    const l = await listen(['--secret-file', 's.whsec', '--forward-to', `${target.url}?from=listen`, '--json'], { 's.whsec': S });
    // Bytes that are not UTF-8, and a content type with parameters.
    const body = Buffer.concat([Buffer.from('{"type":"chat.message.created.v1","raw":"'), Buffer.from([0xff, 0xfe, 0x00, 0x0a]), Buffer.from('"}')]);
    const headers = { ...signed([S], { id: 'msg_fwd', body }), 'content-type': 'application/json; charset=latin1', 'webhook-extra': 'kept', 'x-other': 'dropped' };
    const a = await l.send(headers, body);
    expect([a.status, a.body]).toEqual([202, 'taken']);
    expect(target.received).toHaveLength(1);
    const got = target.received[0]!;
    expect(got.body.equals(body)).toBe(true);
    expect(got.path).toBe('/hooks?from=listen');
    expect(got.headers).toMatchObject({
      'content-type': 'application/json; charset=latin1',
      'webhook-id': 'msg_fwd',
      'webhook-timestamp': headers['webhook-timestamp'],
      'webhook-signature': headers['webhook-signature'],
      'webhook-extra': 'kept',
      'content-length': String(body.length),
    });
    expect(got.headers['x-other']).toBeUndefined();
    expect(JSON.parse(l.lastLine())).toMatchObject({ status: 202, verified: true, forward: { url: `${target.url}?from=listen`, status: 202, error: null } });

    // Refused deliveries are not forwarded.
    expect((await l.send(signed([newSecret()]))).status).toBe(401);
    expect(target.received).toHaveLength(1);
    const r = await l.stop();
    expect(JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!).summary).toMatchObject({ received: 2, verified: 1, refused: 1, forwarded: 1, forwardFailed: 0 });
  });

  it('--forward-to a target that cannot be reached: 502, and the line says why', async () => {
    const S = newSecret();
    const port = await closedPort();
    const l = await listen(['--secret-file', 's.whsec', '--forward-to', `http://127.0.0.1:${port}/in`], { 's.whsec': S });
    expect(l.firstLine).toContain(`forwarding verified deliveries to http://127.0.0.1:${port}/in`);
    const a = await l.send(signed([S], { id: 'msg_lost' }));
    expect(a.status).toBe(502);
    expect(l.lastLine()).toMatch(
      new RegExp(
        `^2030-01-01T00:00:00\\.000Z 502 msg_lost chat\\.message\\.created\\.v1 verified: s\\.whsec \\(${fp(S)}\\) signature 1 of 1; timestamp 0 s old; forward to http://127\\.0\\.0\\.1:${port}/in failed: ECONNREFUSED`,
      ),
    );
    const r = await l.stop();
    expect(r.stderr).toBe('chatctl webhooks listen stopped: 1 received, 1 verified, 0 refused, 0 forwarded, 1 not (502)\n');
  });

  it.each([
    [['--secret-file', 'missing.whsec'], 'missing.whsec: no such file'],
    [['--secret-file', 'bad.whsec'], 'bad.whsec does not hold a signing secret: the secret does not start with whsec_'],
    [[], '--secret-file is required'],
    [['--secret-file', '-'], '--secret-file - is not possible here'],
    [['--secret-file', 's.whsec', '--forward-to', 'https://hooks.example.com/in'], 'the target must be on this machine'],
    [['--secret-file', 's.whsec', '--forward-to', 'ftp://127.0.0.1/in'], 'http:// or https:// only'],
    [['--secret-file', 's.whsec', '--forward-to', 'not a url'], 'not an absolute URL'],
    [['--secret-file', 's.whsec', '--port', '70000'], 'invalid --port "70000"'],
    [['--secret-file', 's.whsec', '--tolerance', '-1'], 'invalid --tolerance "-1"'],
  ])('refuses %j at start: exit 2, nothing served', async (args, message) => {
    const ws = workspace();
    writeFileSync(join(ws.cwd, 's.whsec'), newSecret());
    writeFileSync(join(ws.cwd, 'bad.whsec'), 'hunter2-not-a-secret');
    const r = await runInProcess(['webhooks', 'listen', ...args], { env: baseEnv(ws), cwd: ws.cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(r.stderr).not.toContain('hunter2');
  });

  it('a port in use: exit 2 naming it; --json errors as one JSON line', async () => {
    const S = newSecret();
    const first = await listen(['--secret-file', 's.whsec'], { 's.whsec': S });
    const ws = workspace();
    writeFileSync(join(ws.cwd, 's.whsec'), S);
    const r = await runInProcess(['webhooks', 'listen', '--secret-file', 's.whsec', '--port', String(first.port), '--json'], { env: baseEnv(ws), cwd: ws.cwd });
    expect(r.exitCode).toBe(2);
    expect(parseErrorLine(r.stderr).error.message).toBe(`cannot listen on 127.0.0.1 port ${first.port} (EADDRINUSE)`);
    await first.stop();
  });

  it('--help has examples and states the answers and limits', async () => {
    const ws = workspace();
    const r = await runInProcess(['webhooks', 'listen', '--help'], { env: baseEnv(ws), cwd: ws.cwd });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Examples:\n  $ chatctl webhooks listen --secret-file ./hook.whsec --port 8080');
    expect(r.stdout).toContain('413 a body over 1 MiB');
  });
});

describe('webhooks listen: how it ends', () => {
  it('SIGHUP (the terminal closed) still prints the summary, but exits 129 as every command does', async () => {
    const S = newSecret();
    const l = await listen(['--secret-file', 's.whsec'], { 's.whsec': S });
    const r = await l.stop('SIGHUP');
    expect(r.exitCode).toBe(129);
    expect(r.stderr).toMatch(/^chatctl webhooks listen stopped: 0 received, 0 verified, 0 refused\n/);
  });

  it('in GitHub Actions the secrets are masked on stderr, so the first line on stdout is still where it listens', async () => {
    const S = newSecret();
    const ws = workspace();
    writeFileSync(join(ws.cwd, 's.whsec'), S);
    const controller = new AbortController();
    const r = await runInProcess(['webhooks', 'listen', '--secret-file', 's.whsec', '--port', '0'], {
      env: { ...baseEnv(ws), GITHUB_ACTIONS: 'true' },
      cwd: ws.cwd,
      signal: controller.signal,
      onStdout: (text) => text.includes('\n') && controller.abort('SIGINT'),
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\//);
    expect(r.stderr).toContain(`::add-mask::${S}\n`);
  });
});
