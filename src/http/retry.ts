// What is retried and how long to wait (docs/secrets.md), as pure functions of an injected clock and random source.

export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 20_000;
/** A Retry-After longer than this is not waited for. */
export const MAX_RETRY_AFTER_MS = 60_000;

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * `Retry-After` as milliseconds from now: delta-seconds or an HTTP date.
 * undefined when absent or unreadable (the caller then backs off).
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return undefined; // "1.5", "-3": not a form the spec allows
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Full jitter: uniform in [0, min(cap, base * 2^retryIndex)). */
export function backoffDelay(retryIndex: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** retryIndex);
  return Math.floor(random() * ceiling);
}

export type RetryDecision = { kind: 'retry'; delayMs: number; reason: string } | { kind: 'stop'; reason: 'exhausted' | 'retry-after-too-long' | 'not-retryable'; retryAfterMs?: number };

/**
 * What to do after attempt number `attempt` (1-based) with `maxRetries`
 * retries allowed: `failure` is the status of a retryable response, or
 * 'network'/'timeout' for a transport failure.
 */
export function decideRetry(opts: {
  attempt: number;
  maxRetries: number;
  failure: number | 'network' | 'timeout';
  /** How long the server asked to wait (its Retry-After-Ms or Retry-After, read), if it did. */
  serverWaitMs?: number | undefined;
  random: () => number;
}): RetryDecision {
  const { attempt, maxRetries, failure } = opts;
  if (typeof failure === 'number' && !RETRY_STATUSES.has(failure)) return { kind: 'stop', reason: 'not-retryable' };
  const serverWait = typeof failure === 'number' ? opts.serverWaitMs : undefined;
  if (serverWait !== undefined && serverWait > MAX_RETRY_AFTER_MS) {
    return { kind: 'stop', reason: 'retry-after-too-long', retryAfterMs: serverWait };
  }
  if (attempt > maxRetries) return { kind: 'stop', reason: 'exhausted' };
  const reason = failure === 429 ? 'rate limited' : failure === 503 ? 'service unavailable' : failure === 'timeout' ? 'timed out' : 'connection failed';
  return { kind: 'retry', delayMs: serverWait ?? backoffDelay(attempt - 1, opts.random), reason };
}
