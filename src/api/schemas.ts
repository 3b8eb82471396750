// The spec's shapes, written once. Request DTOs are strict (exactly the
// spec's fields); success envelopes are checked strictly enough to find the
// secret and the endpoint, and passed through untouched; error bodies are
// read leniently in http/classify.ts.
import * as z from 'zod/mini';
import { EVENT_TYPES, LIMITS, ROTATION_MODES } from './spec.js';

const codePoints = (s: string) => [...s].length;

export const nameSchema = z.string().check(
  z.refine((s) => codePoints(s) >= LIMITS.nameMin, { error: 'must not be empty' }),
  z.refine((s) => codePoints(s) <= LIMITS.nameMax, { error: `must be at most ${LIMITS.nameMax} characters` }),
);

export const destinationUrlSchema = z.string().check(
  z.refine((s) => s.length <= LIMITS.destinationUrlMax, {
    error: `must be at most ${LIMITS.destinationUrlMax} characters`,
  }),
  z.refine(isAbsoluteHttpUrl, { error: 'must be an absolute http:// or https:// URL' }),
);

export const eventTypeSchema = z.enum(EVENT_TYPES, {
  error: (issue) => `unknown event type "${String(issue.input)}"`,
});

export const expectedVersionSchema = z.int().check(z.gte(LIMITS.versionMin), z.lte(LIMITS.versionMax));
export const modeSchema = z.enum(ROTATION_MODES);

export const createRequestSchema = z.strictObject({
  name: nameSchema,
  destinationUrl: destinationUrlSchema,
  eventTypes: z.array(eventTypeSchema).check(z.minLength(1, { error: 'at least one event type is required' })),
});
export type CreateRequest = z.infer<typeof createRequestSchema>;

export const rotateRequestSchema = z.strictObject({
  expectedVersion: expectedVersionSchema,
  mode: modeSchema,
});
export type RotateRequest = z.infer<typeof rotateRequestSchema>;

export const expectedVersionRequestSchema = z.strictObject({
  expectedVersion: expectedVersionSchema,
});
export type ExpectedVersionRequest = z.infer<typeof expectedVersionRequestSchema>;

/** The endpoint record's fields are not specified: any JSON object. */
const endpointSchema = z.record(z.string(), z.unknown());

const metaSchema = z.looseObject({
  requestId: z.string(),
  nextCursor: z.optional(z.unknown()),
});

export const secretResponseSchema = z.looseObject({
  data: z.looseObject({
    endpoint: endpointSchema,
    secret: z.nullable(z.string()),
    secretAvailable: z.boolean(),
  }),
  meta: metaSchema,
});
export type SecretResponse = z.infer<typeof secretResponseSchema>;

export const mutationResponseSchema = z.looseObject({
  data: z.looseObject({
    endpoint: endpointSchema,
    changed: z.boolean(),
  }),
  meta: metaSchema,
});
export type MutationResponse = z.infer<typeof mutationResponseSchema>;

export const errorResponseSchema = z.looseObject({
  error: z.looseObject({
    code: z.string(),
    message: z.string(),
    requestId: z.string(),
    details: z.record(z.string(), z.unknown()),
  }),
});
export type ErrorResponse = z.infer<typeof errorResponseSchema>;

export function isAbsoluteHttpUrl(s: string): boolean {
  if (!/^https?:\/\//i.test(s)) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}
