// The engine of `webhooks rotate --from` (contract section 11), as a plain
// function of its dependencies: the items, one attempt at the server
// (rotateOne), the secret's destinations, the journal, a clock. Tests run it
// against a fake server in virtual time; command.ts wires the real ones.
//
// Each item, in one of N workers:
//   1. "send" in the journal with its Idempotency-Key (written while the
//      worker's previous request is on the wire), and its place in the
//      shared rate (rate.ts); nothing is sent before that record is on disk;
//   2. one attempt; a 429/503 pauses every worker (rate.ts) and the item
//      tries again with the same key, up to --max-retries times; a failure
//      to connect is retried with backoff by this item alone;
//   3. on success: "applied" in the journal, the secret to every
//      destination, then "ok" (or, if a destination failed, the secret to
//      recovered/ and "fail" with exit 13);
//   4. its result line, once its outcome is on disk.
// What an earlier run left in the journal decides what happens to an item
// before any of that: see `Prior` in journal.ts and takeNext() below.
import { setMaxListeners } from 'node:events';
import { oddSecretHint, oddSecretText, parseSecretAnswer, type OddSecretAnswer } from '../api/schemas.js';
import { CliError, isCliError, localError } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { errorFromResponse, headerValue, parseJson } from '../http/classify.js';
import { MAX_RETRY_AFTER_MS, RETRY_STATUSES, backoffDelay, parseRetryAfter } from '../http/retry.js';
import { isTransportError, type WireResponse } from '../http/transport.js';
import type { DeliveryRecord, JournalSink, Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';
import { RateController, type RateClock, type RateSettings } from './rate.js';
import type { DeliveryOutcome } from './secrets.js';
import { exit13Details, newSecretHint } from '../secret/new-secret-hint.js';

export interface RotateRequest {
  endpointId: string;
  expectedVersion: number;
  mode: ManifestItem['mode'];
}

/**
 * One HTTP attempt: resolves with whatever status the server answered;
 * rejects with a TransportError (no complete answer) or a CliError.
 */
export type RotateOne = (request: RotateRequest, idempotencyKey: string, signal: AbortSignal) => Promise<WireResponse>;

export interface ItemSecretsPort {
  fingerprint(secret: string | Buffer): string;
  deliver(item: ManifestItem, secret: string): Promise<DeliveryOutcome>;
  holds(item: ManifestItem, fp: string): boolean;
  recover(item: ManifestItem, secret: string | Buffer): string;
  /** A copy in recovered/ made before delivery, discarded once every destination holds the secret (throws if it cannot be written). */
  keep?(item: ManifestItem, secret: string): { path: string; discard(): void; persist(): void };
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
  rotateOne: RotateOne;
  secrets: ItemSecretsPort;
  journal: JournalSink;
  priors: ReadonlyMap<string, Prior>;
  newKey(): string;
  /** Called once per finished item, in completion order. */
  emit(result: ItemResult, item: ManifestItem): void;
  /** Human-mode messages (a secret kept in recovered/, a re-sent request). */
  notice?(text: string): void;
  /** Told of every secret in hand, and when it is no longer needed. */
  redactor?: { addSecret(value: string): void; forgetSecret?(value: string): void };
  progress?(p: Progress): void;
  /** Told when an item's delivery starts (where its copy is kept, if anywhere) and ends: what a forced exit must name. */
  delivering?(item: ManifestItem, state: { fp: string; kept: string | null; key: string } | undefined): void;
}

export interface RunnerOptions {
  concurrency: number;
  maxRetries: number;
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

const serverWait = (res: WireResponse, nowMs: number): number | undefined => {
  // Retry-After-Ms (milliseconds, as some services send beside Retry-After) is
  // finer than Retry-After's whole seconds; either is honoured, the finer first.
  const ms = headerValue(res, 'retry-after-ms')?.trim();
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  return parseRetryAfter(headerValue(res, 'retry-after'), nowMs);
};

const skippedResult = (item: ManifestItem, prior: Prior, delivery: DeliveryRecord[]): Extract<ItemResult, { ok: true }> => ({
  endpointId: item.endpointId,
  ok: true,
  skipped: true,
  ...(prior.version !== null ? { version: prior.version } : {}),
  fingerprint: prior.fp ?? '',
  delivery,
  requestId: prior.requestId,
});

/** Why no recovery copy could be written (ItemSecrets.recover says: the folder and the reason). */
const describeError = (err: unknown) => (err instanceof Error ? err.message : String(err));

const errorJson = (e: CliError) => ({ code: e.code, message: e.message, requestId: e.requestId, status: e.status, details: e.details });

export async function runBulk(items: Iterable<ManifestItem>, opts: RunnerOptions, deps: RunnerDeps): Promise<RunSummary> {
  const { clock } = deps;
  const rate = new RateController(clock, opts.rate);
  const started = clock.now();
  const iterator = items[Symbol.iterator]();
  // Requests in flight are never aborted: Ctrl-C lets them finish and deliver.
  const inFlight = new AbortController().signal;
  // Every worker's request listens on `inFlight`, and every worker's wait for
  // a turn on the run's signal: more than Node's default 10 with
  // --concurrency over 10, and Node would warn on stderr.
  setMaxListeners(0, inFlight, opts.signal);
  const counts = { ok: 0, failed: 0, skipped: 0, requests: 0 };
  let stopped: CliError | null = null;
  /** Result lines waiting for their "ok" record to reach the disk. */
  const lines = new Set<Promise<void>>();

  const stop = (err: CliError) => {
    stopped ??= err;
  };

  const next = (): ManifestItem | undefined => {
    if (opts.signal.aborted || stopped) return undefined;
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

  /** An item an earlier run rotated, whose delivery it did not confirm: never sent again. */
  const settleApplied = async (item: ManifestItem, prior: Prior) => {
    const what = `rotated by an earlier run (version ${prior.version ?? '?'}, fingerprint ${prior.fp ?? 'unknown'})`;
    if (prior.fp && deps.secrets.holds(item, prior.fp)) {
      const delivery = deps.secrets.targetsFor(item).map((to) => ({ to, fingerprint: prior.fp! }));
      await record({ t: 'ok', id: item.endpointId, key: prior.key, version: prior.version, fp: prior.fp, delivery, requestId: prior.requestId ?? '' });
      succeed(item, skippedResult(item, prior, delivery));
      return;
    }
    const message = prior.recovered
      ? `${what}; its secret did not reach every destination and was kept in ${prior.recovered}`
      : `${what} that ended before its secret's delivery was confirmed; it is not rotated again`;
    fail(
      item,
      localError('secret_not_delivered', message, {
        details: exit13Details({ endpointId: item.endpointId, version: prior.version, fingerprint: prior.fp, recoveredPath: prior.recovered }),
        hint: prior.recovered
          ? 'move it where it belongs (a file that holds a whole answer has it under data.secret), then delete that file'
          : `compare each destination with the fingerprint (chatctl webhooks fingerprint FILE); or, ${newSecretHint({ endpointId: item.endpointId, version: prior.version, now: clock.now() })}`,
      }),
      prior.key,
    );
  };

  /** Keeps a secret that did not reach every destination: its path, or null and why not. */
  const keepCopy = (item: ManifestItem, secret: string | Buffer): { kept: string | null; keepError?: unknown } => {
    try {
      return { kept: deps.secrets.recover(item, secret) };
    } catch (keepError) {
      return { kept: null, keepError };
    }
  };

  /** An item rotated whose secret is not where it was asked to go: so recorded, told, and failed with 13. */
  const failUndelivered = async (
    item: ManifestItem,
    key: string,
    what: { fp: string; kept: string | null; version: number | null; status?: number; details?: Record<string, unknown>; odd?: OddSecretAnswer; answer?: unknown },
    message: string,
  ) => {
    const { fp, kept, version } = what;
    await record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered', recovered: kept });
    if (kept) deps.notice?.(`${item.endpointId}: ${what.odd?.whole ? `the whole answer that carries its signing secret (${fp} of it)` : `the signing secret (${fp})`} was kept in ${kept} (mode 0600)`);
    fail(
      item,
      localError('secret_not_delivered', message, {
        ...(what.status !== undefined ? { status: what.status } : {}),
        details: exit13Details({ endpointId: item.endpointId, version, fingerprint: fp, recoveredPath: kept }, what.details),
        hint: kept
          ? what.odd?.whole
            ? oddSecretHint(what.odd, 'that file')
            : `move it where it belongs, then delete that file; or, ${newSecretHint({ endpointId: item.endpointId, version, answer: what.answer, now: clock.now() })}`
          : newSecretHint({ endpointId: item.endpointId, version, answer: what.answer, now: clock.now() }),
      }),
      key,
    );
  };

  const onSuccess = async (item: ManifestItem, res: WireResponse, key: string, resent: boolean) => {
    const parsed = parseSecretAnswer(parseJson(res.body), res);
    if (!parsed?.ok) {
      // Not the expected shape, but a secret in it means the change was
      // applied: it is kept, as a single rotate keeps it (exit 13), never dropped.
      if (parsed) {
        const stray = parsed.odd.kept;
        if (parsed.odd.read !== undefined) deps.redactor?.addSecret(parsed.odd.read);
        const fp = deps.secrets.fingerprint(stray);
        const { kept, keepError } = keepCopy(item, stray);
        const head = `the server answered ${res.status} with a body that is not the expected response, but it carries ${oddSecretText(parsed.odd, fp)}: the change was applied (Idempotency-Key ${key})`;
        await failUndelivered(item, key, { fp, kept, version: null, status: res.status, odd: parsed.odd }, kept ? `${head}; it is kept in ${kept}, not delivered` : `${head}; no recovery copy could be written (${describeError(keepError)}): the secret is lost`);
        return;
      }
      await record({ t: 'fail', id: item.endpointId, key, applied: null, exitCode: EXIT.unexpected, code: 'invalid_response' });
      fail(item, localError('invalid_response', `the server answered ${res.status} with a body that is not the expected response; the change may have been applied (Idempotency-Key ${key})`, { status: res.status }), key);
      return;
    }
    const { endpoint, secret, secretAvailable } = parsed.body.data;
    const requestId = parsed.body.meta.requestId;
    const version = typeof endpoint.version === 'number' ? endpoint.version : null;
    if (secret === null || secret === '' || secretAvailable === false) {
      const replayed = resent || headerValue(res, 'idempotent-replayed') === 'true';
      await record({ t: 'fail', id: item.endpointId, key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered' });
      fail(
        item,
        localError('secret_not_delivered', replayed
            ? `rotated by an earlier run (Idempotency-Key ${key}) that ended before its secret was delivered; the server does not return a secret twice`
            : `the change was applied, but the server did not return the signing secret (secretAvailable: ${String(secretAvailable)})`, {
            details: exit13Details({ endpointId: item.endpointId, version, fingerprint: null, recoveredPath: null }, { serverRequestId: requestId }),
            hint: newSecretHint({ endpointId: item.endpointId, version, answer: parsed.body.data, now: clock.now() }),
          }, ),
        key,
      );
      return;
    }

    deps.redactor?.addSecret(secret);
    try {
      const fp = deps.secrets.fingerprint(secret);
      // Before delivery, as a single rotate does: a copy in recovered/, so a
      // second Ctrl-C, a kill or a failing destination cannot lose the
      // secret; discarded once every destination holds it.
      let copy: { path: string; discard(): void; persist(): void } | undefined;
      try {
        copy = deps.secrets.keep?.(item, secret);
      } catch {
        /* tried again below if a destination fails */
      }
      deps.delivering?.(item, { fp, kept: copy?.path ?? null, key });
      // Before delivery: a run killed while delivering leaves the fingerprint
      // (and where the copy is) behind, so the next run can check the files
      // rather than guess.
      await record({ t: 'applied', id: item.endpointId, key, version, fp, ...(copy ? { recovered: copy.path } : {}) });
      let outcome: DeliveryOutcome;
      try {
        outcome = await deps.secrets.deliver(item, secret);
      } finally {
        deps.delivering?.(item, undefined);
      }
      if (outcome.failures.length > 0) {
        copy?.persist();
        const { kept, keepError } = copy ? { kept: copy.path, keepError: undefined } : keepCopy(item, secret);
        const why = outcome.failures.map((f) => `${f.to} (${f.reason})`).join(', ');
        const holders = outcome.delivered.map((d) => d.to);
        const lost = holders.length > 0 ? `only ${holders.join(', ')} holds it` : 'the secret is lost';
        await failUndelivered(
          item,
          key,
          { fp, kept, version, answer: parsed.body.data, details: { delivered: outcome.delivered, failures: outcome.failures, serverRequestId: requestId } },
          `rotated, but the secret did not reach ${why}; ${kept ? `it was kept in ${kept}` : `a recovery copy could not be written either (${describeError(keepError)}): ${lost}`}`,
        );
        return;
      }
      try {
        copy?.discard();
      } catch {
        /* a copy left in recovered/ is untidy, not a failure: every destination holds the secret */
      }
      // The worker moves on to its next item at once; the result line follows
      // when "ok" is on disk, so a line on stdout always means "done, and
      // known to be done by a re-run".
      const line: ItemResult = { endpointId: item.endpointId, ok: true, ...(version !== null ? { version } : {}), fingerprint: fp, delivery: outcome.delivered, requestId };
      const written = record({ t: 'ok', id: item.endpointId, key, version, fp, delivery: outcome.delivered, requestId }).then(() => succeed(item, line));
      lines.add(written);
      void written.finally(() => lines.delete(written));
    } finally {
      deps.redactor?.forgetSecret?.(secret);
    }
  };

  interface Plan {
    item: ManifestItem;
    key: string;
    request: RotateRequest;
    resent: boolean;
    /** Its "send" record, on its way to the disk; false if the journal failed. */
    journaled: Promise<boolean>;
  }

  /**
   * The next item that needs a request, its "send" record already on its way
   * to the disk. Items an earlier run finished (skipped) or applied (reported)
   * are settled on the way, with no request.
   */
  const takeNext = async (): Promise<Plan | undefined> => {
    for (let item = next(); item; item = next()) {
      try {
        const prior = deps.priors.get(item.endpointId);
        if (prior?.state === 'ok') {
          succeed(item, skippedResult(item, prior, prior.delivery ?? []));
          continue;
        }
        if (prior?.state === 'applied') {
          await settleApplied(item, prior);
          continue;
        }
        // An earlier request whose outcome is unknown is sent again exactly as
        // it was, with its key: the server then either applies it now or says
        // it already did. Anything else gets a new key and the manifest's values.
        const resent = prior?.state === 'sent';
        const key = resent ? prior.key : deps.newKey();
        const request: RotateRequest = resent
          ? { endpointId: item.endpointId, expectedVersion: prior.ev, mode: prior.mode }
          : { endpointId: item.endpointId, expectedVersion: item.expectedVersion, mode: item.mode };
        if (resent && (prior.ev !== item.expectedVersion || prior.mode !== item.mode))
          deps.notice?.(`${item.endpointId}: re-sending the earlier run's request (expected version ${prior.ev}, mode ${prior.mode}) with its Idempotency-Key, not line ${item.line}'s`);
        const journaled = record({ t: 'send', id: item.endpointId, key, ev: request.expectedVersion, mode: request.mode });
        return { item, key, request, resent, journaled };
      } catch (err) {
        fail(item, isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));
      }
    }
    return undefined;
  };

  /** One item's request(s), retries and outcome. `onSent` is called once its first request is on its way. */
  const runPlan = async ({ item, key, request, resent, journaled }: Plan, onSent: () => void): Promise<void> => {
    // Taken before the run stopped, not sent: it stays unstarted (a re-run sends its recorded key).
    if (stopped || opts.signal.aborted) return;
    let sentAt: number;
    try {
      sentAt = await rate.acquire(opts.signal);
    } catch {
      // Ctrl-C before it was sent: not started (a re-run sends its recorded key, harmlessly).
      return;
    }
    // Nothing is sent before its key is on disk.
    if (!(await journaled)) return;

    // Whether some attempt's outcome is unknown (it may have been applied).
    let unknown = resent;
    const keyNote = `; Idempotency-Key ${key} (a re-run with --journal re-sends it)`;
    const finish = async (err: CliError) => {
      await record({ t: 'fail', id: item.endpointId, key, applied: unknown ? null : false, exitCode: err.exitCode, code: err.code });
      fail(item, err, unknown ? key : undefined);
    };

    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        try {
          sentAt = await rate.acquire(opts.signal);
        } catch {
          return finish(localError('interrupted', `interrupted before attempt ${attempt}${unknown ? keyNote : '; nothing was applied'}`));
        }
      }
      counts.requests += 1;
      let res: WireResponse;
      try {
        const answer = deps.rotateOne(request, key, inFlight);
        if (attempt === 1) onSent();
        res = await answer;
      } catch (err) {
        if (!isTransportError(err)) return finish(isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));
        const noAnswer = err.failure === 'connect' || (err.failure === 'timeout' && err.status === undefined);
        if (err.failure !== 'connect') unknown = true;
        if (noAnswer && attempt <= opts.maxRetries) {
          try {
            await clock.sleep(backoffDelay(attempt - 1, clock.random), opts.signal);
          } catch {
            return finish(localError('interrupted', `interrupted while waiting to retry (${err.message})${unknown ? keyNote : ''}`));
          }
          continue;
        }
        const code = err.failure === 'timeout' ? 'timeout' : err.failure === 'connect' ? 'network_error' : 'invalid_response';
        const exit = err.failure === 'truncated' || err.failure === 'too_large' ? EXIT.unexpected : EXIT.unavailable;
        const gaveUp = noAnswer && attempt > 1 ? `; gave up after ${attempt} attempts` : '';
        return finish(new CliError(code, `${err.message}${gaveUp}${unknown ? keyNote : ''}`, exit, { status: err.status ?? null }));
      }

      if (res.status >= 200 && res.status < 300) {
        rate.succeeded();
        return onSuccess(item, res, key, resent);
      }
      if (RETRY_STATUSES.has(res.status)) {
        const wait = serverWait(res, clock.now());
        if (wait !== undefined && wait > MAX_RETRY_AFTER_MS) {
          const err = errorFromResponse(res, `; the server asked to retry after ${Math.round(wait / 1000)} s, longer than chatctl waits (60 s): no further items were started`);
          stop(err);
          return finish(err);
        }
        rate.refused(sentAt, wait);
        progress();
        if (attempt > opts.maxRetries) return finish(errorFromResponse(res, `; gave up after ${attempt} attempts${unknown ? keyNote : ''}`));
        continue;
      }
      rate.succeeded();
      return finish(errorFromResponse(res, resent ? `; this request was re-sent from the journal${keyNote}` : ''));
    }
  };

  // Each worker has one request in flight and, meanwhile, the next item's
  // "send" record going to disk: the disk and the network work side by side.
  const worker = async () => {
    for (let plan = await takeNext(); plan; ) {
      let upcoming: Promise<Plan | undefined> | undefined;
      try {
        await runPlan(plan, () => void (upcoming ??= takeNext()));
      } catch (err) {
        // Nothing above should throw; if it does, the item fails and the run goes on.
        fail(plan.item, isCliError(err) ? err : new CliError('internal_error', `unexpected error: ${String(err)}`, EXIT.unexpected));
      }
      plan = await (upcoming ?? takeNext());
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
