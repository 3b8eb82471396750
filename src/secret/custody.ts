// The one-time secret's custody: one object per create or rotate request,
// the same for a single command and every item of `rotate --from`
// (docs/secrets.md, "Custody"). Its steps run in order, and the caller does
// its own part (sending, journaling, delivering) between them:
//
//   begin    what an earlier run left of this very request (same scope,
//            endpoint and whole key) decides: superseded (13 at once), an
//            answer or a kept secret to deliver (nothing is sent), else the
//            record is written before anything is sent (record.ts)
//   send     (the caller) with the record's tap, the answer's bytes on disk
//            as they arrive; failed() when no answer came
//   accept   the answer read: an odd one kept whole (13), a withheld secret
//            (13), else the change added to the endpoint's facts (facts.ts)
//            and the secret handed to the caller with what to name it by
//   deliver  (the caller) to every destination, after journaling it
//   finish   every destination holds it: done (retire() removes the record);
//            otherwise the secret is kept alone, durable, and the error says
//            where (13)
//
// "Record" is what recovered/ holds of a request; "destination" where the
// user asked the secret to go; "deliver" is putting it there. The facts are
// custody's own: callers ask it (lastApplied), never the files.
import { isCliError, localError } from '../errors/cli-error.js';
import type { SecretAnswer, SecretResponse } from '../api/schemas.js';
import type { Delivered, DeliveryFailure } from './deliver-all.js';
import { describeKeepFailure } from './deliver.js';
import { type KeptChange, deliveryCutShort, notDelivered, oddAnswerError, secretWithheld, supersededError, type Holder, type InDelivery } from './exit13.js';
import { EndpointFacts, factsPath, seenOf, type Applied } from './facts.js';
import { acquireLock, systemLockHost, type HeldLock, type LockSubject } from '../fs/lock.js';
import { makeFolders } from '../config/make-folders.js';
import { join } from 'node:path';
import { fingerprint } from './fingerprint.js';
import { findLeft, markSuperseded, pruneSuperseded, removeLeft, WriteAheadRecord, type Left, type RecordedRequest } from './record.js';
import type { Clock } from '../system/clock.js';
import type { Context } from '../context.js';
import { configError, type CliError } from '../errors/cli-error.js';

/** How long a delivery waits for another process's delivery of the same endpoint (an exec: destination may take a minute). */
const DELIVERY_LOCK_WAIT_MS = 150_000;

const DELIVERY: LockSubject = {
  name: "the endpoint's delivery",
  error: configError,
  busy: (v, lockPath) => configError(`the endpoint's secret is being delivered by ${v.holder} (${lockPath})`),
};

export { deliveryCutShort, type Holder, type InDelivery };

/** The run's custody: its config folder and scope, its clock, what must never be shown. */
export interface CustodyRun extends Pick<Clock, 'now'> {
  configDir: string;
  /** "org/app/env": part of every record's identity. */
  scope: string;
  scrubber?: { addSecret(value: string): void; retireSecret?(value: string): void; scrub?(text: string): string } | undefined;
  /** How a re-run delivers the record of the request with this key (hint and message). */
  rerun(idempotencyKey: string): string;
  /** A notice on stderr: what custody could not note (the change goes on). */
  warn?(text: string): void;
  /** The job's destinations as flags, for the hint that gets a new secret (new-secret-hint.ts destinationFlags). */
  destination?: ((endpointId: string) => string | undefined) | undefined;
  /**
   * What the endpoint's delivery lock waits with (fs/lock.ts): a delivery of
   * one endpoint's secret at a time across processes, so an older secret
   * cannot land after a newer one. Without it (tests of parts) there is none.
   */
  locking?: { sleep: Clock['sleep']; random(): number; signal: AbortSignal } | undefined;
  /** --escrow: a secret kept after a failed destination is also written encrypted; amends the error (secret/escrow.ts escrowHook). */
  escrow?: ((error: CliError, item: { scope: string; endpointId: string; version: number | null; secret: string; fingerprint: string }) => Promise<void>) | undefined;
}

