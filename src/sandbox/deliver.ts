// Signed deliveries from the sandbox: one event to an endpoint's
// destinationUrl, signed (Standard Webhooks, src/signing/) with every secret
// that currently verifies the endpoint: the current one, and during an
// overlap the previous one too. The receiver's answer is reported, never
// retried. The request is plain node:http(s), straight to the destination
// (no proxy), one connection per delivery, so nothing stays open once it is
// answered; it runs beside the API, which keeps answering meanwhile.
import { EVENT_TYPES } from '../api/spec.js';
import { fingerprint } from '../secret/fingerprint.js';
import { parseSecret, signedHeaders } from '../signing/standard-webhooks.js';
import { ApiFailure } from './envelopes.js';
import { newMessageId } from './ids.js';
import type { SandboxState } from './state.js';
import { validationFailure, type FieldProblem } from './validation.js';
import type { DeliveryReport } from './deliverer.js';

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
export async function deliverEvent(state: SandboxState, endpointId: string, body: unknown): Promise<DeliveryReport> {
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
  const report: DeliveryReport = {
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
