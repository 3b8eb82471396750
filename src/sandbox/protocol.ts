// What an API request must be and how answers are wrapped; pure, the HTTP layer does the I/O.
import { attempt } from '../system/files.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { CreateRequest, ExpectedVersionRequest, RotateRequest } from '../api/schemas.js';
import { EVENT_TYPES, LIMITS, ROTATION_MODES, type ApiErrorCode, type EventType } from '../api/schemas.js';
import { isJsonObject } from '../output/json.js';
import type { HeaderName } from '../signing/standard-webhooks.js';

export type RandomBytes = (n: number) => Buffer;

// 64 and 32 symbols: a byte modulo either is unbiased.
const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const LOWER = '0123456789abcdefghjkmnpqrstvwxyz';
const draw = (random: RandomBytes, alphabet: string, length: number) => {
  const bytes = random(length);
  return Array.from({ length }, (_, i) => alphabet[(bytes[i] ?? 0) % alphabet.length]).join('');
};
export const newToken = (random: RandomBytes) => 'sbx_' + draw(random, URL_SAFE, 24);
export const newEndpointId = (random: RandomBytes) => 'we_' + draw(random, LOWER, 20);
export const newRequestId = (random: RandomBytes) => 'req_' + draw(random, LOWER, 20);
export const newMessageId = (random: RandomBytes) => 'msg_' + draw(random, URL_SAFE, 24);
export const newSecret = (random: RandomBytes) => 'whsec_' + random(32).toString('base64');

/** A refusal the sandbox answers with the spec's error envelope. */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A success before its `{data, meta}` envelope; only the HTTP layer adds `meta.requestId`, so a replay carries the replaying request's id. */
export type Reply = { status: number; data: unknown; headers?: Record<string, string> };

export function toAnswer(outcome: Reply | ApiFailure, requestId: string) {
  if (!(outcome instanceof ApiFailure)) return { status: outcome.status, body: { data: outcome.data, meta: { requestId } }, headers: { ...outcome.headers } };
  const { status, code, message, details, headers } = outcome;
  return { status, body: { error: { code, message, requestId, details } }, headers: { ...headers } };
}

export type FieldProblem = { field: string; location: 'body' | 'header'; problem: string };

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: FieldProblem[] };

export const bodyProblem = (problem: string): Checked<never> => ({ ok: false, problems: [{ field: 'body', location: 'body', problem }] });

export function validationFailure(problems: FieldProblem[]): ApiFailure {
  return new ApiFailure(400, 'validation_failed', `the request is not valid: ${problems.map((p) => p.field).join(', ')}`, { fields: problems });
}

/** The checked value, or a throw of the 400 that names every problem (and `extra`). */
export function valid<T>(checked: Checked<T>, extra: FieldProblem | null = null): T {
  if (checked.ok && !extra) return checked.value;
  throw validationFailure([...(checked.ok ? [] : checked.problems), ...(extra ? [extra] : [])]);
}

/** One header's value; repeated headers arrive joined or as an array. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function checkBearer(headers: IncomingHttpHeaders, token: string): ApiFailure | null {
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(headerValue(headers, 'authorization') ?? '');
  if (!match) return new ApiFailure(401, 'authentication_required', 'an Authorization header with a bearer token is required', { header: 'Authorization' });
  // Equal-length digests: the comparison takes the same time for any guess.
  return timingSafeEqual(digest(match[1]!), digest(token)) ? null : new ApiFailure(401, 'authentication_failed', 'the bearer token is not valid', {});
}

export function checkBrowserHeaders(headers: IncomingHttpHeaders): ApiFailure | null {
  const missing = ['origin', 'x-service-csrf'].filter((name) => (headerValue(headers, name) ?? '').trim() === '');
  return missing.length ? new ApiFailure(403, 'permission_denied', `missing required header: ${missing.join(', ')}`, { missingHeaders: missing }) : null;
}

export const MAX_BODY_BYTES = 64 * 1024;

/** `pathname` without the query, still percent-encoded. */
export type SandboxRequest = { method: string; pathname: string; headers: IncomingHttpHeaders; body: RawBody; remoteAddress: string | undefined };
/** A reply, or a connection to drop without answering. */
export type Outcome = Reply | ApiFailure | 'drop';

/** `tooLarge`: more than MAX_BODY_BYTES arrived, and `bytes` holds only a prefix. */
export type RawBody = { contentType: string | undefined; bytes: Buffer; tooLarge: boolean };

