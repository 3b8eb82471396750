// The run of a `--from` manifest (docs/fleet.md): N workers sharing one rate,
// each item through the secret's custody (secret/custody.ts) as a single
// rotate: "send" and its record in recovered/ before its request, "applied"
// before any destination, "ok" (or "fail", 13, kept) before its result line.
import { setMaxListeners } from 'node:events';
import type { SecretAnswer } from '../../../api/schemas.js';
import { holdsNoSecret, recordedSecretAnswer } from '../../../http/api-client.js';
import { CliError, EXIT, isCliError, localError } from '../../../errors/cli-error.js';
import { NotSent, type CallHooks, type Pace } from '../../../http/client.js';
import { noteConflict } from '../../../secret/facts.js';
import { Custody, deliveredHere, keptByEarlierRun, hasLeft, knownNotApplied, lastApplied, notAttempted, retireLeft, retireIfHeld } from '../../../secret/custody.js';
import type { Accepted, CustodyRun, DeliveryResult, Got, InDelivery, Settled } from '../../../secret/custody.js';
import { keptByEarlierRunError, notConfirmed, okNotRecorded } from '../../../secret/custody.js';
import type { RecordedRequest } from '../../../secret/record.js';
import { actFor, type DeliveryRecord, type JournalRecord, type JournalSink, type Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';
import { RateController, type RateClock, type RateSettings } from './rate.js';

export type ItemRequest = Pick<ManifestItem, 'endpointId' | 'expectedVersion' | 'mode'>;

export interface ItemSecretsPort {
  /** Every destination of this item in turn; `skipHeld`: a file that already holds exactly this secret counts as delivered. */
  deliver(item: ManifestItem, secret: string, opts?: { skipHeld?: boolean }): Promise<DeliveryResult>;
  /** Does every destination of this item already hold the secret with this fingerprint (read back, never blocking)? */
  holds(item: ManifestItem, fp: string): boolean;
  targetsFor(item: ManifestItem): string[];
}

/** skipped: nothing was sent (done earlier, or not due); idempotencyKey: the change may have been applied, and a later run must reuse it. */
export type ItemResult = Done | { endpointId: string; ok: false; error: ItemError; exitCode: number; idempotencyKey?: string };
type Done = { endpointId: string; ok: true; skipped?: true; due?: false; lastRotatedAt?: string; version?: number; fingerprint: string; delivery: DeliveryRecord[]; requestId: string | null };
/** hint: the next step, when there is one (exit 13: the re-run that delivers the kept secret). */
type ItemError = { code: string; message: string; requestId: string | null; status: number | null; details: unknown; hint?: string };

export interface RunnerDeps {
  clock: RateClock;
  /** The item's request through the one request engine (http/client.ts); rejects with a CliError (NotSent when nothing went out). */
  rotate(request: ItemRequest, idempotencyKey: string, hooks: CallHooks): Promise<SecretAnswer>;
  secrets: ItemSecretsPort;
  custody: CustodyRun;
  /** Without --journal, none: nothing is recorded. */
  journal?: JournalSink | undefined;
  priors: ReadonlyMap<string, Prior>;
  /** The first journal run whose work is not known finished (journal.ts continuing). */
  openFrom?: number;
  /** Items whose secret an earlier run kept (journal.ts actFor: redeliver): delivered before any request is sent. */
  first?: { item: ManifestItem; prior: Prior }[];
  /** --every: a result line (skipped, "due":false) for an item that is not due. */
  notDue?(item: ManifestItem): Done | undefined;
  newKey(): string;
  emit(result: ItemResult, item: ManifestItem): void;
  notice?(text: string): void;
  progress?(p: Progress): void;
  /** Told when an item's delivery starts and ends: what a forced exit must name. */
  delivering?(item: ManifestItem, state: InDelivery | undefined): void;
  trace?: ((item: ManifestItem) => (line: string) => void) | undefined;
}

/** deadlineAt: --deadline on the clock's time; signal: aborted (Ctrl-C), no new item starts, those in flight finish. */
export type RunnerOptions = { concurrency: number; deadlineAt?: number | undefined; total: number; signal: AbortSignal; rate?: RateSettings };

/** rate: requests per second the rate control allows now; null while unpaced. */
export type Progress = { total: number; ok: number; failed: number; skipped: number; requests: number; throttled: number; rate: number | null; pausedMs: number };

/** notDue: of the skipped, those --every found not due; stopped: why the run stopped starting items early, other than Ctrl-C. */
export type RunSummary = Record<'ok' | 'failed' | 'skipped' | 'notDue' | 'notStarted' | 'requests' | 'throttled' | 'elapsedMs', number> & { interrupted: boolean; stopped: CliError | null };

export async function runBulk(items: Iterable<ManifestItem>, opts: RunnerOptions, deps: RunnerDeps): Promise<RunSummary> {
  setMaxListeners(0, opts.signal); // every worker's wait for a turn listens on it: more than Node's default 10
  const fleet = new Fleet(items, opts, deps);
  await fleet.deliverFirst();
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, () => fleet.worker()));
  return fleet.summary();
}

