// The webhooks client of this run, built from the run-state: the scope,
// the token, the retry settings and the transport (or the dry-run one).
import type { Context } from '../context.js';
import { createWebhooksClient, dryRunTransport, type ClientConfig, type WebhooksClient } from '../http/api-client.js';
import { deadlineFrom, type HttpDeps, type RetrySettings, type WaitingForAnswer } from '../http/client.js';
import { redactHeaders } from '../output/scrub.js';
import { escapeInline, jsonDocumentText, shellQuote } from '../output/json.js';
import { CliError, EXIT, type ExitCode } from '../errors/cli-error.js';

const SIGNAL_EXIT: Record<string, ExitCode> = { SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated, SIGHUP: EXIT.hangup };
import { reportError } from '../errors/explain.js';
import type { WireRequest } from '../http/transport.js';
import type { RunState } from './state.js';
import type { RequestSettings } from '../http/settings.js';

export function userAgent(ctx: Pick<Context, 'version'>): string {
  return `chatctl/${ctx.version} node/${process.versions.node}`;
}

/** What a `rotate --from` run changes in the client its items share. */
export interface ClientExtras {
  /** What requests in flight listen to instead of Ctrl-C. */
  requestSignal?: AbortSignal | undefined;
  agent?: import('node:http').Agent | undefined;
  /** false: retry waits are not announced one by one (a progress line shows them). */
  announce?: boolean | undefined;
  rerun?: ((idempotencyKey: string) => string) | undefined;
  /** What a signal during the wait for a sent request's answer does (default: a single command's notice and last words). */
  waiting?: HttpDeps['waiting'];
}

/** The client a command gets from its factory, with when its --deadline ends. */
export type RunClient = WebhooksClient & { deadlineAt: number };

export async function webhooksClient(ctx: Context, state: RunState, extras: ClientExtras = {}): Promise<RunClient> {
  const cfg = await clientConfig(ctx, state, extras);
  return Object.assign(createWebhooksClient(cfg), { deadlineAt: cfg.settings.deadline!.at });
}

/** Everything a request of this run needs: scope, credentials, retry settings, the transport (or the dry-run one). */
export async function clientConfig(ctx: Context, state: RunState, extras: ClientExtras = {}): Promise<ClientConfig> {
  // --deadline counts from here: the request, its retries and their waits.
  const startedAt = ctx.now();
  const conn = state.connection();
  // A dry run shows the request with the token redacted, so it needs none.
  const token = state.dryRun ? (state.presetToken() ?? '') : await state.requireToken();
  ctx.io.scrubber.addToken(token);
  ctx.io.scrubber.addCredential(conn.csrfToken);
  const transport = state.dryRun ? dryRunTransport((req) => printDryRun(ctx, state, req)) : await ctx.transport();
  return {
    rerun: extras.rerun,
    baseUrl: conn.baseUrl,
    scope: conn.scope,
    token,
    origin: conn.origin,
    csrfToken: conn.csrfToken,
    userAgent: userAgent(ctx),
    settings: retrySettings(state.settings(), startedAt),
    deps: {
      requestSignal: extras.requestSignal,
      agent: extras.agent,
      waiting: extras.waiting ?? ((w) => waitingForAnswer(ctx, state, w)),
      transport,
      now: ctx.now,
      sleep: ctx.sleep,
      randomUUID: ctx.randomUUID,
      random: ctx.random,
      signal: ctx.signal,
      trace: state.output.debug ? (line) => ctx.io.stderr.write(`[debug] ${escapeInline(line)}\n`) : undefined,
      // Each wait, on a terminal or not (CI logs); io.notice is muted by --json and --quiet.
      announce: extras.announce === false ? undefined : (line) => ctx.io.notice(escapeInline(line)),
    },
  };
}

function retrySettings(s: RequestSettings, startedAt: number): RetrySettings {
  return { maxRetries: s.maxRetries, timeoutMs: s.timeoutMs, deadline: deadlineFrom(startedAt, s.deadlineMs) };
}

function printDryRun(ctx: Context, state: RunState, req: WireRequest): void {
  const headers = redactHeaders({ ...req.headers });
  delete headers['x-request-id'];
  const body: unknown = JSON.parse(req.body);
  if (state.output.json) {
    ctx.io.stdout.write(jsonDocumentText(ctx.io, { dryRun: true, request: { method: req.method, url: req.url, headers, body } }, 'one-line'));
  } else {
    const lines = [`${req.method} ${req.url}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'x-request-id: (a new UUID for each attempt)', '', JSON.stringify(body, null, 2), ''];
    ctx.io.stdout.write(lines.join('\n'));
  }
  ctx.io.notice('dry run: nothing was sent');
}

/**
 * A signal came while a sent create or rotate waits for its answer: said
 * once, and what a second signal says before the process ends (130 or the
 * signal's code, naming the key and the record a re-run delivers from).
 */
function waitingForAnswer(ctx: Context, state: RunState, w: WaitingForAnswer | undefined): void {
  if (!w) {
    ctx.setLastWords?.(undefined);
    return;
  }
  const key = shellQuote(w.idempotencyKey);
  const how = w.graceMs === null ? 'a second Ctrl-C abandons it' : `for up to ${w.graceMs / 1000} s (${w.signal})`;
  sayWaiting(ctx, `waiting for the server's answer, which carries the new secret (Idempotency-Key ${w.idempotencyKey}); ${how}`);
  const code = SIGNAL_EXIT[w.signal] ?? EXIT.interrupted;
  ctx.setLastWords?.(() =>
    reportError(
      new CliError('interrupted', `interrupted: the answer to the request with Idempotency-Key ${w.idempotencyKey} was abandoned; the change may have been applied`, code, {
        idempotencyKey: w.idempotencyKey,
        hint: `re-run the same command with --idempotency-key ${key}: the same key is never applied twice, and an answer that reached chatctl before it was abandoned is delivered from recovered/`,
      }),
      ctx.io,
      state.output.json,
      false,
    ),
  );
}

/**
 * What a signal during the wait for a sent request's answer says: a notice in
 * human mode, and on a terminal whatever the mode (the person who pressed
 * Ctrl-C reads it there); --json into a pipe keeps stderr to its one error line.
 */
export function sayWaiting(ctx: Context, text: string): void {
  if (!ctx.io.quiet) ctx.io.notice(text);
  else if (ctx.io.stderr.isTTY) ctx.io.stderr.write(`chatctl: ${text}\n`);
}
