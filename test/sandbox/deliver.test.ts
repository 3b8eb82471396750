// The sandbox's signed deliveries (POST /_sandbox/endpoints/{id}/deliver) to
// a real receiver on 127.0.0.1, through create, an overlap rotation, the end
// of the overlap by the sandbox's clock, and an immediate rotation. The
// receiver checks the signatures itself, with node:crypto.
import { describe, expect, it } from 'vitest';
import { errorCode, HOUR, sandbox, T0 } from '../support/sandbox.js';
import { receiver, signaturesOf } from '../support/receiver.js';
import { waitFor } from '../support/run.js';
import { DELIVERY_TIMEOUT_MS } from '../../src/sandbox/control.js';

const E0 = 'chat.message.created.v1';
const hook = (url: string) => ({ name: 'local receiver', destinationUrl: url, eventTypes: [E0, 'chat.message.updated.v1'] });

async function setup() {
  const sb = await sandbox();
  const rx = await receiver();
  const created = await sb.create(hook(rx.url));
  expect(created.status).toBe(201);
  const { endpoint, secret } = created.body.data;
  const deliver = (body: unknown, id = endpoint.id as string) => sb.control(`endpoints/${encodeURIComponent(id)}/deliver`, { body });
  return { ...sb, rx, endpoint, secret: secret as string, deliver };
}

