// GitHub Actions masks a value in a job's log once the workflow command
// `::add-mask::VALUE` has been printed: from then on the runner shows `***`
// wherever the value appears, and drops the command line itself. The value
// is written as the runner reads workflow-command data: `%` as `%25`, CR as
// `%0D`, LF as `%0A`. The log is matched line by line, so a value holding a
// line break is also masked line by line, and a value that JSON would
// escape (a quote, a backslash, a control character) is masked as the JSON
// document shows it too.
import { escapeUnsafeJson } from './json.js';

/** Whether this run is a GitHub Actions job step (the runner sets GITHUB_ACTIONS=true). */
export const inGitHubActions = (env: Record<string, string | undefined>): boolean => env.GITHUB_ACTIONS === 'true';

/** A workflow command's data (after `::`): `%`, CR and LF escaped, as the runner unescapes them. */
export const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/** A workflow command's property value (`title=…`): as data, and `:` and `,` too, which end a property. */
export const escapeProperty = (s: string) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** An error annotation: `::error title=TITLE::MESSAGE`, one line, both escaped. */
export const errorCommand = (title: string, message: string): string => `::error title=${escapeProperty(title)}::${escapeData(message)}\n`;

/** The `::add-mask::` lines for one value: the value, each of its lines, and its JSON-escaped form. */
export function maskCommands(value: string): string {
  const forms = new Set<string>([value]);
  if (/[\r\n]/.test(value)) for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') forms.add(line);
  forms.add(escapeUnsafeJson(JSON.stringify(value).slice(1, -1)));
  let out = '';
  for (const form of forms) if (form !== '') out += `::add-mask::${escapeData(form)}\n`;
  return out;
}

/** Whether a run has anything to tell its CI system (run/ci-report.ts, loaded only then): annotations, a step summary, a --report file. */
export const ciReportWanted = (env: Record<string, string | undefined>, reportPath?: string): boolean => inGitHubActions(env) || Boolean(env.GITHUB_STEP_SUMMARY) || reportPath !== undefined;
