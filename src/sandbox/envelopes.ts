// The API's two envelopes (success and error). Handlers deal in data and
// failures; only the HTTP layer adds `meta.requestId`, so an idempotent replay
// can carry the stored data under the replaying request's own id.
import type { ApiErrorCode } from '../api/spec.js';

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

export function successAnswer(reply: Reply, requestId: string): Answer {
  return { status: reply.status, body: { data: reply.data, meta: { requestId } }, headers: { ...reply.headers } };
}

export function errorAnswer(failure: ApiFailure, requestId: string): Answer {
  return {
    status: failure.status,
    body: {
      error: { code: failure.code, message: failure.message, requestId, details: failure.details },
    },
    headers: { ...failure.headers },
  };
}
