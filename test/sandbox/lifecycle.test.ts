import { describe, expect, it } from 'vitest';
import { endpointBody, errorCode, HOUR, sandbox } from '../support/sandbox.js';

describe('create', () => {
  it('answers 201 with the endpoint, the secret and secretAvailable', async () => {
    const { create } = await sandbox();
    const a = await create(endpointBody());
    expect(a.status).toBe(201);
    expect(Object.keys(a.body)).toEqual(['data', 'meta']);
    expect(a.body.data).toEqual({
      endpoint: {
        id: expect.stringMatching(/^we_[0-9a-z]{20}$/),
        name: 'hook 1',
        destinationUrl: 'https://example.com/hooks/1',
        eventTypes: ['chat.message.created.v1'],
        status: 'active',
        version: 1,
        createdAt: '2030-01-01T00:00:00.000Z',
        updatedAt: '2030-01-01T00:00:00.000Z',
        previousSecretExpiresAt: null,
      },
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      secretAvailable: true,
    });
    expect(a.headers.get('idempotent-replayed')).toBeNull();
  });

  it('rejects destinations by the rules, naming the reason', async () => {
    const { create } = await sandbox();
    for (const [url, reason] of [
      ['http://example.com/h', 'not_https'],
      ['https://user:pw@example.com/h', 'userinfo'],
      ['https://localhost/h', 'localhost'],
      ['https://127.0.0.1/h', 'loopback'],
      ['https://10.0.0.8/h', 'private'],
      ['https://169.254.169.254/h', 'link-local'],
      ['https://[::]/h', 'unspecified'],
      ['https://[::ffff:192.168.0.1]/h', 'private'],
    ]) {
      const a = await create({ ...endpointBody(), destinationUrl: url });
      expect(errorCode(a)).toBe('422 webhook_destination_rejected');
      expect(a.body.error.details).toEqual({ field: 'destinationUrl', reason });
    }
  });

  it('refuses a destinationUrl already registered, active or not', async () => {
    const { create, deactivate } = await sandbox();
    const { body } = await create(endpointBody());
    await deactivate(body.data.endpoint.id, { expectedVersion: 1 });
    const a = await create({ ...endpointBody(), name: 'again' });
    expect(errorCode(a)).toBe('409 webhook_endpoint_conflict');
    expect(a.body.error.details.endpointId).toBe(body.data.endpoint.id);
  });

  it('stops at the endpoint limit', async () => {
    const { create } = await sandbox({ endpointLimit: 2 });
    expect((await create(endpointBody(1))).status).toBe(201);
    expect((await create(endpointBody(2))).status).toBe(201);
    const a = await create(endpointBody(3));
    expect(errorCode(a)).toBe('409 webhook_endpoint_limit_reached');
    expect(a.body.error.details).toEqual({ limit: 2 });
  });

  it('defaults to a limit of 10', async () => {
    const { create } = await sandbox();
    for (let n = 1; n <= 10; n++) expect((await create(endpointBody(n))).status).toBe(201);
    expect(errorCode(await create(endpointBody(11)))).toBe('409 webhook_endpoint_limit_reached');
  });
});

