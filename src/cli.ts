// The command tree: the only file that knows the argument parser's global
// options. Each command group registers itself beside its code
// (src/commands/*/register.ts); its actions import their modules when they
// run, so `--help` and the commands that do not send requests never load the
// HTTP stack, zod's response schemas or prompts.
import { Command, CommanderError, Help } from 'commander';
import type { Context, GlobalOptions } from './context.js';
import { usageError, localError } from './errors/cli-error.js';
import type { Prompter } from './prompts/prompter.js';
import { examples, type Factory, type Register } from './commands/app.js';
import { registerWebhooks } from './commands/webhooks/register.js';
import { registerProfile } from './commands/profile/register.js';
import { registerAuth } from './commands/auth/register.js';
import { registerExitCodes } from './commands/exit-codes/register.js';
import { registerCompletion } from './commands/completion/register.js';
import { registerSandbox } from './commands/sandbox/register.js';
import { registerDoctor } from './commands/doctor/register.js';
import { registerVersion } from './commands/version/register.js';
import { environmentHelp } from './meta/environment.js';
import { HELP_HELP, referenceText } from './meta/reference.js';
import { didYouMean, nearest } from './input/suggest.js';
import { invocationOf, resolveInvocation } from './app/invocation.js';
import { loadPalettes } from './output/colors.js';

/** The one line every subcommand's help has in place of the global options. */
export const GLOBAL_OPTIONS_POINTER = 'Global options (--profile, --json, --no-input, --dry-run, …): chatctl --help';

/** Subcommand help: the command's own options and one line pointing to the global ones. */
function formatHelp(this: Help, cmd: Command, helper: Help): string {
  const text = Help.prototype.formatHelp.call(this, cmd, helper);
  return cmd.parent ? `${text}\n${GLOBAL_OPTIONS_POINTER}\n` : text;
}

interface Group {
  name: string;
  description: string;
  aliases?: string[];
  register: Register;
}

/** The top-level commands, in the order help lists them. */
const GROUPS: Group[] = [
  { name: 'webhooks', aliases: ['webhook'], description: 'create signed webhook endpoints, rotate their secrets, reactivate them', register: registerWebhooks },
  { name: 'profile', description: 'manage stored profiles (base URL and scope)', register: registerProfile },
  { name: 'auth', description: 'store, remove and check the bearer token of a profile', register: registerAuth },
  { name: 'exit-codes', description: 'print the table of exit codes', register: registerExitCodes },
  { name: 'completion', description: 'print the shell completion script for bash, zsh or fish, or install it', register: registerCompletion },
  { name: 'doctor', description: 'check the config, credentials, network and clock, and say how to fix what is wrong', register: registerDoctor },
  { name: 'sandbox', description: 'serve the management API on loopback, in memory, for trying chatctl and testing scripts', register: registerSandbox },
  { name: 'version', description: 'print the version and what this copy was built from (commit, Node.js, platform)', register: registerVersion },
];

/**
 * The command tree. With `focus` (the top-level command argv names), only
 * that group is registered in full and the others keep their name and
 * description: a run builds the few commands it can reach. Help and
 * completion are rendered from the full tree (src/meta/), and a test
 * compares focused and full help for every command.
 */
export function buildProgram(ctx: Context, focus?: string): Command {
  const program = new Command('chatctl');
  const globals = () => program.opts<GlobalOptions>();
  const factory: Factory = {
    ctx,
    globals,
    invocation: () => invocationOf(ctx),
    prompter: () => makePrompter(ctx),
    client: async (extras) => (await import('./app/webhooks-client.js')).webhooksClient(ctx, invocationOf(ctx), extras),
  };

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
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --json',
      ) +
        '\nRun with no arguments, chatctl prints this help and exits 0.\n' +
        'Every command has --help with examples; all of them at once: chatctl help reference\nExit codes: chatctl help exit-codes\nEnvironment variables: chatctl help environment\n',
    )
    // The flags are parsed once, by commander; what follows from them is
    // worked out here, once, before any command runs.
    .hook('preAction', async (_program, action) => {
      const inv = resolveInvocation(globals(), ctx);
      ctx.invocation = inv;
      const secretTo: unknown = action.opts().secretTo;
      applyOutputMode(ctx, { ...inv.output, secretOnStdout: Array.isArray(secretTo) && secretTo.includes('stdout') });
      ctx.io.paint = await loadPalettes(ctx.io.color);
    });

  for (const group of GROUPS) {
    const cmd = program.command(group.name).description(group.description);
    for (const alias of group.aliases ?? []) cmd.alias(alias);
    if (focus === undefined || focus === group.name) group.register(cmd, factory);
  }
  // `chatctl help environment`: a help topic, not a command of its own.
  program
    .command('environment', { hidden: true })
    .description('every environment variable chatctl reads')
    .configureHelp({ formatHelp: () => environmentHelp() })
    .action(() => ctx.io.stdout.write(environmentHelp()));
  // `chatctl help reference`: every command's help, from the whole tree.
  const reference = () => referenceText(focus === undefined ? program : configuredProgram(ctx));
  program
    .command('reference', { hidden: true })
    .description('every command with its options and examples')
    .configureHelp({ formatHelp: reference })
    .action(() => ctx.io.stdout.write(reference()));
  return program;
}

