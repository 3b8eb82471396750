// The text of what --json prints: the one document of a command, or the
// lines of a stream; with --query (src/run/query.ts), what the expression
// selects from each. Every JSON document on stdout goes through here.
import { stringifyJson } from './json.js';
import { escapeControl } from './sanitize.js';

/** --query's expression, compiled and checked before anything is sent (src/run/query.ts). */
export interface JsonQuery {
  readonly expression: string;
  /** The selected value; throws when the expression cannot be applied to this document (a function given the wrong type). */
  select(document: unknown): unknown;
}

/**
 * The one JSON document a command prints, as text: indented on a terminal,
 * one line otherwise; or, with --query, the part the expression selects: a
 * string bare (its terminal controls escaped), anything else as JSON on one
 * line (null included). Every --json document goes through here or
 * jsonLineText, so --query applies to all of them.
 */
export function jsonDocumentText(
  io: { readonly query?: JsonQuery | undefined; readonly stdout: { readonly isTTY: boolean } },
  value: unknown,
  layout: 'indent-on-tty' | 'one-line' = 'indent-on-tty',
): string {
  if (io.query) return selectedText(io.query.select(value));
  return stringifyJson(value, layout === 'indent-on-tty' && io.stdout.isTTY ? 2 : undefined) + '\n';
}

/**
 * One line of a stream of JSON lines (`rotate --from`'s items and summary,
 * `webhooks listen`'s deliveries): with --query, each line is queried by
 * itself, and a line whose result is null is left out ('' here), so
 * `--query endpointId` lists ids and `--query summary` prints the summary alone.
 */
export function jsonLineText(io: { readonly query?: JsonQuery | undefined }, value: unknown): string {
  if (!io.query) return stringifyJson(value) + '\n';
  const selected = io.query.select(value);
  return selected === null || selected === undefined ? '' : selectedText(selected);
}

function selectedText(selected: unknown): string {
  return (typeof selected === 'string' ? escapeControl(selected) : stringifyJson(selected ?? null)) + '\n';
}
