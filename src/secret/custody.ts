// The one-time secret's custody: the whole life of a create's or rotate's
// answer, one path for a single command and every item of `rotate --from`
// (docs/secrets.md, "Custody"):
//
//   start    what an earlier run left of this very request (same scope,
//            endpoint and whole key): a superseded one ends 13 at once; an
//            answer or a kept secret is delivered without sending; else the
//            record is written (record.ts) before anything is sent
//   send     (the caller) with the record's tap: the answer's bytes on disk
//            as they arrive; a request known not applied retires the record
//   settle   the answer parsed: an odd one kept whole (13), a withheld secret
//            (13), else the rotation noted (superseded.ts) and the secret
//            delivered to every destination
//   retire   every destination holds it: the record and the endpoint's
//            superseded records go; otherwise the secret is kept alone
//            beside them, durable, and the error says where (13)
//
// "Record" is what recovered/ holds of a request; "destination" where the
// user asked the secret to go; "deliver" is putting it there.
import { type CliError, isCliError, localError } from '../errors/cli-error.js';
import { escapeInline } from '../output/sanitize.js';
import { exit13Details, newSecretHint } from './new-secret-hint.js';
import { oddSecretHint, oddSecretText, type OddSecretAnswer, type SecretAnswer, type SecretResponse } from '../api/schemas.js';
import type { Delivered, DeliveryFailure } from './deliver-all.js';
import { fingerprint } from './fingerprint.js';
import { describeKeepFailure } from './deliver.js';
import { findLeft, removeLeft, recordPaths, WriteAheadRecord, type Left, type RecordedRequest } from './record.js';
import { lastRotation, noteRotation, removeSuperseded, supersededBy, type Rotation } from './superseded.js';
import type { Clock } from '../system/clock.js';

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

/** What custody needs of the run. */
export interface CustodyDeps extends Pick<Clock, 'now'> {
  configDir: string;
}

/** The run's custody: its config folder and scope, its clock, what must never be shown. */
export interface CustodyRun extends CustodyDeps {
  /** "org/app/env": part of every record's identity. */
  scope: string;
  scrubber?: { addSecret(value: string): void; retireSecret?(value: string): void; scrub?(text: string): string } | undefined;
  /** How a re-run delivers the record of the request with this key (hint and message). */
  rerun(idempotencyKey: string): string;
  /** The job's destinations as flags, for the hint that gets a new secret (new-secret-hint.ts destinationFlags). */
  destination?: ((endpointId: string) => string | undefined) | undefined;
  /** --escrow: a secret kept after a failed destination is also written encrypted; amends the error (secret/escrow.ts escrowHook). */
  escrow?: ((error: CliError, item: { scope: string; endpointId: string; version: number | null; secret: string; fingerprint: string }) => Promise<void>) | undefined;
}

export interface DeliveryResult {
  delivered: Delivered[];
  failures: DeliveryFailure[];
}

/** What holds a request's secret on disk until every destination does: its record, or what an earlier run kept. */
interface Held {
  /** Where it is now (the record, or the kept secret). */
  readonly path: string;
  /** Every destination holds the secret, or the request was not applied: it goes. */
  retire(): void;
  /** The secret (or the odd answer) kept alone, durable: where it is then, or why nothing holds it. */
  keep(secret: string | Buffer, whole: boolean): { path: string } | { error: unknown };
  /** Leaves it as it is (outcome unknown). */
  close(): void;
}

/** What an earlier run's answer gave, or this run's: the answer, or the secret a failed delivery kept. */
export type Got = { answer: SecretAnswer } | { kept: string; path: string };

export type Start =
  /** Send the request; `resent`: a record of it existed (an earlier run may have been applied). */
  | { kind: 'send'; held: Held & { tap: WriteAheadRecord['tap'] }; resent: boolean }
  /** Nothing to send: an earlier run's answer or kept secret is delivered. */
  | { kind: 'deliver'; held: Held; got: Got }
  /** A later rotation of the endpoint superseded what an earlier run left: 13, destinations untouched. */
  | { kind: 'superseded'; error: CliError };

/** `answerOf` turns a recorded answer into one (api/client.ts's check), undefined when it is not a usable 2xx. */
export type ReadAnswer = (status: number, contentEncoding: string | null, body: Buffer) => Promise<SecretAnswer | undefined>;

/**
 * Before a create or rotate is sent: what an earlier run left of this very
 * request decides. Throws (a CliError of exit 3) when recovered/ cannot hold
 * a record: then nothing may be sent.
 */
