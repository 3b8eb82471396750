import { describe, expect, it } from 'vitest';
import { applyFaultPatch, checkFaultPatch, Faults, NO_FAULTS } from '../../src/sandbox/faults.js';

describe('checkFaultPatch', () => {
  it('accepts the documented switches', () => {
    const patch = { failNext: 2, status: 429, retryAfter: 3, delayMs: 10, dropConnection: false, rateLimit: 5, code: 'conflict' };
    expect(checkFaultPatch(patch)).toEqual({ ok: true, value: patch });
    expect(checkFaultPatch({ retryAfter: null }).ok).toBe(true);
  });
  it('names each bad switch', () => {
    const c = checkFaultPatch({ failNext: -1, status: 200, code: 'nope', delayMs: 1.5, surprise: 1 });
    expect(c.ok ? [] : c.problems.map((p) => p.field)).toEqual(['failNext', 'status', 'code', 'delayMs', 'surprise']);
    expect(checkFaultPatch([]).ok).toBe(false);
  });
});

describe('applyFaultPatch', () => {
  it('brings the default code of a new status unless a code is given', () => {
    expect(applyFaultPatch(NO_FAULTS, { status: 429 }).code).toBe('rate_limit_exceeded');
    expect(applyFaultPatch(NO_FAULTS, { status: 500 }).code).toBe('internal_error');
    expect(applyFaultPatch(NO_FAULTS, { status: 409, code: 'webhook_endpoint_conflict' }).code).toBe('webhook_endpoint_conflict');
    expect(applyFaultPatch({ ...NO_FAULTS, status: 429, code: 'rate_limit_exceeded' }, { failNext: 1 }).code).toBe('rate_limit_exceeded');
  });
});

describe('Faults', () => {
  it('fails exactly the next N requests', () => {
    const faults = new Faults(NO_FAULTS, () => 0);
    faults.update({ failNext: 2, status: 503, retryAfter: 1 });
    expect(faults.takeFailure()).toEqual({ status: 503, code: 'service_unavailable', retryAfter: 1, dropConnection: false });
    expect(faults.takeFailure()).not.toBeNull();
    expect(faults.takeFailure()).toBeNull();
    expect(faults.current.failNext).toBe(0);
  });

  it('limits each token with a bucket of N requests refilled at N per second of the injected clock', () => {
    let now = 5_000;
    const faults = new Faults({ ...NO_FAULTS, rateLimit: 2 }, () => now);
    expect([faults.admit('a'), faults.admit('a')]).toEqual([{ ok: true }, { ok: true }]);
    // Empty: the next request fits in 500 ms (one token at 2 per second).
    expect(faults.admit('a')).toEqual({ ok: false, waitMs: 500, limit: 2 });
    // Another token has a bucket of its own.
    expect(faults.admit('b')).toEqual({ ok: true });
    now += 499;
    expect(faults.admit('a')).toEqual({ ok: false, waitMs: 1, limit: 2 });
    now += 1;
    expect(faults.admit('a')).toEqual({ ok: true });
    expect(faults.admit('a').ok).toBe(false);
    // Idle time refills up to the burst, never beyond.
    now += 60_000;
    expect([faults.admit('a'), faults.admit('a'), faults.admit('a')].map((x) => x.ok)).toEqual([true, true, false]);
  });

  it('admits a steady N per second, and nothing more, over a long run', () => {
    let now = 0;
    const faults = new Faults({ ...NO_FAULTS, rateLimit: 100 }, () => now);
    let admitted = 0;
    // Ask 400 times a second for 10 seconds.
    for (let i = 0; i < 4000; i++, now += 2.5) if (faults.admit('t').ok) admitted++;
    // The burst (100) plus 100 per second.
    expect(admitted).toBeGreaterThanOrEqual(1099);
    expect(admitted).toBeLessThanOrEqual(1100);
  });

  it('starts every bucket full again when the limit changes, and is off at 0', () => {
    const faults = new Faults({ ...NO_FAULTS, rateLimit: 1 }, () => 0);
    expect(faults.admit('a').ok).toBe(true);
    expect(faults.admit('a').ok).toBe(false);
    faults.update({ rateLimit: 3 });
    expect([faults.admit('a'), faults.admit('a'), faults.admit('a'), faults.admit('a')].map((x) => x.ok)).toEqual([true, true, true, false]);
    faults.update({ rateLimit: 0 });
    for (let i = 0; i < 50; i++) expect(faults.admit('a').ok).toBe(true);
  });

  it('forgets idle buckets once there are many, so random tokens cannot grow it without end', () => {
    let now = 0;
    const faults = new Faults({ ...NO_FAULTS, rateLimit: 1 }, () => now);
    expect(faults.admit('keep').ok).toBe(true);
    for (let i = 0; i < 5000; i++) faults.admit(`junk-${i}`);
    // 'keep' is still empty at the same instant: its bucket was not forgotten while empty.
    expect(faults.admit('keep').ok).toBe(false);
    now += 1000;
    expect(faults.admit('keep').ok).toBe(true);
    expect((faults as unknown as { buckets: Map<string, unknown> }).buckets.size).toBeLessThanOrEqual(1025);
  });

  it('resets to the settings it started with', () => {
    const faults = new Faults({ ...NO_FAULTS, delayMs: 7 }, () => 0);
    faults.update({ delayMs: 0, failNext: 3 });
    faults.reset();
    expect(faults.current).toEqual({ ...NO_FAULTS, delayMs: 7 });
  });
});