export function parseJsonBody(raw: RawBody): Checked<unknown> {
  if ((raw.contentType ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json')
    return { ok: false, problems: [{ field: 'Content-Type', location: 'header', problem: 'must be application/json' }] };
  if (raw.tooLarge || raw.bytes.length > MAX_BODY_BYTES) return bodyProblem(`must be at most ${MAX_BODY_BYTES} bytes`);
  const text = attempt(() => new TextDecoder('utf-8', { fatal: true }).decode(raw.bytes));
  if (text === undefined) return bodyProblem('is not valid UTF-8');
  // JSON.parse never gives undefined: undefined is its throw.
  const value = attempt(() => JSON.parse(text) as unknown);
  return value === undefined ? bodyProblem(text.trim() === '' ? 'is required' : 'is not valid JSON') : { ok: true, value };
}

type FieldCheck = (value: unknown) => string | null;

const isEventType = (v: unknown): v is EventType => typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);
const codePoints = (s: string) => [...s].length;

const checkName: FieldCheck = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  const n = codePoints(v);
  return n < LIMITS.nameMin || n > LIMITS.nameMax ? `must be ${LIMITS.nameMin} to ${LIMITS.nameMax} characters long (got ${n})` : null;
};

const checkDestinationUrl: FieldCheck = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  if (codePoints(v) > LIMITS.destinationUrlMax) return `must be at most ${LIMITS.destinationUrlMax} characters long`;
  return URL.canParse(v) ? null : 'must be an absolute URL';
};

const checkEventTypes: FieldCheck = (v) => {
  if (!Array.isArray(v)) return 'must be an array of event types';
  if (v.length === 0) return 'must contain at least one event type';
  for (const [i, item] of v.entries()) {
    if (!isEventType(item)) return `item ${i} is not one of the ${EVENT_TYPES.length} event types`;
    if (v.indexOf(item) < i) return `item ${i} repeats "${item}"`;
  }
  return null;
};

const checkExpectedVersion: FieldCheck = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= LIMITS.versionMin && v <= LIMITS.versionMax ? null : `must be an integer from ${LIMITS.versionMin} to ${LIMITS.versionMax}`;
const checkMode: FieldCheck = (v) => (typeof v === 'string' && (ROTATION_MODES as readonly string[]).includes(v) ? null : `must be one of ${ROTATION_MODES.join(', ')}`);
const checkJsonObject: FieldCheck = (v) => (isJsonObject(v) ? null : 'must be a JSON object');

/** Strict like a server that forbids unknown properties: `fields` in order, then every field no check names. */
function checkObject<T>(body: unknown, fields: Record<string, FieldCheck>): Checked<T> {
  if (!isJsonObject(body)) return bodyProblem('must be a JSON object');
  const problems: FieldProblem[] = [];
  for (const [field, check] of Object.entries(fields)) {
    const problem = Object.hasOwn(body, field) ? check(body[field]) : 'is required';
    if (problem) problems.push({ field, location: 'body', problem });
  }
  for (const field of Object.keys(body)) if (!Object.hasOwn(fields, field)) problems.push({ field, location: 'body', problem: 'is not an allowed field' });
  return problems.length ? { ok: false, problems } : { ok: true, value: body as T };
}

export const checkCreateBody = (body: unknown) => checkObject<CreateRequest>(body, { name: checkName, destinationUrl: checkDestinationUrl, eventTypes: checkEventTypes });
export const checkRotateBody = (body: unknown) => checkObject<RotateRequest>(body, { expectedVersion: checkExpectedVersion, mode: checkMode });
export const checkExpectedVersionBody = (body: unknown) => checkObject<ExpectedVersionRequest>(body, { expectedVersion: checkExpectedVersion });
/** The body of POST /_sandbox/endpoints/{id}/deliver, where `data` may be absent. */
export function checkDeliverBody(body: unknown) {
  const eventType: FieldCheck = (v) => (isEventType(v) ? null : `must be one of the ${EVENT_TYPES.length} event types`);
  return checkObject<{ eventType: EventType; data?: Record<string, unknown> }>(body, isJsonObject(body) && !Object.hasOwn(body, 'data') ? { eventType } : { eventType, data: checkJsonObject });
}

/** Idempotency keys: 1 to 255 visible ASCII characters (the spec gives no format). */
export function checkIdempotencyKey(value: string | undefined): FieldProblem | null {
  if (value === undefined || value === '') return { field: 'Idempotency-Key', location: 'header', problem: 'is required' };
  return /^[\x21-\x7e]{1,255}$/.test(value) ? null : { field: 'Idempotency-Key', location: 'header', problem: 'must be 1 to 255 visible ASCII characters' };
}

/** `status` null: unreachable or no answer in time (`error` says why); `body`: its first 1024 characters. */
export type ReceiverAnswer = { status: number | null; ok: boolean; durationMs: number; body: string | null; error: string | null };

/** What POST /_sandbox/endpoints/{id}/deliver answers and the sandbox logs; `signedWith` by fingerprint (never the secrets), in the order of the signatures. */
export type DeliveryReport = {
  delivery: {
    endpointId: string;
    eventType: string;
    destinationUrl: string;
    webhookId: string;
    timestamp: number;
    signedWith: { fingerprint: string; secret: 'current' | 'previous'; expiresAt?: string }[];
    request: { headers: Record<HeaderName, string>; body: string };
    receiver: ReceiverAnswer;
  };
};
