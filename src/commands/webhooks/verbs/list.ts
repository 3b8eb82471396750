// chatctl webhooks list and show: their options, help and examples. The
// actions load the command's module when they run.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';

const SAW = `
What this machine saw: every create, rotate and reactivate answer (and each
version conflict that names the current version) is noted under the config
folder's facts/. The API cannot list or read endpoints, so a change made
elsewhere shows only once a conflict names it. See docs/inventory.md.
`;

export function registerList(parent: Command, f: Factory): void {
  parent
    .command('list')
    .description("the endpoints this machine saw, with version, status and where the secret went (not the server's state)")
    .option('--all-scopes', "every scope, not only the profile's (org/app/env)")
    .addHelpText('after', examples('chatctl webhooks list', 'chatctl webhooks list --all-scopes', 'chatctl webhooks list --json') + SAW)
    .action(async (opts) => {
      const { runList } = await import('../inventory.js');
      await runList(opts, f);
    });
}

export function registerShow(parent: Command, f: Factory): void {
  parent
    .command('show')
    .description('one endpoint as this machine saw it, with the history of its facts (never a secret)')
    .argument('<endpoint-id>', 'the endpoint to show')
    .addHelpText('after', examples('chatctl webhooks show we_123', 'chatctl webhooks show we_123 --json') + SAW)
    .action(async (endpointId: string) => {
      const { runShow } = await import('../inventory.js');
      await runShow(endpointId, f);
    });
}
