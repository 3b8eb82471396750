// Commander's help and errors as chatctl documents them (`chatctl help help`):
// `help A B` is `A B --help`, a word that names no command gets a suggestion,
// and each failure of commander's is one usage error (exit 2) naming the
// failing command's help. Through commander's public API only.
import { type Command, CommanderError } from 'commander';
import type { Context } from '../context.js';
import { outputMode, type GlobalOptions } from '../run/state.js';
import { localError, usageError } from '../errors/cli-error.js';
import { didYouMean, nearest } from '../errors/suggest.js';
import { HELP_HELP } from '../meta/reference.js';
import { shownSubcommands } from '../meta/tree.js';

/** A fixed width: help reads the same everywhere, and the build pre-renders it for bin/chatctl.js. */
const HELP_WIDTH = 80;

/** The command each of commander's errors came from, for a hint naming that command's help. */
const failedIn = new WeakMap<CommanderError, Command>();

/** The long names of the program's options that take a value (`--profile NAME`). */
export function optionsWithValue(program: Command): Set<string> {
  return new Set(program.options.filter((o) => o.required && o.long !== undefined).map((o) => o.long!));
}

/** Parses argv and runs the command. `focus` is the group argv names (undefined for help or anything unclear). */
export async function runCli(program: Command, argv: string[], focus: string | undefined): Promise<void> {
  // Bare `chatctl`: its help on stdout and exit 0, as gh does (README, Commands).
  if (argv.length === 0) return void program.outputHelp();
  const args = routeHelp(program, argv);
  if (args === undefined) return;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.exitCode === 0) return; // --help, --version
    throw fromCommander(err, program, argv, focus);
  }
}

/** argv with `help A B` turned into `A B --help`; undefined when `chatctl help help` was answered. Refusals are thrown. */
function routeHelp(program: Command, argv: string[]): string[] | undefined {
  try {
    if (isHelpHelp(program, argv)) {
      program.parseOptions(argv);
      program.configureOutput().writeOut!(HELP_HELP);
      return undefined;
    }
    const args = helpAsFlag(argv, program);
    checkHelpPath(program, args);
    return args;
  } catch (err) {
    if (isVersion(err)) return undefined; // `help help -V`: the version is printed, and wins
    // Refused before commander ran: let it read the global options anyway, so the error is reported as --json asked.
    try {
      program.parseOptions(argv);
    } catch (e) {
      // -V among them (as in -Vh): commander printed the version and stopped. The version wins, as everywhere else.
      if (isVersion(e)) return undefined;
    }
    throw err;
  }
}

function isVersion(err: unknown): boolean {
  return err instanceof CommanderError && err.code === 'commander.version';
}

/** One of commander's errors as chatctl's usage error. */
function fromCommander(err: CommanderError, program: Command, argv: string[], focus: string | undefined): Error {
  const where = helpCommandFor(failedIn.get(err));
  if (err.code === 'commander.help' || err.code === 'commander.helpDisplayed') {
    const message = focus === undefined && argv.includes('help') ? `no help for "${argv.slice(argv.indexOf('help') + 1).join(' ')}": unknown command` : 'a subcommand is required';
    return localError('usage_error', message, { hint: `see: ${where}` });
  }
  if (err.code === 'commander.unknownCommand') {
    const cmd = failedIn.get(err) ?? program;
    const word = /unknown command '(.*)'/.exec(err.message)?.[1] ?? '';
    return usageError(`unknown command '${word}'`, unknownCommandHint(word, cmd));
  }
  // Commander's own suggestion ("(Did you mean rotate?)") becomes the hint.
  const [message, suggestion] = err.message.replace(/^error: /, '').split(/\n\(Did you mean (.*)\?\)/);
  return usageError(message!.trim(), suggestion ? `did you mean ${suggestion}?  (see: ${where})` : `see: ${where}`);
}

/** `chatctl help help` (or `chatctl help --help`): how help itself works. */
function isHelpHelp(program: Command, argv: string[]): boolean {
  const withValue = optionsWithValue(program);
  const words = argv.filter((a, i) => !a.startsWith('-') && !withValue.has(argv[i - 1] ?? ''));
  const helpFlag = argv.some((a) => a === '--help' || a === '-h');
  return words[0] === 'help' && ((words.length === 2 && words[1] === 'help') || (words.length === 1 && helpFlag));
}

