import { describe, expect, it } from 'vitest';
import { backoffDelay, decideRetry, parseRetryAfter } from '../../src/http/client.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

describe('Retry-After', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('7', NOW)).toBe(7000);
    expect(parseRetryAfter(' 60 ', NOW)).toBe(60_000);
  });
  it('reads an HTTP date relative to the injected clock', () => {
    expect(parseRetryAfter(new Date(NOW + 3000).toUTCString(), NOW)).toBe(3000);
    expect(parseRetryAfter(new Date(NOW - 3000).toUTCString(), NOW)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    for (const v of [undefined, '', 'soon', '-1', '1.5']) expect(parseRetryAfter(v, NOW)).toBeUndefined();
  });
});

describe('backoff', () => {
  it('is full jitter over base 0.5 s doubling to a 20 s cap', () => {
    const top = (i: number) => backoffDelay(i, () => 0.999999);
    expect([0, 1, 2, 3, 4, 5, 6, 10].map(top)).toEqual([499, 999, 1999, 3999, 7999, 15999, 19999, 19999]);
    expect(backoffDelay(3, () => 0)).toBe(0);
    expect(backoffDelay(2, () => 0.5)).toBe(1000);
  });
});

describe('decideRetry', () => {
  const base = { random: () => 0.5, maxRetries: 2 };
  it('retries 429 and 503 with the server wait, then stops when retries run out', () => {
    expect(decideRetry({ ...base, attempt: 1, failure: 429, serverWaitMs: 2_000 })).toEqual({ kind: 'retry', delayMs: 2000, reason: 'rate limited' });
    expect(decideRetry({ ...base, attempt: 2, failure: 503 })).toEqual({ kind: 'retry', delayMs: 500, reason: 'service unavailable' });
    expect(decideRetry({ ...base, attempt: 3, failure: 503 })).toEqual({ kind: 'stop', reason: 'exhausted' });
  });
  it('retries network failures and timeouts with backoff', () => {
    expect(decideRetry({ ...base, attempt: 1, failure: 'network' })).toMatchObject({ kind: 'retry', delayMs: 250 });
    expect(decideRetry({ ...base, attempt: 1, failure: 'timeout' })).toMatchObject({ kind: 'retry', reason: 'timed out' });
  });
  it('retries nothing else', () => {
    for (const s of [400, 401, 403, 404, 409, 422, 500, 502, 504]) {
      expect(decideRetry({ ...base, attempt: 1, failure: s })).toEqual({ kind: 'stop', reason: 'not-retryable' });
    }
  });
  it('does not wait for a Retry-After over 60 s, even with retries left', () => {
    expect(decideRetry({ ...base, attempt: 1, failure: 429, serverWaitMs: 61_000 })).toEqual({ kind: 'stop', reason: 'retry-after-too-long', retryAfterMs: 61_000 });
    expect(decideRetry({ ...base, attempt: 1, failure: 429, serverWaitMs: 60_000 })).toMatchObject({ kind: 'retry', delayMs: 60_000 });
  });
  it('with --max-retries 0 never retries', () => {
    expect(decideRetry({ ...base, maxRetries: 0, attempt: 1, failure: 503 })).toEqual({ kind: 'stop', reason: 'exhausted' });
  });
});
