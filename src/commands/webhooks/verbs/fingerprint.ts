// chatctl webhooks fingerprint: its options, help and examples. The action loads
// the command's module when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../../app.js';

export function registerFingerprint(parent: Command, f: Factory): void {
  parent
    .command('fingerprint')
    .description('print the fingerprint (sha256:…) of a signing secret held in a file or given on stdin, without showing it')
    .argument('[file]', 'the file holding the secret; - or nothing for standard input')
    .addHelpText(
      'after',
      examples('chatctl webhooks fingerprint ./billing.whsec', 'printenv WEBHOOK_SECRET | chatctl webhooks fingerprint -') +
        '\nSurrounding whitespace is ignored. Compare the result with the fingerprint\nthat create and rotate print.\n',
    )
    .action(async (file: string | undefined) => {
      const { runFingerprint } = await import('../fingerprint.js');
      await runFingerprint(file, f);
    });
}
