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
import { shellQuote } from '../output/sanitize.js';
import { CliError, localError } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { redactSecretsInBody, redactHeaders } from '../output/redact.js';
import { errorFromResponse, headerValue, parseJson } from './classify.js';
import { RETRY_STATUSES, decideRetry, parseRetryAfter } from './retry.js';
import { MAX_BODY_BYTES, isTransportError, type Transport, type TransportError, type WireRequest, type WireResponse } from './transport.js';

export interface HttpDeps {
  transport: Transport;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
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

export async function sendWithRetries(req: ApiRequest, settings: RetrySettings, deps: HttpDeps, hooks: CallHooks = {}): Promise<WireResponse> {
  const attempts = settings.maxRetries + 1;
  const key = req.idempotencyKey;
  const rerun = key ? (req.rerun ?? `re-run with --idempotency-key ${shellQuote(key)} so the change cannot be applied twice`) : '';
  const keyNote = key ? `; Idempotency-Key ${key}: ${rerun}` : '';
  const deadline = settings.deadline;
  const { pace } = hooks;
  const trace = hooks.trace ?? deps.trace;
  // Whether some attempt may have been applied by the server: then the key
  // travels with the error (and in the --json error line).
  let mayHaveApplied = Boolean(hooks.mayHaveApplied);
  /** What the last attempt got, for the deadline's message. */
  let last = '';
  const keyed = (e: CliError) => (key && mayHaveApplied ? withKey(e, key) : e);
  const interrupted = () =>
    key && mayHaveApplied
      ? withKey(
          localError('interrupted', `interrupted: the request had been sent (Idempotency-Key ${key})`, {
            hint: rerun,
          }),
          key,
        )
      : localError('interrupted', 'interrupted');
  const deadlineReached = (what: string) =>
    keyed(
      localError('timeout', `${what}${last ? ` (the last attempt ${last})` : ''}${keyNote}`, {
        hint: 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE)',
      }),
    );
  const deadlineText = deadline ? `the command's deadline of ${Number((deadline.ms / 1000).toFixed(3))} s` : '';

