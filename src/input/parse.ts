// Flag strings to request bodies, checked against the spec's limits before anything
// is sent; every failure is a usage error (exit 2) that names the flag.
import type * as z from 'zod/mini';
import { usageError } from '../errors/cli-error.js';
import { type CreateRequest, createRequestSchema, type ExpectedVersionRequest, expectedVersionRequestSchema, LIMITS, type RotateRequest, rotateRequestSchema } from '../api/schemas.js';
import { eventTypeHint } from '../errors/explain.js';

const FLAG_FOR_FIELD: Record<string, string> = { name: '--name', destinationUrl: '--url', eventTypes: '--event', expectedVersion: '--expected-version', mode: '--mode' };

function check<T>(schema: z.ZodMiniType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = String(issue.path[0] ?? '');
  const flag = FLAG_FOR_FIELD[field] ?? field;
  throw usageError(`invalid ${flag}: ${issue.message}`, hintFor(field, issue.path, value));
}

function hintFor(field: string, path: readonly PropertyKey[], value: unknown): string | undefined {
  if (field !== 'eventTypes' || typeof path[1] !== 'number') return undefined;
  const typed = (value as { eventTypes?: unknown[] }).eventTypes?.[path[1]];
  if (typeof typed !== 'string') return undefined;
  return eventTypeHint(typed);
}

/** `--event a --event b,c` → [a, b, c], duplicates dropped, order kept. */
export function splitEvents(values: readonly string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    for (const part of v.split(',')) {
      const item = part.trim();
      if (item === '') throw usageError('invalid --event: empty event type', 'separate event types with commas, e.g. --event chat.message.created.v1,chat.message.updated.v1');
      if (!out.includes(item)) out.push(item);
    }
  }
  return out;
}

/** Strict decimal: no sign, exponent, fraction or leading zero. */
export function parseExpectedVersion(raw: string): number {
  if (!/^[1-9][0-9]*$/.test(raw) || raw.length > 16 || BigInt(raw) > BigInt(LIMITS.versionMax)) {
    throw usageError(`invalid --expected-version "${raw}": must be a whole number from ${LIMITS.versionMin} to ${LIMITS.versionMax}`);
  }
  return Number(raw);
}

export function parseCreate(input: { name: string; url: string; events: readonly string[] }): CreateRequest {
  return check(createRequestSchema(), { name: input.name, destinationUrl: input.url, eventTypes: splitEvents(input.events) });
}

export function parseRotate(input: { expectedVersion: string; mode: string }): RotateRequest {
  const expectedVersion = parseExpectedVersion(input.expectedVersion);
  if (input.mode !== 'overlap' && input.mode !== 'immediate') throw usageError(`invalid --mode "${input.mode}": must be overlap or immediate`);
  return check(rotateRequestSchema(), { expectedVersion, mode: input.mode });
}

export function parseExpectedVersionBody(input: { expectedVersion: string }): ExpectedVersionRequest {
  return check(expectedVersionRequestSchema(), { expectedVersion: parseExpectedVersion(input.expectedVersion) });
}

export function checkEndpointId(id: string): string {
  if (id === '' || id === '.' || id === '..') throw usageError(`invalid ENDPOINT_ID "${id}"`);
  return id;
}

/** Header-safe: visible ASCII, 1 to 255 characters. */
export function checkIdempotencyKey(key: string): string {
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw usageError('invalid --idempotency-key: use 1 to 255 visible ASCII characters (a UUID is ideal)');
  return key;
}