export interface DeliveryResult {
  delivered: Delivered[];
  failures: DeliveryFailure[];
}

/** What an earlier run's answer gave, or this run's: the answer, or the secret a failed delivery kept. */
export type Got = { answer: SecretAnswer } | { kept: string; path: string };

/** `answerOf` turns a recorded answer into one (api/client.ts's check), undefined when it is not a usable 2xx. */
export type ReadAnswer = (status: number, contentEncoding: string | null, body: Buffer) => Promise<SecretAnswer | undefined>;

/** What the caller knows of the request beyond its record: whether it was sent before, and what a journal kept of its answer. */
export interface Known {
  /** true: a re-sent request; 'maybe': a key the user gave, with no record here. */
  resent: boolean | 'maybe';
  version?: number | null | undefined;
  serverRequestId?: string | null | undefined;
}

/** The answer accepted: a secret to deliver, or an outcome already final (an odd answer kept, a withheld secret). */
export type Accepted = { ok: true; secret: string; holder: Holder; body: SecretResponse | undefined; delivery: InDelivery } | { ok: false; outcome: Failed };

export type Failed = { ok: false; error: CliError; holder: Holder; body: SecretResponse | undefined; fp: string | null; delivered: Delivered[]; kept: string | null };

export type Settled = { ok: true; fp: string; delivered: Delivered[]; holder: Holder; body: SecretResponse | undefined } | Failed;

/** What holds a request's secret on disk until every destination does: its record, or what an earlier run kept. */
interface Held {
  readonly path: string;
  retire(): void;
  keep(secret: string | Buffer, whole: boolean): { path: string } | { error: unknown };
  close(): void;
}

/** The run's custody from its world: its folder, clock, lock waits, notices and scrubber; `rerun` says how a re-run delivers what it kept. */
export function runCustody(ctx: Pick<Context, 'configDir' | 'now' | 'sleep' | 'random' | 'signal' | 'io'>, scope: string, rerun: CustodyRun['rerun']): CustodyRun {
  return {
    configDir: ctx.configDir,
    now: ctx.now,
    locking: { sleep: ctx.sleep, random: ctx.random, signal: ctx.signal },
    warn: (text) => ctx.io.notice(text),
    scope,
    scrubber: ctx.io.scrubber,
    rerun,
  };
}

export class Custody {
  /** What begin() found: send the request, deliver what an earlier run left, or nothing (superseded). */
  readonly next: 'send' | 'deliver' | 'superseded';
  /** next 'superseded': the exit 13 to report. */
  readonly error: CliError | undefined;
  /** next 'deliver': the answer or kept secret an earlier run left. */
  readonly got: Got | undefined;
  /** next 'send': a record of this request existed, or a journal says it was sent (an earlier run may have been applied). */
  resent: boolean;
  private held: Held | undefined;
  private facts: EndpointFacts | undefined;

  private constructor(
    private readonly run: CustodyRun,
    readonly req: RecordedRequest,
    found: { next: Custody['next']; error?: CliError; got?: Got; resent?: boolean; held?: Held; facts: EndpointFacts | undefined },
  ) {
    this.next = found.next;
    this.error = found.error;
    this.got = found.got;
    this.resent = found.resent ?? false;
    this.held = found.held;
    this.facts = found.facts;
  }

  /**
   * Before a create or rotate is sent. Throws (a CliError of exit 3) when
   * recovered/ cannot hold a record: then nothing may be sent.
   */
  static async begin(run: CustodyRun, req: RecordedRequest, answerOf: ReadAnswer): Promise<Custody> {
    pruneSuperseded(run.configDir, run.now());
    const facts = req.endpointId !== null ? EndpointFacts.read(run.configDir, req.scope, req.endpointId) : undefined;
    const left = findLeft(run.configDir, req);
    if (left) {
      const got = await gotFrom(left, answerOf);
      const version = got && 'answer' in got && got.answer.ok && typeof got.answer.body.data.endpoint.version === 'number' ? got.answer.body.data.endpoint.version : null;
      const newer = facts?.supersedes(req.idempotencyKey, version);
      if (newer) return new Custody(run, req, { next: 'superseded', error: supersede(run, req, facts, newer), facts });
      if (got && left.kind !== 'record') return new Custody(run, req, { next: 'deliver', got, held: keptFile(run, req, left.path), facts });
      if (got) return new Custody(run, req, { next: 'deliver', got, held: openRecord(run, req), facts });
    }
    return new Custody(run, req, { next: 'send', held: openRecord(run, req), resent: left !== undefined, facts });
  }

