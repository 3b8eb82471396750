// The scheduler of `webhooks rotate --from` (docs/fleet.md), as a plain
// function of its dependencies: the items, the request engine (rotate: the
// same sendWithRetries a single rotate uses, the run's shared rate plugged in
// as its pace), the secret's destinations, the journal, a clock. Tests run it
// against the sandbox's request handling in virtual time; command.ts wires
// the real ones. Each item's life, from its journal records and its record in
// recovered/ to its result line, is item.ts's; a 429/503 pauses every worker
// (the pace, rate.ts) instead of one item alone. What an earlier run left in
// the journal decides what happens to an item first: actFor() in journal.ts.
import { setMaxListeners } from 'node:events';
import { CliError, EXIT, isCliError, localError } from '../../../errors/cli-error.js';
import type { Pace } from '../../../http/client.js';
import type { CustodyRun, InDelivery } from '../../../secret/custody.js';
import { actFor, type JournalSink, type Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';
import { RateController, type RateClock, type RateSettings } from './rate.js';
import { asCliError, failedResult, prepare, redeliver, sendItem, skippedResult, tidyDone, type ItemResult, type ItemRun, type ItemSecretsPort, type Outgoing, type RotateItem } from './item.js';

export type { ItemRequest, ItemResult, ItemSecretsPort, RotateItem } from './item.js';

export interface RunnerDeps {
  clock: RateClock;
  rotate: RotateItem;
  secrets: ItemSecretsPort;
  /** The run's custody: records under recovered/, the scope, the scrubber, how a re-run delivers. */
  custody: CustodyRun;
  journal: JournalSink;
  priors: ReadonlyMap<string, Prior>;
  /** The first journal run whose work is not known finished (journal.ts). */
  openFrom?: number;
  /** Items whose secret an earlier run kept: delivered before any request is sent. */
  first?: ManifestItem[];
  /** --every: whether an item is due; a result line (skipped, "due":false) when it is not. */
  notDue?(item: ManifestItem): Extract<ItemResult, { ok: true }> | undefined;
  newKey(): string;
  /** Called once per finished item, in completion order. */
  emit(result: ItemResult, item: ManifestItem): void;
  /** Human-mode messages (a secret kept in recovered/, a re-sent request). */
  notice?(text: string): void;
  progress?(p: Progress): void;
  /** Told when an item's delivery starts (where its copy is kept, if anywhere) and ends: what a forced exit must name. */
  delivering?(item: ManifestItem, state: InDelivery | undefined): void;
  /** --debug: the engine's trace for one item (each line names it). */
  trace?: ((item: ManifestItem) => (line: string) => void) | undefined;
}

export interface RunnerOptions {
  concurrency: number;
  /** --deadline, on the clock's time: no item starts after it. */
  deadlineAt?: number | undefined;
  /** Items in the manifest (from the first pass). */
  total: number;
  /** Aborted (Ctrl-C): no new item starts; those in flight finish. */
  signal: AbortSignal;
  rate?: RateSettings;
}

export interface Progress {
  total: number;
  ok: number;
  failed: number;
  skipped: number;
  requests: number;
  throttled: number;
  /** Requests per second the rate control allows now; null while unpaced. */
  rate: number | null;
  pausedMs: number;
}

export interface RunSummary {
  ok: number;
  failed: number;
  skipped: number;
  /** Of the skipped, those --every found not due. */
  notDue: number;
  /** Items never started (Ctrl-C, or a stop). */
  notStarted: number;
  interrupted: boolean;
  /** Why the run stopped starting items early, other than Ctrl-C. */
  stopped: CliError | null;
  requests: number;
  throttled: number;
  elapsedMs: number;
}

/**
 * The scheduler: N workers, each with one request in flight and, meanwhile,
 * the next item's "send" record going to disk. Each item's life is item.ts's.
 */
export async function runBulk(items: Iterable<ManifestItem>, opts: RunnerOptions, deps: RunnerDeps): Promise<RunSummary> {
  setMaxListeners(0, opts.signal); // every worker's wait for a turn listens on it: more than Node's default 10
  const fleet = new Fleet(items, opts, deps);
  await fleet.deliverFirst();
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, () => fleet.worker()));
  return fleet.summary();
}

class Fleet implements ItemRun {
  readonly rate: RateController;
  readonly started: number;
  readonly iterator: Iterator<ManifestItem>;
  readonly counts = { ok: 0, failed: 0, skipped: 0, notDue: 0, requests: 0 };
  /** Lines of the items delivered first (deliverFirst): the manifest's pass leaves them. */
  readonly firstDone = new Set<number>();
  stopped: CliError | null = null;
  /** Items whose request was abandoned on a signal. */
  abandoned = 0;
  /** Result lines waiting for their "ok" record to reach the disk. */
  readonly lines = new Set<Promise<void>>();
  readonly rotate: RotateItem;
  readonly secrets: ItemSecretsPort;
  readonly custody: CustodyRun;
  readonly pace: Pace;

  constructor(
    items: Iterable<ManifestItem>,
    readonly opts: RunnerOptions,
    readonly deps: RunnerDeps,
  ) {
    this.rate = new RateController(deps.clock, opts.rate);
    this.started = deps.clock.now();
    this.iterator = items[Symbol.iterator]();
    this.rotate = deps.rotate;
    this.secrets = deps.secrets;
    this.custody = deps.custody;
    this.pace = this.sharedPace();
  }

