// A plain-data description of the command tree, taken from the commander
// program itself. The build writes it to dist/ so completion can answer
// without loading commander, and a test proves the file matches the program.
import type { Command, Option, Argument } from 'commander';

/** What a value can be completed with. */
export type ValueKind = 'none' | 'file' | 'profiles' | 'events' | 'choices';

export interface OptionNode {
  flags: string[]; // e.g. ["-y", "--yes"]
  description: string;
  takesValue: boolean;
  valueKind: ValueKind;
  choices?: string[];
}

export interface ArgumentNode {
  name: string;
  required: boolean;
  valueKind: ValueKind;
  choices?: string[];
}

export interface CommandNode {
  name: string;
  aliases: string[];
  description: string;
  options: OptionNode[];
  arguments: ArgumentNode[];
  commands: CommandNode[];
}

/** Values that come from somewhere other than commander's choices. */
const OPTION_VALUE_KINDS: Record<string, ValueKind> = {
  '--profile': 'profiles',
  '--event': 'events',
  '--secret-file': 'file',
  '--next-manifest': 'file',
};
const ARGUMENT_VALUE_KINDS: Record<string, ValueKind> = {
  name: 'profiles',
};
/** Arguments that name a file, whatever the command. */
const FILE_ARGUMENTS = new Set(['body-file']);

function optionNode(o: Option): OptionNode {
  const flags = [o.short, o.long].filter((f): f is string => Boolean(f));
  const choices = o.argChoices;
  const takesValue = o.required || o.optional;
  const kind = choices ? 'choices' : (OPTION_VALUE_KINDS[o.long ?? ''] ?? 'none');
  return { flags, description: o.description, takesValue, valueKind: takesValue ? kind : 'none', ...(choices ? { choices: [...choices] } : {}) };
}

function argumentNode(a: Argument, parent: string): ArgumentNode {
  const choices = a.argChoices;
  const kind: ValueKind = choices ? 'choices' : parent === 'profile' ? (ARGUMENT_VALUE_KINDS[a.name()] ?? 'none') : FILE_ARGUMENTS.has(a.name()) ? 'file' : 'none';
  return { name: a.name(), required: a.required, valueKind: kind, ...(choices ? { choices: [...choices] } : {}) };
}

export function describeCommand(cmd: Command, parent = ''): CommandNode {
  const options = cmd.options.filter((o) => !o.hidden).map(optionNode);
  const help = cmd
    .createHelp()
    .visibleOptions(cmd)
    .find((o) => o.long === '--help');
  if (help) options.push(optionNode(help));
  return {
    name: cmd.name(),
    aliases: cmd.aliases(),
    description: cmd.description(),
    options,
    arguments: cmd.registeredArguments.map((a) => argumentNode(a, parent)),
    commands: shownSubcommands(cmd).map((c) => describeCommand(c, cmd.name())),
  };
}

/** The subcommands help lists (not the hidden ones, nor `help` itself), asked of commander's Help. */
export function shownSubcommands(cmd: Command): Command[] {
  return cmd
    .createHelp()
    .visibleCommands(cmd)
    .filter((c) => c.name() !== 'help');
}
