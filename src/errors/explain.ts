import { CliError, configError, EXIT, type ExitCode, interrupted, isCliError, type RerunContext, type ScopeOrigin, type ScopeValue, usageError } from './cli-error.js';
import { escapeInline, isJsonObject, previewJson, shellQuote, shellWord, stringifyJson } from '../output/json.js';
import type { IO } from '../output/io.js';
import { EVENT_TYPES } from '../api/schemas.js';

// The reporter (the one place an error is printed), the hints and re-run lines
// of what an error means next, and "did you mean" for values from a fixed list.

/** Optimal string alignment distance (Damerau–Levenshtein without repeated edits of a substring). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

const OPPOSITES = ['activate deactivate', 'reactivate deactivate', 'enable disable', 'login logout', 'create delete', 'add remove', 'lock unlock', 'show hide', 'set unset'];

/** Opposite actions (`deactivate`/`reactivate`, `x`/`unx`): close in spelling, never offered for each other. */
export function isOpposite(a: string, b: string): boolean {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (x === y) return false;
  if (OPPOSITES.includes(`${x} ${y}`) || OPPOSITES.includes(`${y} ${x}`)) return true;
  return ['un', 'de', 'dis', 'non'].some((prefix) => x === prefix + y || y === prefix + x);
}

// Within 2 edits (case ignored), else the one word containing what was typed (`message.created` →
// `chat.message.created.v1`); a tie goes to the one word with the same first letter (`bsh` → bash).
export function nearest(word: string, given: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  if (w === '' || w.length > 200) return undefined;
  const valid = given.filter((v) => !isOpposite(w, v));
  const distances = valid.map((v) => editDistance(w, v.toLowerCase()));
  const least = Math.min(3, ...distances);
  const tied = valid.filter((_, i) => distances[i] === least);
  const sameStart = tied.filter((v) => v[0]?.toLowerCase() === w[0]);
  const best = tied.length === 1 && least < 3 ? tied[0] : tied.length > 1 && sameStart.length === 1 ? sameStart[0] : undefined;
  if (best !== undefined && least < w.length) return best;
  if (w.length >= 4) {
    const containing = valid.filter((v) => v.toLowerCase().includes(w));
    if (containing.length === 1) return containing[0];
  }
  return undefined;
}

export function didYouMean(word: string, valid: readonly string[]): string | undefined {
  const n = nearest(word, valid);
  return n === undefined ? undefined : `did you mean ${n}?`;
}

/** The next step for an event type that is not one: the nearest one, else where they are listed. */
export const eventTypeHint = (typed: string): string => didYouMean(typed, EVENT_TYPES) ?? 'the event types are listed in: chatctl webhooks create --help';

// Server details may have any shape: every read below is defensive, and only a
// short id, a whole number or a parsed date from them reaches the output.

const LIST_PROFILES = 'list profiles with: chatctl profile list';

type ProfileAsk = 'flag' | 'env' | 'current' | 'default' | ((near: string) => string);

export function unknownProfileError(name: string, stored: readonly string[], asked: ProfileAsk, otherwise = LIST_PROFILES): CliError {
  const near = nearest(name, stored);
  const message = `profile "${escapeInline(name)}" does not exist`;
  if (near === undefined) return configError(message, otherwise);
  const instead = typeof asked === 'function' ? asked(near) : asked === 'flag' ? `--profile ${near}; ${LIST_PROFILES}` : asked === 'env' ? `CHATCTL_PROFILE=${near}; ${LIST_PROFILES}` : LIST_PROFILES;
  return configError(message, `did you mean ${near}?  (${instead})`);
}

const SCOPE_WORDS = [
  ['organizationId', 'organization', '--org', 'CHATCTL_ORG'],
  ['applicationId', 'application', '--app', 'CHATCTL_APP'],
  ['environmentKey', 'environment', '--env', 'CHATCTL_ENV'],
] as const;

/** "organization org_1 (from --org), application app_1 (from profile "prod"), environment prod (from CHATCTL_ENV)". */
function scopeWords(s: ScopeOrigin): string {
  return SCOPE_WORDS.map(
    ([key, label, flag, variable]) => `${label} ${s[key].value ?? '-'} (from ${s[key].source === 'flag' ? flag : s[key].source === 'env' ? variable : `profile "${s.profile}"`})`,
  ).join(', ');
}

const asRecord = (v: unknown) => (isJsonObject(v) ? v : undefined);

