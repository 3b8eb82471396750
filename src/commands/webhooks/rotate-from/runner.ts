// The scheduler of `webhooks rotate --from` (docs/fleet.md), as a plain
// function of its dependencies: the items, the request engine (rotate: the
// same sendWithRetries a single rotate uses, the run's shared rate plugged in
// as its pace), the secret's destinations, the journal, a clock. Tests run it
// against the sandbox's request handling in virtual time; command.ts wires
// the real ones.
//
// Each item, in one of N workers:
//   1. "send" in the journal with its Idempotency-Key (written while the
//      worker's previous request is on the wire); nothing is sent before
//      that record is on disk;
//   2. its request, through the engine: retries, Retry-After, --deadline and
//      --debug as for a single rotate; a 429/503 pauses every worker (the
//      pace, rate.ts) instead of this item alone;
//   3. on success, the secret in custody (secret/custody.ts, as a single
//      rotate): a copy kept, "applied" in the journal naming it, every
//      destination, then "ok" (or "fail" with exit 13, the copy kept);
//   4. its result line, once its outcome is on disk.
// What an earlier run left in the journal decides what happens to an item
// before any of that: actFor() in journal.ts, and takeNext() below.
import { setMaxListeners } from 'node:events';
import type { SecretAnswer } from '../../../api/schemas.js';
import { CliError, isCliError, localError } from '../../../errors/cli-error.js';
import { EXIT } from '../../../errors/exit-codes.js';
import { NotSent, type CallHooks, type Pace } from '../../../http/client.js';
import { deliverInCustody, keepOddAnswer, secretWithheld, type CustodyDeps, type Holder, type InDelivery } from '../../../secret/custody.js';
import { exit13Details, newSecretHint } from '../../../secret/new-secret-hint.js';
import type { DeliveryResult } from '../../../secret/custody.js';
import { fingerprint } from '../../../secret/fingerprint.js';
import { actFor, type DeliveryRecord, type JournalSink, type Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';
import { RateController, type RateClock, type RateSettings } from './rate.js';

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
  /** The copy an earlier run kept of this item's secret (named by its key, or the path it journaled), if it is still there. */
  readKept(item: ManifestItem, key: string, journaled: string | null): { bytes: Buffer; discard(): void } | undefined;
  /** The destinations of this item, as its result line names them. */
  targetsFor(item: ManifestItem): string[];
}

export type ItemResult =
  | {
      endpointId: string;
      ok: true;
      /** Done by an earlier run (journal): nothing was sent this time. */
      skipped?: true;
      version?: number;
      fingerprint: string;
      delivery: DeliveryRecord[];
      requestId: string | null;
    }
  | {
      endpointId: string;
      ok: false;
      error: { code: string; message: string; requestId: string | null; status: number | null; details: unknown };
      exitCode: number;
      /** When the change may have been applied: the key a later run must reuse. */
      idempotencyKey?: string;
    };

export interface RunnerDeps {
  clock: RateClock;
  rotate: RotateItem;
  secrets: ItemSecretsPort;
  /** Where kept copies go (recovered/ under the config folder). */
  custody: CustodyDeps;
  journal: JournalSink;
  priors: ReadonlyMap<string, Prior>;
  newKey(): string;
  /** Called once per finished item, in completion order. */
  emit(result: ItemResult, item: ManifestItem): void;
  /** Human-mode messages (a secret kept in recovered/, a re-sent request). */
  notice?(text: string): void;
  /** Told of every secret in hand, and when it is no longer needed. */
  scrubber?: { addSecret(value: string): void; retireSecret?(value: string): void };
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
  /** Items never started (Ctrl-C, or a stop). */
  notStarted: number;
  interrupted: boolean;
  /** Why the run stopped starting items early, other than Ctrl-C. */
  stopped: CliError | null;
  requests: number;
  throttled: number;
  elapsedMs: number;
}

const skippedResult = (item: ManifestItem, prior: Prior, delivery: DeliveryRecord[]): Extract<ItemResult, { ok: true }> => ({
  endpointId: item.endpointId,
  ok: true,
  skipped: true,
  ...(prior.version !== null ? { version: prior.version } : {}),
  fingerprint: prior.fp ?? '',
  delivery,
  requestId: prior.requestId,
});

const errorJson = (e: CliError) => ({ code: e.code, message: e.message, requestId: e.requestId, status: e.status, details: e.details });

