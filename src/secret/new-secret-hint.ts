// Exit 13 (the change was applied, the secret is not in hand), said the same
// way by create, rotate and `rotate --from`: what a job needs to act on it
// (the endpoint, its version after the change, the fingerprint, where a copy
// is kept) and how to get a new secret. That last step must respect the
// overlap rule: while an overlap rotation runs, another overlap rotation is
// refused (exit 8), so the hint names when the overlap ends and offers
// `--mode immediate`, which replaces the secret at once.
import { overlapEndOf } from '../errors/explain.js';
import { shellQuote, shellWord } from '../output/sanitize.js';

export interface Exit13Facts {
  endpointId: string | null | undefined;
  /** The endpoint's version after the change, when the server gave one. */
  version?: unknown;
  fingerprint: string | null | undefined;
  recoveredPath: string | null | undefined;
}

const versionOf = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined);

/** `details` of an exit 13: endpointId, version (only when known), fingerprint, recoveredPath, then anything else. */
export function exit13Details(facts: Exit13Facts, more: Record<string, unknown> = {}): Record<string, unknown> {
  const version = versionOf(facts.version);
  return {
    endpointId: facts.endpointId ?? null,
    ...(version !== undefined ? { version } : {}),
    fingerprint: facts.fingerprint ?? null,
    recoveredPath: facts.recoveredPath ?? null,
    ...more,
  };
}

export interface NewSecretTarget {
  endpointId: string | null | undefined;
  /** The endpoint's version after the change, when known. */
  version?: unknown;
  /** The answer's data (or the endpoint record): where the end of a running overlap is named (previousSecretExpiresAt). */
  answer?: unknown;
  /** Now, to tell a running overlap from one that has ended. */
  now: number;
  /** The job's own destinations as flags (destinationFlags), else `--secret-to file:PATH`. */
  destination?: string | undefined;
}

/** What a job gave for its secret's destinations: the same flags again in a hint. */
export interface GivenDestinations {
  secretTo?: readonly string[] | undefined;
  secretFile?: string | undefined;
  force?: boolean | undefined;
}

/**
 * The destinations as the job gave them, as flags for the hint's rotate
 * command, with `{id}` (rotate --from) replaced by the endpoint in file:,
 * env-file: and github-*: destinations; undefined when none was given.
 */
export function destinationFlags(given: GivenDestinations, endpointId: string): string | undefined {
  const words: string[] = [];
  if (given.secretFile !== undefined) words.push('--secret-file', shellWord(given.secretFile));
  for (const spec of given.secretTo ?? []) words.push('--secret-to', shellWord(/^(file|env-file|github-output|github-env):/.test(spec) ? spec.replaceAll('{id}', endpointId) : spec));
  if (words.length === 0) return undefined;
  if (given.force) words.push('--force');
  return words.join(' ');
}

/**
 * The command that gets a new secret, as a hint: `--mode overlap` when no
 * overlap runs; during one, the time it ends and the `--mode immediate`
 * command; when the answer does not say, the overlap command with the
 * immediate one as the way out.
 */
export function newSecretHint(t: NewSecretTarget): string {
  const id = t.endpointId ? shellQuote(t.endpointId) : 'ENDPOINT_ID';
  const version = versionOf(t.version) ?? 'CURRENT_VERSION';
  const to = t.destination ?? '--secret-to file:PATH';
  const rotate = (mode: string) => `chatctl webhooks rotate ${id} --expected-version ${version} --mode ${mode}${mode === 'immediate' ? ' --yes' : ''} ${to}`;
  const data = t.answer !== null && typeof t.answer === 'object' ? (t.answer as Record<string, unknown>) : undefined;
  const end = data ? overlapEndOf(data) : undefined;
  if (end && end.getTime() > t.now) {
    return `to get a new secret: the overlap of this rotation runs until ${end.toISOString()}, and a rotation with --mode overlap is refused until then; after it: ${rotate('overlap')}; or now, which ends the old secrets at once: ${rotate('immediate')}`;
  }
  const told = data && ('previousSecretExpiresAt' in data || (isRecord(data.endpoint) && 'previousSecretExpiresAt' in data.endpoint));
  if (end || told) return `to get a new secret, rotate it: ${rotate('overlap')}`;
  return `to get a new secret, rotate it: ${rotate('overlap')} (while an overlap rotation still runs that is refused with exit 8; then wait for its end, or replace the secret at once: ${rotate('immediate')})`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
