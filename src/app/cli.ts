// The command tree, the only file that knows the global options; actions import their
// modules when they run, so `--help` never loads the HTTP stack, zod's schemas or prompts.
// Help and errors as `chatctl help help` documents them, through commander's public API only.
import { Command, CommanderError, Help } from 'commander';
import type { Context } from '../context.js';
import type { Prompter } from '../prompts/prompter.js';
import { examples, factoryOf, type Register } from '../commands/app.js';
import { registerWebhooks } from '../commands/webhooks/register.js';
import { registerProfile } from '../commands/profile/register.js';
import { registerAuth } from '../commands/auth/register.js';
import { registerExitCodes } from '../commands/exit-codes/register.js';
import { registerCompletion } from '../commands/completion/register.js';
import { registerSandbox } from '../commands/sandbox/register.js';
import { registerDoctor } from '../commands/doctor/register.js';
import { registerVersion } from '../commands/version/register.js';
import { environmentHelp } from '../meta/environment.js';
import { HELP_HELP, referenceText } from '../meta/reference.js';
import { outputMode, resolveRunState, stateOf, type GlobalOptions, type RunState, type RunStateSlot } from '../run/state.js';
import { localError, usageError } from '../errors/cli-error.js';
import { didYouMean, nearest } from '../errors/explain.js';
import { shownSubcommands } from '../meta/tree.js';
import { loadPalettes } from '../output/io.js';

/** Subcommand help: the command's own options and one line pointing to the global ones. */
function formatHelp(this: Help, cmd: Command, helper: Help): string {
  const text = Help.prototype.formatHelp.call(this, cmd, helper);
  return cmd.parent ? `${text}\nGlobal options (--profile, --json, --no-input, --dry-run, …): chatctl --help\n` : text;
}

/** The top-level commands, in the order help lists them. */
const GROUPS: { name: string; description: string; aliases?: string[]; register: Register }[] = [
  { name: 'webhooks', aliases: ['webhook'], description: 'create signed webhook endpoints, rotate their secrets, reactivate them', register: registerWebhooks },
  { name: 'profile', description: 'manage stored profiles (base URL and scope)', register: registerProfile },
  { name: 'auth', description: 'store, remove and check the bearer token of a profile', register: registerAuth },
  { name: 'exit-codes', description: 'print the table of exit codes', register: registerExitCodes },
  { name: 'completion', description: 'print the shell completion script for bash, zsh or fish, or install it', register: registerCompletion },
  { name: 'doctor', description: 'check the config, credentials, network and clock, and say how to fix what is wrong', register: registerDoctor },
  { name: 'sandbox', description: 'serve the management API on loopback, in memory, for trying chatctl and testing scripts', register: registerSandbox },
  { name: 'version', description: 'print the version and what this copy was built from (commit, Node.js, platform)', register: registerVersion },
];

/** `run` receives the run-state once the flags are parsed; with `focus` (the group argv names) only that group is registered in full. */
export function configuredProgram(ctx: Context, focus?: string, run: RunStateSlot = {}): Command {
  const program = new Command('chatctl');
  const factory = factoryOf(
    ctx,
    () => stateOf(run),
    () => makePrompter(ctx, run.state),
  );

  program
    .description("Manage a chat service's signed webhook endpoints: create them, rotate their signing secrets, reactivate them.")
    .version(ctx.version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .helpCommand('help [command]', 'show help for a command')
    .option('--profile <name>', 'use this stored profile')
    .option('--base-url <url>', "override the profile's base URL (CHATCTL_BASE_URL)")
    .option('--org <id>', "override the profile's organizationId (CHATCTL_ORG)")
    .option('--app <id>', "override the profile's applicationId (CHATCTL_APP)")
    .option('--env <key>', "override the profile's environmentKey (CHATCTL_ENV)")
    .option('--json', 'machine output: one JSON document on stdout; errors as one JSON line on stderr')
    .option('--query <expr>', 'print only what this JMESPath expression selects from the JSON output (a string bare, anything else as JSON); implies --json')
    .option('--no-input', 'never prompt (also CHATCTL_NO_INPUT or CI)')
    .option('--dry-run', 'print the request that would be sent, send nothing')
    .option('--debug', 'trace each HTTP attempt on stderr (credentials and secrets redacted)')
    .option('--max-retries <n>', 'retries after the first attempt on 429/503/network failure (default 4)')
    .option('--timeout <seconds>', 'limit for one attempt, in seconds (default 30)')
    .option('--deadline <seconds>', 'limit for the whole command, retries and waits included (default 300)')
    .option('--no-color', 'no ANSI colour (also NO_COLOR)')
    .option('--quiet', 'no notices or progress on stderr; errors are still reported')
    .configureHelp({ showGlobalOptions: false, sortSubcommands: false, formatHelp })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      examples(
        'chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production',
        'chatctl auth login --with-token < token.txt',
        'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1 --secret-file ./whsec',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to file:./new.whsec --json',
      ) +
        '\nRun with no arguments, chatctl prints this help and exits 0.\n' +
        'Every command has --help with examples; all of them at once: chatctl help reference\nExit codes: chatctl help exit-codes\nEnvironment variables: chatctl help environment\n',
    )
    .hook('preAction', async (_program, action) => {
      const g = program.opts<GlobalOptions>();
      // An invalid expression is exit 2 before anything is read or sent. jmespath loads only for --query.
      const query = g.query !== undefined ? (await import('../run/query.js')).compileQuery(g.query) : undefined;
      const state = resolveRunState(g, ctx, query);
      run.state = state;
      const secretTo: unknown = action.opts().secretTo;
      (ctx.io as Context['io'] & { setOutputMode?(m: RunState['output'] & { secretOnStdout: boolean }): void }).setOutputMode?.({
        ...state.output,
        secretOnStdout: Array.isArray(secretTo) && secretTo.includes('stdout'),
      });
      ctx.io.paint = await loadPalettes(ctx.io.color);
    });

  for (const group of GROUPS) {
    const cmd = program.command(group.name).description(group.description);
    for (const alias of group.aliases ?? []) cmd.alias(alias);
    if (focus === undefined || focus === group.name) group.register(cmd, factory);
  }
  // `chatctl help environment` and `help reference`: help topics, not commands of their own.
  program
    .command('environment', { hidden: true })
    .description('every environment variable chatctl reads')
    .configureHelp({ formatHelp: () => environmentHelp() })
    .action(() => ctx.io.stdout.write(environmentHelp()));
  const reference = () => referenceText(focus === undefined ? program : configuredProgram(ctx));
  program
    .command('reference', { hidden: true })
    .description('every command with its options and examples')
    .configureHelp({ formatHelp: reference })
    .action(() => ctx.io.stdout.write(reference()));
  applyOutput(program, ctx);
  return program;
}

