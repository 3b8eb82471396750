// The one place an error is printed: once, on stderr, as a JSON line with
// --json or as readable text otherwise. Server text is escaped here.
import type { IO } from '../output/io.js';
import { escapeInline } from '../output/sanitize.js';
import { previewJson, stringifyJson } from '../output/json.js';
import { CliError, interrupted, isCliError } from './cli-error.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { explainError } from './explain.js';

export function toCliError(err: unknown): CliError {
  if (isCliError(err)) return err;
  const e = err as { name?: unknown; message?: unknown } | null | undefined;
  // @inquirer/prompts throws ExitPromptError on Ctrl-C.
  if (e?.name === 'ExitPromptError' || e?.name === 'AbortPromptError') return interrupted();
  return new CliError('internal_error', `unexpected error: ${typeof e?.message === 'string' ? e.message : previewJson(err)}`, EXIT.unexpected);
}

export function reportError(err: unknown, io: IO, json: boolean, debug: boolean): ExitCode {
  const e = toCliError(err);
  if (e.reported) return e.exitCode;
  if (json) {
    // Any depth of details (no recursion), and C1 controls escaped: one line a terminal cannot be driven by.
    io.stderr.write(stringifyJson(e.toJSON()) + '\n');
    return e.exitCode;
  }
  const { red, dim } = io.paint.stderr;
  // Server text on one line each: no newline, CR, control, bidi or zero-width character reaches the terminal raw.
  const lines = [`chatctl: ${red('error:')} ${escapeInline(e.message)}`];
  for (const f of fieldProblems(e.details)) lines.push(`  - ${escapeInline(f)}`);
  for (const l of explainError(e)) lines.push(`  ${escapeInline(l)}`);
  if (e.code !== 'usage_error' && e.code !== 'config_error' && e.code !== 'internal_error' && e.code !== e.message) {
    lines.push(dim(`  code: ${escapeInline(e.code)}${e.status ? `, status: ${e.status}` : ''}${e.requestId ? `, request id: ${escapeInline(e.requestId)}` : ''}`));
  }
  if (e.hint) lines.push(`  hint: ${escapeInline(e.hint)}`);
  if (debug && !isCliError(err) && err instanceof Error && err.stack) lines.push(dim(err.stack));
  io.stderr.write(lines.join('\n') + '\n');
  return e.exitCode;
}

/** Field-level problems from a validation_failed details object, if it has any we can read; details of any shape. */
function fieldProblems(details: unknown): string[] {
  try {
    if (!details || typeof details !== 'object') return [];
    const list = (details as Record<string, unknown>).fields ?? (details as Record<string, unknown>).errors;
    if (!Array.isArray(list)) return [];
    return list.slice(0, 20).map((f) => {
      if (f && typeof f === 'object' && !Array.isArray(f)) {
        const o = f as Record<string, unknown>;
        const field = o.field ?? o.path ?? o.name;
        const problem = o.problem ?? o.message ?? o.reason;
        if (field !== undefined || problem !== undefined) return `${text(field ?? '?')}: ${text(problem ?? 'invalid')}`;
      }
      return previewJson(f);
    });
  } catch {
    return [];
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : previewJson(v));
