// The command tree as plain data, from the program itself: the build writes it
// to dist/ so completion answers without loading commander.
import type { Command, Option, Argument } from 'commander';

/** What a value can be completed with. */
export type ValueKind = 'none' | 'file' | 'profiles' | 'events' | 'choices' | 'sinks' | 'endpoints';

/** The form of its command an option belongs to (`rotate ENDPOINT_ID`: 'argument'; `rotate --from FILE`: '--from'). */
export type OptionForm = 'argument' | `--${string}`;

export interface OptionNode {
  flags: string[];
  description: string;
  takesValue: boolean;
  valueKind: ValueKind;
  choices?: string[];
  /** Only in this form of the command; absent: in every form. */
  form?: OptionForm;
}

type ArgumentNode = { name: string; required: boolean; valueKind: ValueKind; choices?: string[] };

export interface CommandNode {
  name: string;
  aliases: string[];
  description: string;
  options: OptionNode[];
  arguments: ArgumentNode[];
  commands: CommandNode[];
}

/** Values that come from somewhere other than commander's choices or the value's name. */
const OPTION_VALUE_KINDS: Record<string, ValueKind> = { '--profile': 'profiles', '--event': 'events', '--secret-to': 'sinks' };

/** File names complete where the value is named for one (`--journal <file>`, `[body-file]`): a new option gets it by its name alone. */
const FILE_VALUE = /<(?:file|path|dir)>|\[(?:file|path|dir)\]/;
const isFileArgument = (name: string) => /^(?:file|path|dir)$|-(?:file|path|dir)$/.test(name);
/** The help heading of the options of one form ("Options with --from FILE:"), which completion reads back (formOf). */
export function formHeading(form: OptionForm, shown: string): string {
  return form === 'argument' ? `Options with ${shown}:` : `Options with ${form} ${shown}:`;
}

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
  const kind: ValueKind = choices ? 'choices' : parent === 'profile' ? (name === 'name' ? 'profiles' : 'none') : isFileArgument(name) ? 'file' : name === 'endpoint-id' ? 'endpoints' : 'none';
  return { name, required: a.required, valueKind: kind, ...(choices ? { choices: [...choices] } : {}) };
}

export function describeCommand(cmd: Command, parent = ''): CommandNode {
  const options = cmd.options.filter((o) => !o.hidden).map(optionNode);
  const visible = cmd.createHelp().visibleOptions(cmd);
  const help = visible.find((o) => o.long === '--help');
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
  const visible = cmd.createHelp().visibleCommands(cmd);
  return visible.filter((c) => c.name() !== 'help');
}
