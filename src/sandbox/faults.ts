// Switches that make the sandbox misbehave on purpose, so that retries, back-off and timeouts can be rehearsed.
import { ERROR_CODES, type ApiErrorCode } from '../api/schemas.js';
import { isJsonObject } from '../output/json.js';
import type { Clock } from '../system/clock.js';
import { bodyProblem, type Checked, type FieldProblem } from './protocol.js';

/**
 * The next `failNext` API requests fail with `status` and `code` (by default the status's), Retry-After `retryAfter` seconds (null: none),
 * or unanswered when `dropConnection`; every API answer waits `delayMs`; `rateLimit` requests per second per bearer token: a bucket of
 * as many (the burst) refilled at that rate, 0 is no limit.
 */
export type FaultSettings = { failNext: number; status: number; code: ApiErrorCode; retryAfter: number | null; dropConnection: boolean; delayMs: number; rateLimit: number };

export type FaultPatch = Partial<FaultSettings>;

const FAULT_STATUS_CODES: Readonly<Record<number, ApiErrorCode>> = {
  400: 'validation_failed',
  401: 'authentication_failed',
  403: 'permission_denied',
  404: 'resource_not_found',
  409: 'conflict',
  422: 'validation_failed',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
  502: 'service_unavailable',
  503: 'service_unavailable',
  504: 'service_unavailable',
};

export const NO_FAULTS: FaultSettings = { failNext: 0, status: 503, code: 'service_unavailable', retryAfter: null, dropConnection: false, delayMs: 0, rateLimit: 0 };

const integerIn = (min: number, max: number) => (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? null : `must be an integer from ${min} to ${max}`);

const FIELD_CHECKS: Record<keyof FaultSettings, (v: unknown) => string | null> = {
  failNext: integerIn(0, 1_000_000),
  status: (v) => (typeof v === 'number' && Object.hasOwn(FAULT_STATUS_CODES, v) ? null : `must be one of ${Object.keys(FAULT_STATUS_CODES).join(', ')}`),
  code: (v) => (typeof v === 'string' && (ERROR_CODES as readonly string[]).includes(v) ? null : 'must be one of the spec error codes'),
  retryAfter: (v) => (v === null ? null : integerIn(0, 86_400)(v)),
  dropConnection: (v) => (typeof v === 'boolean' ? null : 'must be true or false'),
  delayMs: integerIn(0, 10 * 60 * 1000),
  rateLimit: integerIn(0, 1_000_000),
};

/** Checks a (partial) fault document, e.g. the body of POST /_sandbox/faults. */
export function checkFaultPatch(body: unknown): Checked<FaultPatch> {
  if (!isJsonObject(body)) return bodyProblem('must be a JSON object');
  const problems: FieldProblem[] = [];
  for (const [field, value] of Object.entries(body)) {
    const problem = Object.hasOwn(FIELD_CHECKS, field) ? FIELD_CHECKS[field as keyof FaultSettings](value) : 'is not an allowed field';
    if (problem) problems.push({ field, location: 'body', problem });
  }
  return problems.length ? { ok: false, problems } : { ok: true, value: body as FaultPatch };
}

/** A new status without a code brings that status's default code. */
export function applyFaultPatch(current: FaultSettings, patch: FaultPatch): FaultSettings {
  const next = { ...current, ...patch };
  if (patch.status !== undefined && patch.code === undefined) next.code = FAULT_STATUS_CODES[patch.status] ?? 'internal_error';
  return next;
}

/** Beyond this many buckets, full ones are forgotten: they equal a fresh bucket. */
const MAX_IDLE_BUCKETS = 1024;
const EPSILON = 1e-9;

export class Faults {
  private settings: FaultSettings;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly initial: FaultSettings,
    private readonly now: Clock['now'],
  ) {
    this.settings = { ...initial };
  }

  get current(): FaultSettings {
    return { ...this.settings };
  }

  update(patch: FaultPatch): FaultSettings {
    const before = this.settings.rateLimit;
    this.settings = applyFaultPatch(this.settings, patch);
    // A new limit starts every token with a full bucket of the new size.
    if (this.settings.rateLimit !== before) this.buckets.clear();
    return this.current;
  }

  reset(): FaultSettings {
    this.settings = { ...this.initial };
    this.buckets.clear();
    return this.current;
  }

  takeFailure(): Pick<FaultSettings, 'status' | 'code' | 'retryAfter' | 'dropConnection'> | null {
    if (this.settings.failNext <= 0) return null;
    this.settings.failNext -= 1;
    const { status, code, retryAfter, dropConnection } = this.settings;
    return { status, code, retryAfter, dropConnection };
  }

  /** One request of `key` (a bearer token) against the token bucket; a refused one takes nothing, and `waitMs` says when one fits again. */
  admit(key: string): { ok: true } | { ok: false; waitMs: number; limit: number } {
    const rate = this.settings.rateLimit;
    if (rate <= 0) return { ok: true };
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: rate, at: now };
    bucket.tokens = Math.min(rate, bucket.tokens + (Math.max(0, now - bucket.at) * rate) / 1000);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_IDLE_BUCKETS) for (const [k, b] of this.buckets) if (b.tokens + ((now - b.at) * rate) / 1000 >= rate) this.buckets.delete(k);
    // The epsilon absorbs floating-point dust (0.998 + 0.002 must make 1).
    if (bucket.tokens >= 1 - EPSILON) {
      bucket.tokens = Math.max(0, bucket.tokens - 1);
      return { ok: true };
    }
    return { ok: false, waitMs: Math.max(1, Math.ceil(((1 - bucket.tokens) * 1000) / rate - EPSILON)), limit: rate };
  }
}