  /** The record's tap for the transport: the answer's bytes on disk as they arrive. */
  get tap(): WriteAheadRecord['tap'] | undefined {
    return this.held instanceof WriteAheadRecord ? this.held.tap : undefined;
  }

  /** Where the secret is held now (the record, or the copy an earlier run kept). */
  get heldAt(): string | undefined {
    return this.held?.path;
  }

  /**
   * The send failed: a request known not to have been applied (nothing went
   * out, or the server refused this very key) retires its record; otherwise
   * the record stays for the re-run that sends the key again. `nothingToKeep`:
   * an answer read whole that holds nothing that may be a secret.
   */
  failed(err: unknown, nothingToKeep = false): void {
    if (nothingToKeep || knownNotApplied(err, this.resent)) this.held?.retire();
    else this.held?.close();
  }

  /**
   * The answer (or what an earlier run kept), read. A usable secret comes
   * back to be delivered, with the state a second signal names (`delivery`);
   * an odd answer or a withheld secret is final (13).
   */
  async accept(got: Got, known: Known): Promise<Accepted> {
    const base: Holder = {
      endpointId: this.req.endpointId ?? 'endpoint',
      idempotencyKey: this.req.idempotencyKey,
      rerun: this.run.rerun(this.req.idempotencyKey),
      // A kept secret comes without its answer: its version is what the journal or this request's own fact says.
      version: known.version ?? this.facts?.versionOf(this.req.idempotencyKey) ?? null,
      serverRequestId: known.serverRequestId ?? null,
      destination: this.run.destination,
    };
    if ('kept' in got) return this.toDeliver(got.kept, base, undefined);
    return this.acceptAnswer(got, base, known);
  }

  private async acceptAnswer(got: { answer: SecretAnswer }, base: Holder, known: Known): Promise<Accepted> {
    const { answer } = got;
    if (!answer.ok) return { ok: false, outcome: this.keepOdd(answer.odd, base) };
    const body = answer.body;
    const { endpoint, secret, secretAvailable } = body.data;
    const rawId = typeof endpoint.id === 'string' || typeof endpoint.id === 'number' ? String(endpoint.id) : undefined;
    const holder: Holder = {
      ...base,
      endpointId: rawId ?? base.endpointId,
      version: typeof endpoint.version === 'number' ? endpoint.version : null,
      answer: body.data,
      serverRequestId: body.meta.requestId,
    };
    // The endpoint's facts (a create's are known only from its answer): the last change seen before this one is added.
    if (!this.facts && rawId !== undefined) this.facts = EndpointFacts.read(this.run.configDir, this.req.scope, rawId);
    const before = this.facts?.lastApplied();
    const usable = typeof secret === 'string' && secret !== '' && secretAvailable !== false;
    // Known to the scrubber before anything of the answer is stored.
    if (usable) this.run.scrubber?.addSecret(secret);
    const scrub = (t: string) => this.run.scrubber?.scrub?.(t) ?? t;
    const noted = this.facts?.add({
      f: 'applied',
      at: this.at(),
      key: this.req.idempotencyKey,
      op: this.req.op,
      version: holder.version ?? null,
      ...(this.req.expectedVersion !== undefined ? { ev: this.req.expectedVersion } : {}),
      mode: this.req.mode,
      ...(usable ? { fp: fingerprint(secret) } : {}),
      endpoint: seenOf(endpoint, scrub),
    });
    if (noted === false)
      this.run.warn?.(
        `could not note this change of endpoint ${holder.endpointId} under ${this.run.configDir}/facts (a full disk, or a folder it cannot write): a later run cannot tell that it supersedes what older runs kept of the endpoint`,
      );
    if (!usable) {
      // Applied, but the secret is not in the answer (a replay of an earlier request with this key, or withheld): nothing to keep.
      this.held?.retire();
      const error = this.withheld({ ...holder, endpointId: rawId ?? this.req.endpointId ?? 'ENDPOINT_ID' }, { secret, secretAvailable }, before, known.resent);
      return { ok: false, outcome: { ok: false, error, holder, body, fp: null, delivered: [], kept: null } };
    }
    return this.toDeliver(secret, holder, body);
  }

