// `chatctl webhooks trigger`, in-process, against the in-process sandbox and
// a real receiver on 127.0.0.1 that checks signatures itself; and against a
// server that is not a sandbox, which gets one credential-free GET only.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { sandbox } from '../../support/sandbox.js';
import { receiver, signaturesOf } from '../../support/receiver.js';
import { startServer } from '../../support/server.js';
import { baseEnv, cleanupTempDirs, runInProcess, workspace } from '../../support/run.js';
import { leaks, parseErrorLine, stackTrace } from '../../support/json.js';

afterAll(cleanupTempDirs);

const E0 = 'chat.message.created.v1';

async function setup() {
  const sb = await sandbox();
  const rx = await receiver();
  const created = await sb.create({ name: 'local', destinationUrl: rx.url, eventTypes: [E0] });
  const { endpoint, secret } = created.body.data as { endpoint: { id: string }; secret: string };
  const ws = workspace();
  const secrets = [secret];
  const run = async (args: string[], baseUrl = sb.sb.baseUrl) => {
    const r = await runInProcess(args, {
      env: { ...baseEnv(ws), CHATCTL_BASE_URL: baseUrl, CHATCTL_TOKEN: sb.sb.token, CHATCTL_ORG: sb.sb.organizationId, CHATCTL_APP: sb.sb.applicationId, CHATCTL_ENV: sb.sb.environmentKey },
      cwd: ws.cwd,
      timeoutMs: 15_000,
    });
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(leaks(r.stdout + r.stderr, [...secrets, sb.sb.token])).toEqual([]);
    return r;
  };
  return { ...sb, rx, endpoint, secrets, run };
}

