// Sends one API request: a fresh x-request-id per attempt, the same
// Idempotency-Key on every attempt, retries per retry.ts, --debug traces and
// TTY wait notices. Resolves with a 2xx response; everything else becomes a
// CliError here, so callers handle success only.
import { CliError, interrupted } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { redactHeaders, redactSecretInBody } from '../output/redact.js';
import { errorFromResponse, headerValue } from './classify.js';
import { decideRetry } from './retry.js';
import { MAX_BODY_BYTES, isTransportError, type Transport, type WireRequest, type WireResponse } from './transport.js';

export interface HttpDeps {
  transport: Transport;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  randomUUID(): string;
  random(): number;
  signal: AbortSignal;
  /** --debug: one line at a time, to stderr (already redacted here). */
  trace?: ((line: string) => void) | undefined;
  /** Wait notices, on a TTY only. */
  announce?: ((line: string) => void) | undefined;
}

export interface RetrySettings {
  maxRetries: number;
  timeoutMs: number;
}

export interface ApiRequest extends WireRequest {
  /** Set for create and rotate: named in the message when the outcome is unknown. */
  idempotencyKey?: string | undefined;
}

export async function sendWithRetries(req: ApiRequest, settings: RetrySettings, deps: HttpDeps): Promise<WireResponse> {
  const attempts = settings.maxRetries + 1;
  const keyNote = req.idempotencyKey
    ? `; Idempotency-Key ${req.idempotencyKey}: re-run with --idempotency-key ${req.idempotencyKey} so the change cannot be applied twice`
    : '';
  for (let attempt = 1; ; attempt++) {
    if (deps.signal.aborted) throw interrupted();
    const headers = { ...req.headers, 'x-request-id': deps.randomUUID() };
    traceRequest(deps, req, headers, attempt, attempts);
    const started = deps.now();
    let res: WireResponse;
    try {
      res = await deps.transport(
        { method: req.method, url: req.url, headers, body: req.body },
        { timeoutMs: settings.timeoutMs, maxBodyBytes: MAX_BODY_BYTES, signal: deps.signal },
      );
    } catch (err) {
      if (!isTransportError(err)) throw err;
      deps.trace?.(`< attempt ${attempt} failed after ${deps.now() - started} ms: ${err.message}`);
      if (err.failure === 'aborted') throw interrupted();
      if (err.failure === 'truncated' || err.failure === 'too_large') {
        throw new CliError('invalid_response', `${err.message}${keyNote}`, EXIT.unexpected, { status: err.status ?? null });
      }
      // The server answered (a status line came) but the body did not finish
      // in time: the change may be applied, so this is reported, not retried.
      if (err.failure === 'timeout' && err.status !== undefined) {
        throw new CliError('timeout', `the server answered ${err.status} but ${err.message}${keyNote}`, EXIT.unavailable, { status: err.status });
      }
      const failure = err.failure === 'timeout' ? 'timeout' : 'network';
      const decision = decideRetry({ attempt, maxRetries: settings.maxRetries, failure, nowMs: deps.now(), random: deps.random });
      if (decision.kind === 'stop') {
        const gaveUp = attempt > 1 ? `; gave up after ${attempt} attempts` : '';
        throw new CliError(failure === 'timeout' ? 'timeout' : 'network_error', `${err.message}${gaveUp}${keyNote}`, EXIT.unavailable);
      }
      await wait(deps, decision.delayMs, `${decision.reason}, retrying in ${seconds(decision.delayMs)}, attempt ${attempt + 1} of ${attempts}`);
      continue;
    }
    traceResponse(deps, res, deps.now() - started);
    if (res.status >= 200 && res.status < 300) return res;

    const decision = decideRetry({
      attempt,
      maxRetries: settings.maxRetries,
      failure: res.status,
      retryAfter: headerValue(res, 'retry-after'),
      nowMs: deps.now(),
      random: deps.random,
    });
    if (decision.kind === 'retry') {
      await wait(deps, decision.delayMs, `${decision.reason}, retrying in ${seconds(decision.delayMs)}, attempt ${attempt + 1} of ${attempts}`);
      continue;
    }
    if (decision.reason === 'retry-after-too-long') {
      throw errorFromResponse(
        res,
        `; the server asked to retry after ${Math.round(decision.retryAfterMs! / 1000)} s, longer than chatctl waits (60 s)${keyNote}`,
      );
    }
    if (decision.reason === 'exhausted') {
      throw errorFromResponse(res, `${attempt > 1 ? `; gave up after ${attempt} attempts` : ''}${keyNote}`);
    }
    throw errorFromResponse(res);
  }
}

async function wait(deps: HttpDeps, ms: number, notice: string): Promise<void> {
  deps.announce?.(notice);
  deps.trace?.(`  waiting ${ms} ms`);
  try {
    await deps.sleep(ms, deps.signal);
  } catch {
    throw interrupted();
  }
}

const seconds = (ms: number) => (ms < 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

function traceRequest(deps: HttpDeps, req: ApiRequest, headers: Record<string, string>, attempt: number, attempts: number): void {
  if (!deps.trace) return;
  deps.trace(`> ${req.method} ${req.url} (attempt ${attempt} of ${attempts})`);
  for (const [k, v] of Object.entries(redactHeaders(headers))) deps.trace(`> ${k}: ${v}`);
  deps.trace(`> ${req.body}`);
}

function traceResponse(deps: HttpDeps, res: WireResponse, ms: number): void {
  if (!deps.trace) return;
  deps.trace(`< ${res.status} in ${ms} ms`);
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
  for (const [k, v] of Object.entries(redactHeaders(flat))) deps.trace(`< ${k}: ${v}`);
  if (res.body) deps.trace(`< ${redactSecretInBody(res.body)}`);
}