  /**
   * The secret to deliver, once this process holds the endpoint's delivery
   * lock and the facts (read again under it) show no later change of the
   * endpoint: one that another process applied meanwhile, or delivered while
   * this one waited, supersedes it (13, destinations untouched).
   */
  private async toDeliver(secret: string, holder: Holder, body: SecretResponse | undefined): Promise<Accepted> {
    this.run.scrubber?.addSecret(secret);
    await this.holdEndpoint(holder.endpointId);
    const now = EndpointFacts.read(this.run.configDir, this.req.scope, holder.endpointId);
    const newer = now.supersedes(this.req.idempotencyKey, typeof holder.version === 'number' ? holder.version : null);
    if (newer) {
      this.releaseEndpoint();
      return { ok: false, outcome: { ok: false, error: supersede(this.run, this.req, now, newer), holder, body, fp: null, delivered: [], kept: null } };
    }
    // Computed when first needed (node:crypto costs a few ms to load): a --json run that succeeds never needs it.
    let fpMemo: string | undefined;
    const held = this.held!;
    const delivery: InDelivery = {
      holder,
      get fp() {
        return (fpMemo ??= fingerprint(secret));
      },
      kept: held.path,
      now: this.run.now(),
      keepNow: () => {
        const kept = held.keep(secret, false);
        if ('path' in kept) delivery.kept = kept.path;
        else delivery.keepFailure = describeKeepFailure(kept.error, this.run.configDir);
        delivery.keepNow = undefined;
      },
    };
    return { ok: true, secret, holder, body, delivery };
  }

  /**
   * After delivery (`result`; a journal that could not record it first is a
   * failure of every destination): every destination holds the secret, and
   * the record stays until retire(); or the secret is kept alone, durable,
   * and the 13 says where. A failure leaves `delivery` naming where it is,
   * for a second signal, until the caller has reported the outcome.
   */
  async finish(accepted: Extract<Accepted, { ok: true }>, result: DeliveryResult): Promise<Settled> {
    try {
      return await this.settle(accepted, result);
    } finally {
      this.releaseEndpoint();
    }
  }

  private async settle(accepted: Extract<Accepted, { ok: true }>, result: DeliveryResult): Promise<Settled> {
    const { secret, holder, body, delivery } = accepted;
    if (result.failures.length === 0) {
      this.facts?.add({ f: 'delivered', at: this.at(), key: this.req.idempotencyKey, version: holder.version ?? null, to: result.delivered.map((d) => d.to), fp: delivery.fp });
      return { ok: true, fp: delivery.fp, delivered: result.delivered, holder, body };
    }
    const fp = delivery.fp;
    const kept = this.held!.keep(secret, false);
    const where = 'path' in kept ? kept.path : undefined;
    const keepFailure = 'error' in kept ? describeKeepFailure(kept.error, this.run.configDir) : undefined;
    if (where !== undefined) this.facts?.add({ f: 'kept', at: this.at(), key: this.req.idempotencyKey, version: holder.version ?? null, path: where });
    delivery.kept = where ?? null;
    delivery.keepFailure = keepFailure;
    const error = notDelivered(holder, { fp, failures: result.failures, delivered: result.delivered, where, keepFailure, now: this.run.now() });
    await this.run.escrow?.(error, { scope: this.req.scope, endpointId: holder.endpointId, version: holder.version ?? null, secret, fingerprint: fp });
    return { ok: false, error, holder, body, fp, delivered: result.delivered, kept: where ?? null };
  }