async function makePrompter(ctx: Context, state: RunState | undefined): Promise<Prompter | undefined> {
  if (!state?.interactive) return undefined;
  const { createPrompter } = await import('../prompts/inquirer.js');
  // With --json, stdout is for the one JSON document: ask on stderr.
  return state.output.json ? createPrompter(ctx, ctx.io.raw.stderr, ctx.io.color.stderr) : createPrompter(ctx, ctx.io.raw.stdout, ctx.io.color.stdout);
}

const TOP_LEVEL = new Map<string, string>([
  ...GROUPS.flatMap((g) => [[g.name, g.name] as const, ...(g.aliases ?? []).map((a) => [a, g.name] as const)]),
  ['environment', 'environment'],
  ['reference', 'reference'],
]);
export const GLOBALS_WITH_VALUE = new Set(['--profile', '--base-url', '--org', '--app', '--env', '--query', '--max-retries', '--timeout', '--deadline']);

/** The words of argv that are neither options nor a global option's value, up to `--`. */
function* commandWords(argv: readonly string[]): Generator<string> {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return;
    if (!a.startsWith('-')) yield a;
    else if (GLOBALS_WITH_VALUE.has(a)) i++;
  }
}

/** The top-level command argv names; undefined for help or anything unclear. */
export function focusOf(argv: readonly string[]): string | undefined {
  const [first] = commandWords(argv);
  const top = first === undefined ? undefined : TOP_LEVEL.get(first);
  // The reference describes every command: it needs the whole tree.
  return top === 'reference' ? undefined : top;
}

/** A fixed width: help reads the same everywhere, and the build pre-renders it for bin/chatctl.js. */
const HELP_WIDTH = 80;

/** The command each of commander's errors came from, for a hint naming that command's help. */
const failedIn = new WeakMap<CommanderError, Command>();

/** The long names of the program's options that take a value: GLOBALS_WITH_VALUE, as a test checks. */
export function optionsWithValue(program: Command): Set<string> {
  return new Set(program.options.filter((o) => o.required && o.long !== undefined).map((o) => o.long!));
}

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
    if (isHelpHelp(argv)) {
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

const isVersion = (err: unknown) => err instanceof CommanderError && err.code === 'commander.version';

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
function isHelpHelp(argv: string[]): boolean {
  const words = argv.filter((a, i) => !a.startsWith('-') && !GLOBALS_WITH_VALUE.has(argv[i - 1] ?? ''));
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
  let cmd = program;
  for (const a of commandWords(argv)) {
    const subs = cmd.commands.filter((c) => c.name() !== 'help');
    if (subs.length === 0 || cmd.registeredArguments.length > 0) return; // the rest may be its arguments' values
    const next = subs.find((c) => c.name() === a || c.aliases().includes(a));
    if (!next) throw usageError(`unknown command '${a}'`, unknownCommandHint(a, cmd));
    cmd = next;
  }
}

/** `chatctl help A B` is `chatctl A B --help` (commander's help command reads one word only). */
function helpAsFlag(argv: string[], program: Command): string[] {
  let at = 0;
  while (at < argv.length && argv[at]!.startsWith('-')) at += GLOBALS_WITH_VALUE.has(argv[at]!) ? 2 : 1;
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

/** Commander's output for this run: errors thrown (reported once, by reportError in errors/explain.ts), help to the run's streams at a fixed width. */
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
    outputError: () => {}, // printed once, by reportError (errors/explain.ts)
    getOutHelpWidth: () => HELP_WIDTH,
    getErrHelpWidth: () => HELP_WIDTH,
  });
  for (const sub of cmd.commands) applyOutput(sub, ctx);
}
