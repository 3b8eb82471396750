// The command tree: the only file that knows the argument parser's global
// options. Each command group registers itself beside its code
// (src/commands/*/register.ts); its actions import their modules when they
// run, so `--help` and the commands that do not send requests never load the
// HTTP stack, zod's response schemas or prompts.
import { Command, Help } from 'commander';
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
import { referenceText } from '../meta/reference.js';
import { resolveRunState, stateOf, type GlobalOptions, type RunState, type RunStateSlot } from '../run/state.js';
import { applyOutput } from './help-routing.js';
import { loadPalettes } from '../output/colors.js';

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
export function buildProgram(ctx: Context, focus?: string, run: RunStateSlot = {}): Command {
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
    // The flags are parsed once, by commander; what follows from them is
    // worked out here, once, before any command runs.
    .hook('preAction', async (_program, action) => {
      const g = program.opts<GlobalOptions>();
      // Checked before anything is read or sent: an invalid expression is exit 2. jmespath loads only for --query.
      const query = g.query !== undefined ? (await import('../run/query.js')).compileQuery(g.query) : undefined;
      const state = resolveRunState(g, ctx, query);
      run.state = state;
      const secretTo: unknown = action.opts().secretTo;
      applyOutputMode(ctx, { ...state.output, secretOnStdout: Array.isArray(secretTo) && secretTo.includes('stdout') });
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

function applyOutputMode(ctx: Context, mode: RunState['output']): void {
  const io = ctx.io as Context['io'] & { setOutputMode?(m: typeof mode): void };
  io.setOutputMode?.(mode);
}

async function makePrompter(ctx: Context, state: RunState | undefined): Promise<Prompter | undefined> {
  if (!state?.interactive) return undefined;
  const { createPrompter } = await import('../prompts/inquirer.js');
  // With --json, stdout is for the one JSON document: ask on stderr.
  return state.output.json ? createPrompter(ctx, ctx.io.raw.stderr, ctx.io.color.stderr) : createPrompter(ctx, ctx.io.raw.stdout, ctx.io.color.stdout);
}

/** The program with chatctl's output settings, ready to parse or describe; `run` receives the run-state once the flags are parsed. */
export function configuredProgram(ctx: Context, focus?: string, run?: RunStateSlot): Command {
  const program = buildProgram(ctx, focus, run);
  applyOutput(program, ctx);
  return program;
}

const TOP_LEVEL = new Map<string, string>([
  ...GROUPS.flatMap((g) => [[g.name, g.name] as const, ...(g.aliases ?? []).map((a) => [a, g.name] as const)]),
  ['environment', 'environment'],
  ['reference', 'reference'],
]);
export const GLOBALS_WITH_VALUE = new Set(['--profile', '--base-url', '--org', '--app', '--env', '--query', '--max-retries', '--timeout', '--deadline']);

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
