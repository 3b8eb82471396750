// chatctl webhooks sign: its options, help and examples. The action loads
// the command's module when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';
import { SIGNING_MORE } from './help-text.js';

export function registerSign(parent: Command, f: Factory): void {
  parent
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
      const { runSign } = await import('../signed-deliveries.js');
      await runSign(bodyFile, opts, f);
    });
}
