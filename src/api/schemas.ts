import * as z from 'zod/mini';
import { isJsonObject } from '../output/json.js';

// The API's specification, written once. Requests are strict; success envelopes are checked enough to find the secret and
// the endpoint, and passed on untouched; error bodies are read leniently (http/client.ts).

export const EVENT_TYPES = [
  'chat.channel.created.v1',
  'chat.channel.updated.v1',
  'chat.channel_membership.added.v1',
  'chat.channel_membership.reactivated.v1',
  'chat.channel_membership.updated.v1',
  'chat.channel_membership.removed.v1',
  'chat.message.created.v1',
  'chat.message.updated.v1',
  'chat.message.deleted.v1',
  'chat.message.reply_created.v1',
  'chat.message.reply_updated.v1',
  'chat.message.reply_deleted.v1',
  'chat.message.reaction_added.v1',
  'chat.message.reaction_removed.v1',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const ROTATION_MODES = ['overlap', 'immediate'] as const;
export type RotationMode = (typeof ROTATION_MODES)[number];

export const LIMITS = { nameMin: 1, nameMax: 80, destinationUrlMax: 2048, versionMin: 1, versionMax: Number.MAX_SAFE_INTEGER } as const;

export const ERROR_CODES = [
  'validation_failed',
  'authentication_failed',
  'authentication_required',
  'reauthentication_required',
  'permission_denied',
  'resource_not_found',
  'idempotency_conflict',
  'target_account_unavailable',
  'organization_owner_removal_conflict',
  'organization_owner_role_conflict',
  'organization_role_conflict',
  'membership_conflict',
  'invitation_conflict',
  'invitation_expired',
  'application_name_conflict',
  'application_settings_version_conflict',
  'environment_settings_version_conflict',
  'app_user_version_conflict',
  'channel_type_conflict',
  'channel_type_version_conflict',
  'channel_type_limit_reached',
  'channel_conflict',
  'channel_version_conflict',
  'channel_membership_conflict',
  'channel_membership_version_conflict',
  'channel_membership_limit_reached',
  'message_conflict',
  'message_version_conflict',
  'channel_read_state_conflict',
  'thread_reply_limit_reached',
  'message_reaction_type_not_allowed',
  'message_reaction_limit_reached',
  'thread_read_state_conflict',
  'credential_limit_reached',
  'credential_lifecycle_conflict',
  'device_registration_conflict',
  'device_registration_version_conflict',
  'device_registration_limit_reached',
  'attachment_upload_incomplete',
  'attachment_not_ready',
  'attachment_limit_reached',
  'moderation_relationship_limit_reached',
  'moderation_blocklist_limit_reached',
  'moderation_case_resolution_conflict',
  'message_moderation_rejected',
  'retention_policy_version_conflict',
  'data_job_not_cancelable',
  'data_job_not_ready',
  'data_job_limit_exceeded',
  'webhook_endpoint_conflict',
  'webhook_endpoint_version_conflict',
  'webhook_endpoint_limit_reached',
  'webhook_destination_rejected',
  'webhook_secret_rotation_conflict',
  'webhook_delivery_not_replayable',
  'conflict',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
] as const;
export type ApiErrorCode = (typeof ERROR_CODES)[number];

export type Scope = { organizationId: string; applicationId: string; environmentKey: string };

/** Builds a path with every segment percent-encoded (docs/configuration.md, what goes on the wire). */
export function scopedPath(scope: Scope, ...rest: string[]): string {
  const segments = ['v1', 'organizations', scope.organizationId, 'applications', scope.applicationId, 'environments', scope.environmentKey, ...rest];
  return '/' + segments.map(encodeURIComponent).join('/');
}

/** How a chatctl sandbox says what it is, in its answer to `GET /_sandbox` (checked by `webhooks trigger` before all else). */
export const SANDBOX_MARKER_HEADER = 'chatctl-sandbox';

/** Each schema is built on first use: building them all costs milliseconds at start-up, and a run needs two or three. */
export function lazy<T>(build: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= build());
}

const codePoints = (s: string) => [...s].length;

export const nameSchema = lazy(() =>
  z.string().check(
    z.refine((s) => codePoints(s) >= LIMITS.nameMin, { error: 'must not be empty' }),
    z.refine((s) => codePoints(s) <= LIMITS.nameMax, { error: `must be at most ${LIMITS.nameMax} characters` }),
  ),
);

export const destinationUrlSchema = lazy(() =>
  z.string().check(
    z.refine((s) => s.length <= LIMITS.destinationUrlMax, { error: `must be at most ${LIMITS.destinationUrlMax} characters` }),
    z.refine(isAbsoluteHttpUrl, { error: 'must be an absolute http:// or https:// URL' }),
  ),
);

const eventTypeSchema = lazy(() => z.enum(EVENT_TYPES, { error: (issue) => `unknown event type "${String(issue.input)}"` }));
const expectedVersionSchema = lazy(() => z.int().check(z.gte(LIMITS.versionMin), z.lte(LIMITS.versionMax)));

export const createRequestSchema = lazy(() =>
  z.strictObject({ name: nameSchema(), destinationUrl: destinationUrlSchema(), eventTypes: z.array(eventTypeSchema()).check(z.minLength(1, { error: 'at least one event type is required' })) }),
);
export type CreateRequest = z.infer<ReturnType<typeof createRequestSchema>>;

export const rotateRequestSchema = lazy(() => z.strictObject({ expectedVersion: expectedVersionSchema(), mode: z.enum(ROTATION_MODES) }));
export type RotateRequest = z.infer<ReturnType<typeof rotateRequestSchema>>;

export const expectedVersionRequestSchema = lazy(() => z.strictObject({ expectedVersion: expectedVersionSchema() }));
export type ExpectedVersionRequest = z.infer<ReturnType<typeof expectedVersionRequestSchema>>;

