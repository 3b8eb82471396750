// A manual page per command (man/chatctl.1, man/chatctl-webhooks-rotate.1,
// …), written by the build from the program itself: the same usage,
// description, arguments, options, subcommands and examples as its --help.
import type { Command } from 'commander';
import { helpOf, visibleCommands } from './reference.js';

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

function page(cmd: Command, path: string[], version: string): string {
  const help = cmd.createHelp();
  const { after } = helpOf(cmd);
  const title = ['chatctl', ...path];
  const out: string[] = [];
  const section = (name: string) => out.push(`.SH ${name}`);
  const item = (term: string, description: string) => out.push('.TP', `\\fB${roffText(term)}\\fR`, roffText(description || ' '));
  out.push(`.TH "${roffText(title.join('-').toUpperCase())}" "1" "" "chatctl ${roffText(version)}" "chatctl manual"`, '.nh', '.ad l');
  section('NAME');
  out.push(`${roffText(title.join('-'))} \\- ${roffText(help.commandDescription(cmd).split('\n')[0]!)}`);
  section('SYNOPSIS');
  out.push(`.B ${roffText(help.commandUsage(cmd))}`);
  section('DESCRIPTION');
  out.push(roffText(help.commandDescription(cmd)));
  const args = help.visibleArguments(cmd);
  if (args.length > 0) {
    section('ARGUMENTS');
    for (const a of args) item(help.argumentTerm(a), help.argumentDescription(a));
  }
  const options = help.visibleOptions(cmd);
  if (options.length > 0) {
    section('OPTIONS');
    for (const o of options) item(help.optionTerm(o), help.optionDescription(o));
  }
  const subs = help.visibleCommands(cmd).filter((c) => c.name() !== 'help');
  if (subs.length > 0) {
    section('COMMANDS');
    for (const c of subs) item(help.subcommandTerm(c), `${help.subcommandDescription(c)}\nSee ${manPageName([...path, c.name()]).replace(/\.1$/, '(1)')}.`);
  }
  const extra = after.replace(/^\n+/, '').trimEnd();
  if (extra) {
    const examples = extra.startsWith('Examples:\n');
    section(examples ? 'EXAMPLES' : 'NOTES');
    out.push('.nf', roffText(examples ? extra.slice('Examples:\n'.length) : extra), '.fi');
  }
  section('SEE ALSO');
  const related = [['chatctl'], path.length > 1 ? ['chatctl', ...path.slice(0, -1)] : []].filter((p) => p.length > 0 && p.join(' ') !== title.join(' '));
  out.push(roffText([...related.map((p) => `${p.join('-')}(1)`), 'chatctl help reference (every command)', 'chatctl help environment (environment variables)', 'chatctl exit-codes'].join(', ')));
  if (path.length > 0) out.push('.PP', roffText('The options every command takes (--profile, --json, --no-input, --dry-run, ...) are in chatctl(1).'));
  return out.join('\n') + '\n';
}

/** Every visible command's page, by file name. */
export function renderManPages(program: Command, version: string): Record<string, string> {
  const pages: Record<string, string> = {};
  for (const { path, command } of visibleCommands(program)) pages[manPageName(path)] = page(command, path, version);
  return pages;
}
