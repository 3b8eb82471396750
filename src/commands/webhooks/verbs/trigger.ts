// chatctl webhooks trigger: its options, help and examples. The action loads
// the command's module when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';

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
    .action(async (endpointId: string, opts) => {
      const { runTrigger } = await import('../signed-deliveries.js');
      await runTrigger(endpointId, opts, f);
    });
}