/** The endpoint record's fields are not specified: any JSON object. */
const endpointSchema = lazy(() => z.record(z.string(), z.unknown()));
const metaSchema = lazy(() => z.looseObject({ requestId: z.string(), nextCursor: z.optional(z.unknown()) }));

export const secretResponseSchema = lazy(() =>
  z.looseObject({ data: z.looseObject({ endpoint: endpointSchema(), secret: z.nullable(z.string()), secretAvailable: z.boolean() }), meta: metaSchema() }),
);
export type SecretResponse = z.infer<ReturnType<typeof secretResponseSchema>>;

/** An answer too odd to use that still carries something under data.secret. */
export interface OddSecretAnswer {
  endpointId: string | undefined;
  /** The secret when data.secret is a string; else the whole answer as sent (no copy of a parsed value is faithful), as bytes when not UTF-8. */
  kept: string | Buffer;
  /** Why `kept` is the whole answer: data.secret not a string, not UTF-8, a body not JSON that names a secret, another endpoint's answer. */
  whole: false | 'shape' | 'encoding' | 'unreadable' | 'endpoint';
  /** The secret as read, if it was (to be scrubbed from what is printed). */
  read?: string;
}

/** What create and rotate accept from a 2xx: the spec's envelope, or JSON with something in data.secret (`odd`: a secret not to lose). */
export type SecretAnswer = { ok: true; body: SecretResponse } | { ok: false; odd: OddSecretAnswer };

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `json` is the answer parsed, `res` as received: a secret from bytes not valid UTF-8 would be delivered garbled, so it is odd. */
export function parseSecretAnswer(json: unknown, res: { body: string; notUtf8?: Buffer | undefined }, asked?: { endpointId: string }): SecretAnswer | undefined {
  // Not JSON at all, but the secret may be there in plain sight: the change was applied, so keep it.
  if (json === undefined) return /secret/i.test(res.body) ? { ok: false, odd: { endpointId: undefined, kept: res.notUtf8 ?? res.body, whole: 'unreadable' } } : undefined;
  const data = isJsonObject(json) ? json.data : undefined;
  const held = isJsonObject(data) ? data.secret : undefined;
  // A lone surrogate (`"\ud800"`) cannot be written as UTF-8 either.
  const garbled = typeof held === 'string' && ((res.notUtf8 !== undefined && held.includes('\uFFFD')) || LONE_SURROGATE.test(held));
  if (!garbled) {
    const strict = secretResponseSchema().safeParse(json);
    if (strict.success) {
      // A rotation answered with another endpoint's record: the secret is delivered nowhere, only kept.
      const named = String(strict.data.data.endpoint.id);
      const { secret } = strict.data.data;
      if (asked && named !== asked.endpointId && typeof secret === 'string' && secret !== '')
        return { ok: false, odd: { endpointId: named, kept: res.notUtf8 ?? res.body, whole: 'endpoint', read: secret } };
      return { ok: true, body: strict.data };
    }
  }
  if (!isJsonObject(data)) return undefined;
  const endpoint = isJsonObject(data.endpoint) ? data.endpoint : undefined;
  const endpointId = typeof endpoint?.id === 'string' || typeof endpoint?.id === 'number' ? String(endpoint.id) : undefined;
  if (garbled) return { ok: false, odd: { endpointId, kept: res.notUtf8 ?? res.body, whole: 'encoding', read: held } };
  if (typeof held === 'string') return held === '' ? undefined : { ok: false, odd: { endpointId, kept: held, whole: false, read: held } };
  const holds = typeof held === 'number' || (Array.isArray(held) ? held.length > 0 : isJsonObject(held) && Object.keys(held).length > 0);
  return holds ? { ok: false, odd: { endpointId, kept: res.notUtf8 ?? res.body, whole: 'shape' } } : undefined;
}

export function oddSecretHint(odd: OddSecretAnswer, file: string): string {
  return odd.whole ? `the file holds the whole answer: take the secret from its data.secret, put it where it belongs, then delete ${file}` : `put it where it belongs, then delete ${file}`;
}

export function oddSecretText(odd: OddSecretAnswer, fingerprint: string): string {
  if (odd.whole === 'encoding')
    return `a signing secret that is not valid UTF-8 (bad bytes, or a lone surrogate escape), so it cannot be delivered as sent (the whole answer is kept as received, ${fingerprint} of it)`;
  if (odd.whole === 'unreadable') return `a body that is not JSON but names a secret (the whole answer is kept as received, ${fingerprint} of it)`;
  if (odd.whole === 'shape') return `something under data.secret that may be the signing secret (the whole answer is kept, ${fingerprint} of it)`;
  if (odd.whole === 'endpoint')
    return `a signing secret in an answer that names endpoint ${JSON.stringify(odd.endpointId ?? '')}, not the one asked for, so it is delivered nowhere (the whole answer is kept as received, ${fingerprint} of it)`;
  return `the signing secret ${fingerprint}`;
}

export const mutationResponseSchema = lazy(() => z.looseObject({ data: z.looseObject({ endpoint: endpointSchema(), changed: z.boolean() }), meta: metaSchema() }));
export type MutationResponse = z.infer<ReturnType<typeof mutationResponseSchema>>;

export const errorResponseSchema = lazy(() => z.looseObject({ error: z.looseObject({ code: z.string(), message: z.string(), requestId: z.string(), details: z.record(z.string(), z.unknown()) }) }));

function isAbsoluteHttpUrl(s: string): boolean {
  const u = /^https?:\/\//i.test(s) && URL.canParse(s) ? new URL(s) : undefined;
  return u !== undefined && (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
}
