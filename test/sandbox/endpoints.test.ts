import { describe, expect, it } from 'vitest';
import { matchApiRoute } from '../../src/sandbox/api.js';
import { ApiFailure } from '../../src/sandbox/protocol.js';
import { EndpointStore, OVERLAP_MS, SANDBOX_SCOPE } from '../../src/sandbox/state.js';

function setup(limit = 10) {
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  let counter = 0;
  const store = new EndpointStore({
    now: () => now,
    randomBytes: (n) => Buffer.alloc(n, ++counter),
    limit,
  });
  return { store, advance: (ms: number) => (now += ms) };
}
const input = (url = 'https://example.com/h') => ({ name: 'n', destinationUrl: url, eventTypes: ['chat.message.created.v1' as const] });
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiFailure) return `${e.status} ${e.code}`;
    throw e;
  }
  return 'ok';
};

describe('EndpointStore', () => {
  it('creates version 1, active, with a whsec_ secret that is not on the record', () => {
    const { store } = setup();
    const { endpoint, secret } = store.create(input());
    expect(endpoint).toMatchObject({ status: 'active', version: 1, previousSecretExpiresAt: null, createdAt: '2030-01-01T00:00:00.000Z' });
    expect(endpoint.id).toMatch(/^we_[0-9a-z]{20}$/);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(JSON.stringify(endpoint)).not.toContain(secret);
  });

  it('refuses a duplicate destination (same href) and the endpoint past the limit', () => {
    const { store } = setup(2);
    store.create(input('https://Example.com/h'));
    expect(codeOf(() => store.create(input('https://example.com/h')))).toBe('409 webhook_endpoint_conflict');
    store.create(input('https://example.com/other'));
    expect(codeOf(() => store.create(input('https://example.com/third')))).toBe('409 webhook_endpoint_limit_reached');
  });

  it('overlaps for 24 h, refuses a second overlap meanwhile, and allows immediate at any time', () => {
    const { store, advance } = setup();
    const { endpoint, secret: first } = store.create(input());
    const r1 = store.rotate(endpoint.id, 1, 'overlap');
    expect(r1.endpoint.version).toBe(2);
    expect(r1.endpoint.previousSecretExpiresAt).toBe('2030-01-02T00:00:00.000Z');
    expect(store.inspect()[0]!.validSecrets).toEqual([r1.secret, first]);
    expect(codeOf(() => store.rotate(endpoint.id, 2, 'overlap'))).toBe('409 webhook_secret_rotation_conflict');
    advance(OVERLAP_MS);
    expect(store.inspect()[0]!.previousSecretExpiresAt).toBeNull();
    expect(store.inspect()[0]!.validSecrets).toEqual([r1.secret]);
    const r2 = store.rotate(endpoint.id, 2, 'overlap');
    const r3 = store.rotate(endpoint.id, 3, 'immediate');
    expect(r3.endpoint).toMatchObject({ version: 4, previousSecretExpiresAt: null });
    expect(store.inspect()[0]!.validSecrets).toEqual([r3.secret]);
    expect(new Set([first, r1.secret, r2.secret, r3.secret]).size).toBe(4);
  });

  it('checks the endpoint, then the version', () => {
    const { store } = setup();
    const { endpoint } = store.create(input());
    expect(codeOf(() => store.rotate('we_missing', 1, 'immediate'))).toBe('404 resource_not_found');
    expect(codeOf(() => store.rotate(endpoint.id, 2, 'immediate'))).toBe('409 webhook_endpoint_version_conflict');
    expect(codeOf(() => store.setStatus(endpoint.id, 9, 'inactive'))).toBe('409 webhook_endpoint_version_conflict');
  });

  it('changes status only when it differs, and only then bumps the version', () => {
    const { store, advance } = setup();
    const { endpoint } = store.create(input());
    advance(1000);
    expect(store.setStatus(endpoint.id, 1, 'active')).toEqual({ endpoint, changed: false });
    const off = store.setStatus(endpoint.id, 1, 'inactive');
    expect(off.changed).toBe(true);
    expect(off.endpoint).toMatchObject({ status: 'inactive', version: 2, updatedAt: '2030-01-01T00:00:01.000Z' });
    expect(store.setStatus(endpoint.id, 2, 'inactive').changed).toBe(false);
    expect(store.setStatus(endpoint.id, 2, 'active').endpoint).toMatchObject({ status: 'active', version: 3 });
  });
});

describe('matchApiRoute', () => {
  const prefix = '/v1/organizations/org_sandbox/applications/app_sandbox/environments/sandbox/webhook-endpoints';
  it.each([
    [prefix, 'create', null],
    [`${prefix}/we_1/secret/rotate`, 'rotate', 'we_1'],
    [`${prefix}/we_1/reactivate`, 'reactivate', 'we_1'],
    [`${prefix}/we_1/deactivate`, 'deactivate', 'we_1'],
    [`${prefix}/we%201/reactivate`, 'reactivate', 'we 1'],
    [prefix.replace('org_sandbox', 'org%5Fsandbox'), 'create', null],
  ])('%s is %s', (path, operation, endpointId) => expect(matchApiRoute('POST', path, SANDBOX_SCOPE)).toMatchObject({ operation, endpointId }));
  it.each([
    prefix + '/',
    `${prefix}/we_1`,
    `${prefix}/we_1/rotate`,
    `${prefix}/we_1/secret/rotate/x`,
    `${prefix}//reactivate`,
    prefix.replace('org_sandbox', 'org_other'),
    prefix.replace('/sandbox/', '/prod/'),
    prefix.replace('/v1/', '/v2/'),
    `${prefix}/%E0%A4%A/reactivate`,
  ])('%s is not a route', (path) => expect(matchApiRoute('POST', path, SANDBOX_SCOPE)).toBeNull());
  it('serves POST only', () => expect(matchApiRoute('GET', prefix, SANDBOX_SCOPE)).toBeNull());
});