describe('webhooks trigger', () => {
  it('has the sandbox deliver one signed event and shows what the receiver answered', async () => {
    const { rx, endpoint, secrets, run } = await setup();
    rx.answerWith(200, 'ok');
    const r = await run(['webhooks', 'trigger', endpoint.id, '--event', E0]);
    expect(r.exitCode).toBe(0);
    expect(rx.received).toHaveLength(1);
    expect(signaturesOf(rx.received[0]!, secrets)).toEqual([0]);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^Delivered ${E0} to ${rx.url.replace(/[.]/g, '\\.')}: the receiver answered 200 in \\d+ ms\\.$`));
    expect(lines[1]).toBe(`webhook-id   ${rx.received[0]!.headers['webhook-id']}`);
    expect(lines[2]).toMatch(/^signed with {2}sha256:[0-9a-f]{16} \(current\)$/);
    expect(lines[3]).toBe('answer       ok');
    expect(r.stderr).toBe('');
  });

  it('during an overlap the receiver gets both signatures; --json prints the sandbox report', async () => {
    const { rx, endpoint, secrets, run, rotate } = await setup();
    secrets.unshift((await rotate(endpoint.id, { expectedVersion: 1, mode: 'overlap' })).body.data.secret);
    const r = await run(['webhooks', 'trigger', endpoint.id, '--event', E0, '--json']);
    expect(r.exitCode).toBe(0);
    expect(signaturesOf(rx.received[0]!, secrets)).toEqual([0, 1]);
    const doc = JSON.parse(r.stdout);
    expect(Object.keys(doc)).toEqual(['data', 'meta']);
    expect(doc.data.delivery.signedWith.map((s: { secret: string }) => s.secret)).toEqual(['current', 'previous']);
    expect(doc.data.delivery.receiver).toMatchObject({ status: 204, ok: true });
    expect(r.stderr).toBe('');
  });

  it('a receiver that refuses: exit 9 delivery_refused, the report still on stdout with --json', async () => {
    const { rx, endpoint, run } = await setup();
    rx.answerWith(401, 'no signature matches');
    const human = await run(['webhooks', 'trigger', endpoint.id, '--event', E0]);
    expect(human.exitCode).toBe(9);
    expect(human.stdout.split('\n')[0]).toBe(`Not accepted: ${E0} was sent to ${rx.url}, and the receiver answered 401 in ${/in (\d+) ms/.exec(human.stdout)?.[1]} ms.`);
    expect(human.stderr).toContain('chatctl: error: the receiver answered 401: no signature matches');
    const json = await run(['webhooks', 'trigger', endpoint.id, '--event', E0, '--json']);
    expect(json.exitCode).toBe(9);
    expect(JSON.parse(json.stdout).data.delivery.receiver.status).toBe(401);
    expect(parseErrorLine(json.stderr)).toMatchObject({ error: { code: 'delivery_refused', details: { receiverStatus: 401 } }, exitCode: 9 });
  });

  it('a receiver that cannot be reached: exit 12 delivery_failed, and nothing claims it was delivered', async () => {
    const { create, run } = await setup();
    const gone = await create({ name: 'gone', destinationUrl: 'http://127.0.0.1:9/none', eventTypes: [E0] });
    const id = gone.body.data.endpoint.id as string;
    const r = await run(['webhooks', 'trigger', id, '--event', E0, '--json']);
    expect(r.exitCode).toBe(12);
    expect(parseErrorLine(r.stderr)).toMatchObject({ error: { code: 'delivery_failed', details: { delivered: false, receiverStatus: null } }, exitCode: 12 });
    expect(JSON.parse(r.stdout).data.delivery.receiver).toMatchObject({ status: null, ok: false });
    const human = await run(['webhooks', 'trigger', id, '--event', E0]);
    expect(human.exitCode).toBe(12);
    expect(human.stdout.split('\n')[0]).toMatch(
      /^Not delivered: chat\.message\.created\.v1 could not be sent to http:\/\/127\.0\.0\.1:9\/none: the receiver could not be reached \(ECONNREFUSED.*\)\.$/,
    );
    expect(human.stdout).not.toMatch(/^Delivered/m);
    expect(human.stderr).toMatch(/^chatctl: error: not delivered: the receiver at http:\/\/127\.0\.0\.1:9\/none could not be reached/);
    expect(human.stderr).toContain("hint: start the receiver (or check that it listens where the endpoint's destinationUrl points), then trigger again");
    // The sandbox answered: nothing says to wait for the service.
    expect(human.stderr).not.toContain('once the service answers again');
  });

  it("the sandbox's refusals are reported as for any request: unknown endpoint 6, unsubscribed event 9", async () => {
    const { endpoint, run, rx } = await setup();
    expect((await run(['webhooks', 'trigger', 'we_nope', '--event', E0])).exitCode).toBe(6);
    const r = await run(['webhooks', 'trigger', endpoint.id, '--event', 'chat.message.deleted.v1']);
    expect(r.exitCode).toBe(9);
    expect(r.stderr).toContain("is not one of the endpoint's event types");
    expect(rx.received).toHaveLength(0);
  });

  it('against a server that is not a sandbox: exit 2 after one GET /_sandbox that carries no credentials', async () => {
    const { endpoint, run } = await setup();
    const server = await startServer();
    try {
      server.setHandler(() => ({ status: 404, body: { error: { code: 'resource_not_found', message: 'no', requestId: 'r1', details: {} } } }));
      const r = await run(['webhooks', 'trigger', endpoint.id, '--event', E0, '--json'], server.url);
      expect(r.exitCode).toBe(2);
      expect(parseErrorLine(r.stderr).error.message).toMatch(/is not a chatctl sandbox \(GET \/_sandbox answered 404\)/);
      // A 200 without the marker is no sandbox either.
      server.setHandler(() => ({ status: 200, body: { data: { sandbox: true } } }));
      const ok200 = await run(['webhooks', 'trigger', endpoint.id, '--event', E0], server.url);
      expect(ok200.exitCode).toBe(2);
      expect(server.requests.map((q) => `${q.method} ${q.url}`)).toEqual(['GET /_sandbox', 'GET /_sandbox']);
      for (const q of server.requests) {
        expect(q.headers.authorization).toBeUndefined();
        expect(q.headers['x-service-csrf']).toBeUndefined();
        expect(q.body).toBe('');
      }
    } finally {
      await server.close();
    }
  });

  it('through chatctl alone: create, overlap rotation, immediate rotation; each delivery passes webhooks verify with exactly the secrets valid then', async () => {
    const sb = await sandbox({ now: () => Date.now() });
    const rx = await receiver();
    const ws = workspace();
    const env = { ...baseEnv(ws), ...sb.scopeEnv };
    const run = (args: string[]) => runInProcess(args, { env, cwd: ws.cwd, timeoutMs: 15_000 });
    const created = await run(['webhooks', 'create', '--name', 'rx', '--url', rx.url, '--event', E0, '--secret-file', 's1', '--json']);
    expect(created.exitCode, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).data.endpoint.id as string;

    /** Triggers one delivery and asks webhooks verify about it with each secret file: which accept. */
    const deliverAndVerify = async (files: string[]) => {
      const t = await run(['webhooks', 'trigger', id, '--event', E0, '--json']);
      expect(t.exitCode, t.stderr).toBe(0);
      const { headers, body } = JSON.parse(t.stdout).data.delivery.request as { headers: Record<string, string>; body: string };
      expect(rx.received.at(-1)!.body.toString()).toBe(body);
      writeFileSync(`${ws.cwd}/body.json`, body);
      const accepted: string[] = [];
      for (const f of files) {
        const v = await run(['webhooks', 'verify', '--secret-file', f, ...Object.entries(headers).flatMap(([k, val]) => ['--header', `${k}: ${val}`]), 'body.json']);
        expect([0, 9], v.stderr).toContain(v.exitCode);
        if (v.exitCode === 0) accepted.push(f);
      }
      return { accepted, signatures: headers['webhook-signature']!.split(' ').length };
    };

    expect(await deliverAndVerify(['s1'])).toEqual({ accepted: ['s1'], signatures: 1 });
    expect((await run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', 's2'])).exitCode).toBe(0);
    expect(await deliverAndVerify(['s1', 's2'])).toEqual({ accepted: ['s1', 's2'], signatures: 2 });
    expect((await run(['webhooks', 'rotate', id, '--expected-version', '2', '--mode', 'immediate', '--yes', '--secret-file', 's3'])).exitCode).toBe(0);
    expect(await deliverAndVerify(['s1', 's2', 's3'])).toEqual({ accepted: ['s3'], signatures: 1 });
  });

  it('checks --event before anything is sent', async () => {
    const { endpoint, run, rx } = await setup();
    const typo = await run(['webhooks', 'trigger', endpoint.id, '--event', 'chat.message.craeted.v1']);
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toContain('did you mean chat.message.created.v1');
    expect((await run(['webhooks', 'trigger', endpoint.id])).exitCode).toBe(2);
    expect(rx.received).toHaveLength(0);
  });
});
