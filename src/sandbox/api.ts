// One API request through the checks in their fixed order: injected faults,
// rate limit (per bearer token), bearer token, Origin/anti-forgery headers, route, body, then the
// operation. Pure over the state: the HTTP layer does the I/O.
import type { IncomingHttpHeaders } from 'node:http';
import { checkBearer, checkBrowserHeaders, headerValue } from './auth.js';
import { parseJsonBody, type RawBody } from './body.js';
import { ApiFailure, type Reply } from './envelopes.js';
import { runOperation } from './operations.js';
import { validationFailure } from './validation.js';
import { matchApiRoute } from './routes.js';
import type { SandboxState } from './state.js';

export interface SandboxRequest {
  method: string;
  /** Path without the query, still percent-encoded. */
  pathname: string;
  headers: IncomingHttpHeaders;
  body: RawBody;
  remoteAddress: string | undefined;
}

/** A reply, or a connection to drop without answering. */
export type Outcome = Reply | ApiFailure | 'drop';

export function handleApiRequest(state: SandboxState, request: SandboxRequest): Outcome {
  const injected = state.faults.takeFailure();
  if (injected) {
    if (injected.dropConnection) return 'drop';
    const retryAfter: Record<string, string> = injected.retryAfter === null ? {} : { 'Retry-After': String(injected.retryAfter) };
    return new ApiFailure(injected.status, injected.code, `injected fault: ${injected.code}`, { injected: true }, retryAfter);
  }
  const admission = state.faults.admit(headerValue(request.headers, 'authorization') ?? '');
  if (!admission.ok) {
    state.stats.limited();
    const { limit, waitMs } = admission;
    // Retry-After is whole seconds (rounded up, so waiting it always works);
    // Retry-After-Ms says the real wait, for clients that read it.
    return new ApiFailure(
      429,
      'rate_limit_exceeded',
      `more than ${limit} requests per second for this token`,
      { limit, windowSeconds: 1 },
      {
        'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))),
        'Retry-After-Ms': String(waitMs),
      },
    );
  }
  const refused = checkBearer(request.headers, state.token) ?? checkBrowserHeaders(request.headers);
  if (refused) return refused;
  const route = matchApiRoute(request.method, request.pathname, state.scope);
  if (!route) return new ApiFailure(404, 'resource_not_found', `no such resource: ${request.method} ${request.pathname}`, {});
  const body = parseJsonBody(request.body);
  if (!body.ok) return validationFailure(body.problems);
  try {
    return runOperation(state, route, body.value, request.headers);
  } catch (error) {
    if (error instanceof ApiFailure) return error;
    throw error;
  }
}