export async function startCustody(run: CustodyRun, req: RecordedRequest, answerOf: ReadAnswer): Promise<Start> {
  const left = findLeft(run.configDir, req);
  if (left) {
    const got = await gotFrom(left, answerOf);
    const version = got && 'answer' in got && got.answer.ok && typeof got.answer.body.data.endpoint.version === 'number' ? got.answer.body.data.endpoint.version : null;
    const newer = supersededBy(run.configDir, req, left, version);
    if (newer) return { kind: 'superseded', error: superseded(run, req, left, newer) };
    if (got && left.kind !== 'record') return { kind: 'deliver', held: keptFile(run, req, left.path), got };
    if (got) return { kind: 'deliver', held: openRecord(run, req), got };
  }
  const held = openRecord(run, req);
  return { kind: 'send', held, resent: left !== undefined };
}

function openRecord(run: CustodyRun, req: RecordedRequest): WriteAheadRecord {
  try {
    return WriteAheadRecord.open(run.configDir, req, new Date(run.now()));
  } catch (err) {
    throw localError('config_error', `cannot keep a record of the request before sending it: ${describeKeepFailure(err, run.configDir)}`, {
      hint: 'nothing was sent; chatctl keeps the answer that carries the secret there until every destination holds it (docs/secrets.md)',
    });
  }
}

/** The answer or secret an earlier run left, when it can be delivered. */
async function gotFrom(left: Left, answerOf: ReadAnswer): Promise<Got | undefined> {
  if (left.kind === 'secret') return { kept: left.secret.toString('utf8'), path: left.path };
  if (left.kind === 'answer') return undefined; // an odd answer kept whole: for the user to read (the error named it)
  const a = left.record.answer;
  if (!a || a.status < 200 || a.status >= 300) return undefined;
  const answer = await answerOf(a.status, a.contentEncoding, a.body).catch(() => undefined);
  return answer ? { answer } : undefined;
}

/** What an earlier run kept after a failed delivery, held as a record is. */
function keptFile(run: CustodyRun, req: RecordedRequest, path: string): Held {
  return {
    path,
    retire: () => removeLeft(run.configDir, req),
    keep: () => ({ path }),
    close: () => {},
  };
}

/**
 * The send failed: a request known not to have been applied (nothing went
 * out, or the server refused this very key) retires its record; otherwise
 * the record stays for the re-run that sends the key again. A re-sent key
 * answered 401, 403 or 404 stays unknown: those come before the server looks
 * the key up.
 */
export function sendFailed(held: Held, err: unknown, resent: boolean, nothingToKeep = false): void {
  if (nothingToKeep || knownNotApplied(err, resent)) held.retire();
  else held.close();
}

export function knownNotApplied(err: unknown, resent: boolean): boolean {
  if (!isCliError(err)) return false;
  if (err.code === 'interrupted' && err.idempotencyKey === undefined && !resent) return true;
  const s = err.status;
  if (s !== null && s >= 400 && s < 500 && s !== 429 && err.code !== 'idempotency_conflict') return !(resent && (s === 401 || s === 403 || s === 404));
  return err.idempotencyKey === undefined && !resent;
}

