// The four operations, after authentication and routing: body checks,
// idempotency, destination rules, then the endpoint store.
import type { IncomingHttpHeaders } from 'node:http';
import { headerValue } from './auth.js';
import { checkDestination } from './destination.js';
import { ApiFailure, type Reply } from './envelopes.js';
import { fingerprint, type KeyScope } from './idempotency.js';
import type { ApiRoute } from './routes.js';
import type { SandboxState } from './state.js';
import { checkCreateBody, checkExpectedVersionBody, checkIdempotencyKey, checkRotateBody, validationFailure, type Checked, type FieldProblem } from './validation.js';

function valid<T>(checked: Checked<T>, extra: FieldProblem | null = null): T {
  if (checked.ok && !extra) return checked.value;
  throw validationFailure([...(checked.ok ? [] : checked.problems), ...(extra ? [extra] : [])]);
}

/** Runs `apply` once per idempotency key; a repeat gets the stored result with the secret withheld. */
function idempotent(state: SandboxState, scope: KeyScope, body: unknown, apply: () => Reply): Reply {
  const print = fingerprint(body);
  const found = state.idempotency.lookup(scope, print);
  if (found.kind === 'conflict')
    throw new ApiFailure(422, 'idempotency_conflict', 'this Idempotency-Key was used with a different request body', {
      idempotencyKey: scope.key,
    });
  if (found.kind === 'replay') {
    const data = { ...(found.result.data as object), secret: null, secretAvailable: false };
    return { status: found.result.status, data, headers: { 'Idempotent-Replayed': 'true' } };
  }
  const reply = apply();
  // Only successes are kept: a refusal changed nothing, so running the same key again is safe.
  state.idempotency.save(scope, print, { status: reply.status, data: reply.data });
  return reply;
}

export function runOperation(state: SandboxState, route: ApiRoute, body: unknown, headers: IncomingHttpHeaders): Reply {
  const endpointId = route.endpointId ?? '';
  const idempotencyKey = headerValue(headers, 'idempotency-key');
  const keyScope = (): KeyScope => ({ token: state.token, method: 'POST', path: route.key, key: idempotencyKey! });

  switch (route.operation) {
    case 'create': {
      const input = valid(checkCreateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, keyScope(), body, () => {
        const verdict = checkDestination(input.destinationUrl);
        if (!verdict.ok)
          throw new ApiFailure(422, 'webhook_destination_rejected', verdict.message, {
            field: 'destinationUrl',
            reason: verdict.reason,
          });
        const { endpoint, secret } = state.endpoints.create(input);
        return { status: 201, data: { endpoint, secret, secretAvailable: true } };
      });
    }
    case 'rotate': {
      const input = valid(checkRotateBody(body), checkIdempotencyKey(idempotencyKey));
      return idempotent(state, keyScope(), body, () => {
        const { endpoint, secret } = state.endpoints.rotate(endpointId, input.expectedVersion, input.mode);
        return { status: 200, data: { endpoint, secret, secretAvailable: true } };
      });
    }
    case 'reactivate':
    case 'deactivate': {
      const input = valid(checkExpectedVersionBody(body));
      const status = route.operation === 'reactivate' ? 'active' : 'inactive';
      const { endpoint, changed } = state.endpoints.setStatus(endpointId, input.expectedVersion, status);
      return { status: 200, data: { endpoint, changed } };
    }
  }
}
