// What a conflict means for the next step. On a version conflict (exit 7)
// the server's current version, when its details carry one, and the exact
// command to re-run; on a rotation conflict, when the running overlap ends.
// `details` come from the server and may have any shape: every read here is
// defensive, and nothing from them reaches the output but a whole number or
// a parsed date.
import { isCliError, type CliError, type RerunContext } from './cli-error.js';
import { EXIT } from './exit-codes.js';
import { shellQuote, shellWord } from '../output/sanitize.js';
import { isJsonObject } from '../output/json.js';
import { duplicateHint, notFoundHint, permissionHint } from './hints.js';

/** The re-run command line; the endpoint id is always quoted, as ids are the user's to paste. */
export function rerunCommand(ctx: RerunContext, expectedVersion: number | string | undefined, flags = ctx.flags): string {
  const [group, verb, id] = ctx.words;
  const version = expectedVersion === undefined ? [] : ['--expected-version', String(expectedVersion)];
  return ['chatctl', group, verb, ...(id === undefined ? [] : [shellQuote(id)]), ...version, ...flags.flat().map(shellWord)].join(' ');
}

/**
 * The same request again, with its Idempotency-Key: the command line from
 * the request's facts, or "the same command" where the command gave none.
 * Every re-run hint of chatctl is built here.
 */
export function sameRequestCommand(ctx: RerunContext | undefined, key = ctx?.idempotencyKey, quote = shellQuote): string {
  if (!ctx) return `the same command${key === undefined ? '' : ` with --idempotency-key ${quote(key)}`}`;
  return `${rerunCommand(ctx, ctx.expectedVersion)}${key === undefined ? '' : ` --idempotency-key ${quote(key)}`}`;
}

/** The HTTP client's words for a re-run of a keyed request (its `rerun`), naming the command when its facts are known. */
export const rerunWords = (ctx?: RerunContext) => (idempotencyKey: string) => `re-run ${sameRequestCommand(ctx, idempotencyKey)} so the change cannot be applied twice`;

const asRecord = (v: unknown) => (isJsonObject(v) ? v : undefined);

/** A version as the API counts them: a whole number from 1, given as a number or a decimal string. */
function versionOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1) return v;
  if (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  return undefined;
}

/** The server's current version from details of any shape. */
export function currentVersionOf(details: unknown): number | undefined {
  const d = asRecord(details);
  if (!d) return undefined;
  return versionOf(d.currentVersion) ?? versionOf(d.version) ?? versionOf(asRecord(d.endpoint)?.version);
}

const OVERLAP_END_FIELDS = ['overlapEndsAt', 'overlapEnd', 'previousSecretExpiresAt', 'previousSecretExpiry', 'expiresAt', 'endsAt'];

/** When the running overlap ends, from details of any shape: an ISO date string. */
export function overlapEndOf(details: unknown): Date | undefined {
  const d = asRecord(details);
  if (!d) return undefined;
  for (const source of [d, asRecord(d.endpoint)]) {
    if (!source) continue;
    for (const field of OVERLAP_END_FIELDS) {
      const v = source[field];
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(v) || v.length > 40) continue;
      const ms = Date.parse(v);
      if (Number.isFinite(ms)) return new Date(ms);
    }
  }
  return undefined;
}

/** "in 23 h 59 min" / "in 40 s"; undefined when the moment has passed or no clock was given. */
function fromNow(when: number, now: number | undefined): string | undefined {
  if (now === undefined || when <= now) return undefined;
  const s = Math.round((when - now) / 1000);
  if (s < 60) return `in ${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `in ${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `in ${h} h ${m % 60} min` : `in ${h} h`;
}

/** The lines to print under the error's message (human mode). None for most errors. */
export function explainError(e: CliError): string[] {
  if (e.explanation) return e.explanation;
  // A re-run with another version is for the commands that send one (not create).
  const ctx = e.rerun?.expectedVersion !== undefined ? e.rerun : undefined;
  if (e.exitCode === EXIT.versionConflict) {
    const current = currentVersionOf(e.details);
    if (current === undefined) {
      return ctx ? ["the server did not say the endpoint's current version; re-run with it:", `  ${rerunCommand(ctx, 'N')}`] : [];
    }
    const lines = [`current version: ${current}`];
    if (ctx) lines.push(`re-run: ${rerunCommand(ctx, current)}`);
    return lines;
  }
  if (e.code === 'webhook_secret_rotation_conflict') {
    const end = overlapEndOf(e.details);
    const lines: string[] = [];
    if (end) {
      const rel = fromNow(end.getTime(), ctx?.now);
      lines.push(`the running overlap ends at ${end.toISOString()}${rel ? ` (${rel})` : ''}; rotate again with --mode overlap after that`);
    } else {
      lines.push('an overlap rotation is still running; rotate again with --mode overlap once it ends');
    }
    if (ctx) {
      const flags = [['--mode', 'immediate'], ...ctx.flags.filter((f) => f[0] !== '--mode' && f[0] !== '--yes'), ['--yes']];
      lines.push(`to replace both secrets now: ${rerunCommand(ctx, ctx.expectedVersion, flags)}`);
    }
    return lines;
  }
  if (e.exitCode === EXIT.auth && e.status === 401) {
    // The server refused the token: which one was sent is the first question.
    return ['next: chatctl auth status shows which token is used and where it comes from (CHATCTL_TOKEN wins over a stored one); store another with chatctl auth login'];
  }
  // The server's refusals (a status): the scope and the token are the first things to check.
  if (e.status !== null && e.exitCode === EXIT.permission) return permissionHint(e);
  if (e.status !== null && e.exitCode === EXIT.notFound) return notFoundHint(e);
  if (e.code === 'webhook_endpoint_conflict') return duplicateHint(e);
  if (e.exitCode === EXIT.limit) {
    return e.code === 'webhook_endpoint_limit_reached'
      ? [
          'next: the environment holds as many webhook endpoints as it allows, inactive ones included, and the API deletes none: reuse one (rotate or reactivate it), or ask the service to raise the limit',
        ]
      : ['next: a limit of the service was reached: free some of what it counts, or ask the service to raise it; re-running changes nothing until then'];
  }
  if (e.exitCode === EXIT.rateLimited) {
    return [`next: wait a minute, then re-run${sameAgain(e)}`, 'to wait through more refusals in one run: --max-retries N (default 4); for rotate --from: a lower --concurrency'];
  }
  // (A delivery the sandbox made to a receiver that was down: the service answered; its hint says what to do.)
  if (e.exitCode === EXIT.unavailable && e.code !== 'delivery_failed') {
    const lines = e.code === 'network_error' ? ['next: check the base URL, proxy and network with: chatctl doctor'] : [];
    lines.push(`${lines.length ? 'then' : 'next: once the service answers again,'} re-run${sameAgain(e)}`);
    if (e.code === 'timeout') lines.push('a slow service: allow more time with --timeout SECONDS (one attempt) or --deadline SECONDS (the whole command)');
    return lines;
  }
  return [];
}

/** ": COMMAND" to send the same request again when the command gave its facts, else " the same command" (with the key when the change may have been applied). */
function sameAgain(e: CliError): string {
  const ctx = e.rerun;
  return ctx ? `: ${sameRequestCommand(ctx, e.idempotencyKey ?? ctx.idempotencyKey)}` : ` ${sameRequestCommand(undefined, e.idempotencyKey, shellWord)}`;
}

/** Attaches the re-run context to a CliError passing through (anything else passes unchanged). */
export function withRerun(err: unknown, ctx: RerunContext): unknown {
  if (isCliError(err)) err.rerun ??= ctx;
  return err;
}