function idIn(details: unknown, ...fields: string[]): string | undefined {
  const d = asRecord(details);
  const ids = [d, asRecord(d?.endpoint), asRecord(d?.existing)].flatMap((source) => fields.map((field) => source?.[field]));
  return ids.find((v): v is string => typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,100}$/.test(v));
}

/** Exit 5 (the token was accepted, but may not do this here) or 6 (an endpoint id or a scope the server does not know). */
function refusalHint(e: CliError): string[] {
  const headers = asRecord(e.details)?.missingHeaders;
  if (e.exitCode === EXIT.permission && Array.isArray(headers) && headers.length > 0) {
    return ['next: the server wants the Origin and x-service-csrf headers it names: set them with chatctl profile set NAME --origin ORIGIN --csrf-token VALUE (or CHATCTL_ORIGIN, CHATCTL_CSRF_TOKEN)'];
  }
  const next =
    e.exitCode === EXIT.permission
      ? 'next: the token may lack the permission for this, or for this scope: chatctl auth status shows which token is used and where it comes from; check --org, --app and --env, or use a token allowed to manage webhooks there'
      : `next: check the endpoint id, and --org, --app and --env or the profile's scope${e.scope ? ` (chatctl profile show ${e.scope.profile})` : ''}; chatctl doctor checks the set-up`;
  return e.scope ? [`the request was for ${scopeWords(e.scope)}`, next] : [next];
}

/** Exit 8 on create: the destination is registered already (the API has no read or delete). */
function duplicateHint(e: CliError): string[] {
  const existing = idIn(e.details, 'endpointId', 'existingEndpointId', 'id');
  const which = existing ? `endpoint ${existing} already has this destination URL` : 'an endpoint already has this destination URL';
  return [`next: ${which}: rotate or reactivate ${existing ?? 'that endpoint'} instead (chatctl webhooks rotate ${existing ?? 'ENDPOINT_ID'} --expected-version N), or create with another --url`];
}

export function scopeOriginOf(describe: (() => { profile: { name: string }; organizationId: ScopeValue; applicationId: ScopeValue; environmentKey: ScopeValue }) | undefined): ScopeOrigin | undefined {
  try {
    const d = describe?.();
    return d && { profile: d.profile.name, organizationId: d.organizationId, applicationId: d.applicationId, environmentKey: d.environmentKey };
  } catch {
    return undefined;
  }
}

export const VERSION_PLACES =
  'data.endpoint.version in the --json answer of its create (1) or of its last rotate or reactivate, the version the previous run printed, the current version an exit 7 names, or the journal or --next-manifest file of rotate --from';

export const VERSION_SOURCES = `pass the endpoint's current version: the API cannot read it, so take it from the last change made to the endpoint: ${VERSION_PLACES}; chatctl webhooks list shows the version this machine last saw, and --expected-version last uses it (at a terminal it is used without the flag)`;

export function missingFlagError(flag: string): CliError {
  if (flag === '--expected-version') return usageError(`missing ${flag}`, VERSION_SOURCES);
  const choices = flag === '--mode' ? ' (--mode overlap: the old secret keeps working for a while; --mode immediate --yes: it stops at once)' : '';
  return usageError(`missing ${flag}`, `pass it as a flag${choices}; chatctl asks only at a terminal, and never when CI, CHATCTL_NO_INPUT or --no-input is set`);
}

/** The re-run command line; the endpoint id is always quoted, as ids are the user's to paste. */
export function rerunCommand(ctx: RerunContext, expectedVersion: number | string | undefined, flags = ctx.flags): string {
  const [group, verb, id] = ctx.words;
  const version = expectedVersion === undefined ? [] : ['--expected-version', String(expectedVersion)];
  return ['chatctl', group, verb, ...(id === undefined ? [] : [shellQuote(id)]), ...version, ...flags.flat().map(shellWord)].join(' ');
}

/** The same request again, with its Idempotency-Key: the command line from the request's facts, or "the same command" where the command gave none. Every re-run hint is built here. */
export function sameRequestCommand(ctx: RerunContext | undefined, key = ctx?.idempotencyKey, quote = shellQuote): string {
  if (!ctx) return `the same command${key === undefined ? '' : ` with --idempotency-key ${quote(key)}`}`;
  return `${rerunCommand(ctx, ctx.expectedVersion)}${key === undefined ? '' : ` --idempotency-key ${quote(key)}`}`;
}

export const rerunWords = (ctx?: RerunContext) => (idempotencyKey: string) => `re-run ${sameRequestCommand(ctx, idempotencyKey)} so the change cannot be applied twice`;

function versionOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1) return v;
  if (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  return undefined;
}

