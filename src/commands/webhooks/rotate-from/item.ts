// One item of a `--from` run, from its journal records to its result line,
// through the secret's custody (secret/custody.ts), the same lifecycle a
// single rotate goes through:
//   1. "send" in the journal and the item's record in recovered/, both
//      before the request (custody's start: what an earlier run left of the
//      same key is delivered instead, or refused as superseded); a new key's
//      record only once its "send" is on disk, so no record is ever left of
//      a key no journal names;
//   2. its request, through the engine, the record's tap keeping the answer;
//   3. the answer settled: "applied" in the journal before any destination,
//      then every destination, then "ok" (or "fail" with exit 13, the
//      secret kept);
//   4. its result line, once its outcome is on disk.
import type { SecretAnswer } from '../../../api/schemas.js';
import { holdsNoSecret, recordedSecretAnswer } from '../../../http/api-client.js';
import { CliError, EXIT, isCliError } from '../../../errors/cli-error.js';
import { NotSent, type CallHooks } from '../../../http/client.js';
import { noteConflict } from '../../../secret/facts.js';
import {
  type Accepted,
  Custody,
  type CustodyRun,
  deliveredHere,
  type DeliveryResult,
  type Got,
  hasLeft,
  type InDelivery,
  keptByEarlierRun,
  keptByEarlierRunError,
  knownNotApplied,
  lastApplied,
  notAttempted,
  notConfirmed,
  okNotRecorded,
  retireIfHeld,
  retireLeft,
  type Settled,
} from '../../../secret/custody.js';
import type { RecordedRequest } from '../../../secret/record.js';
import type { DeliveryRecord, JournalRecord, Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';

export interface ItemRequest {
  endpointId: string;
  expectedVersion: number;
  mode: ManifestItem['mode'];
}

/**
 * The item's request through the one request engine (http/client.ts): its
 * retries, Retry-After, --deadline, "may have been applied" and --debug
 * trace, with the run's shared rate as the hooks' pace. Resolves with the
 * 2xx answer; rejects with a CliError (NotSent when nothing went out).
 */
export type RotateItem = (request: ItemRequest, idempotencyKey: string, hooks: CallHooks) => Promise<SecretAnswer>;

export interface ItemSecretsPort {
  /** Every destination of this item in turn; `skipHeld`: a file that already holds exactly this secret counts as delivered. */
  deliver(item: ManifestItem, secret: string, opts?: { skipHeld?: boolean }): Promise<DeliveryResult>;
  /** Does every destination of this item already hold the secret with this fingerprint (read back, never blocking)? */
  holds(item: ManifestItem, fp: string): boolean;
  /** The destinations of this item, as its result line names them. */
  targetsFor(item: ManifestItem): string[];
}

export type ItemResult =
  | {
      endpointId: string;
      ok: true;
      /** Done by an earlier run (journal), or not due (--every): nothing was sent this time. */
      skipped?: true;
      /** --every: false when the endpoint was rotated less than that ago. */
      due?: false;
      /** --every: when the endpoint's last rotation was applied, as the facts say. */
      lastRotatedAt?: string;
      version?: number;
      fingerprint: string;
      delivery: DeliveryRecord[];
      requestId: string | null;
    }
  | {
      endpointId: string;
      ok: false;
      error: {
        code: string;
        message: string;
        requestId: string | null;
        status: number | null;
        details: unknown /** The next step, when there is one (exit 13: the re-run that delivers the kept secret). */;
        hint?: string;
      };
      exitCode: number;
      /** When the change may have been applied: the key a later run must reuse. */
      idempotencyKey?: string;
    };

/** What an item needs of its run. */
export interface ItemRun {
  rotate: RotateItem;
  secrets: ItemSecretsPort;
  custody: CustodyRun;
  /** Appends a journal record; false when it could not be written (the run then stops). */
  record(r: JournalRecord): Promise<boolean>;
  succeed(item: ManifestItem, result: Extract<ItemResult, { ok: true }>): void;
  fail(item: ManifestItem, err: CliError, key?: string): void;
  /** Result lines waiting for their "ok" record: the run awaits them before it ends. */
  pending(line: Promise<void>): void;
  notice?(text: string): void;
  /** Told when an item's delivery starts and ends: what a forced exit must name. */
  delivering?(item: ManifestItem, state: InDelivery | undefined): void;
  now(): number;
}

export const requestOf = (run: ItemRun, item: ManifestItem, key: string): RecordedRequest => ({
  op: 'rotate',
  scope: run.custody.scope,
  endpointId: item.endpointId,
  idempotencyKey: key,
  mode: item.mode,
  expectedVersion: item.expectedVersion,
});

const errorJson = (e: CliError) => ({ code: e.code, message: e.message, requestId: e.requestId, status: e.status, details: e.details, ...(e.hint ? { hint: e.hint } : {}) });
export const asCliError = (err: unknown) => (isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));

