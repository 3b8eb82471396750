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

const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/** The `::add-mask::` lines for one value: the value, each of its lines, and its JSON-escaped form. */
export function maskCommands(value: string): string {
  const forms = new Set<string>([value]);
  if (/[\r\n]/.test(value)) for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') forms.add(line);
  forms.add(escapeUnsafeJson(JSON.stringify(value).slice(1, -1)));
  let out = '';
  for (const form of forms) if (form !== '') out += `::add-mask::${escapeData(form)}\n`;
  return out;
}
