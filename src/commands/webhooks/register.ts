// chatctl webhooks create|rotate|reactivate: options, help and examples.
// Each action loads its command module when it runs.
import { Option, type Command } from 'commander';
import { EVENT_TYPES } from '../../api/spec.js';
import { collect, examples, type App } from '../app.js';

export function registerWebhooks(webhooks: Command, app: App): void {
  const { ctx, globals, prompter } = app;
  webhooks
    .command('create')
    .description('create a signed webhook endpoint and receive its signing secret (shown once)')
    .option('--name <name>', 'display name, 1 to 80 characters')
    .option('--url <url>', 'destination URL: absolute https:// URL, at most 2048 characters')
    .addOption(new Option('--event <type>', 'event type to subscribe to; repeat it or give a comma-separated list').argParser(collect))
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .option('--secret-file <path>', 'write the signing secret to this new file (mode 0600) instead of printing it')
    .option('--force', 'with --secret-file: replace the file if it exists')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1,chat.message.updated.v1 --secret-file ./billing.whsec',
        'chatctl webhooks create --name audit --url https://audit.example.com/in --event chat.message.deleted.v1 --json > endpoint.json',
      ) + `\nEvent types:\n${EVENT_TYPES.map((e) => `  ${e}`).join('\n')}\n`,
    )
    .action(async (opts) => {
      const { runCreate } = await import('./create.js');
      await runCreate(opts, globals(), ctx, await prompter());
    });

  webhooks
    .command('rotate')
    .description('rotate the signing secret of an endpoint and receive the new one (shown once)')
    .argument('<endpoint-id>', 'the endpoint to rotate')
    .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
    .addOption(new Option('--mode <mode>', 'overlap: the old secret stays valid for a while; immediate: the old secret stops working now').choices(['overlap', 'immediate']))
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .option('--secret-file <path>', 'write the new signing secret to this new file (mode 0600) instead of printing it')
    .option('--force', 'with --secret-file: replace the file if it exists')
    .option('-y, --yes', 'do not ask for confirmation of --mode immediate')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-file ./new.whsec',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode immediate --yes --json',
      ),
    )
    .action(async (endpointId: string, opts) => {
      const { runRotate } = await import('./rotate.js');
      await runRotate(endpointId, opts, globals(), ctx, await prompter());
    });

  webhooks
    .command('reactivate')
    .description('reactivate a deactivated endpoint')
    .argument('<endpoint-id>', 'the endpoint to reactivate')
    .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
    .addHelpText('after', examples('chatctl webhooks reactivate we_123 --expected-version 4', 'chatctl webhooks reactivate we_123 --expected-version 4 --json'))
    .action(async (endpointId: string, opts) => {
      const { runReactivate } = await import('./reactivate.js');
      await runReactivate(endpointId, opts, globals(), ctx, await prompter());
    });
}