export function currentVersionOf(details: unknown): number | undefined {
  const d = asRecord(details);
  return versionOf(d?.currentVersion) ?? versionOf(d?.version) ?? versionOf(asRecord(d?.endpoint)?.version);
}

const OVERLAP_END_FIELDS = ['overlapEndsAt', 'overlapEnd', 'previousSecretExpiresAt', 'previousSecretExpiry', 'expiresAt', 'endsAt'];

export function overlapEndOf(details: unknown): Date | undefined {
  const d = asRecord(details);
  const ms = [d, asRecord(d?.endpoint)]
    .flatMap((source) => OVERLAP_END_FIELDS.map((field) => source?.[field]))
    .map((v) => (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v) && v.length <= 40 ? Date.parse(v) : Number.NaN))
    .find(Number.isFinite);
  return ms === undefined ? undefined : new Date(ms);
}

function fromNow(when: number, now: number | undefined): string | undefined {
  if (now === undefined || when <= now) return undefined;
  const s = Math.round((when - now) / 1000);
  if (s < 60) return `in ${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `in ${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `in ${h} h ${m % 60} min` : `in ${h} h`;
}

export function explainError(e: CliError): string[] {
  if (e.explanation) return e.explanation;
  // A re-run with another version is for the commands that send one (not create).
  const ctx = e.rerun?.expectedVersion !== undefined ? e.rerun : undefined;
  if (e.exitCode === EXIT.versionConflict) {
    const current = currentVersionOf(e.details);
    if (current === undefined) return ctx ? ["the server did not say the endpoint's current version; re-run with it:", `  ${rerunCommand(ctx, 'N')}`] : [];
    return [`current version: ${current}`, ...(ctx ? [`re-run: ${rerunCommand(ctx, current)}`] : [])];
  }
  if (e.code === 'webhook_secret_rotation_conflict') {
    const end = overlapEndOf(e.details);
    const rel = end && fromNow(end.getTime(), ctx?.now);
    const lines = [
      end
        ? `the running overlap ends at ${end.toISOString()}${rel ? ` (${rel})` : ''}; rotate again with --mode overlap after that`
        : 'an overlap rotation is still running; rotate again with --mode overlap once it ends',
    ];
    if (ctx) {
      const flags = [['--mode', 'immediate'], ...ctx.flags.filter((f) => f[0] !== '--mode' && f[0] !== '--yes'), ['--yes']];
      lines.push(`to replace both secrets now: ${rerunCommand(ctx, ctx.expectedVersion, flags)}`);
    }
    return lines;
  }
  if (e.exitCode === EXIT.auth && e.status === 401) {
    return ['next: chatctl auth status shows which token is used and where it comes from (CHATCTL_TOKEN wins over a stored one); store another with chatctl auth login'];
  }
  if (e.status !== null && (e.exitCode === EXIT.permission || e.exitCode === EXIT.notFound)) return refusalHint(e);
  if (e.code === 'webhook_endpoint_conflict') return duplicateHint(e);
  if (e.exitCode === EXIT.limit && e.code === 'webhook_endpoint_limit_reached') {
    return [
      'next: the environment holds as many webhook endpoints as it allows, inactive ones included, and the API deletes none: reuse one (rotate or reactivate it), or ask the service to raise the limit',
    ];
  }
  if (e.exitCode === EXIT.limit) return ['next: a limit of the service was reached: free some of what it counts, or ask the service to raise it; re-running changes nothing until then'];
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

/** ": COMMAND" when the command gave its context, else " the same command" (with the key when it had one). */
function sameAgain(e: CliError): string {
  return e.rerun ? `: ${sameRequestCommand(e.rerun, e.idempotencyKey)}` : ` ${sameRequestCommand(undefined, e.idempotencyKey, shellWord)}`;
}

export function withRerun(err: unknown, ctx: RerunContext): unknown {
  if (isCliError(err)) err.rerun ??= ctx;
  return err;
}

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

function fieldProblems(details: unknown): string[] {
  try {
    const d = asRecord(details);
    const list = d?.fields ?? d?.errors;
    if (!Array.isArray(list)) return [];
    return list.slice(0, 20).map((f) => {
      const o = asRecord(f);
      const field = o?.field ?? o?.path ?? o?.name;
      const problem = o?.problem ?? o?.message ?? o?.reason;
      return field !== undefined || problem !== undefined ? `${text(field ?? '?')}: ${text(problem ?? 'invalid')}` : previewJson(f);
    });
  } catch {
    return [];
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : previewJson(v));
