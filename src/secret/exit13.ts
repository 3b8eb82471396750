// Exit 13, said in one place: the change was applied and the secret is not
// where the user asked (kept, lost, superseded, withheld, cut short), for a
// single create or rotate and for every `--from` item alike. The details and
// the way to a new secret are new-secret-hint.ts's.
import { type CliError, CliError as Err, localError } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { sameRequestCommand } from '../errors/explain.js';
import { escapeInline } from '../output/sanitize.js';
import { oddSecretHint, oddSecretText, type OddSecretAnswer } from '../api/schemas.js';
import type { Delivered, DeliveryFailure } from './deliver-all.js';
import type { Applied } from './facts.js';
import { fingerprint } from './fingerprint.js';
import { exit13Details, newSecretHint } from './new-secret-hint.js';
import type { RecordedRequest } from './record.js';

/** Whose secret it is: what every message and hint names. */
export interface Holder {
  endpointId: string;
  /** The request's key: names its record and goes into messages. */
  idempotencyKey?: string | undefined;
  /** The endpoint's version after the change (the next --expected-version), when the server gave it. */
  version?: number | null | undefined;
  /** The answer's data: where a running overlap's end is named (a new rotation before then is refused). */
  answer?: unknown;
  /** The server's request id of the answer that carried the secret. */
  serverRequestId?: string | null | undefined;
  /** The re-run that delivers a kept record: the same command with --idempotency-key, or the same --journal. */
  rerun?: string | undefined;
  /** The job's own destinations as flags for the new-secret hint (new-secret-hint.ts destinationFlags). */
  destination?: ((endpointId: string) => string | undefined) | undefined;
}

/** A delivery under way: what a second signal's message names. */
export interface InDelivery {
  holder: Holder;
  fp: string;
  kept: string | null;
  /** Keeps the secret alone now (a second signal is ending the process): where it is then. */
  keepNow?(): void;
  /** Why nothing could keep it, when nothing does. */
  keepFailure?: string | undefined;
  /** When delivery started (for the hint's overlap rule). */
  now: number;
}

/** A later rotation of the endpoint went through chatctl here: what an earlier run left (or a replay of its request) is never delivered. */
export function supersededError(req: Pick<RecordedRequest, 'endpointId' | 'idempotencyKey'>, marked: string | null, newer: Pick<Applied, 'version' | 'at' | 'key'>): CliError {
  const id = escapeInline(req.endpointId ?? '');
  const what = marked ? `the secret of endpoint ${id} that an earlier run kept` : `the rotation of endpoint ${id} that an earlier request applied`;
  const kept = marked ? ` (its file is marked superseded: ${marked}; it is removed after 30 days)` : '';
  return localError(
    'secret_not_delivered',
    `${what} (Idempotency-Key ${req.idempotencyKey}) is superseded by the rotation to version ${newer.version} at ${newer.at}; it was not delivered, and the destinations were left as they are${kept}`,
    {
      details: exit13Details(
        { endpointId: req.endpointId, version: newer.version, fingerprint: null, recoveredPath: null },
        { supersededBy: { version: newer.version, at: newer.at, idempotencyKey: newer.key } },
      ),
      idempotencyKey: req.idempotencyKey,
      hint: `the destinations hold what the rotation to version ${newer.version} put there; the next rotation takes --expected-version ${newer.version}`,
    },
  );
}

/** The way to a new secret, as the answer allows it now (new-secret-hint.ts). */
const hintFor = (holder: Holder, now: number) =>
  newSecretHint({ endpointId: holder.endpointId, version: holder.version, answer: holder.answer, now, destination: holder.destination?.(holder.endpointId) });

const keyText = (holder: Holder) => (holder.idempotencyKey ? ` (Idempotency-Key ${holder.idempotencyKey})` : '');

/** What exit-13 details carry whatever the cause: whose secret, its version, its fingerprint, where it is. */
const baseDetails = (holder: Holder, fp: string | null, where: string | null, more: Record<string, unknown> = {}) =>
  exit13Details({ endpointId: holder.endpointId, version: holder.version, fingerprint: fp, recoveredPath: where }, more);

interface NotDelivered {
  fp: string;
  failures: DeliveryFailure[];
  delivered: Delivered[];
  where: string | undefined;
  keepFailure: string | undefined;
  now: number;
}

