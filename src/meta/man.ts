// A manual page per command (man/chatctl.1, man/chatctl-webhooks-rotate.1,
// …), written by the build from the program itself: the same usage,
// description, arguments, options, subcommands and examples as its --help.
import type { Command } from 'commander';
import { helpOf, visibleCommands } from './reference.js';
import { EXIT_CODE_ROWS } from '../errors/cli-error.js';
import { ENVIRONMENT } from './environment.js';
import { exitStatusOf } from './exit-status.js';

/** Text for roff: no request or escape can start from it, and characters print as typed (ASCII - and quotes). */
export function roffText(text: string): string {
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

/** The page's file name for a command path: chatctl-webhooks-rotate.1. */
export const manPageName = (path: string[]) => `${['chatctl', ...path].join('-')}.1`;

/** A description as a sentence: a full stop at its end, so the next sentence never runs on from it. */
const sentence = (text: string) => (/[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`);

/** `.TP` items: a bold term, then its text. */
function items(out: string[], list: [string, string][]): void {
  for (const [term, description] of list) out.push('.TP', `\\fB${roffText(term)}\\fR`, roffText(description || ' '));
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
  items(
    out,
    args.map((a) => [help.argumentTerm(a), help.argumentDescription(a)]),
  );
  const options = help.visibleOptions(cmd);
  if (options.length > 0) section('OPTIONS');
  items(
    out,
    options.map((o) => [help.optionTerm(o), help.optionDescription(o)]),
  );
  const subs = help.visibleCommands(cmd).filter((c) => c.name() !== 'help');
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
  items(
    out,
    rows.map(([code, meaning, apiCodes]) => [String(code), sentence(apiCodes ? `${meaning} (${apiCodes})` : meaning)]),
  );
}

/** The program's page lists every variable; a command's page those that choose where and how it works. */
function environment(out: string[], path: string[]): void {
  const groups = path.length === 0 ? ENVIRONMENT : ENVIRONMENT.slice(0, 3);
  out.push('.SH ENVIRONMENT');
  for (const [, rows] of groups)
    items(
      out,
      rows.map(([name, meaning, fallback]) => [name, `${sentence(meaning[0]!.toUpperCase() + meaning.slice(1))} Default: ${sentence(fallback)}`]),
    );
  if (path.length > 0) out.push('.PP', roffText('Every variable chatctl reads: chatctl(1), or chatctl help environment.'));
}

function seeAlso(out: string[], path: string[], title: string[]): void {
  out.push('.SH SEE ALSO');
  const related = [['chatctl'], path.length > 1 ? ['chatctl', ...path.slice(0, -1)] : []].filter((p) => p.length > 0 && p.join(' ') !== title.join(' '));
  out.push(roffText([...related.map((p) => `${p.join('-')}(1)`), 'chatctl help reference (every command)', 'chatctl help environment (environment variables)', 'chatctl exit-codes'].join(', ') + '.'));
  if (path.length > 0) out.push('.PP', roffText('The options every command takes (--profile, --json, --no-input, --dry-run, ...) are in chatctl(1).'));
}

/** Every visible command's page, by file name. */
export function renderManPages(program: Command, version: string): Record<string, string> {
  const pages: Record<string, string> = {};
  for (const { path, command } of visibleCommands(program)) pages[manPageName(path)] = page(command, path, version);
  return pages;
}
