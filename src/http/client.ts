// Sends one API request: a fresh x-request-id per attempt, the same
// Idempotency-Key on every attempt, retries per retry.ts, the whole-command
// deadline, --debug traces and a notice for each wait. Resolves with a 2xx
// response; everything else becomes a CliError here, so callers handle
// success only.
//
// The one request engine: create, rotate and reactivate use it, and so does
// every item of `rotate --from`, whose shared rate is a Pace plugged in here
// (each attempt takes its turn; a 429 or 503 pauses every worker instead of
// this request sleeping alone). Nothing else in chatctl retries.
import { CliError, localError } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { rerunWords } from '../errors/explain.js';
import { redactSecretsInBody, redactHeaders } from '../output/redact.js';
import { errorFromResponse, headerValue, parseJson } from './classify.js';
import { RETRY_STATUSES, decideRetry, parseRetryAfter } from './retry.js';
import { MAX_BODY_BYTES, isTransportError, type AnswerTap, type Transport, type TransportError, type WireRequest, type WireResponse } from './transport.js';
import type { Clock } from '../system/clock.js';

export interface HttpDeps extends Clock {
  transport: Transport;
  randomUUID(): string;
  random(): number;
  signal: AbortSignal;
  /** --debug: one line at a time, to stderr (already redacted here). */
  trace?: ((line: string) => void) | undefined;
  /** One line per retry wait (human mode; muted by --json and --quiet). */
  announce?: ((line: string) => void) | undefined;
  /**
   * What the transport listens to, when not `signal`: `rotate --from` lets a
   * request in flight finish on Ctrl-C (its secret is then delivered), while
   * waits and turns still end at once.
   */
  requestSignal?: AbortSignal | undefined;
  /** Connections kept open between attempts (a `--from` run's pool). */
  agent?: import('node:http').Agent | undefined;
  /**
   * A signal came while a sent create or rotate waits for its answer (with
   * the grace SIGTERM gives, or null: until --deadline), and undefined once
   * that wait is over: what the command tells the user, and what a second
   * signal must say.
   */
  waiting?: ((state: WaitingForAnswer | undefined, done?: string) => void) | undefined;
}

export interface WaitingForAnswer {
  idempotencyKey: string;
  signal: string;
  graceMs: number | null;
}

/**
 * A rate shared by many requests (rotate --from): every attempt waits for its
 * turn; a 429 or 503 is reported to it, and the next turn comes after the
 * pause it sets for every worker (the server's Retry-After, or its backoff).
 */
export interface Pace {
  /** Resolves with the time the attempt may go; rejects when `signal` aborts. */
  acquire(signal: AbortSignal): Promise<number>;
  refused(sentAt: number, waitMs: number | undefined): void;
  succeeded(): void;
  /** When the next turn can come at the earliest (the end of a pause). */
  resumesAt(): number;
  /** The server asked for a wait longer than chatctl waits: told before the error is thrown. */
  tooLong?(err: CliError): void;
}

/** What one call adds to the engine: a shared pace, its own trace, and hooks the fleet runner counts with. */
export interface CallHooks {
  pace?: Pace | undefined;
  /** Replaces deps.trace for this call (a `--from` run names the endpoint on each line). */
  trace?: ((line: string) => void) | undefined;
  /** Called as each attempt goes out (after its turn). */
  onAttempt?: ((attempt: number) => void) | undefined;
  /** The outcome of an earlier request with this key is unknown (a resumed journal item). */
  mayHaveApplied?: boolean | undefined;
  /** Told of each answer as it arrives, before it is parsed: the request's record (secret/record.ts). */
  tap?: AnswerTap | undefined;
}

/**
 * Interrupted before any attempt of this call went out: nothing was sent, so
 * nothing can have been applied. A `--from` run leaves such an item
 * unstarted; a single command reports it as any interruption.
 */
export class NotSent extends CliError {
  constructor(message: string, code: 'interrupted' | 'timeout' = 'interrupted', hint?: string) {
    super(code, message, code === 'timeout' ? EXIT.unavailable : EXIT.interrupted, { hint });
  }
}

export interface Deadline {
  /** When the command must be over, on deps.now()'s clock. */
  at: number;
  /** The --deadline it came from, for the message. */
  ms: number;
}

