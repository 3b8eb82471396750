// `chatctl help reference` and the manual pages the build writes, both taken from the
// program itself, so the reference, `--help` and the pages never differ.
import type { Command } from 'commander';
import { shownSubcommands } from './tree.js';
import { EXIT, EXIT_CODE_ROWS } from '../errors/cli-error.js';
import { ENVIRONMENT } from './environment.js';

export const HELP_HELP = `Usage: chatctl help [command...]

Show the help of a command, or of one of these topics:

  chatctl help COMMAND [SUBCOMMAND]  the same as chatctl COMMAND [SUBCOMMAND] --help
  chatctl help environment           every environment variable chatctl reads
  chatctl help exit-codes            the exit codes and what each means
  chatctl help reference             every command with its options and examples
  chatctl help help                  this text

Each command also has a manual page: man chatctl, man chatctl-webhooks-rotate, …
`;

/** Every visible command, the program first, each followed by its subcommands. */
export function visibleCommands(program: Command): { path: string[]; command: Command }[] {
  const out: { path: string[]; command: Command }[] = [];
  const walk = (cmd: Command, path: string[]) => {
    out.push({ path, command: cmd });
    for (const sub of shownSubcommands(cmd)) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}

/** A command's help as `--help` prints it, and the part of it after what commander renders (examples, notes). */
export function helpOf(cmd: Command): { help: string; after: string } {
  const config = cmd.configureOutput();
  let help = '';
  cmd.configureOutput({ writeOut: (s: string) => void (help += s), writeErr: (s: string) => void (help += s) });
  try {
    cmd.outputHelp();
  } finally {
    cmd.configureOutput(config);
  }
  const body = cmd.helpInformation();
  return { help, after: help.startsWith(body) ? help.slice(body.length) : '' };
}

export function referenceText(program: Command): string {
  const parts = visibleCommands(program).map(({ path, command }) => {
    const title = ['chatctl', ...path].join(' ');
    return `${title}\n${'='.repeat(title.length)}\n\n${helpOf(command).help.trimEnd()}\n`;
  });
  return `chatctl ${program.version() ?? ''} command reference\n\n${parts.join('\n')}\nEnvironment variables: chatctl help environment\n`;
}

const { config, auth, permission, notFound, versionConflict, conflict, rejected, limit, rateLimited, unavailable, secretNotDelivered, partial } = EXIT;

/** What any request to the API can be answered with. */
const API = [config, auth, permission, notFound, versionConflict, conflict, rejected, limit, rateLimited, unavailable];

/** What this machine saw, nothing sent: only an unreadable config (3). */
const LOCAL = ['webhooks list', 'webhooks show', 'profile list', 'profile show', 'profile set', 'profile use', 'profile remove', 'auth login', 'auth logout', 'auth status', 'auth token'];
const NOTHING = ['webhooks fingerprint', 'webhooks sign', 'exit-codes', 'completion', 'completion install', 'version', 'sandbox'];

export const EXIT_STATUS_BY_COMMAND: Readonly<Record<string, readonly number[]>> = {
  'webhooks create': [...API, secretNotDelivered],
  'webhooks rotate': [...API, secretNotDelivered, partial],
  'webhooks reactivate': API,
  'webhooks trigger': API,
  'webhooks verify': [rejected],
  doctor: [config, auth, unavailable],
  ...Object.fromEntries(LOCAL.map((c) => [c, [config]])),
  ...Object.fromEntries(NOTHING.map((c) => [c, []])),
};

/** Every command can also end with 0, 1, 2 and by a signal; one not listed (a group) with any code. */
const ALWAYS_BEFORE = [EXIT.ok, EXIT.unexpected, EXIT.usage];
const ALWAYS_AFTER = [EXIT.hangup, EXIT.interrupted, EXIT.terminated];

export function exitStatusOf(path: readonly string[]): number[] | undefined {
  const own = EXIT_STATUS_BY_COMMAND[path.join(' ')];
  return own === undefined ? undefined : [...new Set([...ALWAYS_BEFORE, ...own, ...ALWAYS_AFTER])].sort((a, b) => a - b);
}

/** Text for roff: no request or escape can start from it, and characters print as typed (ASCII - and quotes). */
function roffText(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/'/g, '\\(aq')
    .replace(/`/g, '\\(ga')
    .replace(/~/g, '\\(ti')
    .replace(/\^/g, '\\(ha')
    .split('\n')
    .map((line) => (/^[.']/.test(line) || line.startsWith('\\(aq') ? `\\&${line}` : line))
    .join('\n');
}

export const manPageName = (path: string[]) => `${['chatctl', ...path].join('-')}.1`;

/** A description as a sentence: a full stop at its end, so the next sentence never runs on from it. */
const sentence = (text: string) => (/[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`);

/** `.TP` items: a bold term, then its text. */
function items(list: [string, string][]): string[] {
  return list.flatMap(([term, description]) => ['.TP', `\\fB${roffText(term)}\\fR`, roffText(description || ' ')]);
}

function page(cmd: Command, path: string[], version: string): string {
  const help = cmd.createHelp();
  const title = ['chatctl', ...path];
  const out: string[] = [];
  const section = (name: string) => out.push(`.SH ${name}`);
  out.push(`.TH "${roffText(title.join('-').toUpperCase())}" "1" "" "chatctl ${roffText(version)}" "chatctl manual"`, '.nh', '.ad l');
  section('NAME');
  out.push(`${roffText(title.join('-'))} \\- ${roffText(help.commandDescription(cmd).split('\n')[0]!)}`);
  section('SYNOPSIS');
  out.push(`.B ${roffText(help.commandUsage(cmd))}`);
  section('DESCRIPTION');
  out.push(roffText(sentence(help.commandDescription(cmd))));
  const args = help.visibleArguments(cmd);
  if (args.length > 0) section('ARGUMENTS');
  out.push(...items(args.map((a) => [help.argumentTerm(a), help.argumentDescription(a)])));
  const options = help.visibleOptions(cmd);
  if (options.length > 0) section('OPTIONS');
  out.push(...items(options.map((o) => [help.optionTerm(o), help.optionDescription(o)])));
  const subs = shownSubcommands(cmd);
  if (subs.length > 0) section('COMMANDS');
  for (const c of subs)
    out.push(
      '.TP',
      `\\fB${roffText(help.subcommandTerm(c))}\\fR`,
      roffText(sentence(help.subcommandDescription(c))),
      '.br',
      roffText(`See ${manPageName([...path, c.name()]).replace(/\.1$/, '(1)')}.`),
    );
  examplesAndNotes(out, cmd);
  exitStatus(out, path);
  environment(out, path);
  seeAlso(out, path, title);
  return out.join('\n') + '\n';
}

function examplesAndNotes(out: string[], cmd: Command): void {
  const extra = helpOf(cmd).after.replace(/^\n+/, '').trimEnd();
  if (!extra) return;
  const examples = extra.startsWith('Examples:\n');
  out.push(`.SH ${examples ? 'EXAMPLES' : 'NOTES'}`, '.nf', roffText(examples ? extra.slice('Examples:\n'.length) : extra), '.fi');
}

/** The codes this command can end with (the whole table for the program and the groups), each with its meaning. */
function exitStatus(out: string[], path: string[]): void {
  const codes = exitStatusOf(path);
  const rows = EXIT_CODE_ROWS.filter(([code]) => codes === undefined || codes.includes(code));
  out.push('.SH EXIT STATUS', roffText(codes === undefined ? 'One of these, as chatctl exit-codes prints them:' : 'This command ends with one of these (the whole table: chatctl exit-codes):'));
  out.push(...items(rows.map(([code, meaning, apiCodes]) => [String(code), sentence(apiCodes ? `${meaning} (${apiCodes})` : meaning)])));
}

/** The program's page lists every variable; a command's page those that choose where and how it works. */
function environment(out: string[], path: string[]): void {
  const groups = path.length === 0 ? ENVIRONMENT : ENVIRONMENT.slice(0, 3);
  out.push('.SH ENVIRONMENT');
  const rows = groups.flatMap(([, group]) => group);
  out.push(...items(rows.map(([name, meaning, fallback]) => [name, `${sentence(meaning[0]!.toUpperCase() + meaning.slice(1))} Default: ${sentence(fallback)}`])));
  if (path.length > 0) out.push('.PP', roffText('Every variable chatctl reads: chatctl(1), or chatctl help environment.'));
}

function seeAlso(out: string[], path: string[], title: string[]): void {
  out.push('.SH SEE ALSO');
  const related = [['chatctl'], path.length > 1 ? ['chatctl', ...path.slice(0, -1)] : []].filter((p) => p.length > 0 && p.join(' ') !== title.join(' '));
  out.push(roffText([...related.map((p) => `${p.join('-')}(1)`), 'chatctl help reference (every command)', 'chatctl help environment (environment variables)', 'chatctl exit-codes'].join(', ') + '.'));
  if (path.length > 0) out.push('.PP', roffText('The options every command takes (--profile, --json, --no-input, --dry-run, ...) are in chatctl(1).'));
}

export function renderManPages(program: Command, version: string): Record<string, string> {
  const pages: Record<string, string> = {};
  for (const { path, command } of visibleCommands(program)) pages[manPageName(path)] = page(command, path, version);
  return pages;
}
