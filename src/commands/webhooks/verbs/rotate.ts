// chatctl webhooks rotate: its options, help and examples. The action loads
// the command's module when it runs.
import { Option, type Command } from 'commander';
import { collect, examples, oneOf, type Factory } from '../../app.js';
import { usageError } from '../../../errors/cli-error.js';
import { SECRET_TO_HELP, SECRET_TO_MORE } from './help-text.js';
import { formHeading } from '../../../meta/tree.js';
import { addEscrowOptions } from './escrow-options.js';

// The two forms of rotate: help lists the options of each under its own
// heading, and completion offers them only in their form.
const ONE = formHeading('argument', 'ENDPOINT_ID');
const MANY = formHeading('--from', 'FILE');

export function registerRotate(parent: Command, f: Factory): void {
  const cmd = parent
    .command('rotate')
    .description('rotate the signing secret of an endpoint and receive the new one (shown once); with --from, of many endpoints')
    .argument('[endpoint-id]', 'the endpoint to rotate (or --from FILE)')
    .addOption(new Option('--mode <mode>', 'overlap: the old secret works for a while; immediate: it stops now').choices(['overlap', 'immediate']).argParser(oneOf('--mode', ['overlap', 'immediate'])))
    .addOption(new Option('--secret-to <sink>', SECRET_TO_HELP).argParser(collect))
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'replace an existing regular file (file: destinations)')
    .option('-y, --yes', 'do not ask for confirmation of --mode immediate')
    .addOption(new Option('--expected-version <n>', 'its version now, or last: the one this machine saw').helpGroup(ONE))
    .addOption(new Option('--idempotency-key <key>', "reuse an earlier run's key (default: a new UUID)").helpGroup(ONE))
    .addOption(new Option('--from <file>', 'rotate the endpoints FILE lists (- for stdin), one {"endpointId","expectedVersion","mode"?} a line').helpGroup(MANY))
    .addOption(new Option('--concurrency <n>', 'requests at a time (default 4)').helpGroup(MANY))
    .addOption(new Option('--journal <file>', 'record each item before and after its request; a re-run with it skips what was done').helpGroup(MANY))
    .addOption(new Option('--next-manifest <file>', "write the next run's manifest there").helpGroup(MANY))
    .addOption(new Option('--every <duration>', 'skip endpoints rotated less than this ago (30d, 12h)').helpGroup(MANY))
    .addOption(new Option('--report <file>', 'a JUnit XML report of the items').helpGroup(MANY));
  addEscrowOptions(cmd)
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to file:./new.whsec --force',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to "exec:gh secret set WEBHOOK_SECRET --repo acme/app"',
        'SECRET="$(chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to stdout)"',
        'chatctl webhooks rotate we_123 --expected-version last --mode immediate --yes --json',
        'chatctl webhooks rotate --from fleet.ndjson --every 30d --mode overlap --journal fleet.journal --next-manifest fleet.ndjson --secret-to "env-file:secrets/{id}.env#WEBHOOK_SECRET"',
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
        ['--every', opts.every],
        ['--report', opts.report],
      ] as const)
        if (value !== undefined) throw usageError(`${flag} goes with --from`);
      const { runRotate } = await import('../rotate.js');
      await runRotate(endpointId, opts, f);
    });
}