/** The result line of an item that failed. */
export function failedResult(item: ManifestItem, err: CliError, key?: string): ItemResult {
  const result: ItemResult = { endpointId: item.endpointId, ok: false, error: errorJson(err), exitCode: err.exitCode };
  if (key !== undefined) result.idempotencyKey = key;
  return result;
}

export const skippedResult = (item: ManifestItem, prior: Prior, delivery: DeliveryRecord[]): Extract<ItemResult, { ok: true }> => ({
  endpointId: item.endpointId,
  ok: true,
  skipped: true,
  ...(prior.version !== null ? { version: prior.version } : {}),
  fingerprint: prior.fp ?? '',
  delivery,
  requestId: prior.requestId,
});

/** An item ready to be sent: its "send" on its way to the disk, and (a re-sent key) its record. */
export interface Outgoing {
  item: ManifestItem;
  key: string;
  req: RecordedRequest;
  /**
   * Its custody, once its record is written: at once for a re-sent key
   * (its "send" is on disk since an earlier run); for a new key only once
   * its "send" is, so that a run killed before leaves no record of a key
   * that no journal names and no request carried.
   */
  custody: Custody | undefined;
  /** Its "send" record, on its way to the disk; false if the journal failed. */
  journaled: Promise<boolean>;
}

/**
 * Before an item's request: its "send" on its way to the disk, and for a
 * re-sent key its record. What an earlier run left of the same key (an
 * answer, a kept secret) is delivered now instead, and one superseded since
 * ends 13: then there is nothing to send (undefined).
 */
export async function prepare(run: ItemRun, item: ManifestItem, key: string, resent: boolean): Promise<Outgoing | undefined> {
  const req = requestOf(run, item, key);
  let custody: Custody | undefined;
  if (resent) {
    custody = await begin(run, item, req);
    if (!custody) return undefined;
    custody.resent = true;
    run.notice?.(`${item.endpointId}: re-sending the earlier run's request (expected version ${item.expectedVersion}, mode ${item.mode}) with its Idempotency-Key ${key}`);
  }
  const journaled = run.record({ t: 'send', id: item.endpointId, key, ev: item.expectedVersion, mode: item.mode });
  return { item, key, req, custody, journaled };
}

/** Custody's begin for an item: a superseded one fails, an earlier answer is delivered (then undefined: nothing to send); else its record is written. */
async function begin(run: ItemRun, item: ManifestItem, req: RecordedRequest, prior?: Prior): Promise<Custody | undefined> {
  const custody = await Custody.begin(run.custody, req, recordedSecretAnswer(item.endpointId));
  if (custody.next === 'superseded') {
    run.fail(item, custody.error!, req.idempotencyKey);
    return undefined;
  }
  if (custody.next === 'deliver') {
    run.notice?.(
      prior
        ? `${item.endpointId}: delivering again the secret an earlier run kept (${prior.fp ?? `Idempotency-Key ${prior.key}`})`
        : `${item.endpointId}: an earlier run kept the answer to its request (Idempotency-Key ${req.idempotencyKey}); delivering its secret without sending again`,
    );
    await settleItem(run, item, custody, custody.got!, prior);
    return undefined;
  }
  return custody;
}

/** A new key's record, once its "send" is on disk; a record that cannot be written fails the item, nothing sent. */
async function recordOf(run: ItemRun, out: Outgoing): Promise<Custody | undefined> {
  try {
    return await begin(run, out.item, out.req);
  } catch (err) {
    const e = asCliError(err);
    await run.record({ t: 'fail', id: out.item.endpointId, key: out.key, applied: false, exitCode: e.exitCode, code: e.code });
    run.fail(out.item, e);
    return undefined;
  }
}

