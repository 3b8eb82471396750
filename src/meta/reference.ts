// `chatctl help reference` and the manual pages: every command's help as
// commander renders it (usage, description, options, examples), taken from
// the program itself, so the reference, `--help` and the pages never differ.
import type { Command } from 'commander';
import { shownSubcommands } from './tree.js';

/** The help of `chatctl help help`. */
export const HELP_HELP = `Usage: chatctl help [command...]

Show the help of a command, or of one of these topics:

  chatctl help COMMAND [SUBCOMMAND]  the same as chatctl COMMAND [SUBCOMMAND] --help
  chatctl help environment           every environment variable chatctl reads
  chatctl help exit-codes            the exit codes and what each means
  chatctl help reference             every command with its options and examples
  chatctl help help                  this text

Each command also has a manual page: man chatctl, man chatctl-webhooks-rotate, …
`;

/** Every visible command, the program first, each followed by its subcommands. */
export function visibleCommands(program: Command): { path: string[]; command: Command }[] {
  const out: { path: string[]; command: Command }[] = [];
  const walk = (cmd: Command, path: string[]) => {
    out.push({ path, command: cmd });
    for (const sub of shownSubcommands(cmd)) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}

/**
 * A command's help as `--help` prints it, captured from its own output
 * settings, and the part of it after what commander renders (examples, notes).
 */
export function helpOf(cmd: Command): { help: string; after: string } {
  const config = cmd.configureOutput();
  let help = '';
  cmd.configureOutput({ writeOut: (s: string) => void (help += s), writeErr: (s: string) => void (help += s) });
  try {
    cmd.outputHelp();
  } finally {
    cmd.configureOutput(config);
  }
  const body = cmd.helpInformation();
  return { help, after: help.startsWith(body) ? help.slice(body.length) : '' };
}

/** The whole reference: each command's heading and its help. */
export function referenceText(program: Command): string {
  const parts = visibleCommands(program).map(({ path, command }) => {
    const title = ['chatctl', ...path].join(' ');
    return `${title}\n${'='.repeat(title.length)}\n\n${helpOf(command).help.trimEnd()}\n`;
  });
  return `chatctl ${program.version() ?? ''} command reference\n\n${parts.join('\n')}\nEnvironment variables: chatctl help environment\n`;
}
