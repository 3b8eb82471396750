// `chatctl webhooks listen` end to end: the real bin/chatctl.js, started
// with --port 0, receives the sandbox's signed deliveries (`webhooks
// trigger`, run in-process against a sandbox on 127.0.0.1 with the real
// clock) through an overlap and an immediate rotation whose secrets
// `create` and `rotate` write into the files it holds, and forwards what it
// verifies to a test server. The test waits on the listener's own lines,
// never on time. A process is what is under test here: signals, the first
// line of a real run, files changed under a running listener.
import { afterAll, describe, expect, it } from 'vitest';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { sandbox } from '../../support/sandbox.js';
import { receiver } from '../../support/receiver.js';
import { baseEnv, cleanupTempDirs, runInProcess, spawnCli, workspace, type Workspace } from '../../support/run.js';
import { leaks, stackTrace } from '../../support/json.js';

afterAll(cleanupTempDirs);

const E0 = 'chat.message.created.v1';
const fp = (secret: string) => `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
const placeholder = () => `whsec_${randomBytes(32).toString('base64')}`;

/** The lines of a stream, each handed to the next waiter as it arrives. */
function lines(stream: Readable) {
  const queue: string[] = [];
  const waiting: ((line: string | undefined) => void)[] = [];
  let partial = '';
  let ended = false;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      const w = waiting.shift();
      if (w) w(line);
      else queue.push(line);
    }
  });
  stream.on('end', () => {
    ended = true;
    for (const w of waiting.splice(0)) w(undefined);
  });
  return {
    next: (): Promise<string | undefined> => (queue.length ? Promise.resolve(queue.shift()) : ended ? Promise.resolve(undefined) : new Promise((r) => waiting.push(r))),
  };
}

/** `chatctl webhooks listen --port 0 …` as a child; resolves once it has said where it listens. */
async function startListen(ws: Workspace, args: string[]) {
  const { child } = spawnCli(['webhooks', 'listen', '--port', '0', ...args], { ws, timeoutMs: 120_000 });
  const out = lines(child.stdout!);
  const first = await out.next();
  if (first === undefined) throw new Error(`listen ended before its first line: ${(await child).stderr}`);
  return { child, out, first };
}

function post(port: number, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/hooks', headers: { 'content-type': 'application/json', ...headers }, agent: false });
    req.on('error', reject);
    req.on('response', (res) => (res.resume(), res.on('end', () => resolve(res.statusCode!))));
    req.end(body);
  });
}

describe('webhooks listen, end to end', () => {
  it('through an overlap and an immediate rotation: one secret, then both files, then the old file alone refused; files rewritten, renamed and removed under it; forwarded byte for byte; --json lines; SIGINT ends it with the summary', async () => {
    const sb = await sandbox({ now: () => Date.now() });
    const target = await receiver();
    target.answerWith(200, 'app got it');
    const ws = workspace();
    const oldFile = join(ws.cwd, 'old.whsec');
    const newFile = join(ws.cwd, 'new.whsec');
    // The files must hold a secret when it starts; create and rotate then replace them.
    const secrets = [placeholder(), placeholder()];
    writeFileSync(oldFile, secrets[0]!);
    writeFileSync(newFile, secrets[1]!);
    const listen = await startListen(ws, ['--secret-file', 'old.whsec', '--secret-file', 'new.whsec', '--forward-to', target.url, '--json']);
    const { port, listening } = JSON.parse(listen.first) as { port: number; listening: string };
    expect(listening).toBe(`http://127.0.0.1:${port}/`);

    const run = async (args: string[], exit = 0) => {
      const r = await runInProcess(args, {
        env: { ...baseEnv(ws), ...sb.scopeEnv },
        cwd: ws.cwd,
        timeoutMs: 30_000,
      });
      expect([r.exitCode, stackTrace(r.stderr)], r.stderr).toEqual([exit, undefined]);
      return r;
    };
    /** One delivery from the sandbox, and the listener's line about it. */
    const trigger = async (exit = 0) => {
      const r = await run(['webhooks', 'trigger', id, '--event', E0, '--json'], exit);
      const line = JSON.parse((await listen.out.next())!);
      return { delivery: exit === 0 ? JSON.parse(r.stdout).data.delivery : undefined, line };
    };

    const created = await run(['webhooks', 'create', '--name', 'local', '--url', `http://127.0.0.1:${port}/hooks`, '--event', E0, '--secret-file', 'old.whsec', '--force', '--json']);
    const id = JSON.parse(created.stdout).data.endpoint.id as string;
    const OLD = readFileSync(oldFile, 'utf8');
    secrets.push(OLD);

    // Before the rotation: one secret matches (old.whsec, replaced by create's rename, read again).
    let { delivery, line } = await trigger();
    expect(line).toMatchObject({
      status: 200,
      verified: true,
      webhookId: delivery.webhookId,
      eventType: E0,
      matched: [{ file: 'old.whsec', fingerprint: fp(OLD), signature: 1 }],
      reloaded: [{ file: 'old.whsec', fingerprint: fp(OLD) }],
      skipped: [],
      forward: { url: target.url, status: 200, error: null },
    });
    expect(delivery.receiver).toMatchObject({ status: 200, body: 'app got it' });
    // Forwarded byte for byte: the body and the webhook-* headers the sandbox sent, the content type kept.
    const got = target.received[0]!;
    expect(got.body.equals(Buffer.from(delivery.request.body, 'utf8'))).toBe(true);
    for (const [name, value] of Object.entries(delivery.request.headers as Record<string, string>)) expect(got.headers[name], name).toBe(value);
    expect(got.headers['content-type']).toBe('application/json');

    // During the overlap: the new secret goes into new.whsec (a rename over it); both files match, each by its own signature.
    await run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', 'new.whsec', '--force']);
    const NEW = readFileSync(newFile, 'utf8');
    secrets.push(NEW);
    ({ delivery, line } = await trigger());
    expect(line).toMatchObject({
      status: 200,
      verified: true,
      matched: [
        { file: 'old.whsec', fingerprint: fp(OLD), signature: 2 },
        { file: 'new.whsec', fingerprint: fp(NEW), signature: 1 },
      ],
      reloaded: [{ file: 'new.whsec', fingerprint: fp(NEW) }],
    });
    expect(target.received[1]!.body.equals(Buffer.from(delivery.request.body, 'utf8'))).toBe(true);

    // old.whsec rewritten in place with the new secret (the receiver switched its copy): both match the first signature.
    writeFileSync(oldFile, `${NEW}\n`);
    ({ line } = await trigger());
    expect(line).toMatchObject({
      matched: [
        { file: 'old.whsec', fingerprint: fp(NEW), signature: 1 },
        { file: 'new.whsec', fingerprint: fp(NEW), signature: 1 },
      ],
      reloaded: [{ file: 'old.whsec', fingerprint: fp(NEW) }],
    });
    writeFileSync(oldFile, OLD);

    // An immediate rotation into new.whsec: only the newest secret signs, so new.whsec alone matches.
    await run(['webhooks', 'rotate', id, '--expected-version', '2', '--mode', 'immediate', '--yes', '--secret-file', 'new.whsec', '--force']);
    const NEWEST = readFileSync(newFile, 'utf8');
    secrets.push(NEWEST);
    ({ line } = await trigger());
    expect(line).toMatchObject({ status: 200, verified: true, matched: [{ file: 'new.whsec', fingerprint: fp(NEWEST), signature: 1 }] });

    // new.whsec removed: skipped, and said; the old file alone is refused, and trigger exits 9.
    unlinkSync(newFile);
    ({ line } = await trigger(9));
    expect(line).toMatchObject({
      status: 401,
      verified: false,
      reason: 'no_matching_signature',
      matched: [],
      skipped: [{ file: 'new.whsec', reason: 'the file is missing' }],
      forward: null,
    });
    expect(target.received).toHaveLength(4);

    // Forged, stale and headless deliveries sent by hand.
    const now = Math.floor(Date.now() / 1000);
    const body = '{"type":"chat.message.created.v1"}';
    const sign = (secret: string, ts: number) =>
      `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
        .update(`msg_hand.${ts}.${body}`)
        .digest('base64')}`;
    expect(await post(port, { 'webhook-id': 'msg_hand', 'webhook-timestamp': String(now), 'webhook-signature': sign(placeholder(), now) }, body)).toBe(401);
    expect(JSON.parse((await listen.out.next())!)).toMatchObject({ status: 401, reason: 'no_matching_signature' });
    expect(await post(port, { 'webhook-id': 'msg_hand', 'webhook-timestamp': String(now - 600), 'webhook-signature': sign(OLD, now - 600) }, body)).toBe(401);
    expect(JSON.parse((await listen.out.next())!)).toMatchObject({ status: 401, reason: 'timestamp_too_old', matched: [{ file: 'old.whsec', fingerprint: fp(OLD) }] });
    expect(await post(port, { 'webhook-id': 'msg_hand' }, body)).toBe(400);
    expect(JSON.parse((await listen.out.next())!)).toMatchObject({ status: 400, reason: 'missing_headers' });
    expect(target.received).toHaveLength(4);

    listen.child.kill('SIGINT');
    const summary = JSON.parse((await listen.out.next())!);
    expect(summary).toEqual({ summary: { received: 8, verified: 4, refused: 4, forwarded: 4, forwardFailed: 0, dropped: 0 } });
    expect(await listen.out.next()).toBeUndefined();
    const ended = await listen.child;
    expect(ended.exitCode).toBe(0);
    expect(ended.stderr).toBe('');
    expect(leaks(String(ended.stdout) + ended.stderr, [...secrets, ...secrets.map((s) => s.slice(6))])).toEqual([]);
  });

  it('human lines; SIGTERM ends it with the summary on stderr and exit 0', async () => {
    const ws = workspace();
    const S = placeholder();
    writeFileSync(join(ws.cwd, 'hook.whsec'), S);
    const listen = await startListen(ws, ['--secret-file', 'hook.whsec']);
    const port = Number(/^listening on http:\/\/127\.0\.0\.1:(\d+)\/ \(port \d+\), verifying with hook\.whsec \(sha256:[0-9a-f]{16}\); Ctrl-C stops it$/.exec(listen.first)?.[1]);
    expect(port).toBeGreaterThan(0);
    expect(await post(port, { 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' }, '{}')).toBe(401);
    expect(await listen.out.next()).toMatch(/^\S+Z 401 msg_1 - refused \(no_matching_signature\): none of the 1 signatures matches hook\.whsec \(sha256:[0-9a-f]{16}\); timestamp \d+ s old$/);
    listen.child.kill('SIGTERM');
    const ended = await listen.child;
    expect(ended.exitCode).toBe(0);
    expect(ended.stderr).toBe('chatctl webhooks listen stopped: 1 received, 0 verified, 1 refused\n');
    expect(leaks(String(ended.stdout) + ended.stderr, [S, S.slice(6)])).toEqual([]);
  });
});
