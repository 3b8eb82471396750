// --escrow, --escrow-file, --escrow-dir: the same three options on create
// and rotate (with --from too). See docs/secrets.md, "Escrow".
import { Option, type Command } from 'commander';
import { collect } from '../../app.js';

export function addEscrowOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--escrow <recipient>', 'an age recipient (age1…): a secret kept after a failed destination is also written encrypted to it in --escrow-dir; repeat it for several').argParser(
        collect,
      ),
    )
    .option('--escrow-file <file>', 'a file of age recipients, one a line (# comments), as --escrow')
    .option('--escrow-dir <dir>', 'with --escrow: the folder the encrypted copies go to, <endpoint>-v<version>.age (0600); webhooks recover opens them');
}