  /** Not sent after all, or nothing to deliver from it: the record stays as it is (outcome unknown). */
  leave(): void {
    this.held?.close();
  }

  /** Every destination holds the secret (and a --from run has recorded so): the record goes. Never throws: a record left behind is untidy, not a failure. */
  retire(): void {
    this.releaseEndpoint();
    try {
      this.held?.retire();
    } catch {
      /* see above */
    }
  }

  /** An odd answer that carries a secret: kept whole under recovered/, 13. */
  private keepOdd(odd: Extract<SecretAnswer, { ok: false }>['odd'], base: Holder): Failed {
    if (odd.read !== undefined) this.run.scrubber?.addSecret(odd.read);
    const endpointId = (odd.whole === 'endpoint' ? this.req.endpointId : undefined) ?? odd.endpointId ?? this.req.endpointId ?? 'endpoint';
    const holder = { ...base, endpointId };
    const kept = this.held!.keep(odd.kept, odd.whole !== false);
    const path = 'path' in kept ? kept.path : null;
    const error = oddAnswerError(odd, holder, path !== null ? { path } : { cause: describeKeepFailure((kept as { error: unknown }).error, this.run.configDir) }, this.run.now());
    return { ok: false, error, holder, body: undefined, fp: null, delivered: [], kept: path };
  }

  /**
   * The server replayed an applied request without its secret. Said as what
   * this machine knows of it: superseded by a later change seen here (then
   * the hint's version is that one's), or applied by an earlier run here.
   */
  private withheld(holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, before: Applied | undefined, resent: boolean | 'maybe'): CliError {
    if (before && before.key !== this.req.idempotencyKey && typeof holder.version === 'number' && before.version > holder.version) return supersededError(this.req, null, before);
    const earlier = before?.key === this.req.idempotencyKey ? before : undefined;
    return secretWithheld(holder, answer, this.run.now(), resent === true || earlier !== undefined ? true : resent, earlier?.at);
  }

  private at(): string {
    return new Date(this.run.now()).toISOString();
  }

  private endpointLock: HeldLock | undefined;

  /** Takes the endpoint's delivery lock (waiting for another process's delivery); without one, delivery goes on as before. */
  private async holdEndpoint(endpointId: string): Promise<void> {
    const l = this.run.locking;
    if (!l || this.endpointLock) return;
    try {
      makeFolders(join(this.run.configDir, 'facts'), 0o700);
      this.endpointLock = await acquireLock(`${factsPath(this.run.configDir, this.req.scope, endpointId)}.lock`, {
        host: systemLockHost({ now: this.run.now, sleep: l.sleep, random: l.random }),
        signal: l.signal.aborted ? new AbortController().signal : l.signal,
        waitMs: DELIVERY_LOCK_WAIT_MS,
        subject: DELIVERY,
      });
    } catch {
      /* the secret is in hand: it is delivered rather than held back for a lock */
    }
  }

  private releaseEndpoint(): void {
    this.endpointLock?.release();
    this.endpointLock = undefined;
  }
}

/**
 * A later change of the endpoint went through chatctl here: what the request
 * left is marked superseded (never delivered) and the fact noted; the 13
 * that says so.
 */
function supersede(run: CustodyRun, req: RecordedRequest, facts: EndpointFacts | undefined, newer: Applied): CliError {
  const marked = markSuperseded(run.configDir, req);
  facts?.add({ f: 'superseded', at: new Date(run.now()).toISOString(), key: req.idempotencyKey, by: newer.version });
  return supersededError(req, marked[0] ?? null, newer);
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
  return { path, retire: () => removeLeft(run.configDir, req), keep: () => ({ path }), close: () => {} };
}

