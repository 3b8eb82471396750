// chatctl webhooks rotate: its options, help and examples. The action loads
// the command's module when it runs.
import { Option, type Command } from 'commander';
import { collect, examples, oneOf, type Factory } from '../../app.js';
import { usageError } from '../../../errors/cli-error.js';
import { SECRET_TO_HELP, SECRET_TO_MORE } from './help-text.js';
import { addEscrowOptions } from './escrow-options.js';

export function registerRotate(parent: Command, f: Factory): void {
  const cmd = parent
    .command('rotate')
    .description('rotate the signing secret of an endpoint and receive the new one (shown once); with --from, of many endpoints')
    .argument('[endpoint-id]', 'the endpoint to rotate (or --from FILE)')
    .option('--expected-version <n>', "the endpoint's current version")
    .addOption(
      new Option('--mode <mode>', 'overlap: the old secret stays valid for a while; immediate: the old secret stops working now')
        .choices(['overlap', 'immediate'])
        .argParser(oneOf('--mode', ['overlap', 'immediate'])),
    )
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .addOption(new Option('--secret-to <sink>', SECRET_TO_HELP).argParser(collect))
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'replace the existing file of a file: destination')
    .option('-y, --yes', 'do not ask for confirmation of --mode immediate')
    .option('--from <file>', 'rotate every endpoint listed in FILE (- for stdin), one JSON object a line: {"endpointId","expectedVersion","mode"?}')
    .option('--concurrency <n>', 'with --from: requests at a time (default 4)')
    .option('--journal <file>', 'with --from: record each item before and after its request; a re-run with it skips what was done')
    .option('--next-manifest <file>', "with --from: write the next run's manifest there")
    .option('--report <file>', 'with --from: a JUnit XML report of the items');
  addEscrowOptions(cmd)
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to file:./new.whsec --force',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to "exec:gh secret set WEBHOOK_SECRET --repo acme/app"',
        'SECRET="$(chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to stdout)"',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode immediate --yes --json',
        'chatctl webhooks rotate --from fleet.ndjson --mode overlap --journal fleet.journal --next-manifest fleet.ndjson --secret-to "env-file:secrets/{id}.env#WEBHOOK_SECRET" --json',
        "chatctl webhooks rotate --from - --mode overlap --secret-to 'exec:vault kv put secret/webhooks/$CHATCTL_ENDPOINT_ID value=-' < fleet.ndjson",
      ) + SECRET_TO_MORE,
    )
    .action(async (endpointId: string | undefined, opts) => {
      if (opts.from !== undefined) {
        if (endpointId !== undefined) throw usageError('give ENDPOINT_ID or --from FILE, not both');
        const { runRotateFrom } = await import('../rotate-from/command.js');
        await runRotateFrom(opts, f);
        return;
      }
      if (endpointId === undefined) throw usageError('missing ENDPOINT_ID', 'give the endpoint to rotate, or --from FILE to rotate many');
      for (const [flag, value] of [
        ['--concurrency', opts.concurrency],
        ['--journal', opts.journal],
        ['--next-manifest', opts.nextManifest],
        ['--report', opts.report],
      ] as const)
        if (value !== undefined) throw usageError(`${flag} goes with --from`);
      const { runRotate } = await import('../rotate.js');
      await runRotate(endpointId, opts, f);
    });
}