const asCliError = (err: unknown) => (isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));

class Fleet {
  readonly rate: RateController;
  readonly started: number;
  readonly iterator: Iterator<ManifestItem>;
  readonly counts = { ok: 0, failed: 0, skipped: 0, notDue: 0, requests: 0 };
  /** Lines of the items delivered first (deliverFirst): the manifest's pass leaves them. */
  readonly firstDone = new Set<number>();
  stopped: CliError | null = null;
  abandoned = 0;
  readonly lines = new Set<Promise<void>>();
  readonly pace: Pace;

  constructor(
    items: Iterable<ManifestItem>,
    readonly opts: RunnerOptions,
    readonly deps: RunnerDeps,
  ) {
    this.rate = new RateController(deps.clock, opts.rate);
    this.started = deps.clock.now();
    this.iterator = items[Symbol.iterator]();
    // The run's shared rate as the engine's pace: a wait longer than chatctl waits stops the run.
    this.pace = {
      acquire: (signal) => this.rate.acquire(signal),
      refused: (sentAt, waitMs) => {
        this.rate.refused(sentAt, waitMs);
        this.progress();
      },
      succeeded: () => this.rate.succeeded(),
      resumesAt: () => this.rate.snapshot().pausedUntil,
      tooLong: (err) => this.stop(new CliError(err.code, `${err.message}: no further items were started`, err.exitCode, { status: err.status, requestId: err.requestId, details: err.details })),
    };
  }

  now = () => this.deps.clock.now();

  stop(err: CliError): void {
    this.stopped ??= err;
  }

