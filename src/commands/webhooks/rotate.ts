// chatctl webhooks rotate ENDPOINT_ID, and with --from FILE many endpoints
// (rotate-from/, whose module register.ts hands in: this file does not import it).
import { Option, type Command } from 'commander';
import { addEscrowOptions, collect, examples, oneOf, SECRET_TO_HELP, SECRET_TO_MORE, type Factory } from '../app.js';
import { localError, usageError } from '../../errors/cli-error.js';
import type { formHeading } from '../../meta/tree.js';
import { endpointLabel, escapeInline } from '../../output/json.js';
import type { SecretFlags } from './secret-request.js';

export type RotateOptions = SecretFlags & { expectedVersion?: string; mode?: string };

/** What register.ts hands in, which a single rotate's path does not load: `--from`'s module, and meta/tree.ts's headings. */
export type RotateParts = { rotateFrom(): Promise<{ runRotateFrom(opts: never, f: Factory): Promise<void> }>; formHeading: typeof formHeading };

export function registerRotate(parent: Command, f: Factory, { rotateFrom, formHeading }: RotateParts): void {
  // The two forms of rotate: help lists the options of each under its own
  // heading, and completion offers them only in their form.
  const ONE = formHeading('argument', 'ENDPOINT_ID');
  const MANY = formHeading('--from', 'FILE');
  const cmd = parent
    .command('rotate')
    .description('rotate the signing secret of an endpoint and receive the new one (shown once); with --from, of many endpoints')
    .argument('[endpoint-id]', 'the endpoint to rotate (or --from FILE)')
    .addOption(new Option('--mode <mode>', 'overlap: the old secret works for a while; immediate: it stops now').choices(['overlap', 'immediate']).argParser(oneOf('--mode', ['overlap', 'immediate'])))
    .option('--secret-to <sink>', SECRET_TO_HELP, collect)
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
        return (await rotateFrom()).runRotateFrom(opts as never, f);
      }
      if (endpointId === undefined) throw usageError('missing ENDPOINT_ID', 'give the endpoint to rotate, or --from FILE to rotate many');
      const manyOnly = { '--concurrency': opts.concurrency, '--journal': opts.journal, '--next-manifest': opts.nextManifest, '--every': opts.every, '--report': opts.report };
      for (const [flag, value] of Object.entries(manyOnly)) if (value !== undefined) throw usageError(`${flag} goes with --from`);
      await runRotate(endpointId, opts, f);
    });
}

export async function runRotate(endpointId: string, opts: RotateOptions, f: Factory): Promise<void> {
  const [{ checkEndpointId, parseRotate }, r] = await Promise.all([import('../../input/parse.js'), import('./secret-request.js')]);
  const { ctx } = f;
  const state = f.state();
  const prompter = await f.prompter();
  const id = checkEndpointId(endpointId);
  const expectedVersion = await r.expectedVersionFor(f, id, opts.expectedVersion, prompter);
  const mode = opts.mode ?? (await prompter?.mode()) ?? r.missing('--mode');
  const body = parseRotate({ expectedVersion, mode });
  await r.secretCommand(f, opts, {
    words: ['webhooks', 'rotate', id],
    flags: [['--mode', body.mode]],
    expectedVersion: body.expectedVersion,
    mode: body.mode,
    async confirm() {
      if (body.mode !== 'immediate' || opts.yes || state.dryRun) return;
      if (!prompter) throw usageError('--yes is required when not running interactively', '--mode immediate revokes the current secret at once; deliveries signed with it will fail verification');
      if (await prompter.confirmImmediate(id)) return;
      // Declining is an answer, not a failure: a plain notice (no red "error:"), and still 130.
      const message = 'immediate rotation declined; nothing was sent';
      if (!state.output.json) ctx.io.notice(message);
      throw localError('interrupted', message, { reported: !state.output.json });
    },
    send: (client, key, hooks) => client.rotate(id, body, key, hooks),
    refused: (err) => r.rotateRefused(f, id, err),
    summary: (res) => `Rotated the signing secret of ${endpointLabel(res.data.endpoint)} (mode ${escapeInline(body.mode)}).`,
  });
}