describe('idempotency', () => {
  const key = { headers: { 'idempotency-key': 'same-key' } };

  it('replays the original status and body with the secret withheld', async () => {
    const { create, control } = await sandbox();
    const first = await create(endpointBody(), key);
    const again = await create({ eventTypes: ['chat.message.created.v1'], destinationUrl: 'https://example.com/hooks/1', name: 'hook 1' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual({ endpoint: first.body.data.endpoint, secret: null, secretAvailable: false });
    expect(again.body.meta.requestId).toBe(again.headers.get('x-request-id'));
    expect(again.body.meta.requestId).not.toBe(first.body.meta.requestId);
    expect((await control('endpoints')).body.data.endpoints).toHaveLength(1);
  });

  it('refuses the same key with a different body', async () => {
    const { create } = await sandbox();
    await create(endpointBody(1), key);
    const a = await create(endpointBody(2), key);
    expect(errorCode(a)).toBe('422 idempotency_conflict');
    expect(a.body.error.details).toEqual({ idempotencyKey: 'same-key' });
  });

  it('keys per route: the same key on another route is a new request', async () => {
    const { create, rotate } = await sandbox();
    const { body } = await create(endpointBody(), key);
    const r = await rotate(body.data.endpoint.id, { expectedVersion: 1, mode: 'immediate' }, key);
    expect(r.status).toBe(200);
    expect(r.body.data.secretAvailable).toBe(true);
  });

  it('replays a rotation without rotating again', async () => {
    const { create, rotate } = await sandbox();
    const { body } = await create(endpointBody());
    const id = body.data.endpoint.id;
    const first = await rotate(id, { expectedVersion: 1, mode: 'overlap' }, key);
    const again = await rotate(id, { expectedVersion: 1, mode: 'overlap' }, key);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual({ endpoint: first.body.data.endpoint, secret: null, secretAvailable: false });
    expect(first.body.data.endpoint.version).toBe(2);
  });

  it('forgets keys after 24 hours', async () => {
    const { create, advance } = await sandbox();
    await create(endpointBody(1), key);
    advance(24 * HOUR - 1);
    expect(errorCode(await create(endpointBody(2), key))).toBe('422 idempotency_conflict');
    advance(1);
    const a = await create(endpointBody(2), key);
    expect(a.status).toBe(201);
    expect(a.headers.get('idempotent-replayed')).toBeNull();
  });

  it('does not store refusals: the same key runs afresh once the cause is gone', async () => {
    const { create, rotate, deactivate } = await sandbox();
    const { body } = await create(endpointBody(1));
    const id = body.data.endpoint.id;
    // A refused create leaves the key free, even for another body.
    expect(errorCode(await create(endpointBody(1), key))).toBe('409 webhook_endpoint_conflict');
    expect((await create(endpointBody(2), key)).status).toBe(201);
    // A refused rotate is run again, not replayed, once the version matches.
    const rotation = { headers: { 'idempotency-key': 'rotate-key' } };
    expect(errorCode(await rotate(id, { expectedVersion: 2, mode: 'immediate' }, rotation))).toBe('409 webhook_endpoint_version_conflict');
    await deactivate(id, { expectedVersion: 1 });
    const a = await rotate(id, { expectedVersion: 2, mode: 'immediate' }, rotation);
    expect(a.status).toBe(200);
    expect(a.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('rotate', () => {
  async function withEndpoint() {
    const s = await sandbox();
    const { body } = await s.create(endpointBody());
    return { ...s, id: body.data.endpoint.id as string, secret: body.data.secret as string };
  }

  it('overlap: new secret, the old one valid for 24 h, a second overlap refused meanwhile', async () => {
    const { rotate, control, advance, id, secret } = await withEndpoint();
    advance(HOUR);
    const a = await rotate(id, { expectedVersion: 1, mode: 'overlap' });
    expect(a.status).toBe(200);
    expect(a.body.data.secret).toMatch(/^whsec_/);
    expect(a.body.data.secret).not.toBe(secret);
    expect(a.body.data.secretAvailable).toBe(true);
    expect(a.body.data.endpoint).toMatchObject({
      version: 2,
      updatedAt: '2030-01-01T01:00:00.000Z',
      previousSecretExpiresAt: '2030-01-02T01:00:00.000Z',
    });
    expect((await control('endpoints')).body.data.endpoints[0].validSecrets).toEqual([a.body.data.secret, secret]);

    const second = await rotate(id, { expectedVersion: 2, mode: 'overlap' });
    expect(errorCode(second)).toBe('409 webhook_secret_rotation_conflict');
    expect(second.body.error.details).toEqual({ previousSecretExpiresAt: '2030-01-02T01:00:00.000Z' });

    advance(24 * HOUR);
    expect((await control('endpoints')).body.data.endpoints[0]).toMatchObject({
      previousSecretExpiresAt: null,
      version: 2,
      validSecrets: [a.body.data.secret],
    });
    expect((await rotate(id, { expectedVersion: 2, mode: 'overlap' })).status).toBe(200);
  });

  it('immediate: always allowed, revokes every older secret', async () => {
    const { rotate, control, id } = await withEndpoint();
    await rotate(id, { expectedVersion: 1, mode: 'overlap' });
    const a = await rotate(id, { expectedVersion: 2, mode: 'immediate' });
    expect(a.status).toBe(200);
    expect(a.body.data.endpoint).toMatchObject({ version: 3, previousSecretExpiresAt: null });
    expect((await control('endpoints')).body.data.endpoints[0].validSecrets).toEqual([a.body.data.secret]);
    expect((await rotate(id, { expectedVersion: 3, mode: 'immediate' })).body.data.endpoint.version).toBe(4);
  });

  it('refuses a stale expectedVersion without changing anything', async () => {
    const { rotate, control, id } = await withEndpoint();
    const a = await rotate(id, { expectedVersion: 2, mode: 'immediate' });
    expect(errorCode(a)).toBe('409 webhook_endpoint_version_conflict');
    expect(a.body.error.details).toEqual({ expectedVersion: 2, currentVersion: 1 });
    expect((await control('endpoints')).body.data.endpoints[0].version).toBe(1);
  });
});

describe('reactivate and deactivate', () => {
  it('change only what differs, and say so in changed', async () => {
    const { create, reactivate, deactivate, advance } = await sandbox();
    const { body } = await create(endpointBody());
    const id = body.data.endpoint.id;

    const same = await reactivate(id, { expectedVersion: 1 });
    expect(same.status).toBe(200);
    expect(same.body.data).toEqual({ endpoint: body.data.endpoint, changed: false });

    advance(1000);
    const off = await deactivate(id, { expectedVersion: 1 });
    expect(off.body.data.changed).toBe(true);
    expect(off.body.data.endpoint).toMatchObject({ status: 'inactive', version: 2, updatedAt: '2030-01-01T00:00:01.000Z' });
    expect((await deactivate(id, { expectedVersion: 2 })).body.data).toMatchObject({ changed: false, endpoint: { version: 2 } });

    expect(errorCode(await reactivate(id, { expectedVersion: 1 }))).toBe('409 webhook_endpoint_version_conflict');
    const on = await reactivate(id, { expectedVersion: 2 });
    expect(on.body.data).toMatchObject({ changed: true, endpoint: { status: 'active', version: 3 } });
    expect(Object.keys(on.body.data)).toEqual(['endpoint', 'changed']);
  });

  it('ignore an Idempotency-Key', async () => {
    const { create, reactivate } = await sandbox();
    const { body } = await create(endpointBody());
    const c = { headers: { 'idempotency-key': 'k' } };
    expect((await reactivate(body.data.endpoint.id, { expectedVersion: 1 }, c)).headers.get('idempotent-replayed')).toBeNull();
    expect((await reactivate(body.data.endpoint.id, { expectedVersion: 1 }, c)).headers.get('idempotent-replayed')).toBeNull();
  });
});