export async function runBulk(items: Iterable<ManifestItem>, opts: RunnerOptions, deps: RunnerDeps): Promise<RunSummary> {
  const { clock } = deps;
  const rate = new RateController(clock, opts.rate);
  const started = clock.now();
  const iterator = items[Symbol.iterator]();
  // Every worker's wait for a turn listens on the run's signal: more than
  // Node's default 10 with --concurrency over 10, and Node would warn on stderr.
  setMaxListeners(0, opts.signal);
  const counts = { ok: 0, failed: 0, skipped: 0, requests: 0 };
  let stopped: CliError | null = null;
  /** Result lines waiting for their "ok" record to reach the disk. */
  const lines = new Set<Promise<void>>();

  const stop = (err: CliError) => {
    stopped ??= err;
  };

  const next = (): ManifestItem | undefined => {
    if (opts.signal.aborted || stopped) return undefined;
    if (opts.deadlineAt !== undefined && clock.now() >= opts.deadlineAt) {
      stop(localError('timeout', "the command's deadline was reached", { hint: 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE); a re-run with --journal continues' }));
      return undefined;
    }
    try {
      const r = iterator.next();
      return r.done ? undefined : r.value;
    } catch (err) {
      stop(isCliError(err) ? err : new CliError('internal_error', String(err), EXIT.unexpected));
      return undefined;
    }
  };

  const progress = () => {
    if (!deps.progress) return;
    const snap = rate.snapshot();
    deps.progress({ total: opts.total, ...counts, throttled: snap.throttles, rate: snap.rate, pausedMs: Math.max(0, snap.pausedUntil - clock.now()) });
  };

  const succeed = (item: ManifestItem, result: Extract<ItemResult, { ok: true }>) => {
    if (result.skipped) counts.skipped += 1;
    else counts.ok += 1;
    deps.emit(result, item);
    progress();
  };

  const fail = (item: ManifestItem, err: CliError, key?: string) => {
    counts.failed += 1;
    const result: ItemResult = { endpointId: item.endpointId, ok: false, error: errorJson(err), exitCode: err.exitCode };
    if (key !== undefined) result.idempotencyKey = key;
    deps.emit(result, item);
    progress();
  };

  /** Records an outcome; a journal that cannot be written stops the run (what is in flight still finishes). */
  const record = async (r: Parameters<JournalSink['append']>[0]): Promise<boolean> => {
    try {
      await deps.journal.append(r);
      return true;
    } catch (err) {
      stop(isCliError(err) ? err : new CliError('internal_error', `cannot write the journal: ${String(err)}`, EXIT.unexpected));
      return false;
    }
  };

  /** Delivers an item's secret in custody; its "ok" record and result line follow once every destination holds it. */
  const custody = async (item: ManifestItem, holder: Holder & { idempotencyKey: string }, secret: string, answeredId: string | null, opts: { skipHeld?: boolean } = {}) => {
    const key = holder.idempotencyKey;
    // The server's request id goes into the journal: one that echoes the secret is not kept.
    const requestId = answeredId?.includes(secret) ? null : answeredId;
    const version = holder.version ?? null;
    deps.scrubber?.addSecret(secret);
    const outcome = await deliverInCustody(secret, holder, () => deps.secrets.deliver(item, secret, opts), deps.custody, {
      // Before delivery, durable: a run killed while delivering leaves the
      // fingerprint and the copy's place behind, so the next run delivers
      // from the copy rather than guess. If it cannot be written, nothing is
      // delivered: a re-run would not know to.
      beforeDelivery: async (copy, fp) => {
        if (!(await record({ t: 'applied', id: item.endpointId, key, version, fp: fp(), ...(copy ? { recovered: copy } : {}) }))) throw new Error('the journal could not record it (the run stops)');
      },
      delivering: (state) => deps.delivering?.(item, state),
      // Removed once "ok" is on disk (below): killed before, the re-run delivers from it.
      keepCopyUntilRecorded: true,
    });
    // Its patterns are dropped (thousands of items keep the set small); it is still never shown as it is.
    deps.scrubber?.retireSecret?.(secret);
    if (!outcome.ok) {
      await record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered', recovered: outcome.kept });
      if (outcome.kept) deps.notice?.(`${item.endpointId}: the signing secret (${outcome.fp}) was kept in ${outcome.kept} (mode 0600)`);
      fail(item, outcome.error, key);
      // Custody left the item's state in place after the failure: a second signal while "fail" was written still named its copy.
      deps.delivering?.(item, undefined);
      return;
    }
    // The worker moves on to its next item at once; the result line follows
    // when "ok" is on disk, so a line on stdout always means "done, and
    // known to be done by a re-run".
    const fp = outcome.fp;
    const line: ItemResult = { endpointId: item.endpointId, ok: true, ...(version !== null ? { version } : {}), fingerprint: fp, delivery: outcome.delivered, requestId };
    // (If "ok" cannot be written the run stops, and the copy stays: a re-run delivers it again.)
    const written = record({ t: 'ok', id: item.endpointId, key, version, fp, delivery: outcome.delivered, requestId: requestId ?? '' }).then((recorded) => {
      if (recorded) outcome.discard();
      succeed(item, line);
    });
    lines.add(written);
    void written.finally(() => lines.delete(written));
  };

  /**
   * An item an earlier run rotated whose delivery it did not confirm (killed
   * while delivering, or a destination failed): never sent again. Its copy
   * under recovered/ is delivered to the destinations (a file that already
   * holds exactly that secret counts as delivered); with no copy left, done
   * if every destination holds it, else 13 with the fingerprint to compare.
   */
  const redeliver = async (item: ManifestItem, prior: Prior) => {
    const holder = { endpointId: item.endpointId, idempotencyKey: prior.key, version: prior.version };
    const kept = prior.whole ? undefined : deps.secrets.readKept(item, prior.key, prior.recovered);
    if (prior.fp && deps.secrets.holds(item, prior.fp)) {
      // Every destination holds it already (the killed run got that far): done.
      const delivery = deps.secrets.targetsFor(item).map((to) => ({ to, fingerprint: prior.fp! }));
      if (await record({ t: 'ok', id: item.endpointId, key: prior.key, version: prior.version, fp: prior.fp, delivery, requestId: prior.requestId ?? '' })) kept?.discard();
      succeed(item, skippedResult(item, prior, delivery));
      return;
    }
    const secret = kept?.bytes.toString('utf8');
    if (secret !== undefined && secret !== '' && (prior.fp === null || fingerprint(secret) === prior.fp)) {
      deps.notice?.(`${item.endpointId}: delivering again the secret an earlier run kept (${prior.fp ?? fingerprint(secret)})`);
      return custody(item, holder, secret, prior.requestId, { skipHeld: true });
    }
    const what = `rotated by an earlier run (Idempotency-Key ${prior.key}, version ${prior.version ?? '?'}, fingerprint ${prior.fp ?? 'unknown'})`;
    fail(
      item,
      localError(
        'secret_not_delivered',
        prior.whole && prior.recovered
          ? `${what}: the server's odd answer that carries its secret is kept in ${prior.recovered}`
          : `${what}: delivery not confirmed, and no kept copy of its secret is left to deliver again`,
        {
          details: exit13Details({ endpointId: item.endpointId, version: prior.version, fingerprint: prior.fp, recoveredPath: prior.recovered }),
          hint:
            prior.whole && prior.recovered
              ? `the file holds the whole answer: take the secret from its data.secret, put it where it belongs, then delete ${prior.recovered}`
              : `compare each destination with the fingerprint (chatctl webhooks fingerprint FILE); or, ${newSecretHint({ ...holder, now: clock.now() })}`,
        },
      ),
      prior.key,
    );
  };

  /** What the server answered to an item's request: the secret in custody, or why there is none. */
  const onAnswer = async (item: ManifestItem, answer: SecretAnswer, key: string, resent: boolean) => {
    if (!answer.ok) {
      // Not the expected shape, but a secret in it means the change was
      // applied: it is kept, as a single rotate keeps it (exit 13), never dropped.
      const { odd } = answer;
      if (odd.read !== undefined) deps.scrubber?.addSecret(odd.read);
      const error = keepOddAnswer(odd, { endpointId: item.endpointId, idempotencyKey: key }, deps.custody);
      const kept = (error.details as { recoveredPath?: string | null }).recoveredPath ?? null;
      if (kept) deps.notice?.(`${item.endpointId}: the whole answer that carries its signing secret was kept in ${kept} (mode 0600)`);
      await record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered', recovered: kept, whole: true });
      fail(item, error, key);
      return;
    }
    const { endpoint, secret, secretAvailable } = answer.body.data;
    const holder = {
      endpointId: item.endpointId,
      idempotencyKey: key,
      version: typeof endpoint.version === 'number' ? endpoint.version : null,
      answer: answer.body.data,
      serverRequestId: answer.body.meta.requestId,
    };
    if (typeof secret !== 'string' || secret === '' || secretAvailable === false) {
      // Re-sent with an earlier run's key: that run may have kept the secret
      // before it was killed (the copy is named after the key).
      const kept = resent ? deps.secrets.readKept(item, key, null)?.bytes.toString('utf8') : undefined;
      if (kept) return custody(item, holder, kept, answer.body.meta.requestId, { skipHeld: true });
      await record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered' });
      fail(item, secretWithheld(holder, { secret, secretAvailable }, clock.now(), resent), key);
      return;
    }
    return custody(item, holder, secret, answer.body.meta.requestId);
  };

  interface Outgoing {
    item: ManifestItem;
    key: string;
    request: ItemRequest;
    resent: boolean;
    /** Its "send" record, on its way to the disk; false if the journal failed. */
    journaled: Promise<boolean>;
  }

  /**
   * The next item that needs a request, its "send" record already on its way
   * to the disk. Items an earlier run finished (skipped) or applied (its
   * secret delivered again) are settled on the way, with no request.
   */
  const takeNext = async (): Promise<Outgoing | undefined> => {
    for (let item = next(); item; item = next()) {
      try {
        // The journal's rules (journal.ts actFor): an item is its endpoint,
        // expected version and mode; what could not go on was refused before
        // the run started.
        const act = actFor(deps.priors, item);
        if (act.act === 'skip') {
          // A run killed between the "ok" record and removing the copy left it; every destination holds that secret.
          const left = act.prior.fp ? deps.secrets.readKept(item, act.prior.key, act.prior.recovered) : undefined;
          if (left && fingerprint(left.bytes) === act.prior.fp) left.discard();
          succeed(item, skippedResult(item, act.prior, act.prior.delivery ?? []));
          continue;
        }
        if (act.act === 'redeliver') {
          await redeliver(item, act.prior);
          continue;
        }
        // An earlier request whose outcome is unknown is sent again exactly as
        // it was, with its key: the server then either applies it now or says
        // it already did. Anything else gets a new key.
        const resent = act.act === 'resend';
        const key = resent ? act.prior.key : deps.newKey();
        if (resent) deps.notice?.(`${item.endpointId}: re-sending the earlier run's request (expected version ${item.expectedVersion}, mode ${item.mode}) with its Idempotency-Key ${key}`);
        const request: ItemRequest = { endpointId: item.endpointId, expectedVersion: item.expectedVersion, mode: item.mode };
        const journaled = record({ t: 'send', id: item.endpointId, key, ev: request.expectedVersion, mode: request.mode });
        return { item, key, request, resent, journaled };
      } catch (err) {
        fail(item, isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));
      }
    }
    return undefined;
  };

  /** The run's shared rate, as the engine's pace: a wait longer than chatctl waits stops the run. */
  const pace: Pace = {
    acquire: (signal) => rate.acquire(signal),
    refused: (sentAt, waitMs) => {
      rate.refused(sentAt, waitMs);
      progress();
    },
    succeeded: () => rate.succeeded(),
    resumesAt: () => rate.snapshot().pausedUntil,
    tooLong: (err) => stop(new CliError(err.code, `${err.message}: no further items were started`, err.exitCode, { status: err.status, requestId: err.requestId, details: err.details })),
  };

  /** One item's request (retries in the engine) and outcome. `onSent` is called once its first request is on its way. */
  const send = async ({ item, key, request, resent, journaled }: Outgoing, onSent: () => void): Promise<void> => {
    // Taken before the run stopped, not sent: it stays unstarted (a re-run sends its recorded key).
    if (stopped || opts.signal.aborted) return;
    // Nothing is sent before its key is on disk.
    if (!(await journaled)) return;
    let answer: SecretAnswer;
    try {
      answer = await deps.rotate(request, key, {
        pace,
        mayHaveApplied: resent,
        trace: deps.trace?.(item),
        onAttempt: (attempt) => {
          counts.requests += 1;
          if (attempt === 1) onSent();
        },
      });
    } catch (err) {
      // Ctrl-C before it was sent: not started (a re-run sends its recorded key, harmlessly).
      if (err instanceof NotSent) return;
      const e = isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected);
      // The engine names the key when the change may have been applied. But
      // a refusal (a 4xx other than 429) is the server's answer to this very
      // key: had an earlier request with it been applied, the server would
      // have replayed that answer. So the outcome is known, and the journal
      // says so; otherwise next month's manifest would stay refused.
      const refused = e.status !== null && e.status >= 400 && e.status < 500 && e.status !== 429 && e.code !== 'idempotency_conflict';
      const unknown = !refused && (resent || e.idempotencyKey !== undefined);
      await record({ t: 'fail', id: item.endpointId, key, applied: unknown ? null : false, exitCode: e.exitCode, code: e.code });
      fail(item, e, unknown ? key : undefined);
      return;
    }
    return onAnswer(item, answer, key, resent);
  };

  // Each worker has one request in flight and, meanwhile, the next item's
  // "send" record going to disk: the disk and the network work side by side.
  const worker = async () => {
    for (let out = await takeNext(); out; ) {
      let upcoming: Promise<Outgoing | undefined> | undefined;
      try {
        await send(out, () => void (upcoming ??= takeNext()));
      } catch (err) {
        // Nothing above should throw; if it does, the item fails and the run goes on.
        fail(out.item, isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));
      }
      out = await (upcoming ?? takeNext());
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, worker));
  await Promise.all(lines);

  const done = counts.ok + counts.failed + counts.skipped;
  return {
    ok: counts.ok,
    failed: counts.failed,
    skipped: counts.skipped,
    notStarted: Math.max(0, opts.total - done),
    interrupted: opts.signal.aborted && done < opts.total,
    stopped,
    requests: counts.requests,
    throttled: rate.snapshot().throttles,
    elapsedMs: clock.now() - started,
  };
}