/** A delivery that threw instead of answering (a destination's own bug, a journal refused first): every destination lacks the secret. */
export function notAttempted(err: unknown): DeliveryResult {
  const reason = err instanceof Error ? err.message : String(err);
  return { delivered: [], failures: [{ to: 'every destination', reason: `not attempted: ${reason}` }] };
}

/** Whether a failed request is known not to have been applied (its record can go). */
export function knownNotApplied(err: unknown, resent: boolean): boolean {
  if (!isCliError(err)) return false;
  if (err.code === 'interrupted' && err.idempotencyKey === undefined && !resent) return true;
  const s = err.status;
  if (s !== null && s >= 400 && s < 500 && s !== 429 && err.code !== 'idempotency_conflict') return !(resent && (s === 401 || s === 403 || s === 404));
  return err.idempotencyKey === undefined && !resent;
}

/** Whether an earlier run left anything of this request (a record, a kept secret or answer). */
export const hasLeft = (run: CustodyRun, req: RecordedRequest) => findLeft(run.configDir, req) !== undefined;

/** Every destination holds this request's secret (a --from run read them back): what is left of it goes. */
export const retireLeft = (run: CustodyRun, req: RecordedRequest) => removeLeft(run.configDir, req);

/**
 * A request known done (every destination holds the secret with this
 * fingerprint) whose run was killed before it removed what it left: that
 * goes when it holds that very secret, and stays otherwise.
 */
export async function retireIfHeld(run: CustodyRun, req: RecordedRequest, fp: string, answerOf: ReadAnswer): Promise<void> {
  const left = findLeft(run.configDir, req);
  if (!left) return;
  const got = await gotFrom(left, answerOf);
  const secret = got === undefined ? undefined : 'kept' in got ? got.kept : got.answer.ok && typeof got.answer.body.data.secret === 'string' ? got.answer.body.data.secret : undefined;
  if (secret !== undefined && fingerprint(secret) === fp) removeLeft(run.configDir, req);
}

/** The endpoint's last applied change as this machine saw it: what a superseded item names, and what --every measures from. */
export function lastApplied(run: CustodyRun, endpointId: string): Applied | undefined {
  return EndpointFacts.read(run.configDir, run.scope, endpointId).lastApplied();
}

/**
 * The change that supersedes a secret known only by its endpoint, version and
 * fingerprint (an escrowed copy): a higher version applied here, or, with no
 * version to compare, a later change whose secret is another.
 */
export function supersedingChange(configDir: string, scope: string, secret: { endpointId: string; version: number | null; fingerprint: string }): Applied | undefined {
  const last = EndpointFacts.read(configDir, scope, secret.endpointId).lastApplied();
  if (!last) return undefined;
  if (secret.version !== null) return last.version > secret.version ? last : undefined;
  return last.fp !== undefined && last.fp !== secret.fingerprint ? last : undefined;
}

/**
 * An earlier run's change of this endpoint whose secret is kept here and not
 * delivered (its run was killed or a destination failed): what a 7 on a new
 * rotation means then, since that change is why the endpoint moved on.
 */
export function keptByEarlierRun(configDir: string, scope: string, endpointId: string): KeptChange | undefined {
  const facts = EndpointFacts.read(configDir, scope, endpointId);
  const last = facts.lastApplied();
  if (last?.op !== 'rotate' || facts.delivered(last.key)) return undefined;
  const left = findLeft(configDir, { op: 'rotate', scope, endpointId, idempotencyKey: last.key });
  if (!left) return undefined;
  const header = left.kind === 'record' ? left.record.header : undefined;
  return { endpointId, key: last.key, path: left.path, version: last.version, expectedVersion: header?.expectedVersion ?? last.ev, mode: header?.mode ?? last.mode };
}

/** Whether this machine's facts say the change with this key was delivered to every destination. */
export const deliveredHere = (run: CustodyRun, endpointId: string, key: string) => EndpointFacts.read(run.configDir, run.scope, endpointId).delivered(key);