function applyOutputMode(ctx: Context, mode: ReturnType<typeof resolveInvocation>['output']): void {
  const io = ctx.io as Context['io'] & { setOutputMode?(m: typeof mode): void };
  io.setOutputMode?.(mode);
}

async function makePrompter(ctx: Context): Promise<Prompter | undefined> {
  const inv = ctx.invocation;
  if (!inv?.interactive) return undefined;
  const { createPrompter } = await import('./prompts/inquirer.js');
  // With --json, stdout is for the one JSON document: ask on stderr.
  return inv.output.json ? createPrompter(ctx, ctx.io.raw.stderr, ctx.io.color.stderr) : createPrompter(ctx, ctx.io.raw.stdout, ctx.io.color.stdout);
}

export const HELP_WIDTH = 80;

/** The program with chatctl's output settings, ready to parse or describe. */
export function configuredProgram(ctx: Context, focus?: string): Command {
  const program = buildProgram(ctx, focus);
  applyOutput(program, ctx);
  return program;
}

const TOP_LEVEL = new Map<string, string>([
  ...GROUPS.flatMap((g) => [[g.name, g.name] as const, ...(g.aliases ?? []).map((a) => [a, g.name] as const)]),
  ['environment', 'environment'],
  ['reference', 'reference'],
]);
export const GLOBALS_WITH_VALUE = new Set(['--profile', '--base-url', '--org', '--app', '--env', '--max-retries', '--timeout', '--deadline']);

/** The top-level command argv names, skipping global options and their values; undefined for help or anything unclear. */
export function focusOf(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return undefined;
    if (a.startsWith('-')) {
      if (GLOBALS_WITH_VALUE.has(a)) i++;
      continue;
    }
    const top = TOP_LEVEL.get(a);
    // The reference describes every command: it needs the whole tree.
    return top === 'reference' ? undefined : top;
  }
  return undefined;
}

/**
 * Parses argv and runs the command; commander's own failures become usage
 * errors whose hint names the failing command's help.
 */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  let args: string[];
  // Bare `chatctl`: its help on stdout and exit 0, as gh does (README, Commands).
  if (argv.length === 0) return void program.outputHelp();
  try {
    if (isHelpHelp(argv)) {
      program.parseOptions(argv);
      program.configureOutput().writeOut!(HELP_HELP);
      return;
    }
    args = helpAsFlag(argv, program);
    checkHelpPath(program, args);
  } catch (err) {
    // Refused before commander ran: let it read the global options anyway,
    // so the error is reported as --json or --no-color asked.
    try {
      program.parseOptions(argv);
    } catch {
      /* the options themselves are wrong: reported as they are */
    }
    throw err;
  }
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return; // --help, --version
      const where = helpCommandFor(failedIn.get(err));
      if (err.code === 'commander.help' || err.code === 'commander.helpDisplayed') {
        const message = focusOf(argv) === undefined && argv.includes('help') ? `no help for "${argv.slice(argv.indexOf('help') + 1).join(' ')}": unknown command` : 'a subcommand is required';
        throw localError('usage_error', message, { hint: `see: ${where}` });
      }
      if (err.code === 'commander.unknownCommand') {
        const cmd = failedIn.get(err) ?? program;
        const word = /unknown command '(.*)'/.exec(err.message)?.[1] ?? '';
        throw usageError(`unknown command '${word}'`, unknownCommandHint(word, cmd));
      }
      // Commander's own suggestion ("(Did you mean rotate?)") becomes the hint.
      const [message, suggestion] = err.message.replace(/^error: /, '').split(/\n\(Did you mean (.*)\?\)/);
      throw usageError(message!.trim(), suggestion ? `did you mean ${suggestion}?  (see: ${where})` : `see: ${where}`);
    }
    throw err;
  }
}

/** `chatctl help help` (or `chatctl help --help`): how help itself works. */
function isHelpHelp(argv: string[]): boolean {
  const words = argv.filter((a, i) => !a.startsWith('-') && !GLOBALS_WITH_VALUE.has(argv[i - 1] ?? ''));
  const helpFlag = argv.some((a) => a === '--help' || a === '-h');
  return words[0] === 'help' && ((words.length === 2 && words[1] === 'help') || (words.length === 1 && helpFlag));
}

