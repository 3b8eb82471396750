// chatctl webhooks create|rotate|reactivate: options, help and examples.
// Each action loads its command module when it runs.
import { Option, type Command } from 'commander';
import { EVENT_TYPES } from '../../api/spec.js';
import { collect, examples, oneOf, type Factory } from '../app.js';
import { usageError } from '../../errors/cli-error.js';

const SECRET_TO_HELP =
  'where the one-time signing secret goes; repeat it for several (all must succeed): file:PATH (new file, mode 0600), env-file:PATH#NAME (a dotenv line), exec:COMMAND (run by /bin/sh, secret on its stdin), stdout (for $(…) capture), github-output:NAME, github-env:NAME';
const SECRET_TO_MORE = `
Without --secret-to the secret is in the JSON with --json, or shown once when
stdout is a terminal and CI is not set; otherwise the command refuses before
sending (exit 2). If a destination fails after the change was applied, the
secret is kept under <config folder>/recovered/ and the exit code is 13.
`;

export function registerWebhooks(webhooks: Command, f: Factory): void {
  webhooks.addHelpText(
    'after',
    examples(
      'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1 --secret-to file:./billing.whsec',
      'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to file:./new.whsec',
      'chatctl webhooks reactivate we_123 --expected-version 4',
    ),
  );
  webhooks
    .command('create')
    .description('create a signed webhook endpoint and receive its signing secret (shown once)')
    .option('--name <name>', 'display name, 1 to 80 characters')
    .option('--url <url>', 'destination URL: an absolute http:// or https:// URL, at most 2048 characters')
    .addOption(new Option('--event <type>', 'event type to subscribe to; repeat it or give a comma-separated list').argParser(collect))
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .addOption(new Option('--secret-to <sink>', SECRET_TO_HELP).argParser(collect))
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'with a file: destination: replace an existing regular file')
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
    .action(async (opts) => {
      const { runCreate } = await import('./create.js');
      await runCreate(opts, f);
    });

  webhooks
    .command('rotate')
    .description('rotate the signing secret of an endpoint and receive the new one (shown once); with --from, of many endpoints')
    .argument('[endpoint-id]', 'the endpoint to rotate (or --from FILE)')
    .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
    .addOption(
      new Option('--mode <mode>', 'overlap: the old secret stays valid for a while; immediate: the old secret stops working now')
        .choices(['overlap', 'immediate'])
        .argParser(oneOf('--mode', ['overlap', 'immediate'])),
    )
    .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
    .addOption(new Option('--secret-to <sink>', SECRET_TO_HELP).argParser(collect))
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'with a file: destination: replace an existing regular file')
    .option('-y, --yes', 'do not ask for confirmation of --mode immediate')
    .option('--from <file>', 'rotate every endpoint listed in FILE (- for stdin), one JSON object a line: {"endpointId","expectedVersion","mode"?}')
    .option('--concurrency <n>', 'with --from: requests at a time (default 4)')
    .option('--journal <file>', 'with --from: record each item before and after its request; a re-run with it skips what was done')
    .option('--next-manifest <file>', "with --from: write the next run's manifest there")
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
        const { runRotateFrom } = await import('./rotate-from/command.js');
        await runRotateFrom(opts, f);
        return;
      }
      if (endpointId === undefined) throw usageError('missing ENDPOINT_ID', 'give the endpoint to rotate, or --from FILE to rotate many');
      for (const [flag, value] of [
        ['--concurrency', opts.concurrency],
        ['--journal', opts.journal],
        ['--next-manifest', opts.nextManifest],
      ] as const)
        if (value !== undefined) throw usageError(`${flag} goes with --from`);
      const { runRotate } = await import('./rotate.js');
      await runRotate(endpointId, opts, f);
    });

  webhooks
    .command('reactivate')
    .description('reactivate a deactivated endpoint')
    .argument('<endpoint-id>', 'the endpoint to reactivate')
    .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
    .addHelpText('after', examples('chatctl webhooks reactivate we_123 --expected-version 4', 'chatctl webhooks reactivate we_123 --expected-version 4 --json'))
    .action(async (endpointId: string, opts) => {
      const { runReactivate } = await import('./reactivate.js');
      await runReactivate(endpointId, opts, f);
    });

  webhooks
    .command('fingerprint')
    .description('print the fingerprint (sha256:…) of a signing secret held in a file or given on stdin, without showing it')
    .argument('[file]', 'the file holding the secret; - or nothing for standard input')
    .addHelpText(
      'after',
      examples('chatctl webhooks fingerprint ./billing.whsec', 'printenv WEBHOOK_SECRET | chatctl webhooks fingerprint -') +
        '\nSurrounding whitespace is ignored. Compare the result with the fingerprint\nthat create and rotate print.\n',
    )
    .action(async (file: string | undefined) => {
      const { runFingerprint } = await import('./fingerprint.js');
      await runFingerprint(file, f);
    });

  webhooks
    .command('sign')
    .description('print the webhook-id, webhook-timestamp and webhook-signature headers of a delivery body (Standard Webhooks)')
    .argument('[body-file]', 'the body to sign, byte for byte; - or nothing for standard input')
    .option('--secret-file <path>', "the file holding the endpoint's whsec_ secret (- for standard input, with BODY_FILE)")
    .option('--id <id>', 'the webhook-id (default: msg_ and a random UUID)')
    .option('--timestamp <seconds>', 'the webhook-timestamp, in Unix seconds (default: now)')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks sign --secret-file ./billing.whsec body.json',
        'chatctl webhooks sign --secret-file ./billing.whsec --id msg_1 --timestamp 1700000000 --json < body.json',
        'chatctl webhooks sign --secret-file ./billing.whsec body.json > headers.txt && curl -H @headers.txt --data-binary @body.json http://127.0.0.1:8080/hooks',
      ) + SIGNING_MORE,
    )
    .action(async (bodyFile: string | undefined, opts) => {
      const { runSign } = await import('./signed-deliveries.js');
      await runSign(bodyFile, opts, f);
    });

  webhooks
    .command('verify')
    .description('check the Standard Webhooks signature of a delivery body with a secret: exit 0 if one signature matches, 9 if none does or the timestamp is too far from now')
    .argument('[body-file]', 'the body as received, byte for byte; - or nothing for standard input')
    .option('--secret-file <path>', "the file holding the endpoint's whsec_ secret (- for standard input, with BODY_FILE)")
    .addOption(new Option('--header <line>', "a received header as 'NAME: VALUE'; repeat it for webhook-id, webhook-timestamp and webhook-signature").argParser(collect))
    .option('--tolerance <seconds>', 'how far the timestamp may be from now, in seconds (default 300)')
    .addHelpText(
      'after',
      examples(
        "chatctl webhooks verify --secret-file ./billing.whsec --header 'webhook-id: msg_1' --header 'webhook-timestamp: 1700000000' --header 'webhook-signature: v1,K5o…=' body.json",
        'printenv WEBHOOK_SECRET | chatctl webhooks verify --secret-file - --header "webhook-id: $ID" --header "webhook-timestamp: $TS" --header "webhook-signature: $SIG" --tolerance 600 body.json',
      ) +
        `
webhook-signature may hold several space-separated signatures (during an
overlap rotation: one per valid secret); one match is enough, wherever it is.
Each is compared in constant time. Exit 0: verified; 9: no signature matches
(signature_mismatch) or the timestamp is out of tolerance
(timestamp_out_of_tolerance), the message says which; 2: a malformed header,
secret or flag. The secret is never printed.
` +
        SIGNING_MORE,
    )
    .action(async (bodyFile: string | undefined, opts) => {
      const { runVerify } = await import('./signed-deliveries.js');
      await runVerify(bodyFile, opts, f);
    });

  webhooks
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
      const { runTrigger } = await import('./signed-deliveries.js');
      await runTrigger(endpointId, opts, f);
    });
}

const SIGNING_MORE = `
The scheme is an assumption (the API does not say how deliveries are signed):
Standard Webhooks, HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"
keyed with the base64 part of the whsec_ secret. See docs/signing.md.
`;
