// The API's two envelopes (success and error). Handlers deal in data and
// failures; only the HTTP layer adds `meta.requestId`, so an idempotent replay
// can carry the stored data under the replaying request's own id.
import type { ApiErrorCode } from '../api/schemas.js';

export type Details = Record<string, unknown>;

/** A refusal the sandbox answers with the spec's error envelope. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly details: Details = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiFailure';
  }
}

/** A successful answer before it is wrapped in `{data, meta}`. */
export interface Reply {
  status: number;
  data: unknown;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** An outcome in its envelope, under the answering request's id. */
export function toAnswer(outcome: Reply | ApiFailure, requestId: string): Answer {
  if (!(outcome instanceof ApiFailure)) return { status: outcome.status, body: { data: outcome.data, meta: { requestId } }, headers: { ...outcome.headers } };
  const { status, code, message, details, headers } = outcome;
  return { status, body: { error: { code, message, requestId, details } }, headers: { ...headers } };
}
