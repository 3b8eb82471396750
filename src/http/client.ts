import { errorResponseSchema } from '../api/schemas.js';
import { CliError, EXIT, exitCodeForApiCode, exitCodeForStatus, localError } from '../errors/cli-error.js';
import { type AnswerTap, isTransportError, MAX_BODY_BYTES, type Transport, type TransportError, type WireRequest, type WireResponse } from './transport.js';
import { redactHeaders, redactSecretFields, redactSecretsInBody } from '../output/scrub.js';
import { rerunWords } from '../errors/explain.js';
import type { Clock } from '../system/clock.js';

// The one request engine (nothing else retries): a fresh x-request-id per attempt, one Idempotency-Key for all, retries
// (docs/secrets.md), the deadline, --debug traces. Resolves with a 2xx; anything else becomes a CliError here.

const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 20_000;
const MAX_RETRY_AFTER_MS = 60_000;

const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** `Retry-After` (delta-seconds or an HTTP date) as milliseconds from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return undefined; // "1.5", "-3": not a form the spec allows
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Full jitter: uniform in [0, min(cap, base * 2^retryIndex)). */
export const backoffDelay = (retryIndex: number, random: () => number): number => Math.floor(random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** retryIndex));

type RetryDecision = { kind: 'retry'; delayMs: number; reason: string } | { kind: 'stop'; reason: 'exhausted' | 'retry-after-too-long' | 'not-retryable'; retryAfterMs?: number };

export function decideRetry(opts: { attempt: number; maxRetries: number; failure: number | 'network' | 'timeout'; serverWaitMs?: number | undefined; random: () => number }): RetryDecision {
  const { attempt, maxRetries, failure } = opts;
  if (typeof failure === 'number' && !RETRY_STATUSES.has(failure)) return { kind: 'stop', reason: 'not-retryable' };
  const serverWait = typeof failure === 'number' ? opts.serverWaitMs : undefined;
  if (serverWait !== undefined && serverWait > MAX_RETRY_AFTER_MS) return { kind: 'stop', reason: 'retry-after-too-long', retryAfterMs: serverWait };
  if (attempt > maxRetries) return { kind: 'stop', reason: 'exhausted' };
  const reason = failure === 429 ? 'rate limited' : failure === 503 ? 'service unavailable' : failure === 'timeout' ? 'timed out' : 'connection failed';
  return { kind: 'retry', delayMs: serverWait ?? backoffDelay(attempt - 1, opts.random), reason };
}

