// The command tree: the only file that knows the argument parser. Each
// action imports its command module when it runs, so `--help` and the
// commands that do not send requests never load the HTTP stack, zod's
// response schemas or prompts. Help text and examples live here, next to
// the command they describe.
import { Argument, Command, CommanderError, Help, Option } from 'commander';
import type { Context, GlobalOptions } from './context.js';
import { CliError, usageError } from './errors/cli-error.js';
import { EXIT } from './errors/exit-codes.js';
import { EVENT_TYPES } from './api/spec.js';
import { exitCodesJson, exitCodesText } from './commands/exit-codes.js';
import { environmentHelp } from './meta/environment.js';
import { didYouMean } from './input/suggest.js';
import { writeJson } from './output/io.js';
import type { Prompter } from './prompts/prompter.js';
import { noInput } from './scope/resolve.js';

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

const examples = (...lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/**
 * A value from a fixed list, else a usage error with the nearest valid one
 * suggested. Commander keeps `.choices()` for help and completion; this
 * parser replaces its check, whose message has no suggestion.
 */
const oneOf = (label: string, choices: readonly string[]) => (value: string) => {
  if (choices.includes(value)) return value;
  const list = `${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}`;
  throw usageError(`invalid ${label} "${value}": must be ${list}`, didYouMean(value, choices));
};

/** The one line every subcommand's help has in place of the global options. */
export const GLOBAL_OPTIONS_POINTER = 'Global options (--profile, --json, --no-input, --dry-run, …): chatctl --help';

/** Subcommand help: the command's own options and one line pointing to the global ones. */
function formatHelp(this: Help, cmd: Command, helper: Help): string {
  const text = Help.prototype.formatHelp.call(this, cmd, helper);
  return cmd.parent ? `${text}\n${GLOBAL_OPTIONS_POINTER}\n` : text;
}

/**
 * The command tree. With `focus` (the top-level command argv names), only
 * that group is built in full and the others are stubs with their name and
 * description: a run builds the few commands it can reach, not all twenty.
 * Help and completion are taken from the full tree (meta/), and a test
 * compares focused and full help for every command.
 */
export function buildProgram(ctx: Context, focus?: string): Command {
  const wants = (name: string) => focus === undefined || focus === name;
  const program = new Command('chatctl');
  const globals = () => program.opts<GlobalOptions>();
  const prompter = () => makePrompter(ctx, globals());

  program
    .description("Manage a chat service's signed webhook endpoints: create them, rotate their signing secrets, reactivate them.")
    .version(ctx.version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .addHelpCommand('help [command]', 'show help for a command')
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
    .option('--no-color', 'no ANSI colour (also NO_COLOR)')
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
    );

  // ---- the top-level commands: the focused one in full, the rest as stubs
  const webhooks = program.command('webhooks').alias('webhook').description('create signed webhook endpoints, rotate their secrets, reactivate them');
  if (wants('webhooks')) defineWebhooks(webhooks);
  const profile = program.command('profile').description('manage stored profiles (base URL and scope)');
  if (wants('profile')) defineProfile(profile);
  const auth = program.command('auth').description('store, remove and check the bearer token of a profile');
  if (wants('auth')) defineAuth(auth);
  const exitCodes = program.command('exit-codes').description('print the table of exit codes');
  if (wants('exit-codes')) defineExitCodes(exitCodes);
  const completion = program.command('completion').description('print the shell completion script for bash, zsh or fish, or install it');
  if (wants('completion')) defineCompletion(completion);
  const doctor = program.command('doctor').description('check the config, credentials, network and clock, and say how to fix what is wrong');
  if (wants('doctor')) defineDoctor(doctor);
  // `chatctl help environment`: a help topic, not a command of its own.
  program
    .command('environment', { hidden: true })
    .description('every environment variable chatctl reads')
    .configureHelp({ formatHelp: () => environmentHelp() })
    .action(() => ctx.io.stdout.write(environmentHelp()));
  const sandbox = program.command('sandbox').description('serve the management API on loopback, in memory, for trying chatctl and testing scripts');
  if (wants('sandbox')) defineSandbox(sandbox);
  return program;

  // ---- webhooks -------------------------------------------------------
  function defineWebhooks(webhooks: Command): void {
    webhooks.addHelpText(
      'after',
      examples(
        'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1 --secret-file ./billing.whsec',
        'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-file ./new.whsec',
        'chatctl webhooks reactivate we_123 --expected-version 4',
      ),
    );
    webhooks
      .command('create')
      .description('create a signed webhook endpoint and receive its signing secret (shown once)')
      .option('--name <name>', 'display name, 1 to 80 characters')
      .option('--url <url>', 'destination URL: absolute https:// URL, at most 2048 characters')
      .addOption(new Option('--event <type>', 'event type to subscribe to; repeat it or give a comma-separated list').argParser(collect))
      .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
      .option('--secret-file <path>', 'write the signing secret to this new file (mode 0600) instead of printing it')
      .option('--force', 'with --secret-file: replace the file if it exists')
      .addHelpText(
        'after',
        examples(
          'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1,chat.message.updated.v1 --secret-file ./billing.whsec',
          'chatctl webhooks create --name audit --url https://audit.example.com/in --event chat.message.deleted.v1 --json > endpoint.json',
        ) + `\nEvent types:\n${EVENT_TYPES.map((e) => `  ${e}`).join('\n')}\n`,
      )
      .action(async (opts) => {
        const { runCreate } = await import('./commands/webhooks/create.js');
        await runCreate(opts, globals(), ctx, await prompter());
      });

    webhooks
      .command('rotate')
      .description('rotate the signing secret of an endpoint and receive the new one (shown once)')
      .argument('<endpoint-id>', 'the endpoint to rotate')
      .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
      .addOption(
        new Option('--mode <mode>', 'overlap: the old secret stays valid for a while; immediate: the old secret stops working now')
          .choices(['overlap', 'immediate'])
          .argParser(oneOf('--mode', ['overlap', 'immediate'])),
      )
      .option('--idempotency-key <key>', 'reuse the key of an earlier run that may have been applied (default: a new UUID)')
      .option('--secret-file <path>', 'write the new signing secret to this new file (mode 0600) instead of printing it')
      .option('--force', 'with --secret-file: replace the file if it exists')
      .option('-y, --yes', 'do not ask for confirmation of --mode immediate')
      .addHelpText(
        'after',
        examples(
          'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-file ./new.whsec',
          'chatctl webhooks rotate we_123 --expected-version 3 --mode immediate --yes --json',
        ),
      )
      .action(async (endpointId: string, opts) => {
        const { runRotate } = await import('./commands/webhooks/rotate.js');
        await runRotate(endpointId, opts, globals(), ctx, await prompter());
      });

    webhooks
      .command('reactivate')
      .description('reactivate a deactivated endpoint')
      .argument('<endpoint-id>', 'the endpoint to reactivate')
      .option('--expected-version <n>', "the endpoint's current version (optimistic concurrency)")
      .addHelpText('after', examples('chatctl webhooks reactivate we_123 --expected-version 4', 'chatctl webhooks reactivate we_123 --expected-version 4 --json'))
      .action(async (endpointId: string, opts) => {
        const { runReactivate } = await import('./commands/webhooks/reactivate.js');
        await runReactivate(endpointId, opts, globals(), ctx, await prompter());
      });

  }

  // ---- profile --------------------------------------------------------
  function defineProfile(profile: Command): void {
    profile.addHelpText(
      'after',
      examples('chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production', 'chatctl profile use prod', 'chatctl profile list'),
    );
    profile
      .command('list')
      .description('list profiles; * marks the one in use')
      .addHelpText('after', examples('chatctl profile list', 'chatctl profile list --json'))
      .action(async () => (await import('./commands/profile/profile.js')).runProfileList(globals(), ctx));
    profile
      .command('show')
      .description('show a profile (the one in use by default); tokens are never shown')
      .argument('[name]', 'profile name')
      .addHelpText('after', examples('chatctl profile show', 'chatctl profile show prod --json'))
      .action(async (name: string | undefined) => (await import('./commands/profile/profile.js')).runProfileShow(name, globals(), ctx));
    profile
      .command('set')
      .description('create or update a profile from --base-url, --org, --app, --env, --origin and --csrf-token (an empty value clears a field)')
      .argument('<name>', 'profile name')
      .option('--origin <origin>', 'Origin header to send (default: the base URL\'s origin)')
      .option('--csrf-token <value>', 'x-service-csrf value to send (default: 1)')
      .addHelpText(
        'after',
        examples(
          'chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production',
          'chatctl profile set prod --env staging',
        ),
      )
      .action(async (name: string, opts) => (await import('./commands/profile/profile.js')).runProfileSet(name, opts, globals(), ctx));
    profile
      .command('use')
      .description('make a profile the one in use')
      .argument('<name>', 'profile name')
      .addHelpText('after', examples('chatctl profile use prod'))
      .action(async (name: string) => (await import('./commands/profile/profile.js')).runProfileUse(name, ctx));
    profile
      .command('remove')
      .description('remove a profile and its stored token')
      .argument('<name>', 'profile name')
      .addHelpText('after', examples('chatctl profile remove staging'))
      .action(async (name: string) => (await import('./commands/profile/profile.js')).runProfileRemove(name, ctx));

  }

  // ---- auth -----------------------------------------------------------
  function defineAuth(auth: Command): void {
    auth.addHelpText('after', examples('chatctl auth login --with-token < token.txt', 'chatctl auth status', 'chatctl auth logout --profile staging'));
    auth
      .command('login')
      .description('store a bearer token in the selected profile (from a hidden prompt, or stdin with --with-token)')
      .option('--with-token', 'read the token from standard input')
      .addHelpText('after', examples('chatctl auth login --with-token < token.txt', 'printenv CHAT_TOKEN | chatctl auth login --with-token --profile prod'))
      .action(async (opts) => (await import('./commands/auth/auth.js')).runAuthLogin(opts, globals(), ctx, await prompter()));
    auth
      .command('logout')
      .description('remove the stored token of the selected profile')
      .addHelpText('after', examples('chatctl auth logout --profile prod'))
      .action(async () => (await import('./commands/auth/auth.js')).runAuthLogout(globals(), ctx));
    auth
      .command('status')
      .description('show which profile and token would be used (exit 3 when there is no token)')
      .addHelpText('after', examples('chatctl auth status', 'chatctl auth status --json'))
      .action(async () => (await import('./commands/auth/auth.js')).runAuthStatus(globals(), ctx));

  }

  // ---- utilities ------------------------------------------------------
  function defineExitCodes(cmd: Command): void {
    cmd
      .addHelpText('after', examples('chatctl exit-codes', "chatctl exit-codes --json | jq '.exitCodes[] | select(.code == 7)'") + '\n' + exitCodesText())
      .action(() => (globals().json ? writeJson(ctx.io, exitCodesJson()) : ctx.io.stdout.write(exitCodesText())));

  }

  function defineCompletion(cmd: Command): void {
    cmd
      .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']).argParser(oneOf('shell', ['bash', 'zsh', 'fish'])))
      .addHelpText(
        'after',
        examples(
          'chatctl completion install',
          'mkdir -p ~/.local/share/bash-completion/completions && chatctl completion bash > ~/.local/share/bash-completion/completions/chatctl',
          'source <(chatctl completion zsh)    # in ~/.zshrc, after compinit',
          'chatctl completion fish | source',
        ),
      )
      .action(async (shell: 'bash' | 'zsh' | 'fish') => {
        const { completionScript } = await import('./completion/scripts.js');
        ctx.io.stdout.write(completionScript(shell));
      });
    cmd
      .command('install')
      .description("write the completion script where your shell finds it (for this user), creating folders; says what it did")
      .addOption(new Option('--shell <shell>', 'bash, zsh or fish (default: from $SHELL)').choices(['bash', 'zsh', 'fish']).argParser(oneOf('--shell', ['bash', 'zsh', 'fish'])))
      .addHelpText(
        'after',
        examples('chatctl completion install', 'chatctl completion install --shell zsh') +
          `
Where it goes:
  bash  \${XDG_DATA_HOME:-~/.local/share}/bash-completion/completions/chatctl
        (bash-completion loads it on first use; \$BASH_COMPLETION_USER_DIR wins)
  zsh   \${XDG_DATA_HOME:-~/.local/share}/zsh/site-functions/_chatctl, and the
        line to add to ~/.zshrc is printed
  fish  \${XDG_CONFIG_HOME:-~/.config}/fish/completions/chatctl.fish
Running it again says the script is already up to date, or replaces an old one.
`,
      )
      .action(async (opts: { shell?: 'bash' | 'zsh' | 'fish' }) => {
        const { runCompletionInstall } = await import('./completion/install.js');
        runCompletionInstall(opts, ctx);
      });

  }

  function defineDoctor(cmd: Command): void {
    cmd
      .addHelpText(
        'after',
        examples('chatctl doctor', 'chatctl doctor --profile prod', 'chatctl doctor --json') +
          `
Checks, in order, one line each (ok, warning or failure, with the fix): the
config folder and file, the profile and where each scope value comes from,
the token (its source, never its value), the base URL (https rule, proxy,
DNS, TCP, TLS), a round trip to the base URL with the clock skew from its
Date header, and the Node.js version. The round trip is a GET of the base URL
without the token: doctor never sends the token anywhere, so it cannot tell
whether the server accepts it.

Exit status: 0 when nothing failed, else that of the first failure: 3
configuration, 4 authentication, 12 network.
`,
      )
      .action(async () => {
        const { runDoctor } = await import('./commands/doctor.js');
        await runDoctor(globals(), ctx);
      });
  }

  function defineSandbox(cmd: Command): void {
    cmd
      .option('--host <host>', 'loopback address to listen on', '127.0.0.1')
      .option('--port <port>', 'port (0 picks a free one)', '0')
      .option('--token <token>', 'bearer token to accept (default: a random one, printed on start)')
      .option('--endpoint-limit <n>', 'endpoints allowed per environment', '10')
      .option('--rate-limit <n>', 'answer 429 beyond N requests per second (0: off)', '0')
      .addHelpText('after', examples('chatctl sandbox', 'chatctl sandbox --port 0 --json', 'chatctl sandbox --rate-limit 5 --endpoint-limit 3'))
      .action(async (opts) => {
        const { runSandbox } = await import('./commands/sandbox.js');
        await runSandbox(opts, globals(), ctx);
      });

  }
}

async function makePrompter(ctx: Context, g: GlobalOptions): Promise<Prompter | undefined> {
  if (!ctx.io.stdin.isTTY || !ctx.io.stdout.isTTY) return undefined;
  if (noInput({ noInput: g.input === false }, ctx.env)) return undefined;
  // The prompts' colours (yoctocolors) are decided once, when their bundle
  // loads, from NO_COLOR/FORCE_COLOR; make those say what chatctl decided,
  // so --no-color reaches the prompts too.
  if (!ctx.io.color.stdout) {
    process.env.NO_COLOR = '1';
    delete process.env.FORCE_COLOR;
  }
  const { createPrompter } = await import('./prompts/inquirer.js');
  // With --json, stdout is for the one JSON document: ask on stderr.
  return createPrompter(ctx, g.json ? process.stderr : process.stdout);
}

export const HELP_WIDTH = 80;

/** The program with chatctl's output settings, ready to parse or describe. */
export function configuredProgram(ctx: Context, focus?: string): Command {
  const program = buildProgram(ctx, focus);
  applyOutput(program, ctx);
  return program;
}

const TOP_LEVEL = new Set(['webhooks', 'profile', 'auth', 'exit-codes', 'completion', 'doctor', 'environment', 'sandbox']);
const ALIASES: Record<string, string> = { webhook: 'webhooks' };
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
    const name = ALIASES[a] ?? a;
    return TOP_LEVEL.has(name) ? name : undefined;
  }
  return undefined;
}

/** Parses argv and runs the command; commander's own failures become usage errors. */
export async function runCli(argv: string[], ctx: Context): Promise<void> {
  argv = helpAsFlag(argv);
  const program = configuredProgram(ctx, focusOf(argv));
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return; // --help, --version
      const where = helpCommandFor(failedIn.get(err));
      if (err.code === 'commander.help' || err.code === 'commander.helpDisplayed') {
        const focus = focusOf(argv);
        const message = focus === undefined && argv.includes('help') ? `no help for "${argv.slice(argv.indexOf('help') + 1).join(' ')}": unknown command` : 'a subcommand is required';
        throw new CliError('usage_error', message, EXIT.usage, { hint: `see: ${where}` });
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
  const topics = [...TOP_LEVEL, ...Object.keys(ALIASES)];
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
      if (!ctx.io.quiet) ctx.io.stderr.write(s);
    },
    outputError: () => {}, // printed once, by errors/report.ts
    // A fixed width: help reads the same everywhere, and the build can
    // pre-render it for the fast path in bin/chatctl.js.
    getOutHelpWidth: () => HELP_WIDTH,
    getErrHelpWidth: () => HELP_WIDTH,
  });
  for (const sub of cmd.commands) applyOutput(sub, ctx);
}
