// Signed deliveries from the sandbox: one event to an endpoint's
// destinationUrl, signed (Standard Webhooks, src/signing/) with every secret
// that currently verifies the endpoint: the current one, and during an
// overlap the previous one too. The receiver's answer is reported, never
// retried. The request is plain node:http(s), straight to the destination
// (no proxy), one connection per delivery, so nothing stays open once it is
// answered; it runs beside the API, which keeps answering meanwhile.
import http from 'node:http';
import https from 'node:https';
import { EVENT_TYPES } from '../api/spec.js';
import { fingerprint } from '../secret/fingerprint.js';
import { parseSecret, signedHeaders } from '../signing/standard-webhooks.js';
import { ApiFailure } from './envelopes.js';
import { newMessageId } from './ids.js';
import { validationFailure } from './operations.js';
import type { SandboxState } from './state.js';
import type { FieldProblem } from './validation.js';

/** How long a receiver has to answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of the receiver's answer the report keeps. */
const MAX_ANSWER_CHARS = 1024;

export interface ReceiverAnswer {
  /** Its HTTP status, or null when it could not be reached or did not answer in time. */
  status: number | null;
  /** A 2xx status. */
  ok: boolean;
  durationMs: number;
  /** The start of its body (at most 1024 characters), or null. */
  body: string | null;
  /** Why there is no status. */
  error: string | null;
}

export interface DeliverInput {
  eventType: string;
  data: Record<string, unknown>;
}

function checkDeliverBody(body: unknown): DeliverInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationFailure([{ field: 'body', location: 'body', problem: 'must be a JSON object' }]);
  const record = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  if (!Object.hasOwn(record, 'eventType')) problems.push({ field: 'eventType', location: 'body', problem: 'is required' });
  else if (typeof record.eventType !== 'string' || !(EVENT_TYPES as readonly string[]).includes(record.eventType))
    problems.push({ field: 'eventType', location: 'body', problem: `must be one of the ${EVENT_TYPES.length} event types` });
  const data = record.data;
  if (data !== undefined && (typeof data !== 'object' || data === null || Array.isArray(data))) problems.push({ field: 'data', location: 'body', problem: 'must be a JSON object' });
  for (const field of Object.keys(record)) if (field !== 'eventType' && field !== 'data') problems.push({ field, location: 'body', problem: 'is not an allowed field' });
  if (problems.length) throw validationFailure(problems);
  return { eventType: record.eventType as string, data: (data as Record<string, unknown> | undefined) ?? {} };
}

/** POST /_sandbox/endpoints/{id}/deliver: sends one signed event and reports what the receiver answered. */
export async function deliverEvent(state: SandboxState, endpointId: string, body: unknown) {
  const input = checkDeliverBody(body);
  const target = state.endpoints.deliveryTarget(endpointId);
  const { endpoint } = target;
  if (endpoint.status !== 'active') throw new ApiFailure(409, 'conflict', 'the endpoint is inactive: nothing is delivered to it until it is reactivated', { endpointId, status: endpoint.status });
  if (!(endpoint.eventTypes as string[]).includes(input.eventType))
    throw validationFailure([{ field: 'eventType', location: 'body', problem: `is not one of the endpoint's event types (${endpoint.eventTypes.join(', ')})` }]);
  // The time of sending, which a receiver compares with its own clock: the
  // clock without what POST /_sandbox/clock added (that moves the sandbox's
  // own deadlines, such as the end of an overlap, not the real time).
  const sentAt = state.baseNow();
  const timestamp = Math.floor(sentAt / 1000);
  const webhookId = newMessageId(state.randomBytes);
  const payload = JSON.stringify({ type: input.eventType, timestamp: new Date(sentAt).toISOString(), data: input.data });
  const keys = target.secrets.map((s) => {
    const key = parseSecret(s.secret);
    if (!key.ok) throw new Error(`an endpoint secret the sandbox made is not one: ${key.problem}`);
    return key.value;
  });
  const headers = signedHeaders(keys, webhookId, timestamp, payload);
  const receiver = await state.deliverer.send(endpoint.destinationUrl, { ...headers, 'content-type': 'application/json', 'user-agent': 'chatctl-sandbox' }, payload);
  const report = {
    delivery: {
      endpointId,
      eventType: input.eventType,
      destinationUrl: endpoint.destinationUrl,
      webhookId,
      timestamp,
      // Which secrets signed it, by fingerprint (never the secrets), newest first, in the order of the signatures.
      signedWith: target.secrets.map((s) => ({ fingerprint: fingerprint(s.secret), secret: s.role, ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}) })),
      request: { headers, body: payload },
      receiver,
    },
  };
  state.onDelivery?.(report, new Date(state.now()).toISOString());
  return report;
}

export type DeliveryReport = Awaited<ReturnType<typeof deliverEvent>>;

/** Sends deliveries and ends the ones in flight when the sandbox stops. */
export class Deliverer {
  private readonly inFlight = new Set<http.ClientRequest>();

  constructor(private readonly timeoutMs = DELIVERY_TIMEOUT_MS) {}

  send(url: string, headers: Record<string, string>, body: string): Promise<ReceiverAnswer> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<ReceiverAnswer>((resolve) => {
      const failed = (error: string) => resolve({ status: null, ok: false, durationMs: elapsed(), body: null, error });
      const target = new URL(url);
      const client = target.protocol === 'https:' ? https : http;
      const req = client.request(target, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        timeout: this.timeoutMs,
      });
      this.inFlight.add(req);
      req.on('close', () => this.inFlight.delete(req));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) => failed(err.code ? `${err.code}: ${err.message}` : err.message));
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < MAX_ANSWER_CHARS) text += chunk;
        });
        const done = () => {
          const status = res.statusCode ?? null;
          resolve({ status, ok: status !== null && status >= 200 && status < 300, durationMs: elapsed(), body: text.slice(0, MAX_ANSWER_CHARS), error: null });
        };
        res.on('end', done);
        // A receiver that answers and then drops the connection still answered.
        res.on('aborted', done);
        res.on('error', done);
      });
      req.end(body);
    });
  }

  /** Ends every delivery still waiting for its receiver. */
  close(): void {
    for (const req of this.inFlight) req.destroy(new Error('the sandbox stopped'));
    this.inFlight.clear();
  }
}