describe('signed deliveries', () => {
  it('accepts http:// on a loopback host as a destination, and only there', async () => {
    const { create } = await sandbox();
    for (const url of ['http://127.0.0.1:9/a', 'http://localhost:9/b', 'http://[::1]:9/c']) expect((await create(hook(url))).status, url).toBe(201);
    for (const url of ['http://example.com/hooks', 'http://10.0.0.1/hooks']) {
      const a = await create(hook(url));
      expect(errorCode(a)).toBe('422 webhook_destination_rejected');
      expect(a.body.error.details.reason).toBe('not_https');
    }
  });

  it('sends one event signed with the current secret, and reports what the receiver answered', async () => {
    const { rx, endpoint, secret, deliver } = await setup();
    rx.answerWith(200, 'thanks');
    const a = await deliver({ eventType: E0, data: { text: 'hi' } });
    expect(a.status).toBe(200);
    expect(rx.received).toHaveLength(1);
    const got = rx.received[0]!;
    expect(got.method).toBe('POST');
    expect(got.path).toBe('/hooks');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{24}$/);
    // The sandbox's clock, in seconds.
    expect(got.headers['webhook-timestamp']).toBe(String(T0 / 1000));
    expect(JSON.parse(got.body.toString())).toEqual({ type: E0, timestamp: new Date(T0).toISOString(), data: { text: 'hi' } });
    expect(signaturesOf(got, [secret])).toEqual([0]);

    const d = a.body.data.delivery;
    expect(d).toMatchObject({ endpointId: endpoint.id, eventType: E0, destinationUrl: rx.url, webhookId: got.headers['webhook-id'], timestamp: T0 / 1000 });
    expect(d.receiver).toMatchObject({ status: 200, ok: true, body: 'thanks', error: null });
    expect(d.signedWith).toEqual([{ fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{16}$/), secret: 'current' }]);
    expect(d.request.body).toBe(got.body.toString());
    expect(d.request.headers['webhook-signature']).toBe(got.headers['webhook-signature']);
    // The answer names secrets by fingerprint only.
    expect(JSON.stringify(a.body)).not.toContain(secret);
  });

  it('during an overlap signs with both secrets, the new one first; after the overlap ends by the sandbox clock, with the new one only', async () => {
    const { rx, endpoint, secret: first, deliver, rotate, control } = await setup();
    const rotated = await rotate(endpoint.id, { expectedVersion: 1, mode: 'overlap' });
    const second = rotated.body.data.secret as string;

    const during = await deliver({ eventType: E0 });
    expect(signaturesOf(rx.received[0]!, [second, first])).toEqual([0, 1]);
    expect(during.body.data.delivery.signedWith.map((s: { secret: string }) => s.secret)).toEqual(['current', 'previous']);
    expect(during.body.data.delivery.signedWith[1].expiresAt).toBe(new Date(T0 + 24 * HOUR).toISOString());

    // One millisecond before the end, still both.
    await control('clock', { body: { advanceMs: 24 * HOUR - 1 } });
    await deliver({ eventType: E0 });
    expect(signaturesOf(rx.received[1]!, [second, first])).toEqual([0, 1]);

    await control('clock', { body: { advanceMs: 1 } });
    const after = await deliver({ eventType: E0 });
    expect(signaturesOf(rx.received[2]!, [second, first])).toEqual([0]);
    expect(after.body.data.delivery.signedWith.map((s: { secret: string }) => s.secret)).toEqual(['current']);
    // The timestamp is the time of sending, not the clock moved forward: a receiver's tolerance still accepts it.
    expect(rx.received[2]!.headers['webhook-timestamp']).toBe(String(T0 / 1000));
  });

  it('after an immediate rotation (even during an overlap), signs with the new secret only', async () => {
    const { rx, endpoint, secret: first, deliver, rotate } = await setup();
    const second = (await rotate(endpoint.id, { expectedVersion: 1, mode: 'overlap' })).body.data.secret as string;
    const third = (await rotate(endpoint.id, { expectedVersion: 2, mode: 'immediate' })).body.data.secret as string;
    await deliver({ eventType: E0 });
    expect(signaturesOf(rx.received[0]!, [third, second, first])).toEqual([0]);
  });

  it('reports a refusal and an unreachable receiver as they are (the route itself succeeds)', async () => {
    const { rx, deliver, create, control } = await setup();
    rx.answerWith(401, 'bad signature');
    const refused = await deliver({ eventType: E0 });
    expect(refused.status).toBe(200);
    expect(refused.body.data.delivery.receiver).toMatchObject({ status: 401, ok: false, body: 'bad signature', error: null });

    const gone = await create(hook('http://127.0.0.1:9/nothing-listens'));
    const unreachable = await control(`endpoints/${gone.body.data.endpoint.id}/deliver`, { body: { eventType: E0 } });
    expect(unreachable.status).toBe(200);
    expect(unreachable.body.data.delivery.receiver).toMatchObject({ status: null, ok: false, body: null, error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('refuses what a real service would not deliver, and bad bodies', async () => {
    const { rx, endpoint, deliver, deactivate, call } = await setup();
    expect(errorCode(await deliver({ eventType: E0 }, 'we_nope'))).toBe('404 resource_not_found');
    expect(errorCode(await deliver({ eventType: 'chat.nope.v1' }))).toBe('400 validation_failed');
    const unsubscribed = await deliver({ eventType: 'chat.message.deleted.v1' });
    expect(errorCode(unsubscribed)).toBe('400 validation_failed');
    expect(unsubscribed.body.error.details.fields[0]).toMatchObject({ field: 'eventType', problem: expect.stringContaining("is not one of the endpoint's event types") });
    const bad = await deliver({ eventType: E0, data: [1], extra: true });
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['data', 'extra']);
    expect(errorCode(await deliver({}))).toBe('400 validation_failed');
    // Without the sandbox's token: refused before anything is sent.
    expect(errorCode(await call(`/_sandbox/endpoints/${endpoint.id}/deliver`, { body: { eventType: E0 }, headers: { authorization: undefined } }))).toBe('401 authentication_required');
    await deactivate(endpoint.id, { expectedVersion: 1 });
    expect(errorCode(await deliver({ eventType: E0 }))).toBe('409 conflict');
    expect(rx.received).toHaveLength(0);
  });

  it('says it is a sandbox on GET /_sandbox, with no token', async () => {
    const { sb } = await sandbox();
    const res = await fetch(`${sb.baseUrl}/_sandbox`);
    expect(res.status).toBe(200);
    expect(res.headers.get('chatctl-sandbox')).toBe('1');
    expect(((await res.json()) as { data: unknown }).data).toEqual({ sandbox: true });
  });

  it('keeps answering the API while a delivery waits for its receiver, and stops that wait when it closes', async () => {
    const { rx, deliver, create, sb } = await setup();
    const release = rx.holdAnswers();
    const pending = deliver({ eventType: E0 });
    await waitFor(() => rx.received.length === 1, 10_000, 'the receiver to get the delivery');
    // The receiver has the delivery and has not answered: the API still does.
    expect((await create(hook('http://127.0.0.1:9/other'))).status).toBe(201);
    release();
    expect((await pending).body.data.delivery.receiver.status).toBe(204);

    rx.holdAnswers();
    // Not timed: the delivery's own limit (DELIVERY_TIMEOUT_MS) would also
    // end it. A timer started before it, 1 ms shorter, fires first (this
    // process's timers fire in the order they fall due): so if it has not
    // fired when the receiver sees the hang-up, closing ended the delivery.
    let limitDue = false;
    const witness = setTimeout(() => (limitDue = true), DELIVERY_TIMEOUT_MS - 1);
    const hungUp = rx.nextHangUp();
    const stuck = deliver({ eventType: E0 }).catch((e: Error) => e);
    await waitFor(() => rx.received.length === 2, 10_000, 'the receiver to get the second delivery');
    await sb.close();
    await hungUp;
    clearTimeout(witness);
    expect(limitDue).toBe(false);
    await stuck;
  });
});
