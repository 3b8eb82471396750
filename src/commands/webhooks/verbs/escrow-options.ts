// --escrow, --escrow-file, --escrow-dir: the same three options on create
// and rotate (with --from too). See docs/secrets.md, "Escrow".
import { Option, type Command } from 'commander';
import { collect } from '../../app.js';

export function addEscrowOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--escrow <age1…>', 'also encrypt a kept secret to this age recipient').argParser(collect))
    .option('--escrow-file <file>', 'age recipients, one a line, as --escrow')
    .option('--escrow-dir <dir>', 'where --escrow writes (docs/secrets.md)');
}