/** The change was applied but a destination lacks the secret: exit 13, where the secret is (or that it is lost). */
export function notDelivered(holder: Holder, n: NotDelivered): CliError {
  const why = n.failures.map((f) => `${f.to}: ${f.reason}`).join('; ');
  const got = n.delivered.length > 0 ? ` (it did reach ${n.delivered.map((d) => d.to).join(', ')})` : '';
  const details = baseDetails(holder, n.fp, n.where ?? null, { delivered: n.delivered, failed: n.failures, ...(holder.serverRequestId ? { serverRequestId: holder.serverRequestId } : {}) });
  const head = `the change was applied to endpoint ${escapeInline(holder.endpointId)}${keyText(holder)}, but the signing secret ${n.fp} was not delivered to ${why}${got}`;
  if (n.where !== undefined) {
    return localError('secret_not_delivered', `${head}; it is kept in ${n.where} (mode 0600)`, {
      details,
      idempotencyKey: holder.idempotencyKey,
      hint: `${holder.rerun ? `${holder.rerun}; or ` : ''}put it where it belongs, then delete ${n.where}; or, ${hintFor(holder, n.now)}`,
    });
  }
  // No recovery copy either. There is no safe last resort: the secret goes
  // only where it was asked to go, never to stderr, and not onto a terminal
  // that was not one of its destinations. So say exactly what failed, where
  // the secret still is (if a destination got it), and how to get a new one.
  const withCause = { ...details, recoveryError: n.keepFailure ?? null };
  if (n.delivered.length > 0) {
    const holders = n.delivered.map((d) => d.to).join(', ');
    return localError('secret_not_delivered', `${head}; no recovery copy could be written either (${n.keepFailure}), so only ${holders} holds it`, {
      details: withCause,
      idempotencyKey: holder.idempotencyKey,
      hint: `copy it from ${holders} to the other destinations; or, ${hintFor(holder, n.now)}`,
    });
  }
  return localError('secret_not_delivered', `${head}; no recovery copy could be written either (${n.keepFailure}), so nothing holds it: the secret is lost`, {
    details: withCause,
    idempotencyKey: holder.idempotencyKey,
    hint: hintFor(holder, n.now),
  });
}

/** What a second signal during delivery says before the process ends: exit 13, where the secret is (or that it may be lost), the key. */
export function deliveryCutShort(d: InDelivery): CliError {
  // The process ends next: the secret is kept alone (what a person can copy), not only in its record.
  d.keepNow?.();
  const head = `interrupted: the change was applied to endpoint ${escapeInline(d.holder.endpointId)}${keyText(d.holder)}, and delivery of the signing secret ${d.fp} was cut short`;
  const details = baseDetails(d.holder, d.fp, d.kept);
  if (d.kept !== null) {
    return localError('secret_not_delivered', `${head}; it is kept in ${d.kept} (mode 0600)`, {
      details,
      idempotencyKey: d.holder.idempotencyKey,
      hint: `${d.holder.rerun ? `${d.holder.rerun}; or ` : ''}put it where it belongs, then delete ${d.kept}`,
    });
  }
  return localError('secret_not_delivered', `${head}; no recovery copy could be written (${d.keepFailure ?? 'unknown error'}): it may not have reached every destination`, {
    details: { ...details, recoveryError: d.keepFailure ?? null },
    idempotencyKey: d.holder.idempotencyKey,
    hint: `if a destination lacks it, ${hintFor(d.holder, d.now)}`,
  });
}

/**
 * The answer is not the spec's envelope but carries a secret: the change was
 * applied. Kept under recovered/ as received (`kept.path`), never dropped;
 * or, when nothing could keep it, `kept.cause` says why: exit 13 either way.
 */
export function oddAnswerError(odd: OddSecretAnswer, holder: Holder, kept: { path: string } | { cause: string }, now: number): CliError {
  const fp = fingerprint(odd.kept);
  const head = `the server's answer is not the expected response, but the change was applied${keyText(holder)} and it carries ${oddSecretText(odd, fp)} of endpoint ${escapeInline(holder.endpointId)}`;
  if ('cause' in kept) {
    return localError('secret_not_delivered', `${head}; no recovery copy could be written (${kept.cause}), so nothing holds it: the secret is lost`, {
      details: baseDetails(holder, fp, null, { recoveryError: kept.cause }),
      idempotencyKey: holder.idempotencyKey,
      hint: hintFor(holder, now),
    });
  }
  return localError('secret_not_delivered', `${head}; it is kept in ${kept.path} (mode 0600), not delivered`, {
    details: baseDetails(holder, fp, kept.path),
    idempotencyKey: holder.idempotencyKey,
    hint: oddSecretHint(odd, kept.path),
  });
}

