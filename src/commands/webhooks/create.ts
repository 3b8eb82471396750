// chatctl webhooks create
import type { Command } from 'commander';
import { addEscrowOptions, collect, examples, SECRET_TO_HELP, SECRET_TO_MORE, type Factory } from '../app.js';
import { EVENT_TYPES } from '../../api/schemas.js';
import { endpointLabel } from '../../output/json.js';
import type { SecretFlags } from './secret-request.js';

export type CreateOptions = SecretFlags & { name?: string; url?: string; event?: string[] };

export function registerCreate(parent: Command, f: Factory): void {
  const cmd = parent
    .command('create')
    .description('create a signed webhook endpoint and receive its signing secret (shown once)')
    .option('--name <name>', 'display name, 1 to 80 characters')
    .option('--url <url>', 'destination URL: an absolute http:// or https:// URL, at most 2048 characters')
    .option('--event <type>', 'event type to subscribe to; repeat it or give a comma-separated list', collect)
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .option('--secret-to <sink>', SECRET_TO_HELP, collect)
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'replace an existing regular file (file: destinations)');
  addEscrowOptions(cmd)
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1,chat.message.updated.v1 --secret-to file:./billing.whsec',
        'chatctl webhooks create --name audit --url https://audit.example.com/in --event chat.message.deleted.v1 --secret-to "exec:gh secret set AUDIT_WEBHOOK_SECRET --repo acme/audit"',
        'chatctl webhooks create --name ci --url https://ci.example.com/in --event chat.message.created.v1 --secret-to env-file:.env#WEBHOOK_SECRET --json > endpoint.json',
      ) +
        SECRET_TO_MORE +
        `\nEvent types:\n${EVENT_TYPES.map((e) => `  ${e}`).join('\n')}\n`,
    )
    .action((opts) => runCreate(opts, f));
}

export async function runCreate(opts: CreateOptions, f: Factory): Promise<void> {
  const [{ parseCreate }, r] = await Promise.all([import('../../input/parse.js'), import('./secret-request.js')]);
  const prompter = await f.prompter();
  const name = opts.name ?? (await prompter?.name()) ?? r.missing('--name');
  const url = opts.url ?? (await prompter?.url()) ?? r.missing('--url');
  const events = opts.event?.length ? opts.event : ((await prompter?.events()) ?? r.missing('--event'));
  const body = parseCreate({ name, url, events });
  await r.secretCommand(f, opts, {
    words: ['webhooks', 'create'],
    flags: [['--name', name], ['--url', url], ...events.map((e) => ['--event', e])],
    send: (client, key, hooks) => client.create(body, key, hooks),
    summary: (res) => `Created webhook endpoint ${endpointLabel(res.data.endpoint)}.`,
  });
}
