// The sandbox's own routes, outside /v1, to inspect and steer it from a test: loopback callers with the
// sandbox token only, no Origin or anti-forgery header, bodies need no Content-Type.
import { attempt } from '../system/files.js';
import http from 'node:http';
import https from 'node:https';
import { SANDBOX_MARKER_HEADER } from '../api/schemas.js';
import { fingerprint } from '../secret/facts.js';
import { parseSecret, signedHeaders } from '../signing/standard-webhooks.js';
import { checkFaultPatch } from './faults.js';
import { isLoopbackHost } from './ip.js';
import { ApiFailure, bodyProblem, checkBearer, checkDeliverBody, MAX_BODY_BYTES, newMessageId, valid, validationFailure } from './protocol.js';
import type { DeliveryReport, ReceiverAnswer, Reply, SandboxRequest } from './protocol.js';
import { noStats, type SandboxState } from './state.js';

export const isControlPath = (pathname: string) => pathname === '/_sandbox' || pathname.startsWith('/_sandbox/');

function jsonBody({ body }: SandboxRequest): unknown {
  if (body.tooLarge) return valid(bodyProblem(`must be at most ${MAX_BODY_BYTES} bytes`));
  const text = body.bytes.toString('utf8').trim();
  if (text === '') return {};
  // JSON.parse never gives undefined (a body of null is null): undefined is its throw.
  const value = attempt(() => JSON.parse(text) as unknown);
  return value === undefined ? valid(bodyProblem('is not valid JSON')) : value;
}

const ok = (data: unknown): Reply => ({ status: 200, data });
const clock = (state: SandboxState) => ok({ now: new Date(state.now()).toISOString() });

type ControlRoute = (state: SandboxState, request: SandboxRequest) => Reply;

const ROUTES: Record<string, ControlRoute> = {
  'GET /_sandbox/faults': (state) => ok({ faults: state.faults.current }),
  'POST /_sandbox/faults': (state, request) => ok({ faults: state.faults.update(valid(checkFaultPatch(jsonBody(request)))) }),
  // Back to the start-up settings (--rate-limit, --latency, the faults option).
  'DELETE /_sandbox/faults': (state) => ok({ faults: state.faults.reset() }),
  'GET /_sandbox/requests': (state) => ok({ requests: [...state.requests] }),
  'DELETE /_sandbox/requests': (state) => ok({ cleared: state.requests.splice(0).length }),
  'GET /_sandbox/endpoints': (state) => ok({ endpoints: state.endpoints.inspect() }),
  'GET /_sandbox/stats': (state) => ok({ stats: structuredClone(state.stats) }),
  'DELETE /_sandbox/stats': (state) => ok({ stats: structuredClone((state.stats = noStats())) }),
  'GET /_sandbox/clock': clock,
  'POST /_sandbox/clock': (state, request) => {
    const body = jsonBody(request);
    const ms = typeof body === 'object' && body !== null && Object.keys(body).join() === 'advanceMs' ? (body as { advanceMs: unknown }).advanceMs : undefined;
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0)
      throw validationFailure([{ field: 'advanceMs', location: 'body', problem: 'must be a non-negative integer (and the only field)' }]);
    state.offsetMs += ms;
    return clock(state);
  },
  'POST /_sandbox/reset': (state) => {
    state.reset();
    return ok({ reset: true });
  },
};

/** Every control route, as docs/sandbox.md lists them (a test compares the two). */
export const CONTROL_ROUTES = ['GET /_sandbox', ...Object.keys(ROUTES), 'POST /_sandbox/endpoints/{id}/deliver'];

/** The endpoint id in a deliver route's path, if the path is one and decodes. */
function deliverTo({ method, pathname }: SandboxRequest): string | null {
  const raw = method === 'POST' ? /^\/_sandbox\/endpoints\/([^/]+)\/deliver$/.exec(pathname)?.[1] : undefined;
  return raw === undefined ? null : (attempt(() => decodeURIComponent(raw)) ?? null);
}

