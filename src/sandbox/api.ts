// One API request through the checks in their fixed order (docs/sandbox.md): injected faults, rate limit,
// bearer token, Origin/anti-forgery headers, route, body, idempotency, then the operation.
import { attempt } from '../system/files.js';
import type { Scope } from '../api/schemas.js';
import { checkDestination } from './ip.js';
import { ApiFailure, checkBearer, checkBrowserHeaders, checkCreateBody, checkExpectedVersionBody, checkIdempotencyKey, checkRotateBody, headerValue, parseJsonBody, valid } from './protocol.js';
import type { Outcome, Reply, SandboxRequest } from './protocol.js';
import { fingerprint, type KeyScope, type SandboxState } from './state.js';

/** `key`: method and decoded path, the route part of an idempotency key. */
type ApiRoute = { operation: 'create' | 'rotate' | 'reactivate' | 'deactivate'; endpointId: string | null; key: string };

/** The spec's three operations and deactivate, matched on decoded path segments. */
export function matchApiRoute(method: string, pathname: string, scope: Scope): ApiRoute | null {
  const s = method === 'POST' ? attempt(() => pathname.split('/').slice(1).map(decodeURIComponent)) : undefined;
  if (!s) return null;
  const prefix = ['v1', 'organizations', scope.organizationId, 'applications', scope.applicationId, 'environments', scope.environmentKey, 'webhook-endpoints'];
  if (s.length < prefix.length || prefix.some((segment, i) => s[i] !== segment)) return null;
  const [endpointId, ...action] = s.slice(prefix.length);
  const key = `${method} ${JSON.stringify(s)}`;
  if (endpointId === undefined) return { operation: 'create', endpointId: null, key };
  if (endpointId === '') return null;
  const verb = action.join('/');
  const operation = verb === 'secret/rotate' ? 'rotate' : verb === 'reactivate' || verb === 'deactivate' ? verb : null;
  return operation ? { operation, endpointId, key } : null;
}

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
  try {
    return runOperation(state, route, valid(parseJsonBody(request.body)), headerValue(request.headers, 'idempotency-key'));
  } catch (error) {
    if (error instanceof ApiFailure) return error;
    throw error;
  }
}

/** Runs `apply` once per idempotency key; a repeat gets the stored result with the secret withheld. */
function idempotent(state: SandboxState, route: ApiRoute, key: string | undefined, body: unknown, apply: () => Reply): Reply {
  const scope: KeyScope = { token: state.options.token, method: 'POST', path: route.key, key: key! };
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
  switch (route.operation) {
    case 'create': {
      const input = valid(checkCreateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, route, idempotencyKey, body, () => {
        const verdict = checkDestination(input.destinationUrl);
        if (!verdict.ok) throw new ApiFailure(422, 'webhook_destination_rejected', verdict.message, { field: 'destinationUrl', reason: verdict.reason });
        return { status: 201, data: { ...state.endpoints.create(input), secretAvailable: true } };
      });
    }
    case 'rotate': {
      const input = valid(checkRotateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, route, idempotencyKey, body, () => ({ status: 200, data: { ...state.endpoints.rotate(endpointId, input.expectedVersion, input.mode), secretAvailable: true } }));
    }
    case 'reactivate':
    case 'deactivate': {
      const input = valid(checkExpectedVersionBody(body));
      return { status: 200, data: state.endpoints.setStatus(endpointId, input.expectedVersion, route.operation === 'reactivate' ? 'active' : 'inactive') };
    }
  }
}
