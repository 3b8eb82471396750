// The one-time secret's custody: one path for create, rotate and every item
// of `rotate --from`, so that each act has one implementation and one set of
// messages (docs/secrets.md, "If delivery fails").
//
//   keep a copy under <config>/recovered/ (named after the Idempotency-Key)
//   → tell the caller where it is (a --from run journals it; if that record
//     cannot be written, nothing is delivered and the copy is the secret's place)
//   → deliver to every destination
//   → every destination holds it: discard the copy (exit 0)
//   → otherwise: the copy made durable, the error says where it is (exit 13).
//
// The copy comes before every delivery, stdout included: a terminal that is
// not reading (Ctrl-S) blocks the write where no signal handler can run, a
// file on a nearly full disk can take the last free block, and a large
// document goes out in pieces. So a failing sink, a closed or full stdout,
// a signal or a kill cannot lose it.
import { type CliError, localError } from '../errors/cli-error.js';
import { escapeInline } from '../output/sanitize.js';
import { exit13Details, newSecretHint } from './new-secret-hint.js';
import { oddSecretHint, oddSecretText, type OddSecretAnswer } from '../api/schemas.js';
import { describeKeepFailure, keepSecret, type KeptSecret } from './deliver.js';
import type { Delivered, DeliveryFailure } from './deliver-all.js';
import { fingerprint } from './fingerprint.js';
import type { Clock } from '../system/clock.js';

/** Whose secret it is: what every message and hint names. */
export interface Holder {
  endpointId: string;
  /** The request's key: names the kept copy and goes into messages. */
  idempotencyKey?: string | undefined;
  /** The endpoint's version after the change (the next --expected-version), when the server gave it. */
  version?: number | null | undefined;
  /** The answer's data: where a running overlap's end is named (a new rotation before then is refused). */
  answer?: unknown;
  /** The server's request id of the answer that carried the secret. */
  serverRequestId?: string | null | undefined;
}

export interface CustodyDeps extends Pick<Clock, 'now'> {
  configDir: string;
}

export interface DeliveryResult {
  delivered: Delivered[];
  failures: DeliveryFailure[];
}

export interface CustodyHooks {
  /**
   * Before delivery starts, with where the copy is (null: it could not be
   * made). A --from run writes its journal record here; if this throws,
   * nothing is delivered and the item ends 13 with the copy as its place.
   */
  beforeDelivery?(copy: string | null, fp: () => string): Promise<void>;
  /**
   * While delivering (state), and after (undefined): what a forced exit must
   * name. Told undefined only on success: after a failure the state (naming
   * where the copy ended up) stays until the caller has reported the outcome
   * and says undefined itself, so a second signal while it writes the result
   * or its journal record still ends 13 naming the copy.
   */
  delivering?(state: InDelivery | undefined): void;
  /**
   * Every destination holds it: the copy is left for the caller to discard
   * (the outcome's discard()) once it has recorded that, so that a kill
   * before a --from run's "ok" record is on disk leaves the copy its re-run
   * delivers from (an exec: destination cannot be read back).
   */
  keepCopyUntilRecorded?: boolean;
}

/** A delivery under way: what a second signal's message names. */
export interface InDelivery {
  holder: Holder;
  fp: string;
  kept: string | null;
  /** Why no copy could be made, when none was. */
  keepFailure?: string | undefined;
  /** When delivery started (for the hint's overlap rule). */
  now: number;
}

export type CustodyOutcome =
  | { ok: true; fp: string; delivered: Delivered[] /** Removes the copy (done already unless keepCopyUntilRecorded). */; discard(): void }
  | { ok: false; fp: string; delivered: Delivered[]; kept: string | null; error: CliError };

/**
 * The secret to every destination, with a copy kept until all hold it.
 * Never throws: a destination that fails, a copy that cannot be written and
 * a journal that cannot be written all end in the outcome.
 */