export async function handleControlRequest(state: SandboxState, request: SandboxRequest): Promise<Reply | ApiFailure> {
  const { method, pathname } = request;
  if (!isLoopbackHost(request.remoteAddress ?? '')) return new ApiFailure(403, 'permission_denied', 'control routes answer loopback callers only', {});
  // Answered without a token, so a client can tell a sandbox before it sends anything else (`webhooks trigger` does).
  if (method === 'GET' && pathname === '/_sandbox') return { status: 200, data: { sandbox: true }, headers: { [SANDBOX_MARKER_HEADER]: '1' } };
  const refused = checkBearer(request.headers, state.options.token);
  if (refused) return refused;
  const endpointId = deliverTo(request);
  if (endpointId !== null) return ok(await deliverEvent(state, endpointId, jsonBody(request)));
  const route = ROUTES[`${method} ${pathname}`];
  return route ? route(state, request) : new ApiFailure(404, 'resource_not_found', `no such control route: ${method} ${pathname}`, {});
}

/** One event to the endpoint's destination, signed with every secret that verifies it now (both during an overlap). */
async function deliverEvent(state: SandboxState, endpointId: string, body: unknown): Promise<DeliveryReport> {
  const { eventType, data } = valid(checkDeliverBody(body));
  const { endpoint, secrets } = state.endpoints.deliveryTarget(endpointId);
  if (endpoint.status !== 'active') throw new ApiFailure(409, 'conflict', 'the endpoint is inactive: nothing is delivered to it until it is reactivated', { endpointId, status: endpoint.status });
  if (!(endpoint.eventTypes as string[]).includes(eventType))
    throw validationFailure([{ field: 'eventType', location: 'body', problem: `is not one of the endpoint's event types (${endpoint.eventTypes.join(', ')})` }]);
  // The real time, which a receiver compares with its own clock: without state.offsetMs.
  const sentAt = state.options.now();
  const timestamp = Math.floor(sentAt / 1000);
  const webhookId = newMessageId(state.options.randomBytes);
  const payload = JSON.stringify({ type: eventType, timestamp: new Date(sentAt).toISOString(), data: data ?? {} });
  const keys = secrets.map((s) => {
    const key = parseSecret(s.secret);
    if (!key.ok) throw new Error(`an endpoint secret the sandbox made is not one: ${key.problem}`);
    return key.value;
  });
  const headers = signedHeaders(keys, webhookId, timestamp, payload);
  const receiver = await send(state, endpoint.destinationUrl, { ...headers, 'content-type': 'application/json', 'user-agent': 'chatctl-sandbox' }, payload);
  const signedWith = secrets.map((s) => ({ fingerprint: fingerprint(s.secret), secret: s.role, ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}) }));
  const report = { delivery: { endpointId, eventType, destinationUrl: endpoint.destinationUrl, webhookId, timestamp, signedWith, request: { headers, body: payload }, receiver } };
  state.options.onDelivery?.(report, new Date(state.now()).toISOString());
  return report;
}

export const DELIVERY_TIMEOUT_MS = 10_000;
const MAX_ANSWER_CHARS = 1024;

/** One POST, plain node:http(s), no proxy, a connection of its own, never retried; the API keeps answering meanwhile. */
function send(state: SandboxState, url: string, headers: Record<string, string>, body: string): Promise<ReceiverAnswer> {
  const started = performance.now();
  const answer = (status: number | null, text: string | null, error: string | null): ReceiverAnswer => {
    return { status, ok: status !== null && status >= 200 && status < 300, durationMs: Math.round(performance.now() - started), body: text, error };
  };
  return new Promise((resolve) => {
    const target = new URL(url);
    const options = { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, timeout: DELIVERY_TIMEOUT_MS };
    const req = (target.protocol === 'https:' ? https : http).request(target, options);
    state.deliveries.add(req);
    req.on('close', () => state.deliveries.delete(req));
    req.on('timeout', () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(answer(null, null, err.code ? `${err.code}: ${err.message}` : err.message)));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < MAX_ANSWER_CHARS) text += chunk;
      });
      // A receiver that answers and then drops the connection still answered.
      for (const event of ['end', 'aborted', 'error']) res.on(event, () => resolve(answer(res.statusCode ?? null, text.slice(0, MAX_ANSWER_CHARS), null)));
    });
    req.end(body);
  });
}
