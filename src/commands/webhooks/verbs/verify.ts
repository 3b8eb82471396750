// chatctl webhooks verify: its options, help and examples. The action loads
// the command's module when it runs.
import { Option, type Command } from 'commander';
import { collect, examples, type Factory } from '../../app.js';
import { SIGNING_MORE } from './help-text.js';

export function registerVerify(parent: Command, f: Factory): void {
  parent
    .command('verify')
    .description('check the Standard Webhooks signature of a delivery body with the secrets you hold: exit 0 if one signature matches, 9 if none does or the timestamp is too far from now')
    .argument('[body-file]', 'the body as received, byte for byte; - or nothing for standard input')
    .addOption(
      new Option(
        '--secret-file <path>',
        "a file holding one of the endpoint's whsec_ secrets (- for standard input, with BODY_FILE); repeat it for each secret you hold, as during an overlap rotation",
      ).argParser(collect),
    )
    .addOption(new Option('--header <line>', "a received header as 'NAME: VALUE'; repeat it for webhook-id, webhook-timestamp and webhook-signature").argParser(collect))
    .option('--tolerance <seconds>', 'how far the timestamp may be from now, in seconds (default 300)')
    .addHelpText(
      'after',
      examples(
        "chatctl webhooks verify --secret-file ./billing.whsec --header 'webhook-id: msg_1' --header 'webhook-timestamp: 1700000000' --header 'webhook-signature: v1,K5o…=' body.json",
        "chatctl webhooks verify --secret-file ./old.whsec --secret-file ./new.whsec --header 'webhook-id: msg_1' --header 'webhook-timestamp: 1700000000' --header 'webhook-signature: v1,K5o…= v1,9dQ…=' body.json",
        'printenv WEBHOOK_SECRET | chatctl webhooks verify --secret-file - --header "webhook-id: $ID" --header "webhook-timestamp: $TS" --header "webhook-signature: $SIG" --tolerance 600 body.json',
      ) +
        `
webhook-signature may hold several space-separated signatures (during an
overlap rotation: one per valid secret); one match is enough, wherever it is.
Each is compared in constant time, with every secret given; the output names
each secret that matched by its file and fingerprint. The signed content
takes webhook-timestamp as received, which must be a plain decimal integer
(Unix seconds, no sign, no leading zero). Exit 0: verified; 9: no signature matches
(signature_mismatch) or the timestamp is out of tolerance
(timestamp_out_of_tolerance), the message says which; 2: a malformed header,
secret or flag. The secret is never printed.
` +
        SIGNING_MORE,
    )
    .action(async (bodyFile: string | undefined, opts) => {
      const { runVerify } = await import('../signed-deliveries.js');
      await runVerify(bodyFile, opts, f);
    });
}