export interface RetrySettings {
  maxRetries: number;
  timeoutMs: number;
  /** The whole command's limit: caps each attempt's timeout and each wait. */
  deadline?: Deadline | undefined;
}

export interface ApiRequest extends WireRequest {
  /** Set for create and rotate: named in the message when the outcome is unknown. */
  idempotencyKey?: string | undefined;
  /** How a re-run keeps the change from being applied twice (default: re-run with --idempotency-key KEY). */
  rerun?: string | undefined;
}

/** A deadline starting now: what callers pass for `--deadline`. */
export function deadlineFrom(now: number, deadlineMs: number): Deadline {
  return { at: now + deadlineMs, ms: deadlineMs };
}

/** How long SIGTERM lets a sent create or rotate wait for its answer before it is abandoned. */
export const TERM_GRACE_MS = 5000;

/** One attempt's outcome, as the loop below decides on it. */
type Attempt = { kind: 'answered'; res: WireResponse } | { kind: 'failed'; err: TransportError; requestId: string; timeoutMs: number };

export async function sendWithRetries(req: ApiRequest, settings: RetrySettings, deps: HttpDeps, hooks: CallHooks = {}): Promise<WireResponse> {
  const run = new Send(req, settings, deps, hooks);
  let stale = 0;
  for (let attempt = 1; ; attempt++) {
    const timeoutMs = await run.turn(attempt);
    const outcome = await run.attempt(attempt, timeoutMs);
    if (outcome.kind === 'failed') {
      // A kept-alive connection the server closed as it sat idle: the same
      // attempt again at once on a new one (same key), not a retry counted.
      if (outcome.err.staleConnection && stale++ < STALE_RESENDS) {
        run.resentOnNewConnection(outcome, attempt);
        attempt--;
        continue;
      }
      await run.afterFailure(outcome, attempt);
      continue;
    }
    const { res } = outcome;
    if (res.status >= 200 && res.status < 300) {
      hooks.pace?.succeeded();
      return res;
    }
    await run.afterRefusal(res, attempt);
  }
}

/**
 * How often one request is sent again at once after a kept-alive connection
 * turned out closed: a pool holds at most one connection per worker, and
 * each may have been closed by the same idle timeout.
 */
const STALE_RESENDS = 8;

/** One request's state across its attempts: the key, whether it may have been applied, what the last attempt got. */
class Send {
  readonly attempts: number;
  readonly key: string | undefined;
  readonly rerun: string;
  readonly keyNote: string;
  readonly trace: Trace;
  /** Whether some attempt may have been applied by the server: then the key travels with the error (and in the --json error line). */
  mayHaveApplied: boolean;
  /** What the last attempt got, for the deadline's message. */
  last = '';
  sentAt = 0;

  constructor(
    readonly req: ApiRequest,
    readonly settings: RetrySettings,
    readonly deps: HttpDeps,
    readonly hooks: CallHooks,
  ) {
    this.attempts = settings.maxRetries + 1;
    this.key = req.idempotencyKey;
    this.rerun = this.key ? (req.rerun ?? rerunWords()(this.key)) : '';
    this.keyNote = this.key ? `; Idempotency-Key ${this.key}: ${this.rerun}` : '';
    this.trace = hooks.trace ?? deps.trace;
    this.mayHaveApplied = Boolean(hooks.mayHaveApplied);
  }

  keyed(e: CliError): CliError {
    return this.key && this.mayHaveApplied ? withKey(e, this.key) : e;
  }

  interrupted(): CliError {
    if (!this.key || !this.mayHaveApplied) return localError('interrupted', 'interrupted');
    return withKey(localError('interrupted', `interrupted: the request had been sent (Idempotency-Key ${this.key})`, { hint: this.rerun }), this.key);
  }

  get deadlineText(): string {
    const d = this.settings.deadline;
    return d ? `the command's deadline of ${Number((d.ms / 1000).toFixed(3))} s` : '';
  }