/** The request of a prepared item (its "send" on disk), and its outcome. */
export async function sendItem(run: ItemRun, out: Outgoing, hooks: CallHooks): Promise<void> {
  const { item, key } = out;
  const custody = out.custody ?? (await recordOf(run, out));
  if (!custody) return;
  let answer: SecretAnswer;
  try {
    answer = await run.rotate({ endpointId: item.endpointId, expectedVersion: item.expectedVersion, mode: item.mode }, key, { ...hooks, tap: custody.tap, mayHaveApplied: custody.resent });
  } catch (err) {
    custody.failed(err, holdsNoSecret.has(err as object));
    // Ctrl-C before it was sent: not started (a re-run sends its recorded key, harmlessly).
    if (err instanceof NotSent) return;
    const e = asCliError(err);
    noteConflict(run.custody, item.endpointId, e, 'rotate --from'); // a 7 naming the current version: into the facts
    // A refusal (a 4xx other than 429) is the server's answer to this very
    // key: had an earlier request with it been applied, the server would
    // have replayed that answer. So the outcome is known, and the journal
    // says so; otherwise next month's manifest would stay refused. A re-sent
    // key answered 401, 403 or 404 stays pending (those come before the key is looked up).
    const notApplied = knownNotApplied(e, custody.resent);
    // The code may be the server's: scrubbed before it is stored, as every server string is.
    await run.record({ t: 'fail', id: item.endpointId, key, applied: notApplied ? false : null, exitCode: e.exitCode, code: scrubbed(run, e.code) });
    // Moved on by an earlier run here whose secret is kept, not delivered: that 13 is the item's outcome, not a 7 whose hint rotates again.
    const kept = e.exitCode === EXIT.versionConflict ? keptByEarlierRun(run.custody.configDir, run.custody.scope, item.endpointId) : undefined;
    if (kept) return run.fail(item, keptByEarlierRunError(kept, e), kept.key);
    run.fail(item, e, notApplied ? undefined : key);
    return;
  }
  await settleItem(run, item, custody, { answer });
}

/**
 * The answer (or what an earlier run kept) through custody: accepted,
 * "applied" in the journal (durable, before any destination: a run killed
 * while delivering leaves the fingerprint behind), delivered, finished, and
 * its line once "ok" is on disk. If "applied" cannot be written, nothing is
 * delivered and the item ends 13 with the record as the secret's place.
 */
async function settleItem(run: ItemRun, item: ManifestItem, custody: Custody, got: Got, prior?: Prior): Promise<void> {
  const key = custody.req.idempotencyKey;
  const resent = custody.next === 'deliver' || custody.resent;
  const accepted = await custody.accept(got, { resent, version: prior?.version, serverRequestId: prior?.requestId });
  const outcome = accepted.ok ? await deliverItem(run, item, custody, accepted, prior) : accepted.outcome;
  // Its patterns are dropped (thousands of items keep the set small); it is still never shown as it is.
  const secret = secretOf(got);
  if (secret) run.custody.scrubber?.retireSecret?.(secret);
  if (!outcome.ok) {
    await run.record({
      t: 'fail',
      id: item.endpointId,
      key,
      applied: true,
      exitCode: EXIT.secretNotDelivered,
      code: 'secret_not_delivered',
      recovered: outcome.kept,
      ...(outcome.fp === null && outcome.kept ? { whole: true } : {}),
    });
    if (outcome.kept)
      run.notice?.(`${item.endpointId}: ${outcome.fp ? `the signing secret (${outcome.fp})` : 'the whole answer that carries its signing secret'} was kept in ${outcome.kept} (mode 0600)`);
    run.fail(item, outcome.error, key);
    // The item's state stayed in place after the failure: a second signal while "fail" was written still named its record.
    run.delivering?.(item, undefined);
    return;
  }
  const version = typeof outcome.holder.version === 'number' ? outcome.holder.version : null;
  // The server's request id goes into the journal: one that echoes a secret is blanked first.
  const rawId = outcome.holder.serverRequestId ?? null;
  const clean = rawId === null ? null : scrubbed(run, rawId);
  const requestId = clean !== null && secret && clean.includes(secret) ? null : clean;
  const line: ItemResult = { endpointId: item.endpointId, ok: true, ...(version !== null ? { version } : {}), fingerprint: outcome.fp, delivery: outcome.delivered, requestId };
  // The worker moves on at once; the line follows when "ok" is on disk, so a
  // line on stdout always means "done, and known to be done by a re-run".
  // Killed before, the re-run delivers from the record (an exec: destination cannot be read back).
  const written = run
    .record({ t: 'ok', id: item.endpointId, key, version, fp: outcome.fp, delivery: outcome.delivered, requestId: requestId ?? '', at: new Date(run.now()).toISOString() })
    .then((recorded) => {
      if (recorded) {
        custody.retire();
        run.succeed(item, line);
        return;
      }
      // "ok" is not on disk (a full disk): the line may not say done. The run
      // stops; the record stays, and a re-run with the journal delivers it again.
      run.fail(item, okNotRecorded(item.endpointId, { fp: outcome.fp, version, delivered: outcome.delivered, held: custody.heldAt ?? '' }), key);
    });
  run.pending(written);
}

