// A plain-data description of the command tree, taken from the commander
// program itself. The build writes it to dist/ so completion can answer
// without loading commander, and a test proves the file matches the program.
import type { Command, Option, Argument } from 'commander';

/** What a value can be completed with. */
export type ValueKind = 'none' | 'file' | 'profiles' | 'events' | 'choices' | 'sinks' | 'endpoints';

/**
 * The form of its command an option belongs to, for a command with two
 * (`rotate ENDPOINT_ID`, `rotate --from FILE`): 'argument' when the command
 * names its first argument, or the flag that selects the other form.
 */
export type OptionForm = 'argument' | `--${string}`;

export interface OptionNode {
  flags: string[]; // e.g. ["-y", "--yes"]
  description: string;
  takesValue: boolean;
  valueKind: ValueKind;
  choices?: string[];
  /** Only in this form of the command (completion offers it only there); absent: in every form. */
  form?: OptionForm;
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

/** Values that come from somewhere other than commander's choices or the value's name. */
const OPTION_VALUE_KINDS: Record<string, ValueKind> = {
  '--profile': 'profiles',
  '--event': 'events',
  '--secret-to': 'sinks',
};
const ARGUMENT_VALUE_KINDS: Record<string, ValueKind> = {
  name: 'profiles',
};

/**
 * File names complete where the value is named for one: an option written
 * `--journal <file>` (or `<path>`, `<dir>`), an argument named `file` or
 * `…-file` (`[body-file]`). A new file option gets completion by its name alone.
 */
const FILE_VALUE = /<(?:file|path|dir)>|\[(?:file|path|dir)\]/;
const isFileArgument = (name: string) => /^(?:file|path|dir)$|-(?:file|path|dir)$/.test(name);
/** Arguments that name a webhook endpoint: completed with the endpoints this machine knows. */
const ENDPOINT_ARGUMENTS = new Set(['endpoint-id']);

/**
 * The help heading under which an option of one form of its command is
 * listed (`rotate --help`: "Options with ENDPOINT_ID:" and "Options with --from FILE:"):
 * commander's own help groups, which completion reads back (formOf).
 */
export function formHeading(form: OptionForm, shown: string): string {
  return form === 'argument' ? `Options with ${shown}:` : `Options with ${form} ${shown}:`;
}

/** The form a help heading of formHeading names; undefined for any other heading. */
function formOf(heading: string | undefined): OptionForm | undefined {
  const m = heading === undefined ? null : /^Options with (--[a-z][a-z-]*)? ?[A-Z_]+:$/.exec(heading);
  return m ? ((m[1] as `--${string}` | undefined) ?? 'argument') : undefined;
}

function optionNode(o: Option): OptionNode {
  const flags = [o.short, o.long].filter((f): f is string => Boolean(f));
  const choices = o.argChoices;
  const takesValue = o.required || o.optional;
  const kind = choices ? 'choices' : (OPTION_VALUE_KINDS[o.long ?? ''] ?? (FILE_VALUE.test(o.flags) ? 'file' : 'none'));
  const form = formOf(o.helpGroupHeading);
  return { flags, description: o.description, takesValue, valueKind: takesValue ? kind : 'none', ...(choices ? { choices: [...choices] } : {}), ...(form ? { form } : {}) };
}

function argumentNode(a: Argument, parent: string): ArgumentNode {
  const choices = a.argChoices;
  const name = a.name();
  const kind: ValueKind = choices ? 'choices' : parent === 'profile' ? (ARGUMENT_VALUE_KINDS[name] ?? 'none') : isFileArgument(name) ? 'file' : ENDPOINT_ARGUMENTS.has(name) ? 'endpoints' : 'none';
  return { name, required: a.required, valueKind: kind, ...(choices ? { choices: [...choices] } : {}) };
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
