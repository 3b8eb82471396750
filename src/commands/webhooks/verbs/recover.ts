// chatctl webhooks recover: its options, help and examples. The action loads
// the command's module (and age) when it runs.
import { Option, type Command } from 'commander';
import { collect, examples, type Factory } from '../../app.js';
import { SECRET_TO_HELP } from './help-text.js';

export function registerRecover(parent: Command, f: Factory): void {
  parent
    .command('recover')
    .description('deliver secrets that a run escrowed (--escrow-dir) after a failed destination, on any machine; never one superseded by a later rotation seen here')
    .argument('<file...>', 'escrowed secrets: <endpoint>-v<version>.age, each with its .json beside it')
    .option('--identity <file>', 'the age identity file (age-keygen) of one of the --escrow recipients')
    .addOption(new Option('--secret-to <sink>', SECRET_TO_HELP).argParser(collect))
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'replace an existing regular file (file: destinations)')
    .option('--journal <file>', "the fleet's journal: record each recovered item done there")
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks recover escrow/we_123-v4.age --identity ~/.config/age/ops.key --secret-to "exec:./store-secret.sh"',
        'chatctl webhooks recover escrow/*.age --identity ops.key --secret-to file:secrets/{id}.whsec --force --json',
        'chatctl webhooks recover escrow/*.age --identity ops.key --secret-to "exec:./store-secret.sh" --journal rotation.journal',
      ) +
        `
No request is sent and no token is needed. A file that a later rotation of its
endpoint, noted in this config folder, has superseded is not delivered (exit
13). \`age -d -i KEYFILE FILE\` prints the same secret. See docs/secrets.md.
`,
    )
    .action(async (files: string[], opts) => {
      const { runRecover } = await import('../recover.js');
      const journal = opts.journal !== undefined ? await import('../rotate-from/journal.js') : undefined;
      await runRecover(files, opts, f, journal?.settleRecovered);
    });
}