/** The hint for a word that names no subcommand: the nearest one; at the top, a group's (`login` → `chatctl auth login`); an action the API lacks says which it has. */
function unknownCommandHint(word: string, cmd: Command): string {
  const see = `see: ${helpCommandFor(cmd)}`;
  const subs = shownSubcommands(cmd);
  const names = subs.flatMap((c) => [c.name(), ...c.aliases()]);
  if (!cmd.parent) {
    const owners = subs.filter((g) => g.commands.some((c) => c.name() === word || c.aliases().includes(word)));
    if (owners.length > 0) return `did you mean ${owners.map((g) => `chatctl ${g.name()} ${word}`).join(' or ')}?  (${see})`;
  }
  const near = nearest(word, names);
  if (near !== undefined) return `did you mean ${near}?  (${see})`;
  if (cmd.name() === 'webhooks' && cmd.parent && /^(de|un|re)?(activate|enable|disable|delete|remove|destroy|pause|suspend|stop|list|get|update|edit)$/i.test(word)) {
    return `the webhook management API covers create, rotate and reactivate; there is no ${word}  (${see})`;
  }
  return see;
}

/** `chatctl GROUP TYPO --help` is a usage error with a suggestion, not the group's help and exit 0. */
function checkHelpPath(program: Command, argv: string[]): void {
  if (!argv.some((a) => a === '--help' || a === '-h')) return;
  if (argv.some((a) => a === '--version' || a === '-V')) return; // --version anywhere wins, in commander
  const withValue = optionsWithValue(program);
  let cmd = program;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return;
    if (a.startsWith('-')) {
      if (withValue.has(a)) i++;
      continue;
    }
    const subs = cmd.commands.filter((c) => c.name() !== 'help');
    if (subs.length === 0 || cmd.registeredArguments.length > 0) return; // the rest may be its arguments' values
    const next = subs.find((c) => c.name() === a || c.aliases().includes(a));
    if (!next) throw usageError(`unknown command '${a}'`, unknownCommandHint(a, cmd));
    cmd = next;
  }
}

/** `chatctl help A B` is `chatctl A B --help` (commander's help command reads one word only). */
function helpAsFlag(argv: string[], program: Command): string[] {
  const withValue = optionsWithValue(program);
  let at = 0;
  while (at < argv.length && argv[at]!.startsWith('-')) at += withValue.has(argv[at]!) ? 2 : 1;
  if (argv[at] !== 'help' || at + 1 >= argv.length || argv[at + 1]!.startsWith('-')) return argv;
  const topic = argv[at + 1]!;
  const topics = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  if (!topics.includes(topic)) {
    const hint = didYouMean(topic, topics);
    throw usageError(`no help for "${topic}": unknown command`, hint ?? unknownCommandHint(topic, program));
  }
  return [...argv.slice(0, at), ...argv.slice(at + 1).filter((a) => a !== '--help' && a !== '-h'), '--help'];
}

function helpCommandFor(cmd: Command | undefined): string {
  const words: string[] = [];
  for (let c = cmd; c?.parent; c = c.parent) words.unshift(c.name());
  return ['chatctl', ...words, '--help'].join(' ');
}

/** Commander's output for this run: errors thrown (reported once, by errors/report.ts), help to the run's streams at a fixed width. */
export function applyOutput(cmd: Command, ctx: Context): void {
  cmd.exitOverride((err) => {
    failedIn.set(err, cmd);
    throw err;
  });
  cmd.configureOutput({
    writeOut: (s) => ctx.io.stdout.write(s),
    // Commander's help after a usage error (a group without its subcommand), read before the run-state
    // exists: muted under --json and --query, where only the error line goes.
    writeErr: (s) => {
      let root = cmd;
      while (root.parent) root = root.parent;
      if (!outputMode(root.opts<GlobalOptions>()).json) ctx.io.stderr.write(s);
    },
    outputError: () => {}, // printed once, by errors/report.ts
    getOutHelpWidth: () => HELP_WIDTH,
    getErrHelpWidth: () => HELP_WIDTH,
  });
  for (const sub of cmd.commands) applyOutput(sub, ctx);
}