/** "applied" on disk, then every destination, then custody's finish. */
async function deliverItem(run: ItemRun, item: ManifestItem, custody: Custody, accepted: Extract<Accepted, { ok: true }>, prior?: Prior): Promise<Settled> {
  run.delivering?.(item, accepted.delivery);
  const version = typeof accepted.holder.version === 'number' ? accepted.holder.version : (prior?.version ?? null);
  const applied = { t: 'applied', id: item.endpointId, key: custody.req.idempotencyKey, version, fp: accepted.delivery.fp, recovered: custody.heldAt, at: new Date(run.now()).toISOString() } as const;
  const result = (await run.record(applied))
    ? await run.secrets.deliver(item, accepted.secret, { skipHeld: custody.next === 'deliver' || custody.resent }).catch(notAttempted)
    : notAttempted(new Error('the journal could not record it (the run stops)'));
  const outcome = await custody.finish(accepted, result);
  if (outcome.ok) run.delivering?.(item, undefined);
  return outcome;
}

const secretOf = (got: Got) => ('kept' in got ? got.kept : got.answer.ok && typeof got.answer.body.data.secret === 'string' ? got.answer.body.data.secret : undefined);

/** A server string as it may be stored or printed: every secret and the token blanked. */
const scrubbed = (run: ItemRun, text: string) => (run.custody.scrubber?.scrub ? run.custody.scrubber.scrub(text) : text);

/**
 * An item an earlier run rotated whose delivery it did not confirm: never
 * sent again. What it left in recovered/ (its record, or the secret kept
 * after a failure) is delivered (a file that already holds exactly that
 * secret counts as delivered); with nothing left, done if every destination
 * holds the secret, else 13 with the fingerprint to compare, or "superseded"
 * when a later rotation of the endpoint went through here.
 */
/**
 * A done item (journal "ok"): a run killed between that record and retiring
 * the record left it behind; removed when it holds that very secret (its
 * fingerprint), left alone otherwise.
 */
export async function tidyDone(run: ItemRun, item: ManifestItem, prior: Prior): Promise<void> {
  if (!prior.fp) return;
  await retireIfHeld(run.custody, requestOf(run, item, prior.key), prior.fp, recordedSecretAnswer(item.endpointId));
}

export async function redeliver(run: ItemRun, item: ManifestItem, prior: Prior): Promise<void> {
  const req = requestOf(run, item, prior.key);
  // Every destination holds it: read back, or (an exec: destination cannot be) this machine's facts say its delivery completed.
  if (prior.fp && (run.secrets.holds(item, prior.fp) || deliveredHere(run.custody, item.endpointId, prior.key))) {
    // Every destination holds it already (the killed run got that far): done.
    const delivery = run.secrets.targetsFor(item).map((to) => ({ to, fingerprint: prior.fp! }));
    if (await run.record({ t: 'ok', id: item.endpointId, key: prior.key, version: prior.version, fp: prior.fp, delivery, requestId: prior.requestId ?? '' })) retireLeft(run.custody, req);
    run.succeed(item, skippedResult(item, prior, delivery));
    return;
  }
  if (hasLeft(run.custody, req)) {
    const custody = await begin(run, item, req, prior);
    if (!custody) return;
    // A record without a usable answer: nothing to deliver from it.
    custody.leave();
  }
  run.fail(item, notConfirmed(item.endpointId, prior, lastApplied(run.custody, item.endpointId), run.now()), prior.key);
}
