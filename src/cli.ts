// The command tree: the only file that knows the argument parser's global
// options. Each command group registers itself beside its code
// (src/commands/*/register.ts); its actions import their modules when they
// run, so `--help` and the commands that do not send requests never load the
// HTTP stack, zod's response schemas or prompts.
import { Command, CommanderError, Help } from 'commander';
import type { Context, GlobalOptions } from './context.js';
import { usageError, localError } from './errors/cli-error.js';
import type { Prompter } from './prompts/prompter.js';
import { examples, type App, type Register } from './commands/app.js';
import { registerWebhooks } from './commands/webhooks/register.js';
import { registerProfile } from './commands/profile/register.js';
import { registerAuth } from './commands/auth/register.js';
import { registerExitCodes } from './commands/exit-codes.js';
import { registerCompletion } from './commands/completion/register.js';
import { registerSandbox } from './commands/sandbox.js';
import { registerDoctor } from './commands/doctor-register.js';
import { environmentHelp } from './meta/environment.js';
import { didYouMean } from './input/suggest.js';
import { resolveInvocation } from './app/invocation.js';
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
  const app: App = { ctx, globals, prompter: () => makePrompter(ctx) };

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
      ) + '\nEvery command has --help with examples.\nExit codes: chatctl help exit-codes\nEnvironment variables: chatctl help environment\n',
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
    if (focus === undefined || focus === group.name) group.register(cmd, app);
  }
  // `chatctl help environment`: a help topic, not a command of its own.
  program
    .command('environment', { hidden: true })
    .description('every environment variable chatctl reads')
    .configureHelp({ formatHelp: () => environmentHelp() })
    .action(() => ctx.io.stdout.write(environmentHelp()));
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
    return TOP_LEVEL.get(a);
  }
  return undefined;
}

/**
 * Parses argv and runs the command; commander's own failures become usage
 * errors whose hint names the failing command's help.
 */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  let args: string[];
  try {
    args = helpAsFlag(argv);
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
      // Commander's own suggestion ("(Did you mean rotate?)") becomes the hint.
      const [message, suggestion] = err.message.replace(/^error: /, '').split(/\n\(Did you mean (.*)\?\)/);
      throw usageError(message!.trim(), suggestion ? `did you mean ${suggestion}?  (see: ${where})` : `see: ${where}`);
    }
    throw err;
  }
}

/**
 * `chatctl help A B` is `chatctl A B --help` (commander's own help command
 * reads one word only); a WORD that is no command or topic gets a
 * suggestion, rather than the whole top-level help.
 */
function helpAsFlag(argv: string[]): string[] {
  let at = 0;
  while (at < argv.length && argv[at]!.startsWith('-')) at += GLOBALS_WITH_VALUE.has(argv[at]!) ? 2 : 1;
  if (argv[at] !== 'help' || at + 1 >= argv.length || argv[at + 1]!.startsWith('-')) return argv;
  const topic = argv[at + 1]!;
  const topics = [...TOP_LEVEL.keys()];
  if (!topics.includes(topic)) throw usageError(`no help for "${topic}": unknown command`, didYouMean(topic, topics) ?? 'see: chatctl --help');
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