/** The operations of the webhook management API (the webhooks group has local helpers besides). */
const API_OPERATIONS = 'create, rotate and reactivate';

/**
 * The hint for a word that names no subcommand of `cmd`: the nearest
 * subcommand (never the opposite action); at the top level, a subcommand of
 * a group (`login` → `chatctl auth login`); under webhooks, an action the API
 * does not have says which it has.
 */
function unknownCommandHint(word: string, cmd: Command): string {
  const see = `see: ${helpCommandFor(cmd)}`;
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden && c.name() !== 'help');
  const names = subs.flatMap((c) => [c.name(), ...c.aliases()]);
  if (!cmd.parent) {
    const owners = subs.filter((g) => g.commands.some((c) => c.name() === word || c.aliases().includes(word)));
    if (owners.length > 0) return `did you mean ${owners.map((g) => `chatctl ${g.name()} ${word}`).join(' or ')}?  (${see})`;
  }
  const near = nearest(word, names);
  if (near !== undefined) return `did you mean ${near}?  (${see})`;
  if (cmd.name() === 'webhooks' && cmd.parent && /^(de|un|re)?(activate|enable|disable|delete|remove|destroy|pause|suspend|stop|list|get|update|edit)$/i.test(word)) {
    return `the webhook management API covers ${API_OPERATIONS}; there is no ${word}  (${see})`;
  }
  return see;
}

/**
 * `chatctl GROUP TYPO --help` is a usage error with a suggestion: without
 * this, commander shows the group's help and exits 0, as if the typo were
 * a command that has no help of its own.
 */
function checkHelpPath(program: Command, argv: string[]): void {
  if (!argv.some((a) => a === '--help' || a === '-h')) return;
  // --version anywhere wins over everything, in commander: left to it.
  if (argv.some((a) => a === '--version' || a === '-V')) return;
  let cmd = program;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return;
    if (a.startsWith('-')) {
      if (GLOBALS_WITH_VALUE.has(a)) i++;
      continue;
    }
    const subs = cmd.commands.filter((c) => c.name() !== 'help');
    if (subs.length === 0 || cmd.registeredArguments.length > 0) return; // the rest may be its arguments' values
    const next = subs.find((c) => c.name() === a || c.aliases().includes(a));
    if (!next) throw usageError(`unknown command '${a}'`, unknownCommandHint(a, cmd));
    cmd = next;
  }
}

/**
 * `chatctl help A B` is `chatctl A B --help` (commander's own help command
 * reads one word only); a WORD that is no command or topic gets a
 * suggestion, rather than the whole top-level help.
 */
function helpAsFlag(argv: string[], program: Command): string[] {
  let at = 0;
  while (at < argv.length && argv[at]!.startsWith('-')) at += GLOBALS_WITH_VALUE.has(argv[at]!) ? 2 : 1;
  if (argv[at] !== 'help' || at + 1 >= argv.length || argv[at + 1]!.startsWith('-')) return argv;
  const topic = argv[at + 1]!;
  const topics = [...TOP_LEVEL.keys()];
  if (!topics.includes(topic)) {
    const hint = didYouMean(topic, topics);
    throw usageError(`no help for "${topic}": unknown command`, hint ?? unknownCommandHint(topic, program));
  }
  return [...argv.slice(0, at), ...argv.slice(at + 1).filter((a) => a !== '--help' && a !== '-h'), '--help'];
}

/** The command each of commander's errors came from, for a hint naming that command's help. */
const failedIn = new WeakMap<CommanderError, Command>();

function helpCommandFor(cmd: Command | undefined): string {
  const words: string[] = [];
  for (let c = cmd; c?.parent; c = c.parent) words.unshift(c.name());
  return ['chatctl', ...words, '--help'].join(' ');
}

function applyOutput(cmd: Command, ctx: Context): void {
  cmd.exitOverride((err) => {
    failedIn.set(err, cmd);
    throw err;
  });
  cmd.configureOutput({
    writeOut: (s) => ctx.io.stdout.write(s),
    // Commander's help after a usage error (a group without its subcommand):
    // shown to people, muted under --json, where only the error line goes.
    writeErr: (s) => {
      if (!ctx.io.quiet && !rootOf(cmd).opts<GlobalOptions>().json) ctx.io.stderr.write(s);
    },
    outputError: () => {}, // printed once, by errors/report.ts
    // A fixed width: help reads the same everywhere, and the build can
    // pre-render it for the fast path in bin/chatctl.js.
    getOutHelpWidth: () => HELP_WIDTH,
    getErrHelpWidth: () => HELP_WIDTH,
  });
  for (const sub of cmd.commands) applyOutput(sub, ctx);
}

export function rootOf(cmd: Command): Command {
  let root = cmd;
  while (root.parent) root = root.parent;
  return root;
}
