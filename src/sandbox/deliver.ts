// Signed deliveries from the sandbox: one event to an endpoint's
// destinationUrl, signed (Standard Webhooks, src/signing/) with every secret
// that currently verifies the endpoint: the current one, and during an
// overlap the previous one too. Sent by deliverer.ts; it runs beside the
// API, which keeps answering meanwhile.
import { fingerprint } from '../secret/facts.js';
import { parseSecret, signedHeaders } from '../signing/standard-webhooks.js';
import { ApiFailure } from './envelopes.js';
import { newMessageId } from './ids.js';
import type { SandboxState } from './state.js';
import { checkDeliverBody, validationFailure } from './validation.js';
import type { DeliveryReport } from './deliverer.js';

/** POST /_sandbox/endpoints/{id}/deliver: sends one signed event and reports what the receiver answered. */
export async function deliverEvent(state: SandboxState, endpointId: string, body: unknown): Promise<DeliveryReport> {
  const checked = checkDeliverBody(body);
  if (!checked.ok) throw validationFailure(checked.problems);
  const input = checked.value;
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
  const payload = JSON.stringify({ type: input.eventType, timestamp: new Date(sentAt).toISOString(), data: input.data ?? {} });
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
      signedWith: target.secrets.map((s) => ({ fingerprint: fingerprint(s.secret), secret: s.role, ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}) })),
      request: { headers, body: payload },
      receiver,
    },
  };
  state.onDelivery?.(report, new Date(state.now()).toISOString());
  return report;
}
