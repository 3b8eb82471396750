import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint, IDEMPOTENCY_TTL_MS, IdempotencyStore } from '../../src/sandbox/state.js';

const scope = { token: 't', method: 'POST', path: '/p', key: 'k' };
const result = { status: 201, data: { secret: 's' } };

describe('fingerprint', () => {
  it('ignores key order but not values', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}');
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
    expect(fingerprint({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('IdempotencyStore', () => {
  it('replays the same body, refuses a different one', () => {
    const store = new IdempotencyStore(() => 0);
    expect(store.lookup(scope, 'f1')).toEqual({ kind: 'miss' });
    store.save(scope, 'f1', result);
    expect(store.lookup(scope, 'f1')).toEqual({ kind: 'replay', result });
    expect(store.lookup(scope, 'f2')).toEqual({ kind: 'conflict' });
  });

  it('keys by token, method, path and key', () => {
    const store = new IdempotencyStore(() => 0);
    store.save(scope, 'f1', result);
    for (const other of [{ token: 'u' }, { method: 'PUT' }, { path: '/q' }, { key: 'j' }]) expect(store.lookup({ ...scope, ...other }, 'f2')).toEqual({ kind: 'miss' });
  });

  it('forgets a key after 24 hours of the injected clock', () => {
    let now = 1_000;
    const store = new IdempotencyStore(() => now);
    store.save(scope, 'f1', result);
    now += IDEMPOTENCY_TTL_MS - 1;
    expect(store.lookup(scope, 'f1').kind).toBe('replay');
    now += 1;
    expect(store.lookup(scope, 'f2')).toEqual({ kind: 'miss' });
    expect(store.size).toBe(0);
  });
});