  deadlineReached(what: string): CliError {
    return this.keyed(
      localError('timeout', `${what}${this.last ? ` (the last attempt ${this.last})` : ''}${this.keyNote}`, {
        hint: 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE)',
      }),
    );
  }

  /** Waits for the attempt's turn (the shared pace); its timeout, or throws when it may not go out. */
  async turn(attempt: number): Promise<number> {
    const { deps, settings } = this;
    const deadline = settings.deadline;
    const notSent = () => (attempt === 1 ? new NotSent('interrupted before the request was sent') : this.interrupted());
    if (deps.signal.aborted) throw notSent();
    if (deadline && deadline.at - deps.now() <= 0) throw this.deadlineReached(`${this.deadlineText} was reached after ${plural(attempt - 1, 'attempt')}`);
    this.sentAt = deps.now();
    if (this.hooks.pace) {
      try {
        this.sentAt = await this.hooks.pace.acquire(deps.signal);
      } catch {
        throw notSent();
      }
    }
    const remaining = deadline ? deadline.at - deps.now() : Infinity;
    if (remaining <= 0) {
      // Waiting for its turn took it past the deadline: nothing went out.
      if (attempt === 1) throw new NotSent(`${this.deadlineText} was reached before the request was sent`, 'timeout', 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE)');
      throw this.deadlineReached(`${this.deadlineText} was reached after ${plural(attempt - 1, 'attempt')}`);
    }
    return Math.min(settings.timeoutMs, remaining);
  }

  /**
   * One attempt. A keyed request (create, rotate) is patient once sent: a
   * signal does not abort it (docs/configuration.md, "Interrupting"): the
   * first SIGINT is announced and the answer awaited until --deadline (a
   * second signal ends the process, naming the key); SIGTERM or SIGHUP wait
   * up to TERM_GRACE_MS more. Before it is sent, a signal aborts it.
   */
  async attempt(attempt: number, timeoutMs: number): Promise<Attempt> {
    const { deps, req, hooks } = this;
    const requestId = deps.randomUUID();
    const headers = { ...req.headers, 'x-request-id': requestId };
    traceRequest(this.trace, req, headers, attempt, this.attempts);
    const started = deps.now();
    const patient = this.key !== undefined;
    const deadline = this.settings.deadline;
    const ctl = new AbortController();
    const grace = new AbortController();
    let sent = false;
    // A `rotate --from` run's requests listen to their own signal (never aborted: they finish).
    const listenTo = deps.requestSignal ?? deps.signal;
    const onAbort = () => {
      if (!patient || !sent) return ctl.abort();
      const reason = String(listenTo.reason ?? 'SIGINT');
      deps.waiting?.({ idempotencyKey: this.key!, signal: reason, graceMs: reason === 'SIGINT' ? null : TERM_GRACE_MS });
      if (reason !== 'SIGINT')
        deps.sleep(TERM_GRACE_MS, grace.signal).then(
          () => ctl.abort(),
          () => {},
        );
    };
    listenTo.addEventListener('abort', onAbort, { once: true });
    try {
      const answer = deps.transport(
        { method: req.method, url: req.url, headers, body: req.body },
        {
          timeoutMs,
          maxBodyBytes: MAX_BODY_BYTES,
          signal: ctl.signal,
          agent: deps.agent,
          tap: hooks.tap,
          onSent: () => {
            sent = true;
          },
          answerWaitMs: patient ? (deadline ? Math.max(0, deadline.at - deps.now()) : 2 ** 31 - 1) : undefined,
        },
      );
      hooks.onAttempt?.(attempt);
      const res = await answer;
      traceResponse(this.trace, res, deps.now() - started);
      return { kind: 'answered', res };
    } catch (err) {
      if (!isTransportError(err)) throw err;
      this.trace?.(`< attempt ${attempt} failed after ${deps.now() - started} ms: ${err.message}`);
      // Interrupted before the whole request went out: the server cannot have applied it.
      if (err.failure === 'aborted' && !sent) throw attempt === 1 ? new NotSent('interrupted before the request was sent') : this.interrupted();
      return { kind: 'failed', err, requestId, timeoutMs };
    } finally {
      listenTo.removeEventListener('abort', onAbort);
      grace.abort();
      if (listenTo.aborted && sent) deps.waiting?.(undefined, this.key);
    }
  }

  /** The server closed the kept-alive connection the attempt went on: it goes again, on a new one. */
  resentOnNewConnection({ err, requestId }: Extract<Attempt, { kind: 'failed' }>, attempt: number): void {
    // Written whole to the socket: whether the server read it cannot be known.
    if (err.sent !== false) this.mayHaveApplied = true;
    this.trace?.(`  attempt ${attempt} went out on a kept-alive connection the server had closed (request id ${requestId}): sent again on a new connection`);
  }

  /** A transport failure: reported, or the next attempt after a wait. */
  async afterFailure({ err, requestId, timeoutMs }: Extract<Attempt, { kind: 'failed' }>, attempt: number): Promise<void> {
    if (err.failure !== 'aborted' && err.sent !== false) this.mayHaveApplied = true;
    if (err.failure === 'aborted') {
      // Interrupted in flight: the request may have reached the server.
      this.mayHaveApplied = true;
      throw this.interrupted();
    }
    if (err.failure === 'truncated' || err.failure === 'too_large' || err.failure === 'malformed') {
      throw this.keyed(localError('invalid_response', `${err.message}${this.keyNote}`, { status: err.status ?? null }));
    }
    if (err.failure === 'timeout' && err.waited) {
      throw this.deadlineReached(`${this.deadlineText} was reached during attempt ${attempt} of ${this.attempts}, waiting for its answer (request id ${requestId})`);
    }
    // The server answered (a status line came) but the body did not finish
    // in time: the change may be applied, so this is reported, not retried.
    if (err.failure === 'timeout' && err.status !== undefined) {
      throw this.keyed(localError('timeout', `the server answered ${err.status} but ${err.message}${this.keyNote}`, { status: err.status }));
    }
    this.last = `${err.failure === 'timeout' ? 'timed out' : `failed: ${err.message}`} (request id ${requestId})`;
    if (err.failure === 'timeout' && timeoutMs < this.settings.timeoutMs) {
      throw this.deadlineReached(`${this.deadlineText} was reached during attempt ${attempt} of ${this.attempts}`);
    }
    const failure = err.failure === 'timeout' ? 'timeout' : 'network';
    const decision = decideRetry({ attempt, maxRetries: this.settings.maxRetries, failure, random: this.deps.random });
    if (decision.kind === 'stop') {
      const gaveUp = attempt > 1 ? `; gave up after ${attempt} attempts` : '';
      throw this.keyed(new CliError(failure === 'timeout' ? 'timeout' : 'network_error', `${err.message}${gaveUp}${this.keyNote}`, EXIT.unavailable));
    }
    await this.wait(decision.delayMs, `attempt ${attempt} of ${this.attempts} ${attemptFailure(err, timeoutMs)} (request id ${requestId})`);
  }

  /** A status other than 2xx: reported, or the next attempt after the server's (or the backoff's) wait. */
  async afterRefusal(res: WireResponse, attempt: number): Promise<void> {
    const { deps, hooks } = this;
    const pace = hooks.pace;
    // A 503 may come from a gateway after the service acted on the request.
    if (res.status === 503) this.mayHaveApplied = true;
    this.last = `got ${res.status}${statusText(res.status)} (request id ${serverRequestId(res) ?? '?'})`;
    // The server's own wait, read once: for this decision and for the shared pace.
    const asked = serverWait(res, deps.now());
    const decision = decideRetry({ attempt, maxRetries: this.settings.maxRetries, failure: res.status, serverWaitMs: asked, random: deps.random });
    if (decision.kind === 'retry' && pace) {
      // The shared pace waits for every worker; this request takes its next turn.
      pace.refused(this.sentAt, asked);
      const deadline = this.settings.deadline;
      if (deadline && pace.resumesAt() >= deadline.at)
        throw this.deadlineReached(`${this.deadlineText} would pass before the next attempt (in ${seconds(pace.resumesAt() - deps.now())}), so chatctl stopped`);
      this.trace?.(`  waiting for the shared rate (${this.last})`);
      return;
    }
    if (decision.kind === 'retry') return this.wait(decision.delayMs, `attempt ${attempt} of ${this.attempts} ${this.last}`);
    if (decision.reason === 'retry-after-too-long') {
      const err = this.keyed(errorFromResponse(res, `; the server asked to retry after ${Math.round(decision.retryAfterMs! / 1000)} s, longer than chatctl waits (60 s)${this.keyNote}`));
      pace?.tooLong?.(err);
      throw err;
    }
    if (RETRY_STATUSES.has(res.status)) pace?.refused(this.sentAt, asked);
    else pace?.succeeded();
    if (decision.reason === 'exhausted') throw this.keyed(errorFromResponse(res, `${attempt > 1 ? `; gave up after ${attempt} attempts` : ''}${this.keyNote}`));
    throw this.keyed(errorFromResponse(res));
  }

  /** Announces the wait and sleeps, or stops at once when it would pass the deadline. */
  async wait(ms: number, what: string): Promise<void> {
    const { deps } = this;
    const deadline = this.settings.deadline;
    if (deadline && deps.now() + ms >= deadline.at) {
      throw this.deadlineReached(`${this.deadlineText} would pass before the next attempt (in ${seconds(ms)}), so chatctl stopped`);
    }
    deps.announce?.(`${what}; retrying in ${seconds(ms)}`);
    this.trace?.(`  waiting ${ms} ms`);
    try {
      await deps.sleep(ms, deps.signal);
    } catch {
      throw this.interrupted();
    }
  }
}

