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

  it('limits requests per one-second window of the injected clock', () => {
    let now = 5_000;
    const faults = new Faults({ ...NO_FAULTS, rateLimit: 2 }, () => now);
    expect([faults.admit(), faults.admit(), faults.admit()]).toEqual([true, true, false]);
    now += 999;
    expect(faults.admit()).toBe(false);
    now += 1;
    expect(faults.admit()).toBe(true);
  });

  it('resets to the settings it started with', () => {
    const faults = new Faults({ ...NO_FAULTS, delayMs: 7 }, () => 0);
    faults.update({ delayMs: 0, failNext: 3 });
    faults.reset();
    expect(faults.current).toEqual({ ...NO_FAULTS, delayMs: 7 });
  });
});