export function headerValue(res: WireResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The server's code when the body is an API error (read leniently), else the status's fallback (`chatctl exit-codes`). */
function errorFromResponse(res: WireResponse, suffix = ''): CliError {
  // A redirect is never followed, so the token never reaches the other origin.
  if (res.status >= 300 && res.status < 400) return redirectError(res, suffix);
  const parsed = errorResponseSchema().safeParse(parseJson(res.body));
  if (parsed.success) {
    const e = parsed.data.error;
    return new CliError(e.code, e.message + suffix, exitCodeForApiCode(e.code), {
      status: res.status,
      requestId: e.requestId,
      // An error is printed on stderr, where no signing secret may appear.
      details: redactSecretFields(e.details),
    });
  }
  return new CliError('invalid_response', `the server answered ${res.status}${describeBody(res)}` + suffix, exitCodeForStatus(res.status), {
    status: res.status,
    requestId: headerValue(res, 'x-request-id') ?? null,
  });
}

function redirectError(res: WireResponse, suffix: string): CliError {
  const location = headerValue(res, 'location');
  return new CliError('invalid_response', `the server answered ${res.status} with a redirect${location ? ` to ${location}` : ''}; redirects are not followed` + suffix, exitCodeForStatus(res.status), {
    status: res.status,
    requestId: headerValue(res, 'x-request-id') ?? null,
    hint: 'check the base URL (it may need https or a different path)',
  });
}

function describeBody(res: WireResponse): string {
  const type = headerValue(res, 'content-type') ?? '';
  if (res.body.trim() === '') return ' with an empty body';
  if (/html/i.test(type) || /^\s*</.test(res.body)) return ' with an HTML page (a proxy or gateway error?)';
  return ' with a body that is not an API error';
}

export interface HttpDeps extends Clock {
  transport: Transport;
  randomUUID(): string;
  random(): number;
  signal: AbortSignal;
  trace?: ((line: string) => void) | undefined;
  /** One line per retry wait (human mode; muted by --json and --quiet). */
  announce?: ((line: string) => void) | undefined;
  /** What the transport listens to, when not `signal`: `rotate --from` lets a request in flight finish on Ctrl-C. */
  requestSignal?: AbortSignal | undefined;
  agent?: import('node:http').Agent | undefined;
  /** A signal came while a sent create or rotate waits for its answer (graceMs null: until --deadline); undefined once over. */
  waiting?: ((state: WaitingForAnswer | undefined, done?: string) => void) | undefined;
}

export type WaitingForAnswer = { idempotencyKey: string; signal: string; graceMs: number | null };

/** A rate shared by rotate --from's requests: each attempt waits for its turn; a 429 or 503 pauses every worker. */
export interface Pace {
  /** Resolves with the time the attempt may go; rejects when `signal` aborts. */
  acquire(signal: AbortSignal): Promise<number>;
  refused(sentAt: number, waitMs: number | undefined): void;
  succeeded(): void;
  resumesAt(): number;
  /** The server asked for a wait longer than chatctl waits: told before the error is thrown. */
  tooLong?(err: CliError): void;
}

/** What one call adds: a shared pace, its own trace, and hooks the fleet runner counts with. */
export interface CallHooks {
  pace?: Pace | undefined;
  /** Replaces deps.trace for this call (a `--from` run names the endpoint on each line). */
  trace?: ((line: string) => void) | undefined;
  onAttempt?: ((attempt: number) => void) | undefined;
  /** The outcome of an earlier request with this key is unknown (a resumed journal item). */
  mayHaveApplied?: boolean | undefined;
  /** The request's record (secret/record.ts). */
  tap?: AnswerTap | undefined;
}

/** Interrupted before any attempt went out: nothing can have been applied (a `--from` run leaves the item unstarted). */
export class NotSent extends CliError {
  constructor(message: string, code: 'interrupted' | 'timeout' = 'interrupted', hint?: string) {
    super(code, message, code === 'timeout' ? EXIT.unavailable : EXIT.interrupted, { hint });
  }
}

/** When the command must be over, on deps.now()'s clock, and the --deadline it came from. */
type Deadline = { at: number; ms: number };

export type RetrySettings = { maxRetries: number; timeoutMs: number; deadline?: Deadline | undefined };

export interface ApiRequest extends WireRequest {
  /** Set for create and rotate: named in the message when the outcome is unknown. */
  idempotencyKey?: string | undefined;
  /** How a re-run keeps the change from being applied twice (default: re-run the same command with --idempotency-key KEY). */
  rerun?: string | undefined;
}

export const deadlineFrom = (now: number, deadlineMs: number): Deadline => ({ at: now + deadlineMs, ms: deadlineMs });

/** How long SIGTERM lets a sent create or rotate wait for its answer. */
const TERM_GRACE_MS = 5000;

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

/** Resends after a closed kept-alive connection: a pool holds one per worker, each maybe closed by the same idle timeout. */
const STALE_RESENDS = 8;

class Send {
  readonly attempts: number;
  readonly key: string | undefined;
  readonly rerun: string;
  readonly keyNote: string;
  readonly trace: Trace;
  /** Whether some attempt may have been applied: then the key travels with the error. */
  mayHaveApplied: boolean;
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

  notSent(attempt: number): CliError {
    return attempt === 1 ? new NotSent('interrupted before the request was sent') : this.interrupted();
  }

  get deadlineText(): string {
    const d = this.settings.deadline;
    return d ? `the command's deadline of ${Number((d.ms / 1000).toFixed(3))} s` : '';
  }

  deadlineReached(what: string): CliError {
    return this.keyed(localError('timeout', `${what}${this.last ? ` (the last attempt ${this.last})` : ''}${this.keyNote}`, { hint: MORE_TIME }));
  }

  wouldPass(ms: number): CliError {
    return this.deadlineReached(`${this.deadlineText} would pass before the next attempt (in ${seconds(ms)}), so chatctl stopped`);
  }

  async turn(attempt: number): Promise<number> {
    const { deps, settings } = this;
    const deadline = settings.deadline;
    const late = () => this.deadlineReached(`${this.deadlineText} was reached after ${plural(attempt - 1, 'attempt')}`);
    if (deps.signal.aborted) throw this.notSent(attempt);
    if (deadline && deadline.at - deps.now() <= 0) throw late();
    this.sentAt = deps.now();
    if (this.hooks.pace) {
      try {
        this.sentAt = await this.hooks.pace.acquire(deps.signal);
      } catch {
        throw this.notSent(attempt);
      }
    }
    const remaining = deadline ? deadline.at - deps.now() : Infinity;
    if (remaining <= 0) {
      // Waiting for its turn took it past the deadline: nothing went out.
      if (attempt === 1) throw new NotSent(`${this.deadlineText} was reached before the request was sent`, 'timeout', MORE_TIME);
      throw late();
    }
    return Math.min(settings.timeoutMs, remaining);
  }

  /** One attempt: once sent, a keyed request is not aborted by a signal (docs/configuration.md, "Interrupting"). */
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
      if (reason !== 'SIGINT') void deps.sleep(TERM_GRACE_MS, grace.signal).then(() => ctl.abort(), NOTHING);
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
          onSent: () => void (sent = true),
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
      if (err.failure === 'aborted' && !sent) throw this.notSent(attempt);
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

  async afterFailure({ err, requestId, timeoutMs }: Extract<Attempt, { kind: 'failed' }>, attempt: number): Promise<void> {
    // Interrupted in flight, the request may have reached the server too.
    if (err.failure === 'aborted' || err.sent !== false) this.mayHaveApplied = true;
    if (err.failure === 'aborted') throw this.interrupted();
    if (err.failure === 'truncated' || err.failure === 'too_large' || err.failure === 'malformed') {
      throw this.keyed(localError('invalid_response', `${err.message}${this.keyNote}`, { status: err.status ?? null }));
    }
    if (err.failure === 'timeout' && err.waited) {
      throw this.deadlineReached(`${this.deadlineText} was reached during attempt ${attempt} of ${this.attempts}, waiting for its answer (request id ${requestId})`);
    }
    // A status line came but the body did not finish in time: the change may be applied, so reported, not retried.
    if (err.failure === 'timeout' && err.status !== undefined) throw this.keyed(localError('timeout', `the server answered ${err.status} but ${err.message}${this.keyNote}`, { status: err.status }));
    this.last = `${err.failure === 'timeout' ? 'timed out' : `failed: ${err.message}`} (request id ${requestId})`;
    if (err.failure === 'timeout' && timeoutMs < this.settings.timeoutMs) throw this.deadlineReached(`${this.deadlineText} was reached during attempt ${attempt} of ${this.attempts}`);
    const failure = err.failure === 'timeout' ? 'timeout' : 'network';
    const decision = decideRetry({ attempt, maxRetries: this.settings.maxRetries, failure, random: this.deps.random });
    if (decision.kind === 'stop') throw this.keyed(new CliError(failure === 'timeout' ? 'timeout' : 'network_error', `${err.message}${gaveUp(attempt)}${this.keyNote}`, EXIT.unavailable));
    const what = err.failure === 'timeout' ? `timed out after ${seconds(timeoutMs)}` : `failed: ${err.message}`;
    await this.wait(decision.delayMs, `attempt ${attempt} of ${this.attempts} ${what} (request id ${requestId})`);
  }

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
      if (deadline && pace.resumesAt() >= deadline.at) throw this.wouldPass(pace.resumesAt() - deps.now());
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
    if (decision.reason === 'exhausted') throw this.keyed(errorFromResponse(res, `${gaveUp(attempt)}${this.keyNote}`));
    throw this.keyed(errorFromResponse(res));
  }

  async wait(ms: number, what: string): Promise<void> {
    const { deps } = this;
    const deadline = this.settings.deadline;
    if (deadline && deps.now() + ms >= deadline.at) throw this.wouldPass(ms);
    deps.announce?.(`${what}; retrying in ${seconds(ms)}`);
    this.trace?.(`  waiting ${ms} ms`);
    try {
      await deps.sleep(ms, deps.signal);
    } catch {
      throw this.interrupted();
    }
  }
}