  now = () => this.deps.clock.now();
  notice = (text: string) => this.deps.notice?.(text);
  delivering = (item: ManifestItem, state: InDelivery | undefined) => this.deps.delivering?.(item, state);

  stop(err: CliError): void {
    this.stopped ??= err;
  }

  /** The next item of the manifest, unless the run was interrupted, stopped or is past its deadline. */
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

  succeed = (item: ManifestItem, result: Extract<ItemResult, { ok: true }>) => {
    if (result.due === false) this.counts.notDue += 1;
    if (result.skipped) this.counts.skipped += 1;
    else this.counts.ok += 1;
    this.deps.emit(result, item);
    this.progress();
  };

  fail = (item: ManifestItem, err: CliError, key?: string) => {
    this.counts.failed += 1;
    // A request abandoned on a signal (SIGTERM's grace over): the run ends as interrupted, not as a failed item.
    if (err.code === 'interrupted') this.abandoned += 1;
    this.deps.emit(failedResult(item, err, key), item);
    this.progress();
  };

  pending = (line: Promise<void>) => {
    this.lines.add(line);
    void line.finally(() => this.lines.delete(line));
  };

  /** Records an outcome; a journal that cannot be written stops the run (what is in flight still finishes). */
  record = async (r: Parameters<JournalSink['append']>[0]): Promise<boolean> => {
    try {
      await this.deps.journal.append(r);
      return true;
    } catch (err) {
      this.stop(isCliError(err) ? err : new CliError('internal_error', `cannot write the journal: ${String(err)}`, EXIT.unexpected));
      return false;
    }
  };

  /**
   * The next item that needs a request, its record written and its "send"
   * on its way to the disk. Items an earlier run finished (skipped) or
   * applied (its secret delivered again) are settled on the way, with no
   * request; so is an item whose earlier answer is on disk.
   */
  async takeNext(): Promise<Outgoing | undefined> {
    for (let item = this.next(); item; item = this.next()) {
      try {
        // The journal's rules (journal.ts actFor): an item is its endpoint,
        // expected version and mode; what could not go on was refused before
        // the run started.
        const act = actFor(this.deps.priors, item, this.deps.openFrom);
        if (act.act === 'redeliver' && this.firstDone.has(item.line)) continue;
        if (act.act === 'skip') {
          await tidyDone(this, item, act.prior);
          this.succeed(item, skippedResult(item, act.prior, act.prior.delivery ?? []));
          continue;
        }
        if (act.act === 'redeliver') {
          await redeliver(this, item, act.prior);
          continue;
        }
        const notDue = act.act === 'send' ? this.deps.notDue?.(item) : undefined;
        if (notDue) {
          this.succeed(item, notDue);
          continue;
        }
        // An earlier request whose outcome is unknown is sent again exactly as
        // it was, with its key: the server then either applies it now or says
        // it already did. Anything else gets a new key.
        const resent = act.act === 'resend';
        const out = await prepare(this, item, resent ? act.prior.key : this.deps.newKey(), resent);
        if (out) return out;
      } catch (err) {
        this.fail(item, asCliError(err));
      }
    }
    return undefined;
  }

  /**
   * Before anything is sent: every secret an earlier run of this journal
   * kept (its item's act is "redeliver") goes to this run's destinations,
   * one at a time, unless the facts show it superseded.
   */
  async deliverFirst(): Promise<void> {
    for (const item of this.deps.first ?? []) {
      if (this.opts.signal.aborted || this.stopped) return;
      const act = actFor(this.deps.priors, item, this.deps.openFrom);
      if (act.act !== 'redeliver') continue;
      this.firstDone.add(item.line);
      try {
        await redeliver(this, item, act.prior);
      } catch (err) {
        this.fail(item, asCliError(err));
      }
    }
  }

  /** The run's shared rate, as the engine's pace: a wait longer than chatctl waits stops the run. */
  sharedPace(): Pace {
    return {
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

  /** One item's request and outcome. `onSent` is called once its first request is on its way. */
  async send(out: Outgoing, onSent: () => void): Promise<void> {
    // Taken before the run stopped, not sent: it stays unstarted (a re-run sends its recorded key).
    // Nothing is sent before its key is on disk.
    if (this.stopped || this.opts.signal.aborted || !(await out.journaled)) {
      out.custody?.leave();
      return;
    }
    await sendItem(this, out, {
      pace: this.pace,
      trace: this.deps.trace?.(out.item),
      onAttempt: (attempt) => {
        this.counts.requests += 1;
        if (attempt === 1) onSent();
      },
    });
  }

  // Each worker has one request in flight and, meanwhile, the next item's
  // "send" record going to disk: the disk and the network work side by side.
  async worker(): Promise<void> {
    for (let out = await this.takeNext(); out; ) {
      let upcoming: Promise<Outgoing | undefined> | undefined;
      try {
        await this.send(out, () => void (upcoming ??= this.takeNext()));
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
      ok: counts.ok,
      failed: counts.failed,
      skipped: counts.skipped,
      notDue: counts.notDue,
      notStarted: Math.max(0, opts.total - done),
      interrupted: opts.signal.aborted && (done < opts.total || this.abandoned > 0),
      stopped: this.stopped,
      requests: counts.requests,
      throttled: this.rate.snapshot().throttles,
      elapsedMs: this.now() - this.started,
    };
  }
}
