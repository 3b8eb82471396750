// chatctl webhooks reactivate: its options, help and examples. The action loads
// the command's module when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';

export function registerReactivate(parent: Command, f: Factory): void {
  parent
    .command('reactivate')
    .description('reactivate a deactivated endpoint')
    .argument('<endpoint-id>', 'the endpoint to reactivate')
    .option('--expected-version <n>', "the endpoint's current version; last: the one this machine last saw (used at a terminal when left out)")
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
