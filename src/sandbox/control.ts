// The sandbox's own routes, outside /v1: inspect and steer a running sandbox
// from a test. Loopback callers with the sandbox token only; no Origin or
// anti-forgery header needed, and bodies need no Content-Type.
import type { SandboxRequest } from './api.js';
import { checkBearer } from './auth.js';
import { MAX_BODY_BYTES } from './body.js';
import { ApiFailure, type Reply } from './envelopes.js';
import { deliverEvent } from './deliver.js';
import { checkFaultPatch } from './faults.js';
import { isLoopbackHost } from './ip.js';
import { SANDBOX_MARKER_HEADER } from '../api/schemas.js';
import { validationFailure } from './validation.js';
import type { SandboxState } from './state.js';

export const CONTROL_PREFIX = '/_sandbox';

export const isControlPath = (pathname: string) => pathname === CONTROL_PREFIX || pathname.startsWith(CONTROL_PREFIX + '/');

function jsonBody(request: SandboxRequest): unknown {
  const { bytes, tooLarge } = request.body;
  if (tooLarge) throw validationFailure([{ field: 'body', location: 'body', problem: `must be at most ${MAX_BODY_BYTES} bytes` }]);
  const text = bytes.toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw validationFailure([{ field: 'body', location: 'body', problem: 'is not valid JSON' }]);
  }
}

const ok = (data: unknown): Reply => ({ status: 200, data });

type ControlRoute = (state: SandboxState, request: SandboxRequest) => Reply | Promise<Reply>;

const ROUTES: Record<string, ControlRoute> = {
  'GET /_sandbox/faults': (state) => ok({ faults: state.faults.current }),
  'POST /_sandbox/faults': (state, request) => {
    const patch = checkFaultPatch(jsonBody(request));
    if (!patch.ok) throw validationFailure(patch.problems);
    return ok({ faults: state.faults.update(patch.value) });
  },
  // Back to the start-up settings (--rate-limit, --latency, the faults option): nothing injected.
  'DELETE /_sandbox/faults': (state) => {
    state.faults.reset();
    return ok({ faults: state.faults.current });
  },
  'GET /_sandbox/requests': (state) => ok({ requests: state.requests.list() }),
  'DELETE /_sandbox/requests': (state) => ok({ cleared: state.requests.clear() }),
  'GET /_sandbox/endpoints': (state) => ok({ endpoints: state.endpoints.inspect() }),
  'GET /_sandbox/stats': (state) => ok({ stats: state.stats.snapshot() }),
  'DELETE /_sandbox/stats': (state) => {
    state.stats.clear();
    return ok({ stats: state.stats.snapshot() });
  },
  'GET /_sandbox/clock': (state) => ok({ now: new Date(state.now()).toISOString() }),
  'POST /_sandbox/clock': (state, request) => {
    const body = jsonBody(request);
    const only = typeof body === 'object' && body !== null && Object.keys(body).join() === 'advanceMs';
    const ms = only ? (body as { advanceMs: unknown }).advanceMs : undefined;
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0)
      throw validationFailure([{ field: 'advanceMs', location: 'body', problem: 'must be a non-negative integer (and the only field)' }]);
    state.advanceClock(ms);
    return ok({ now: new Date(state.now()).toISOString() });
  },
  'POST /_sandbox/reset': (state) => {
    state.reset();
    return ok({ reset: true });
  },
};

/** Every control route, as docs/sandbox.md lists them (a test compares the two). */
export const CONTROL_ROUTES = [`GET ${CONTROL_PREFIX}`, ...Object.keys(ROUTES), `POST ${CONTROL_PREFIX}/endpoints/{id}/deliver`];

/** Routes with an endpoint id in their path. */
const DELIVER = /^\/_sandbox\/endpoints\/([^/]+)\/deliver$/;

function routeFor(request: SandboxRequest): ControlRoute | undefined {
  const fixed = ROUTES[`${request.method} ${request.pathname}`];
  if (fixed) return fixed;
  const deliver = request.method === 'POST' ? DELIVER.exec(request.pathname) : null;
  if (!deliver) return undefined;
  let endpointId: string;
  try {
    endpointId = decodeURIComponent(deliver[1]!);
  } catch {
    return undefined;
  }
  return async (state) => ok(await deliverEvent(state, endpointId, jsonBody(request)));
}

export async function handleControlRequest(state: SandboxState, request: SandboxRequest): Promise<Reply | ApiFailure> {
  if (!isLoopbackHost(request.remoteAddress ?? '')) return new ApiFailure(403, 'permission_denied', 'control routes answer loopback callers only', {});
  // `GET /_sandbox` says what this is, without a token: a client can tell a
  // sandbox before it sends anything else (`webhooks trigger` does).
  if (request.method === 'GET' && request.pathname === CONTROL_PREFIX) return { status: 200, data: { sandbox: true }, headers: { [SANDBOX_MARKER_HEADER]: '1' } };
  const refused = checkBearer(request.headers, state.token);
  if (refused) return refused;
  const route = routeFor(request);
  if (!route) return new ApiFailure(404, 'resource_not_found', `no such control route: ${request.method} ${request.pathname}`, {});
  return route(state, request);
}