/** A copy of the error that carries the Idempotency-Key. */
function withKey(e: CliError, idempotencyKey: string): CliError {
  return new CliError(e.code, e.message, e.exitCode, {
    hint: e.hint,
    status: e.status,
    requestId: e.requestId,
    details: e.details,
    reported: e.reported,
    idempotencyKey,
  });
}

function attemptFailure(err: TransportError, timeoutMs: number): string {
  return err.failure === 'timeout' ? `timed out after ${seconds(timeoutMs)}` : `failed: ${err.message}`;
}

const statusText = (status: number) => (status === 429 ? ' rate limited' : status === 503 ? ' service unavailable' : '');

/** The server's request id: the error body's, else its x-request-id header. */
function serverRequestId(res: WireResponse): string | undefined {
  const body = parseJson(res.body) as { error?: { requestId?: unknown } } | undefined;
  const fromBody = body?.error?.requestId;
  return typeof fromBody === 'string' && fromBody !== '' ? fromBody : headerValue(res, 'x-request-id');
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "0.3 s", "1.2 s", "12 s": tenths below ten seconds. */
export const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

/**
 * How long the server asked to wait: Retry-After-Ms (milliseconds, as some
 * services send beside Retry-After) is finer than Retry-After's whole
 * seconds; either is honoured, the finer first.
 */
function serverWait(res: WireResponse, nowMs: number): number | undefined {
  const ms = headerValue(res, 'retry-after-ms')?.trim();
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  return parseRetryAfter(headerValue(res, 'retry-after'), nowMs);
}

type Trace = ((line: string) => void) | undefined;

function traceRequest(trace: Trace, req: ApiRequest, headers: Record<string, string>, attempt: number, attempts: number): void {
  if (!trace) return;
  trace(`> ${req.method} ${req.url} (attempt ${attempt} of ${attempts})`);
  for (const [k, v] of Object.entries(redactHeaders(headers))) trace(`> ${k}: ${v}`);
  trace(`> ${req.body}`);
}

function traceResponse(trace: Trace, res: WireResponse, ms: number): void {
  if (!trace) return;
  trace(`< ${res.status} in ${ms} ms`);
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
  // A header may echo the secret the body carries: blanked with the body's
  // values. Node reads header values byte by byte (latin1), so a secret
  // beyond ASCII shows there in that form: the body is read that way too.
  const blanked = redactSecretsInBody(res.body);
  const bytes = res.notUtf8 ?? (/[^\x00-\x7f]/.test(res.body) ? Buffer.from(res.body, 'utf8') : undefined);
  const asBytes = bytes ? redactSecretsInBody(bytes.toString('latin1')).scrub : (text: string) => text;
  for (const [k, v] of Object.entries(redactHeaders(flat))) trace(`< ${k}: ${asBytes(blanked.scrub(v))}`);
  if (!res.body) return;
  // A body that is not JSON has no secret key to blank, yet one that names a
  // secret is kept whole as possibly carrying it (api/schemas.ts): not shown.
  if (parseJson(res.body) === undefined && /secret/i.test(res.body)) trace(`< (${Buffer.byteLength(res.body)} bytes that are not JSON and name a secret: not shown)`);
  else trace(`< ${blanked.body}`);
}
