// Request bodies against the API's DTOs (create, rotate, reactivate), strictly:
// an unknown field is an error, as on a server that forbids non-whitelisted
// properties. Every problem is collected so that `details` names each field.
import { type CreateRequest, EVENT_TYPES, type EventType, type ExpectedVersionRequest, LIMITS, type RotateRequest, ROTATION_MODES } from '../api/schemas.js';
import { ApiFailure } from './envelopes.js';
import { isJsonObject } from '../output/json.js';

export interface FieldProblem {
  field: string;
  location: 'body' | 'header';
  problem: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: FieldProblem[] };

type FieldCheck = (value: unknown) => string | null;

const isEventType = (v: unknown): v is EventType => typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);

const codePoints = (s: string) => [...s].length;

const checkName: FieldCheck = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  const n = codePoints(v);
  if (n < LIMITS.nameMin || n > LIMITS.nameMax) return `must be ${LIMITS.nameMin} to ${LIMITS.nameMax} characters long (got ${n})`;
  return null;
};

const checkDestinationUrl: FieldCheck = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  if (codePoints(v) > LIMITS.destinationUrlMax) return `must be at most ${LIMITS.destinationUrlMax} characters long`;
  if (!URL.canParse(v)) return 'must be an absolute URL';
  return null;
};

const checkEventTypes: FieldCheck = (v) => {
  if (!Array.isArray(v)) return 'must be an array of event types';
  if (v.length === 0) return 'must contain at least one event type';
  const seen = new Set<unknown>();
  for (const [i, item] of v.entries()) {
    if (!isEventType(item)) return `item ${i} is not one of the ${EVENT_TYPES.length} event types`;
    if (seen.has(item)) return `item ${i} repeats "${item}"`;
    seen.add(item);
  }
  return null;
};

const checkExpectedVersion: FieldCheck = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= LIMITS.versionMin && v <= LIMITS.versionMax ? null : `must be an integer from ${LIMITS.versionMin} to ${LIMITS.versionMax}`;

const checkMode: FieldCheck = (v) => (typeof v === 'string' && (ROTATION_MODES as readonly string[]).includes(v) ? null : `must be one of ${ROTATION_MODES.join(', ')}`);

const checkJsonObject: FieldCheck = (v) => (isJsonObject(v) ? null : 'must be a JSON object');

/** `fields` in their order, then the fields no check names; a field in `optional` may be absent. */
function checkObject<T>(body: unknown, fields: Record<string, FieldCheck>, optional: readonly string[] = []): Checked<T> {
  const bodyProblem = checkJsonObject(body);
  if (bodyProblem) return { ok: false, problems: [{ field: 'body', location: 'body', problem: bodyProblem }] };
  const record = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  for (const [field, check] of Object.entries(fields)) {
    const problem = Object.hasOwn(record, field) ? check(record[field]) : optional.includes(field) ? null : 'is required';
    if (problem) problems.push({ field, location: 'body', problem });
  }
  for (const field of Object.keys(record)) if (!Object.hasOwn(fields, field)) problems.push({ field, location: 'body', problem: 'is not an allowed field' });
  return problems.length ? { ok: false, problems } : { ok: true, value: record as T };
}

/** The body of POST /_sandbox/endpoints/{id}/deliver. */
export const checkDeliverBody = (body: unknown) =>
  checkObject<{ eventType: EventType; data?: Record<string, unknown> }>(
    body,
    { eventType: (v) => (isEventType(v) ? null : `must be one of the ${EVENT_TYPES.length} event types`), data: checkJsonObject },
    ['data'],
  );

export const checkCreateBody = (body: unknown) => checkObject<CreateRequest>(body, { name: checkName, destinationUrl: checkDestinationUrl, eventTypes: checkEventTypes });

export const checkRotateBody = (body: unknown) => checkObject<RotateRequest>(body, { expectedVersion: checkExpectedVersion, mode: checkMode });

export const checkExpectedVersionBody = (body: unknown) => checkObject<ExpectedVersionRequest>(body, { expectedVersion: checkExpectedVersion });

/** Idempotency keys: 1 to 255 visible ASCII characters (the spec gives no format). */
export function checkIdempotencyKey(value: string | undefined): FieldProblem | null {
  if (value === undefined || value === '') return { field: 'Idempotency-Key', location: 'header', problem: 'is required' };
  if (!/^[\x21-\x7e]{1,255}$/.test(value)) return { field: 'Idempotency-Key', location: 'header', problem: 'must be 1 to 255 visible ASCII characters' };
  return null;
}

/** A 400 validation_failed naming each field that is wrong. */
export function validationFailure(problems: FieldProblem[]): ApiFailure {
  const names = problems.map((p) => p.field).join(', ');
  return new ApiFailure(400, 'validation_failed', `the request is not valid: ${names}`, { fields: problems });
}