export interface SettleHooks {
  /**
   * Before delivery starts, with where the secret is held and its
   * fingerprint. A --from run writes its journal record here; if this
   * throws, nothing is delivered and the item ends 13 with the record as the
   * secret's place.
   */
  beforeDelivery?(held: string, fp: () => string): Promise<void>;
  /**
   * While delivering (state), and after (undefined): what a forced exit must
   * name. Told undefined only on success: after a failure the state stays
   * until the caller has reported the outcome and says undefined itself.
   */
  delivering?(state: InDelivery | undefined): void;
  /**
   * Every destination holds it: the record is left for the caller to retire
   * (the outcome's retire()) once it has recorded that, so that a kill before
   * a --from run's "ok" record is on disk leaves the record its re-run
   * delivers from (an exec: destination cannot be read back).
   */
  retireWhenRecorded?: boolean;
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

export type Settled =
  | { ok: true; fp: string; delivered: Delivered[]; holder: Holder; body: SecretResponse /** Removes the record (done already unless retireWhenRecorded). */; retire(): void }
  | { ok: false; error: CliError; holder: Holder; body: SecretResponse | undefined; fp: string | null; delivered: Delivered[]; kept: string | null };

/**
 * The answer (or a kept secret) to every destination. Never throws: an odd
 * answer, a withheld secret, a failing destination and a journal that
 * cannot be written all end in the outcome.
 */
export async function settle(
  run: CustodyRun,
  req: RecordedRequest,
  held: Held,
  got: Got,
  who: {
    endpointId: string /** true: a re-sent request; 'maybe': a key the user gave, with no record here. */;
    resent: boolean | 'maybe' /** What a journal knows of a kept secret's answer. */;
    version?: number | null;
    serverRequestId?: string | null;
  },
  deliver: (secret: string, holder: Holder) => Promise<DeliveryResult>,
  hooks: SettleHooks = {},
): Promise<Settled> {
  const base: Holder = {
    endpointId: who.endpointId,
    idempotencyKey: req.idempotencyKey,
    rerun: run.rerun(req.idempotencyKey),
    version: who.version ?? null,
    serverRequestId: who.serverRequestId ?? null,
    destination: run.destination,
  };
  if ('kept' in got) return inCustody(run, req, held, got.kept, base, undefined, deliver, hooks);
  const { answer } = got;
  if (!answer.ok) {
    if (answer.odd.read !== undefined) run.scrubber?.addSecret(answer.odd.read);
    const endpointId = (answer.odd.whole === 'endpoint' ? req.endpointId : undefined) ?? answer.odd.endpointId ?? req.endpointId ?? 'endpoint';
    const error = keepOddAnswer(answer.odd, { ...base, endpointId }, held, run);
    const kept = (error.details as { recoveredPath?: string | null }).recoveredPath ?? null;
    return { ok: false, error, holder: { ...base, endpointId }, body: undefined, fp: null, delivered: [], kept };
  }
  const body = answer.body;
  const { endpoint, secret, secretAvailable } = body.data;
  const rawId = typeof endpoint.id === 'string' || typeof endpoint.id === 'number' ? String(endpoint.id) : undefined;
  const holder: Holder = {
    ...base,
    endpointId: rawId ?? req.endpointId ?? 'endpoint',
    version: typeof endpoint.version === 'number' ? endpoint.version : null,
    answer: body.data,
    serverRequestId: body.meta.requestId,
  };
  // The last rotation of the endpoint this machine saw, before this answer is noted.
  const rotated = rotatedEndpoint(req);
  const before = rotated !== undefined ? lastRotation(run.configDir, req.scope, rotated) : undefined;
  if (rotated !== undefined && typeof holder.version === 'number') {
    noteRotation(run.configDir, req.scope, { endpointId: rotated, version: holder.version, at: new Date(run.now()).toISOString(), idempotencyKey: req.idempotencyKey }, before);
  }
  if (typeof secret !== 'string' || secret === '' || secretAvailable === false) {
    // Applied, but the secret is not in the answer (a replay of an earlier
    // request with this key, or withheld): nothing to keep.
    held.retire();
    const error = withheld(run, req, { ...holder, endpointId: rawId ?? req.endpointId ?? 'ENDPOINT_ID' }, { secret, secretAvailable }, before, who.resent);
    return { ok: false, error, holder, body, fp: null, delivered: [], kept: null };
  }
  return inCustody(run, req, held, secret, holder, body, deliver, hooks);
}

async function inCustody(
  run: CustodyRun,
  req: RecordedRequest,
  held: Held,
  secret: string,
  holder: Holder,
  body: SecretResponse | undefined,
  deliver: (secret: string, holder: Holder) => Promise<DeliveryResult>,
  hooks: SettleHooks,
): Promise<Settled> {
  run.scrubber?.addSecret(secret);
  // Computed when first needed (node:crypto costs a few ms to load): a --json run that succeeds never needs it.
  let fpMemo: string | undefined;
  const fpOf = () => (fpMemo ??= fingerprint(secret));
  const state: InDelivery = {
    holder,
    get fp() {
      return fpOf();
    },
    kept: held.path,
    now: run.now(),
    keepNow() {
      const kept = held.keep(secret, false);
      if ('path' in kept) state.kept = kept.path;
      else state.keepFailure = describeKeepFailure(kept.error, run.configDir);
      state.keepNow = undefined;
    },
  };
  hooks.delivering?.(state);
  let result: DeliveryResult;
  try {
    await hooks.beforeDelivery?.(held.path, fpOf);
    result = await deliver(secret, holder);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    result = { delivered: [], failures: [{ to: 'every destination', reason: `not attempted: ${reason}` }] };
  }
  if (result.failures.length === 0) {
    hooks.delivering?.(undefined);
    const retire = () => {
      try {
        held.retire();
        retireSuperseded(run, req);
      } catch {
        /* a record left in recovered/ is untidy, not a failure: every destination holds the secret */
      }
    };
    if (!hooks.retireWhenRecorded) retire();
    return { ok: true, fp: fpOf(), delivered: result.delivered, holder, body: body!, retire };
  }
  const fp = fpOf();
  const kept = held.keep(secret, false);
  const where = 'path' in kept ? kept.path : undefined;
  const keepFailure = 'error' in kept ? describeKeepFailure(kept.error, run.configDir) : undefined;
  if (where !== undefined) retireSuperseded(run, req);
  // What a second signal says until the caller has reported this outcome.
  state.kept = where ?? null;
  state.keepFailure = keepFailure;
  const error = notDelivered(holder, { fp, failures: result.failures, delivered: result.delivered, where, keepFailure, now: run.now() });
  await run.escrow?.(error, { scope: req.scope, endpointId: holder.endpointId, version: holder.version ?? null, secret, fingerprint: fp });
  return { ok: false, error, holder, body, fp, delivered: result.delivered, kept: where ?? null };
}

/** The endpoint a request rotates (a create rotates none, and supersedes nothing). */
const rotatedEndpoint = (req: RecordedRequest) => (req.op === 'rotate' && req.endpointId !== null ? req.endpointId : undefined);

/** This request's secret is delivered or kept: what older requests of its endpoint left goes. */
function retireSuperseded(run: CustodyRun, req: RecordedRequest): void {
  const endpointId = rotatedEndpoint(req);
  if (endpointId !== undefined) removeSuperseded(run.configDir, req.scope, endpointId, Object.values(recordPaths(run.configDir, req)));
}

/**
 * The server replayed an applied request without its secret. Said as what
 * this machine knows of it: superseded by a later rotation noted here (then
 * the hint's version is that one's), or applied by an earlier run here.
 */
function withheld(run: CustodyRun, req: RecordedRequest, holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, before: Rotation | undefined, resent: boolean | 'maybe'): CliError {
  if (before && before.idempotencyKey !== req.idempotencyKey && typeof holder.version === 'number' && before.version > holder.version) return superseded(run, req, null, before);
  const earlier = before?.idempotencyKey === req.idempotencyKey ? before : undefined;
  return secretWithheld(holder, answer, run.now(), resent === true || earlier !== undefined ? true : resent, earlier?.at);
}

/** A later rotation of the endpoint went through chatctl here: what an earlier run left (or a replay of its request) is never delivered. */
function superseded(run: CustodyRun, req: RecordedRequest, left: Left | null, newer: Rotation): CliError {
  const newerLeft = findLeft(run.configDir, { ...req, idempotencyKey: newer.idempotencyKey });
  // The newer secret was delivered or kept: this one can go.
  if (!newerLeft && req.endpointId !== null) removeSuperseded(run.configDir, req.scope, req.endpointId, []);
  const id = escapeInline(req.endpointId ?? '');
  const what = left ? `the secret of endpoint ${id} that an earlier run kept` : `the rotation of endpoint ${id} that an earlier request applied`;
  return localError(
    'secret_not_delivered',
    `${what} (Idempotency-Key ${req.idempotencyKey}) is superseded by the rotation to version ${newer.version} at ${newer.at}; it was not delivered, and the destinations were left as they are`,
    {
      details: exit13Details(
        { endpointId: req.endpointId, version: newer.version, fingerprint: null, recoveredPath: newerLeft && left ? left.path : null },
        { supersededBy: { version: newer.version, at: newer.at, idempotencyKey: newer.idempotencyKey } },
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
 * applied. It is kept under recovered/ as received, never dropped: exit 13.
 */
export function keepOddAnswer(odd: OddSecretAnswer, holder: Holder, held: Held, deps: CustodyDeps): CliError {
  const fp = fingerprint(odd.kept);
  const head = `the server's answer is not the expected response, but the change was applied${keyText(holder)} and it carries ${oddSecretText(odd, fp)} of endpoint ${escapeInline(holder.endpointId)}`;
  const kept = held.keep(odd.kept, odd.whole !== false);
  if ('error' in kept) {
    const cause = describeKeepFailure(kept.error, deps.configDir);
    return localError('secret_not_delivered', `${head}; no recovery copy could be written (${cause}), so nothing holds it: the secret is lost`, {
      details: baseDetails(holder, fp, null, { recoveryError: cause }),
      idempotencyKey: holder.idempotencyKey,
      hint: hintFor(holder, deps.now()),
    });
  }
  const path = kept.path;
  return localError('secret_not_delivered', `${head}; it is kept in ${path} (mode 0600), not delivered`, {
    details: baseDetails(holder, fp, path),
    idempotencyKey: holder.idempotencyKey,
    hint: oddSecretHint(odd, path),
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
