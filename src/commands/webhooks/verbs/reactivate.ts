// chatctl webhooks reactivate: its options, help and examples. The action loads
// the command's module when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';

export function registerReactivate(parent: Command, f: Factory): void {
  parent
    .command('reactivate')
    .description('reactivate a deactivated endpoint')
    .argument('<endpoint-id>', 'the endpoint to reactivate')
    .option(
      '--expected-version <n>',
      "the endpoint's current version (optimistic concurrency); last: the version this machine last saw (webhooks list); at a terminal, left out, the last-seen version is used and said",
    )
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks reactivate we_123 --expected-version 4',
        'chatctl webhooks reactivate we_123 --expected-version 4 --json',
        'chatctl webhooks reactivate we_123 --expected-version last',
      ),
    )
    .action(async (endpointId: string, opts) => {
      const { runReactivate } = await import('../reactivate.js');
      await runReactivate(endpointId, opts, f);
    });
}