/** The server applied the change but sent no usable secret: exit 13, with the way to a new one. */
export function secretWithheld(holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, now: number, replayed: boolean | 'maybe' = false, appliedAt?: string): CliError {
  const what = answer.secret === null || answer.secret === undefined ? 'secret: null' : answer.secret === '' ? 'an empty secret' : 'a secret';
  const said = `(it answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`;
  const when = appliedAt ? ` at ${appliedAt}` : '';
  // 'maybe': a key the user gave, of which this machine keeps no record: an earlier run elsewhere, or one that lost the answer.
  const message =
    replayed === true
      ? `the change was applied by an earlier run's request${keyText(holder)}${when}, and the server does not return a secret twice ${said}`
      : replayed === 'maybe'
        ? `the change was applied, but the signing secret is not available ${said}: if an earlier run sent this Idempotency-Key (${holder.idempotencyKey}), the change is that run's, and the server does not return a secret twice; no record of it is kept here`
        : `the change was applied, but the signing secret is not available (the server answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`;
  return localError('secret_not_delivered', message, {
    details: baseDetails(holder, null, null),
    idempotencyKey: holder.idempotencyKey,
    hint: hintFor(holder, now),
  });
}

/** An earlier run of a --from item rotated it, and nothing is left to deliver: superseded by a later rotation here, or lost. */
export function notConfirmed(endpointId: string, prior: { key: string; version: number | null; fp: string | null }, last: Applied | undefined, now: number): CliError {
  const what = `rotated by an earlier run (Idempotency-Key ${prior.key}, version ${prior.version ?? '?'}, fingerprint ${prior.fp ?? 'unknown'})`;
  const details = exit13Details({ endpointId, version: prior.version, fingerprint: prior.fp, recoveredPath: null });
  if (last && last.key !== prior.key && (prior.version === null || last.version > prior.version)) {
    return localError('secret_not_delivered', `${what}: superseded by the rotation to version ${last.version} at ${last.at}; not delivered, and the destinations were left as they are`, {
      // The endpoint's version now (the next expectedVersion), not the superseded one's.
      details: { ...details, version: last.version, supersededBy: { version: last.version, at: last.at, idempotencyKey: last.key } },
      hint: `the destinations hold what the rotation to version ${last.version} put there; the next rotation takes "expectedVersion":${last.version}`,
    });
  }
  return localError('secret_not_delivered', `${what}: delivery not confirmed, and no kept copy of its secret is left to deliver again`, {
    details,
    hint: `compare each destination with the fingerprint (chatctl webhooks fingerprint FILE); or, ${newSecretHint({ endpointId, version: prior.version, now })}`,
  });
}

/** Every destination holds the secret of a --from item, but the journal could not say so: not done as far as a re-run knows (exit 1). */
export function okNotRecorded(endpointId: string, o: { fp: string; version: number | null; delivered: Delivered[]; held: string }): CliError {
  return new Err(
    'internal_error',
    `the signing secret ${o.fp} of endpoint ${endpointId} reached ${o.delivered.map((d) => d.to).join(', ') || 'every destination'}, but the journal could not record it (the run stops)`,
    EXIT.unexpected,
    {
      details: exit13Details({ endpointId, version: o.version, fingerprint: o.fp, recoveredPath: o.held }, { delivered: o.delivered }),
      hint: `free space for the journal, then re-run with the same --journal: it delivers the secret again from ${o.held}, without rotating`,
    },
  );
}

/** An earlier run's rotation of the endpoint whose secret is kept here, not delivered (custody.ts keptByEarlierRun). */
export interface KeptChange {
  endpointId: string;
  key: string;
  path: string;
  version: number;
  expectedVersion?: number | undefined;
  mode?: string | undefined;
}

/**
 * A new rotation refused with 7 because an earlier run's rotation was applied
 * and its secret never delivered: 13, naming the kept copy and the re-run
 * that delivers it, rather than a 7 whose hint would rotate again.
 */
export function keptByEarlierRunError(k: KeptChange, conflict: CliError): CliError {
  const id = escapeInline(k.endpointId);
  const rerun = sameRequestCommand({ words: ['webhooks', 'rotate', k.endpointId], expectedVersion: k.expectedVersion, flags: k.mode ? [['--mode', k.mode]] : [] }, k.key);
  return localError(
    'secret_not_delivered',
    `endpoint ${id} is at version ${k.version} because an earlier run's rotation (Idempotency-Key ${k.key}) was applied; its signing secret was not delivered and is kept in ${k.path} (mode 0600)`,
    {
      details: exit13Details({ endpointId: k.endpointId, version: k.version, fingerprint: null, recoveredPath: k.path }, { conflict: { code: conflict.code, message: conflict.message } }),
      idempotencyKey: k.key,
      hint: `deliver it without rotating again: ${rerun} with this command's destinations; only then rotate again with --expected-version ${k.version}`,
    },
  );
}
