// chatctl webhooks trigger ENDPOINT_ID --event TYPE: the sandbox sends one
// signed event to the endpoint's destination; this says what the receiver answered.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { EVENT_TYPES } from '../../api/schemas.js';
import type { Delivery } from '../../http/sandbox-client.js';
import { localError, usageError } from '../../errors/cli-error.js';
import { eventTypeHint } from '../../errors/explain.js';
import { writeJson } from '../../output/io.js';
import { escapeInline } from '../../output/json.js';

export function registerTrigger(parent: Command, f: Factory): void {
  parent
    .command('trigger')
    .description("sandbox only: have the sandbox send one signed event to the endpoint's destination, and show what the receiver answered")
    .argument('<endpoint-id>', 'the endpoint to deliver to')
    .option('--event <type>', 'the event type to deliver (one the endpoint subscribes to)')
    .addHelpText(
      'after',
      examples('chatctl webhooks trigger we_123 --event chat.message.created.v1', 'chatctl webhooks trigger we_123 --event chat.message.created.v1 --json | jq .data.delivery.receiver') +
        `
Works against \`chatctl sandbox\` only: it first checks GET /_sandbox (no
credentials sent) and exits 2 against anything else. The delivery is signed
with every secret valid now: during an overlap rotation the new and the
previous one. Exit 0: the receiver answered 2xx; 9: it answered something
else (delivery_refused); 12: it could not be reached (delivery_failed).
See docs/signing.md for rehearsing a rotation against your own receiver.
`,
    )
    .action((endpointId: string, opts) => runTrigger(endpointId, opts, f));
}

export async function runTrigger(endpointId: string, flags: { event?: string }, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  if (endpointId.trim() === '') throw usageError('ENDPOINT_ID is empty');
  const eventType = flags.event?.trim();
  if (eventType === undefined || eventType === '') throw usageError('--event is required', 'the event type to deliver, one the endpoint subscribes to, e.g. --event chat.message.created.v1');
  if (!(EVENT_TYPES as readonly string[]).includes(eventType))
    throw usageError(`invalid --event "${escapeInline(eventType)}": not one of the ${EVENT_TYPES.length} event types`, eventTypeHint(eventType));
  const [{ requireSandbox, sandboxDeliver }, { config }] = await Promise.all([import('../../http/sandbox-client.js'), f.client()]);
  // A dry run sends nothing, not even the check: it shows the delivery request.
  if (!state.dryRun) await requireSandbox(config);
  const envelope = await sandboxDeliver(config, endpointId, { eventType });
  const d = envelope.data.delivery;
  if (state.output.json) writeJson(ctx.io, envelope);
  else ctx.io.stdout.write(describe(d));
  const failure = deliveryFailure(d);
  if (failure) throw failure;
}

/** What happened, in one line first: delivered (2xx), refused (another status), or not delivered and why. */
function describe(d: Delivery): string {
  const r = d.receiver;
  const event = escapeInline(d.eventType);
  const to = escapeInline(d.destinationUrl);
  const took = r.durationMs !== undefined ? ` in ${r.durationMs} ms` : '';
  const outcome =
    r.status === null
      ? `Not delivered: ${event} could not be sent to ${to}: the receiver could not be reached (${escapeInline(r.error ?? 'no answer')}).`
      : r.ok
        ? `Delivered ${event} to ${to}: the receiver answered ${r.status}${took}.`
        : `Not accepted: ${event} was sent to ${to}, and the receiver answered ${r.status}${took}.`;
  const signed = d.signedWith.map((s) => `${escapeInline(s.fingerprint)} (${escapeInline(s.secret)}${s.expiresAt ? `, valid until ${escapeInline(s.expiresAt)}` : ''})`).join(', ');
  return [outcome, `webhook-id   ${escapeInline(d.webhookId)}`, `signed with  ${signed}`, ...(r.body ? [`answer       ${escapeInline(r.body.slice(0, 200))}`] : []), ''].join('\n');
}

/** The error a delivery that the receiver did not accept ends with: 12 when it was not reached, 9 when it refused. */
function deliveryFailure(d: Delivery) {
  const r = d.receiver;
  if (r.ok) return undefined;
  const details = { endpointId: d.endpointId, webhookId: d.webhookId, delivered: false, receiverStatus: r.status, receiverBody: r.body, receiverError: r.error };
  if (r.status === null) {
    return localError('delivery_failed', `not delivered: the receiver at ${d.destinationUrl} could not be reached: ${r.error ?? 'no answer'}`, {
      hint: "start the receiver (or check that it listens where the endpoint's destinationUrl points), then trigger again",
      details,
    });
  }
  return localError('delivery_refused', `the receiver answered ${r.status}${r.body ? `: ${r.body.slice(0, 200)}` : ''}`, {
    hint: 'a signature refused? check it with chatctl webhooks verify, and the secrets the receiver holds with chatctl webhooks fingerprint',
    details,
  });
}
