// The command tree: the only file that knows the argument parser's global
// options. Each command group registers itself beside its code
// (src/commands/*/register.ts); its actions import their modules when they
// run, so `--help` and the commands that do not send requests never load the
// HTTP stack, zod's response schemas or prompts.
import { Command, CommanderError } from 'commander';
import type { Context, GlobalOptions } from './context.js';
import { CliError, usageError } from './errors/cli-error.js';
import { EXIT } from './errors/exit-codes.js';
import type { Prompter } from './prompts/prompter.js';
import { examples, type App, type Register } from './commands/app.js';
import { registerWebhooks } from './commands/webhooks/register.js';
import { registerProfile } from './commands/profile/register.js';
import { registerAuth } from './commands/auth/register.js';
import { registerExitCodes } from './commands/exit-codes.js';
import { registerCompletion } from './commands/completion/register.js';
import { registerSandbox } from './commands/sandbox.js';
import { resolveInvocation } from './app/invocation.js';
import { loadPalettes } from './output/colors.js';

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
  { name: 'completion', description: 'print the shell completion script for bash, zsh or fish', register: registerCompletion },
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
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      examples(
        'chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production',
        'chatctl auth login --with-token < token.txt',
        'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1 --secret-file ./whsec',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --json',
      ) + '\nExit codes: chatctl help exit-codes\n',
    )
    // The flags are parsed once, by commander; what follows from them is
    // worked out here, once, before any command runs.
    .hook('preAction', async () => {
      const inv = resolveInvocation(globals(), ctx);
      ctx.invocation = inv;
      applyOutputMode(ctx, inv.output);
      ctx.io.paint = await loadPalettes(ctx.io.color);
    });

  for (const group of GROUPS) {
    const cmd = program.command(group.name).description(group.description);
    for (const alias of group.aliases ?? []) cmd.alias(alias);
    if (focus === undefined || focus === group.name) group.register(cmd, app);
  }
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

const TOP_LEVEL = new Map<string, string>(GROUPS.flatMap((g) => [[g.name, g.name] as const, ...(g.aliases ?? []).map((a) => [a, g.name] as const)]));
const GLOBALS_WITH_VALUE = new Set(['--profile', '--base-url', '--org', '--app', '--env', '--max-retries', '--timeout']);

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
 * errors. Returns the program, whose parsed options say how to report an
 * error (--json, --no-color, --debug) even when parsing failed.
 */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return; // --help, --version
      if (err.code === 'commander.help' || err.code === 'commander.helpDisplayed') {
        const message = focusOf(argv) === undefined && argv.includes('help') ? `no help for "${argv.slice(argv.indexOf('help') + 1).join(' ')}": unknown command` : 'a subcommand is required';
        throw new CliError('usage_error', message, EXIT.usage);
      }
      throw usageError(err.message.replace(/^error: /, ''), 'see: chatctl --help');
    }
    throw err;
  }
}

function applyOutput(cmd: Command, ctx: Context): void {
  cmd.exitOverride();
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