export async function deliverInCustody(secret: string, holder: Holder, deliver: () => Promise<DeliveryResult>, deps: CustodyDeps, hooks: CustodyHooks = {}): Promise<CustodyOutcome> {
  // Computed when first needed (node:crypto costs a few ms to load): a --json
  // run that succeeds never needs it.
  let fpMemo: string | undefined;
  const fpOf = () => (fpMemo ??= fingerprint(secret));
  let copy: KeptSecret | undefined;
  let firstKeepError: unknown;
  try {
    // Not fsync'd: the kernel keeps what a dead process wrote, and an fsync on
    // every rotation costs milliseconds; persist() makes it durable once it is
    // the one place left.
    copy = keepSecret(deps.configDir, holder.endpointId, secret, new Date(deps.now()), { durable: false, key: holder.idempotencyKey });
  } catch (err) {
    firstKeepError = err; // tried again below, if it is needed
  }
  const state: InDelivery = {
    holder,
    get fp() {
      return fpOf();
    },
    kept: copy?.path ?? null,
    keepFailure: copy ? undefined : describeKeepFailure(firstKeepError, deps.configDir),
    now: deps.now(),
  };

  let result: DeliveryResult;
  hooks.delivering?.(state);
  try {
    try {
      await hooks.beforeDelivery?.(state.kept, fpOf);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      result = { delivered: [], failures: [{ to: 'every destination', reason: `not attempted: ${reason}` }] };
      return finish();
    }
    result = await deliver();
  } catch (err) {
    result = { delivered: [], failures: [{ to: 'delivery', reason: err instanceof Error ? err.message : String(err) }] };
  }
  return finish();

  function finish(): CustodyOutcome {
    if (result.failures.length === 0) {
      hooks.delivering?.(undefined);
      const discard = () => {
        try {
          copy?.discard();
        } catch {
          /* a copy left in recovered/ is untidy, not a failure: every destination holds the secret */
        }
      };
      if (!hooks.keepCopyUntilRecorded) discard();
      return {
        discard,
        ok: true,
        get fp() {
          return fpOf();
        },
        delivered: result.delivered,
      };
    }
    const fp = fpOf();
    copy?.persist();
    let where = copy?.path;
    let keepError: unknown = firstKeepError;
    if (where === undefined) {
      try {
        where = keepSecret(deps.configDir, holder.endpointId, secret, new Date(deps.now()), { key: holder.idempotencyKey }).path;
      } catch (err) {
        keepError = err;
      }
    }
    const keepFailure = where === undefined ? describeKeepFailure(keepError, deps.configDir) : undefined;
    // What a second signal says until the caller has reported this outcome.
    state.kept = where ?? null;
    state.keepFailure = keepFailure;
    const error = notDelivered(holder, { fp, failures: result.failures, delivered: result.delivered, where, keepFailure, now: deps.now() });
    return { ok: false, fp, delivered: result.delivered, kept: where ?? null, error };
  }
}

/** The way to a new secret, as the answer allows it now (new-secret-hint.ts). */
const hintFor = (holder: Holder, now: number) => newSecretHint({ endpointId: holder.endpointId, version: holder.version, answer: holder.answer, now });

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
      hint: `put it where it belongs, then delete ${n.where}; or, ${hintFor(holder, n.now)}`,
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
  const head = `interrupted: the change was applied to endpoint ${escapeInline(d.holder.endpointId)}${keyText(d.holder)}, and delivery of the signing secret ${d.fp} was cut short`;
  const details = baseDetails(d.holder, d.fp, d.kept);
  if (d.kept !== null) {
    return localError('secret_not_delivered', `${head}; it is kept in ${d.kept} (mode 0600)`, {
      details,
      idempotencyKey: d.holder.idempotencyKey,
      hint: `put it where it belongs, then delete ${d.kept}`,
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
 * applied. It is kept under recovered/ as received, never dropped: exit 13.
 */
export function keepOddAnswer(odd: OddSecretAnswer, holder: Holder, deps: CustodyDeps): CliError {
  const fp = fingerprint(odd.kept);
  const head = `the server's answer is not the expected response, but the change was applied${keyText(holder)} and it carries ${oddSecretText(odd, fp)} of endpoint ${escapeInline(holder.endpointId)}`;
  let path: string;
  try {
    path = keepSecret(deps.configDir, holder.endpointId, odd.kept, new Date(deps.now()), { key: holder.idempotencyKey, whole: odd.whole !== false }).path;
  } catch (err) {
    const cause = describeKeepFailure(err, deps.configDir);
    return localError('secret_not_delivered', `${head}; no recovery copy could be written (${cause}), so nothing holds it: the secret is lost`, {
      details: baseDetails(holder, fp, null, { recoveryError: cause }),
      idempotencyKey: holder.idempotencyKey,
      hint: hintFor(holder, deps.now()),
    });
  }
  return localError('secret_not_delivered', `${head}; it is kept in ${path} (mode 0600), not delivered`, {
    details: baseDetails(holder, fp, path),
    idempotencyKey: holder.idempotencyKey,
    hint: oddSecretHint(odd, path),
  });
}

/** The server applied the change but sent no usable secret: exit 13, with the way to a new one. */
export function secretWithheld(holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, now: number, replayed = false): CliError {
  const what = answer.secret === null || answer.secret === undefined ? 'secret: null' : answer.secret === '' ? 'an empty secret' : 'a secret';
  const message = replayed
    ? `the change was applied by an earlier run's request${keyText(holder)}, and the server does not return a secret twice (it answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`
    : `the change was applied, but the signing secret is not available (the server answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`;
  return localError('secret_not_delivered', message, {
    details: baseDetails(holder, null, null),
    idempotencyKey: holder.idempotencyKey,
    hint: hintFor(holder, now),
  });
}