function withKey(e: CliError, idempotencyKey: string): CliError {
  return new CliError(e.code, e.message, e.exitCode, { hint: e.hint, status: e.status, requestId: e.requestId, details: e.details, reported: e.reported, idempotencyKey });
}

const statusText = (status: number) => (status === 429 ? ' rate limited' : status === 503 ? ' service unavailable' : '');

function serverRequestId(res: WireResponse): string | undefined {
  const body = parseJson(res.body) as { error?: { requestId?: unknown } } | undefined;
  const fromBody = body?.error?.requestId;
  return typeof fromBody === 'string' && fromBody !== '' ? fromBody : headerValue(res, 'x-request-id');
}

const NOTHING = () => {};
const MORE_TIME = 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE)';
const gaveUp = (attempt: number) => (attempt > 1 ? `; gave up after ${attempt} attempts` : '');
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "0.3 s", "1.2 s", "12 s": tenths below ten seconds. */
const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

/** How long the server asked to wait: Retry-After-Ms (as some services send) first, being finer, else Retry-After. */
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
  // A header may echo the body's secret: blanked with its values, read as latin1 too (as Node reads header bytes).
  const blanked = redactSecretsInBody(res.body);
  const bytes = res.notUtf8 ?? (/[^\x00-\x7f]/.test(res.body) ? Buffer.from(res.body, 'utf8') : undefined);
  const asBytes = bytes ? redactSecretsInBody(bytes.toString('latin1')).scrub : (text: string) => text;
  for (const [k, v] of Object.entries(redactHeaders(flat))) trace(`< ${k}: ${asBytes(blanked.scrub(v))}`);
  if (!res.body) return;
  // Not JSON yet naming a secret: kept whole as possibly carrying it (api/schemas.ts), so not shown.
  if (parseJson(res.body) === undefined && /secret/i.test(res.body)) trace(`< (${Buffer.byteLength(res.body)} bytes that are not JSON and name a secret: not shown)`);
  else trace(`< ${blanked.body}`);
}