  next(): ManifestItem | undefined {
    if (this.opts.signal.aborted || this.stopped) return undefined;
    if (this.opts.deadlineAt !== undefined && this.now() >= this.opts.deadlineAt) {
      this.stop(localError('timeout', "the command's deadline was reached", { hint: 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE); a re-run with --journal continues' }));
      return undefined;
    }
    try {
      const r = this.iterator.next();
      return r.done ? undefined : r.value;
    } catch (err) {
      this.stop(isCliError(err) ? err : new CliError('internal_error', String(err), EXIT.unexpected));
      return undefined;
    }
  }

  progress(): void {
    if (!this.deps.progress) return;
    const snap = this.rate.snapshot();
    this.deps.progress({ total: this.opts.total, ...this.counts, throttled: snap.throttles, rate: snap.rate, pausedMs: Math.max(0, snap.pausedUntil - this.now()) });
  }

  succeed(item: ManifestItem, result: Done): void {
    if (result.due === false) this.counts.notDue += 1;
    if (result.skipped) this.counts.skipped += 1;
    else this.counts.ok += 1;
    this.deps.emit(result, item);
    this.progress();
  }

  fail(item: ManifestItem, err: CliError, key?: string): void {
    this.counts.failed += 1;
    // A request abandoned on a signal (SIGTERM's grace over): the run ends as interrupted, not as a failed item.
    if (err.code === 'interrupted') this.abandoned += 1;
    const error = { code: err.code, message: err.message, requestId: err.requestId, status: err.status, details: err.details, ...(err.hint ? { hint: err.hint } : {}) };
    this.deps.emit({ endpointId: item.endpointId, ok: false, error, exitCode: err.exitCode, ...(key !== undefined ? { idempotencyKey: key } : {}) }, item);
    this.progress();
  }

  /** Records an outcome; false when the journal cannot be written, which stops the run (what is in flight finishes). */
  async record(r: JournalRecord): Promise<boolean> {
    try {
      await this.deps.journal?.append(r);
      return true;
    } catch (err) {
      this.stop(isCliError(err) ? err : new CliError('internal_error', `cannot write the journal: ${String(err)}`, EXIT.unexpected));
      return false;
    }
  }

  /** The next item that needs a request, prepared; those that need none (done, applied, not due, answered) are settled on the way. */
  async takeNext(): Promise<Outgoing | undefined> {
    for (let item = this.next(); item; item = this.next()) {
      try {
        // What could not go on was refused before the run started (journal.ts actFor).
        const act = actFor(this.deps.priors, item, this.deps.openFrom);
        if (act.act === 'skip') {
          // A run killed between "ok" and retiring the record left it: removed when it holds that very secret.
          if (act.prior.fp) await retireIfHeld(this.deps.custody, requestOf(this, item, act.prior.key), act.prior.fp, recordedSecretAnswer(item.endpointId));
          this.succeed(item, skippedResult(item, act.prior, act.prior.delivery ?? []));
        } else if (act.act === 'redeliver') {
          if (!this.firstDone.has(item.line)) await redeliver(this, item, act.prior);
        } else {
          const notDue = act.act === 'send' ? this.deps.notDue?.(item) : undefined;
          if (notDue) this.succeed(item, notDue);
          // An earlier request whose outcome is unknown goes again exactly as it was, with its key.
          const out = notDue ? undefined : await prepare(this, item, act.act === 'resend' ? act.prior.key : this.deps.newKey(), act.act === 'resend');
          if (out) return out;
        }
      } catch (err) {
        this.fail(item, asCliError(err));
      }
    }
    return undefined;
  }

  async deliverFirst(): Promise<void> {
    for (const { item, prior } of this.deps.first ?? []) {
      if (this.opts.signal.aborted || this.stopped) return;
      this.firstDone.add(item.line);
      try {
        await redeliver(this, item, prior);
      } catch (err) {
        this.fail(item, asCliError(err));
      }
    }
  }

  async worker(): Promise<void> {
    for (let out = await this.takeNext(); out; ) {
      let upcoming: Promise<Outgoing | undefined> | undefined;
      try {
        // Taken before the run stopped, not sent: it stays unstarted. Nothing is sent before its key is on disk.
        if (this.stopped || this.opts.signal.aborted || !(await out.journaled)) out.custody?.leave();
        else
          await sendItem(this, out, {
            pace: this.pace,
            trace: this.deps.trace?.(out.item),
            onAttempt: (attempt) => {
              this.counts.requests += 1;
              // Its first request is on its way: the next item is prepared meanwhile.
              if (attempt === 1) upcoming ??= this.takeNext();
            },
          });
      } catch (err) {
        // Nothing above should throw; if it does, the item fails and the run goes on.
        this.fail(out.item, asCliError(err));
      }
      out = await (upcoming ?? this.takeNext());
    }
  }

  async summary(): Promise<RunSummary> {
    await Promise.all(this.lines);
    const { counts, opts } = this;
    const done = counts.ok + counts.failed + counts.skipped;
    return {
      ...counts,
      notStarted: Math.max(0, opts.total - done),
      interrupted: opts.signal.aborted && (done < opts.total || this.abandoned > 0),
      stopped: this.stopped,
      throttled: this.rate.snapshot().throttles,
      elapsedMs: this.now() - this.started,
    };
  }
}

const requestOf = (run: Fleet, item: ManifestItem, key: string): RecordedRequest => {
  const { endpointId, mode, expectedVersion } = item;
  return { op: 'rotate', scope: run.deps.custody.scope, endpointId, idempotencyKey: key, mode, expectedVersion };
};

function skippedResult(item: ManifestItem, prior: Prior, delivery: DeliveryRecord[]): Done {
  const version = prior.version !== null ? { version: prior.version } : {};
  return { endpointId: item.endpointId, ok: true, skipped: true, ...version, fingerprint: prior.fp ?? '', delivery, requestId: prior.requestId };
}

/** An item ready to be sent: its "send" on its way to the disk (false if the journal failed), and a re-sent key's custody. */
type Outgoing = { item: ManifestItem; key: string; req: RecordedRequest; custody: Custody | undefined; journaled: Promise<boolean> };

/** Before an item's request: its "send", and for a re-sent key its record (an earlier answer to it is delivered instead). */
async function prepare(run: Fleet, item: ManifestItem, key: string, resent: boolean): Promise<Outgoing | undefined> {
  const req = requestOf(run, item, key);
  let custody: Custody | undefined;
  if (resent) {
    custody = await begin(run, item, req);
    if (!custody) return undefined;
    custody.resent = true;
    run.deps.notice?.(`${item.endpointId}: re-sending the earlier run's request (expected version ${item.expectedVersion}, mode ${item.mode}) with its Idempotency-Key ${key}`);
  }
  const journaled = run.record({ t: 'send', id: item.endpointId, key, ev: item.expectedVersion, mode: item.mode });
  return { item, key, req, custody, journaled };
}

/** Custody's begin: a superseded item fails, an earlier answer is delivered (both: undefined, nothing to send); else its record is written. */
async function begin(run: Fleet, item: ManifestItem, req: RecordedRequest, prior?: Prior): Promise<Custody | undefined> {
  const custody = await Custody.begin(run.deps.custody, req, recordedSecretAnswer(item.endpointId));
  if (custody.next === 'superseded') {
    run.fail(item, custody.error!, req.idempotencyKey);
    return undefined;
  }
  if (custody.next === 'deliver') {
    run.deps.notice?.(
      prior
        ? `${item.endpointId}: delivering again the secret an earlier run kept (${prior.fp ?? `Idempotency-Key ${prior.key}`})`
        : `${item.endpointId}: an earlier run kept the answer to its request (Idempotency-Key ${req.idempotencyKey}); delivering its secret without sending again`,
    );
    await settleItem(run, item, custody, custody.got!, prior);
    return undefined;
  }
  return custody;
}

async function sendItem(run: Fleet, out: Outgoing, hooks: CallHooks): Promise<void> {
  const { item, key } = out;
  let custody = out.custody;
  if (!custody) {
    try {
      custody = await begin(run, item, out.req);
    } catch (err) {
      const e = asCliError(err);
      await run.record({ t: 'fail', id: item.endpointId, key, applied: false, exitCode: e.exitCode, code: e.code });
      return run.fail(item, e);
    }
    if (!custody) return;
  }
  let answer: SecretAnswer;
  try {
    answer = await run.deps.rotate({ endpointId: item.endpointId, expectedVersion: item.expectedVersion, mode: item.mode }, key, { ...hooks, tap: custody.tap, mayHaveApplied: custody.resent });
  } catch (err) {
    custody.failed(err, holdsNoSecret.has(err as object));
    // Ctrl-C before it was sent: not started (a re-run sends its recorded key, harmlessly).
    if (err instanceof NotSent) return;
    const e = asCliError(err);
    noteConflict(run.deps.custody, item.endpointId, e, 'rotate --from'); // a 7 naming the current version: into the facts
    // A refusal (a 4xx other than 429) is the server's answer to this very key,
    // so the journal knows it was not applied (a re-sent key's 401/403/404 excepted).
    const notApplied = knownNotApplied(e, custody.resent);
    await run.record({ t: 'fail', id: item.endpointId, key, applied: notApplied ? false : null, exitCode: e.exitCode, code: scrubbed(run, e.code) });
    // Moved on by an earlier run here whose secret is kept, not delivered: that 13 is the outcome, not a 7.
    const kept = e.exitCode === EXIT.versionConflict ? keptByEarlierRun(run.deps.custody.configDir, run.deps.custody.scope, item.endpointId) : undefined;
    if (kept) return run.fail(item, keptByEarlierRunError(kept, e), kept.key);
    return run.fail(item, e, notApplied ? undefined : key);
  }
  await settleItem(run, item, custody, { answer });
}

/** The answer (or what an earlier run kept) through custody: accepted, delivered, and its line once "ok" is on disk; else 13, kept. */
async function settleItem(run: Fleet, item: ManifestItem, custody: Custody, got: Got, prior?: Prior): Promise<void> {
  const key = custody.req.idempotencyKey;
  const resent = custody.next === 'deliver' || custody.resent;
  const accepted = await custody.accept(got, { resent, version: prior?.version, serverRequestId: prior?.requestId });
  const outcome = accepted.ok ? await deliverItem(run, item, custody, accepted, resent, prior) : accepted.outcome;
  // Its patterns are dropped (thousands of items keep the set small); it is still never shown as it is.
  const secret = 'kept' in got ? got.kept : got.answer.ok && typeof got.answer.body.data.secret === 'string' ? got.answer.body.data.secret : undefined;
  if (secret) run.deps.custody.scrubber?.retireSecret?.(secret);
  if (!outcome.ok) {
    const whole = outcome.fp === null && outcome.kept ? { whole: true } : {};
    await run.record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered', recovered: outcome.kept, ...whole });
    if (outcome.kept)
      run.deps.notice?.(`${item.endpointId}: ${outcome.fp ? `the signing secret (${outcome.fp})` : 'the whole answer that carries its signing secret'} was kept in ${outcome.kept} (mode 0600)`);
    run.fail(item, outcome.error, key);
    // Only now: a second signal while "fail" was written still named its record.
    run.deps.delivering?.(item, undefined);
    return;
  }
  const version = typeof outcome.holder.version === 'number' ? outcome.holder.version : null;
  // The server's request id goes into the journal scrubbed, and blanked if it echoes this secret.
  const rawId = outcome.holder.serverRequestId ?? null;
  const clean = rawId === null ? null : scrubbed(run, rawId);
  const requestId = clean !== null && secret && clean.includes(secret) ? null : clean;
  const line: ItemResult = { endpointId: item.endpointId, ok: true, ...(version !== null ? { version } : {}), fingerprint: outcome.fp, delivery: outcome.delivered, requestId };
  // The worker moves on at once; the line follows when "ok" is on disk, so a
  // line on stdout always means "done, and known to be done by a re-run".
  const written = run
    .record({ t: 'ok', id: item.endpointId, key, version, fp: outcome.fp, delivery: outcome.delivered, requestId: requestId ?? '', at: new Date(run.now()).toISOString() })
    .then((recorded) => {
      if (recorded) {
        custody.retire();
        return run.succeed(item, line);
      }
      // "ok" is not on disk (a full disk): the line may not say done; the record stays for a re-run.
      run.fail(item, okNotRecorded(item.endpointId, { fp: outcome.fp, version, delivered: outcome.delivered, held: custody.heldAt ?? '' }), key);
    });
  run.lines.add(written);
  void written.finally(() => run.lines.delete(written));
}

/** "applied" durable before any destination (a run killed while delivering leaves the fingerprint), then every destination, then custody's finish. */
async function deliverItem(run: Fleet, item: ManifestItem, custody: Custody, accepted: Extract<Accepted, { ok: true }>, resent: boolean, prior?: Prior): Promise<Settled> {
  run.deps.delivering?.(item, accepted.delivery);
  const version = typeof accepted.holder.version === 'number' ? accepted.holder.version : (prior?.version ?? null);
  const applied = { t: 'applied', id: item.endpointId, key: custody.req.idempotencyKey, version, fp: accepted.delivery.fp, recovered: custody.heldAt, at: new Date(run.now()).toISOString() } as const;
  const result = (await run.record(applied))
    ? await run.deps.secrets.deliver(item, accepted.secret, { skipHeld: resent }).catch(notAttempted)
    : notAttempted(new Error('the journal could not record it (the run stops)'));
  const outcome = await custody.finish(accepted, result);
  if (outcome.ok) run.deps.delivering?.(item, undefined);
  return outcome;
}

const scrubbed = (run: Fleet, text: string) => run.deps.custody.scrubber?.scrub?.(text) ?? text;

/** Applied by an earlier run, delivery not confirmed: never sent again; done, delivered from recovered/, or 13 with the fingerprint. */
async function redeliver(run: Fleet, item: ManifestItem, prior: Prior): Promise<void> {
  const req = requestOf(run, item, prior.key);
  // Read back, or (an exec: destination cannot be) this machine's facts say its delivery completed.
  if (prior.fp && (run.deps.secrets.holds(item, prior.fp) || deliveredHere(run.deps.custody, item.endpointId, prior.key))) {
    const delivery = run.deps.secrets.targetsFor(item).map((to) => ({ to, fingerprint: prior.fp! }));
    if (await run.record({ t: 'ok', id: item.endpointId, key: prior.key, version: prior.version, fp: prior.fp, delivery, requestId: prior.requestId ?? '' })) retireLeft(run.deps.custody, req);
    return run.succeed(item, skippedResult(item, prior, delivery));
  }
  if (hasLeft(run.deps.custody, req)) {
    const custody = await begin(run, item, req, prior);
    if (!custody) return;
    // A record without a usable answer: nothing to deliver from it.
    custody.leave();
  }
  run.fail(item, notConfirmed(item.endpointId, prior, lastApplied(run.deps.custody, item.endpointId), run.now()), prior.key);
}
