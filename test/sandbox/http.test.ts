import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { endpointBody, errorCode, sandbox } from '../support/sandbox.js';

describe('sandbox start-up', () => {
  it('serves on 127.0.0.1 with a random sbx_ token and the fixed scope', async () => {
    const { sb } = await sandbox();
    expect(sb.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sb.token).toMatch(/^sbx_[A-Za-z0-9_-]{24}$/);
    expect(sb).toMatchObject({ organizationId: 'org_sandbox', applicationId: 'app_sandbox', environmentKey: 'sandbox' });
  });

  const hasIpv6Loopback = Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address === '::1'));
  it.skipIf(!hasIpv6Loopback)('takes a given token and brackets an IPv6 host', async () => {
    const { sb, create } = await sandbox({ host: '::1', token: 'my-token' });
    expect(sb.baseUrl).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect(sb.token).toBe('my-token');
    expect((await create(endpointBody())).status).toBe(201);
  });

  it('refuses options that cannot work', async () => {
    await expect(sandbox({ host: '0.0.0.0' })).rejects.toThrow(/loopback/);
    await expect(sandbox({ port: 70000 })).rejects.toThrow(/port/);
    await expect(sandbox({ token: 'has space' })).rejects.toThrow(/token/);
    await expect(sandbox({ endpointLimit: -1 })).rejects.toThrow(/endpoint limit/);
  });
});

describe('authentication and headers', () => {
  it('wants a bearer token: missing or malformed is authentication_required', async () => {
    const { create } = await sandbox();
    for (const authorization of [undefined, '', 'Basic abc', 'Bearer', 'Bearer ']) expect(errorCode(await create(endpointBody(), { headers: { authorization } }))).toBe('401 authentication_required');
  });

  it('a wrong token is authentication_failed, before any other check', async () => {
    const { call } = await sandbox();
    expect(errorCode(await call('/nowhere', { headers: { authorization: 'Bearer nope', origin: undefined } }))).toBe('401 authentication_failed');
  });

  it('accepts the scheme in any case', async () => {
    const { sb, create } = await sandbox();
    expect((await create(endpointBody(), { headers: { authorization: `bearer ${sb.token}` } })).status).toBe(201);
  });

  it('wants Origin and x-service-csrf, both non-empty', async () => {
    const { create } = await sandbox();
    for (const headers of [{ origin: undefined }, { 'x-service-csrf': undefined }, { origin: '' }, { 'x-service-csrf': ' ' }]) {
      const a = await create(endpointBody(), { headers });
      expect(errorCode(a)).toBe('403 permission_denied');
      expect(a.body.error.details.missingHeaders).toHaveLength(1);
    }
  });
});

describe('routing', () => {
  it('answers resource_not_found for other scopes, paths and methods', async () => {
    const { call, path } = await sandbox();
    const other = path().replace('org_sandbox', 'org_other');
    for (const [p, method] of [
      [other, 'POST'],
      [path().replace('/sandbox/', '/production/'), 'POST'],
      [path(), 'GET'],
      [path('we_1'), 'POST'],
      ['/v1/organizations', 'POST'],
      ['/', 'GET'],
    ] as const)
      expect(errorCode(await call(p, { method, body: method === 'GET' ? undefined : endpointBody() }))).toBe('404 resource_not_found');
  });

  it('decodes path segments', async () => {
    const { call, path } = await sandbox();
    const a = await call(path().replace('org_sandbox', 'org%5Fsandbox'), { body: endpointBody(), headers: { 'idempotency-key': 'k' } });
    expect(a.status).toBe(201);
  });

  it('answers an unknown endpoint with resource_not_found', async () => {
    const { rotate, reactivate, deactivate } = await sandbox();
    expect(errorCode(await rotate('we_missing', { expectedVersion: 1, mode: 'overlap' }))).toBe('404 resource_not_found');
    expect(errorCode(await reactivate('we_missing', { expectedVersion: 1 }))).toBe('404 resource_not_found');
    expect(errorCode(await deactivate('we_missing', { expectedVersion: 1 }))).toBe('404 resource_not_found');
  });
});

describe('bodies', () => {
  it('wants application/json, charset allowed', async () => {
    const { create } = await sandbox();
    const a = await create(endpointBody(), { headers: { 'content-type': 'text/plain' } });
    expect(errorCode(a)).toBe('400 validation_failed');
    expect(a.body.error.details.fields).toEqual([{ field: 'Content-Type', location: 'header', problem: 'must be application/json' }]);
    expect((await create(endpointBody(), { headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(201);
  });

  it('refuses a body over 64 KiB, an unparseable one and an empty one', async () => {
    const { create } = await sandbox();
    const big = JSON.stringify({ ...endpointBody(), name: 'x'.repeat(64 * 1024) });
    for (const rawBody of [big, '{"name":', '']) expect(errorCode(await create(undefined, { rawBody }))).toBe('400 validation_failed');
  });

  it('names each bad field', async () => {
    const { create, rotate, reactivate } = await sandbox();
    const a = await create({ name: '', destinationUrl: 'x', eventTypes: ['chat.nope.v1'], color: 'red' });
    expect(errorCode(a)).toBe('400 validation_failed');
    expect(a.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['name', 'destinationUrl', 'eventTypes', 'color']);
    const r = await rotate('we_x', { expectedVersion: 0, mode: 'sometime' });
    expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['expectedVersion', 'mode']);
    const v = await reactivate('we_x', { expectedVersion: 9007199254740992 });
    expect(errorCode(v)).toBe('400 validation_failed');
  });

  it('wants an Idempotency-Key on create and rotate, not on reactivate', async () => {
    const { create, rotate, reactivate } = await sandbox();
    const a = await create(endpointBody(), { headers: { 'idempotency-key': undefined } });
    expect(errorCode(a)).toBe('400 validation_failed');
    expect(a.body.error.details.fields).toEqual([{ field: 'Idempotency-Key', location: 'header', problem: 'is required' }]);
    expect(errorCode(await rotate('we_x', { expectedVersion: 1, mode: 'overlap' }, { headers: { 'idempotency-key': undefined } }))).toBe('400 validation_failed');
    const { body } = await create(endpointBody());
    expect((await reactivate(body.data.endpoint.id, { expectedVersion: 1 })).status).toBe(200);
  });
});

describe('request ids and envelopes', () => {
  it('echoes x-request-id in the header and the envelope', async () => {
    const { create } = await sandbox();
    const ok = await create(endpointBody(), { headers: { 'x-request-id': 'trace-123' } });
    expect(ok.headers.get('x-request-id')).toBe('trace-123');
    expect(ok.body.meta).toEqual({ requestId: 'trace-123' });
    const bad = await create(endpointBody(), { headers: { 'x-request-id': 'trace-456', authorization: 'Bearer x' } });
    expect(bad.body.error.requestId).toBe('trace-456');
  });

  it('makes one up when none is sent', async () => {
    const { create } = await sandbox();
    const a = await create(endpointBody());
    expect(a.headers.get('x-request-id')).toMatch(/^req_[0-9a-z]{20}$/);
    expect(a.body.meta.requestId).toBe(a.headers.get('x-request-id'));
    expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });
});