  for (let attempt = 1; ; attempt++) {
    if (deps.signal.aborted) throw attempt === 1 ? new NotSent('interrupted before the request was sent') : interrupted();
    if (deadline && deadline.at - deps.now() <= 0) throw deadlineReached(`${deadlineText} was reached after ${plural(attempt - 1, 'attempt')}`);
    let sentAt = deps.now();
    if (pace) {
      try {
        sentAt = await pace.acquire(deps.signal);
      } catch {
        throw attempt === 1 ? new NotSent('interrupted before the request was sent') : interrupted();
      }
    }
    const remaining = deadline ? deadline.at - deps.now() : Infinity;
    if (remaining <= 0) {
      // Waiting for its turn took it past the deadline: nothing went out.
      if (attempt === 1) throw new NotSent(`${deadlineText} was reached before the request was sent`, 'timeout', 'allow more time with --deadline SECONDS (or CHATCTL_DEADLINE)');
      throw deadlineReached(`${deadlineText} was reached after ${plural(attempt - 1, 'attempt')}`);
    }
    const timeoutMs = Math.min(settings.timeoutMs, remaining);
    const requestId = deps.randomUUID();
    const headers = { ...req.headers, 'x-request-id': requestId };
    traceRequest(trace, req, headers, attempt, attempts);
    const started = deps.now();
    let res: WireResponse;
    try {
      const answer = deps.transport(
        { method: req.method, url: req.url, headers, body: req.body },
        { timeoutMs, maxBodyBytes: MAX_BODY_BYTES, signal: deps.requestSignal ?? deps.signal, agent: deps.agent },
      );
      hooks.onAttempt?.(attempt);
      res = await answer;
    } catch (err) {
      if (!isTransportError(err)) throw err;
      trace?.(`< attempt ${attempt} failed after ${deps.now() - started} ms: ${err.message}`);
      if (err.failure !== 'aborted' && err.sent !== false) mayHaveApplied = true;
      if (err.failure === 'aborted') {
        // Interrupted in flight: the request may have reached the server.
        mayHaveApplied = true;
        throw interrupted();
      }
      if (err.failure === 'truncated' || err.failure === 'too_large' || err.failure === 'malformed') {
        throw keyed(localError('invalid_response', `${err.message}${keyNote}`, { status: err.status ?? null }));
      }
      // The server answered (a status line came) but the body did not finish
      // in time: the change may be applied, so this is reported, not retried.
      if (err.failure === 'timeout' && err.status !== undefined) {
        throw keyed(localError('timeout', `the server answered ${err.status} but ${err.message}${keyNote}`, { status: err.status }));
      }
      last = `${err.failure === 'timeout' ? 'timed out' : `failed: ${err.message}`} (request id ${requestId})`;
      if (err.failure === 'timeout' && timeoutMs < settings.timeoutMs) {
        throw deadlineReached(`${deadlineText} was reached during attempt ${attempt} of ${attempts}`);
      }
      const failure = err.failure === 'timeout' ? 'timeout' : 'network';
      const decision = decideRetry({ attempt, maxRetries: settings.maxRetries, failure, random: deps.random });
      if (decision.kind === 'stop') {
        const gaveUp = attempt > 1 ? `; gave up after ${attempt} attempts` : '';
        throw keyed(new CliError(failure === 'timeout' ? 'timeout' : 'network_error', `${err.message}${gaveUp}${keyNote}`, EXIT.unavailable));
      }
      await wait(decision.delayMs, `attempt ${attempt} of ${attempts} ${attemptFailure(err, timeoutMs)} (request id ${requestId})`);
      continue;
    }
    traceResponse(trace, res, deps.now() - started);
    if (res.status >= 200 && res.status < 300) {
      pace?.succeeded();
      return res;
    }
    // A 503 may come from a gateway after the service acted on the request.
    if (res.status === 503) mayHaveApplied = true;
    const serverId = serverRequestId(res) ?? requestId;
    last = `got ${res.status}${statusText(res.status)} (request id ${serverId})`;

    // The server's own wait, read once: for this decision and for the shared pace.
    const asked = serverWait(res, deps.now());
    const decision = decideRetry({
      attempt,
      maxRetries: settings.maxRetries,
      failure: res.status,
      serverWaitMs: asked,
      random: deps.random,
    });
    if (decision.kind === 'retry' && pace) {
      // The shared pace waits for every worker; this request takes its next turn.
      pace.refused(sentAt, asked);
      if (deadline && pace.resumesAt() >= deadline.at) throw deadlineReached(`${deadlineText} would pass before the next attempt (in ${seconds(pace.resumesAt() - deps.now())}), so chatctl stopped`);
      trace?.(`  waiting for the shared rate (${last})`);
      continue;
    }
    if (decision.kind === 'retry') {
      await wait(decision.delayMs, `attempt ${attempt} of ${attempts} ${last}`);
      continue;
    }
    if (decision.reason === 'retry-after-too-long') {
      const err = keyed(errorFromResponse(res, `; the server asked to retry after ${Math.round(decision.retryAfterMs! / 1000)} s, longer than chatctl waits (60 s)${keyNote}`));
      pace?.tooLong?.(err);
      throw err;
    }
    if (RETRY_STATUSES.has(res.status)) pace?.refused(sentAt, asked);
    else pace?.succeeded();
    if (decision.reason === 'exhausted') {
      throw keyed(errorFromResponse(res, `${attempt > 1 ? `; gave up after ${attempt} attempts` : ''}${keyNote}`));
    }
    throw keyed(errorFromResponse(res));
  }

  /** Announces the wait and sleeps, or stops at once when it would pass the deadline. */
  async function wait(ms: number, what: string): Promise<void> {
    if (deadline && deps.now() + ms >= deadline.at) {
      throw deadlineReached(`${deadlineText} would pass before the next attempt (in ${seconds(ms)}), so chatctl stopped`);
    }
    deps.announce?.(`${what}; retrying in ${seconds(ms)}`);
    trace?.(`  waiting ${ms} ms`);
    try {
      await deps.sleep(ms, deps.signal);
    } catch {
      throw interrupted();
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
