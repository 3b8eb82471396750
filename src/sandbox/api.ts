// One API request through the checks in their fixed order (docs/sandbox.md): injected faults, rate limit,
// bearer token, Origin/anti-forgery headers, route, body, idempotency, then the operation.
import type { IncomingHttpHeaders } from 'node:http';
import { checkDestination } from './ip.js';
import {
  ApiFailure,
  checkBearer,
  checkBrowserHeaders,
  checkCreateBody,
  checkExpectedVersionBody,
  checkIdempotencyKey,
  checkRotateBody,
  headerValue,
  matchApiRoute,
  parseJsonBody,
  validationFailure,
  type ApiRoute,
  type Checked,
  type FieldProblem,
  type RawBody,
  type Reply,
} from './protocol.js';
import { fingerprint, type KeyScope, type SandboxState } from './state.js';

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
    state.stats.rateLimited += 1;
    const { limit, waitMs } = admission;
    // Retry-After is whole seconds, rounded up so that waiting it always works; Retry-After-Ms is the real wait.
    const headers = { 'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))), 'Retry-After-Ms': String(waitMs) };
    return new ApiFailure(429, 'rate_limit_exceeded', `more than ${limit} requests per second for this token`, { limit, windowSeconds: 1 }, headers);
  }
  const refused = checkBearer(request.headers, state.options.token) ?? checkBrowserHeaders(request.headers);
  if (refused) return refused;
  const route = matchApiRoute(request.method, request.pathname, state.scope);
  if (!route) return new ApiFailure(404, 'resource_not_found', `no such resource: ${request.method} ${request.pathname}`, {});
  const body = parseJsonBody(request.body);
  if (!body.ok) return validationFailure(body.problems);
  try {
    return runOperation(state, route, body.value, headerValue(request.headers, 'idempotency-key'));
  } catch (error) {
    if (error instanceof ApiFailure) return error;
    throw error;
  }
}

function valid<T>(checked: Checked<T>, extra: FieldProblem | null = null): T {
  if (checked.ok && !extra) return checked.value;
  throw validationFailure([...(checked.ok ? [] : checked.problems), ...(extra ? [extra] : [])]);
}

/** Runs `apply` once per idempotency key; a repeat gets the stored result with the secret withheld. */
function idempotent(state: SandboxState, scope: KeyScope, body: unknown, apply: () => Reply): Reply {
  const print = fingerprint(body);
  const found = state.idempotency.lookup(scope, print);
  if (found.kind === 'conflict') throw new ApiFailure(422, 'idempotency_conflict', 'this Idempotency-Key was used with a different request body', { idempotencyKey: scope.key });
  if (found.kind === 'replay') {
    const data = { ...(found.result.data as object), secret: null, secretAvailable: false };
    return { status: found.result.status, data, headers: { 'Idempotent-Replayed': 'true' } };
  }
  const reply = apply();
  // Only successes are kept: a refusal changed nothing, so running the same key again is safe.
  state.idempotency.save(scope, print, { status: reply.status, data: reply.data });
  return reply;
}

function runOperation(state: SandboxState, route: ApiRoute, body: unknown, idempotencyKey: string | undefined): Reply {
  const endpointId = route.endpointId ?? '';
  const keyScope = (): KeyScope => ({ token: state.options.token, method: 'POST', path: route.key, key: idempotencyKey! });
  switch (route.operation) {
    case 'create': {
      const input = valid(checkCreateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, keyScope(), body, () => {
        const verdict = checkDestination(input.destinationUrl);
        if (!verdict.ok) throw new ApiFailure(422, 'webhook_destination_rejected', verdict.message, { field: 'destinationUrl', reason: verdict.reason });
        return { status: 201, data: { ...state.endpoints.create(input), secretAvailable: true } };
      });
    }
    case 'rotate': {
      const input = valid(checkRotateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, keyScope(), body, () => ({ status: 200, data: { ...state.endpoints.rotate(endpointId, input.expectedVersion, input.mode), secretAvailable: true } }));
    }
    case 'reactivate':
    case 'deactivate': {
      const input = valid(checkExpectedVersionBody(body));
      return { status: 200, data: state.endpoints.setStatus(endpointId, input.expectedVersion, route.operation === 'reactivate' ? 'active' : 'inactive') };
    }
  }
}
