// The webhooks client of this run, built from the invocation: the scope,
// the token, the retry settings and the transport (or the dry-run one).
import type { Context } from '../context.js';
import { createWebhooksClient, dryRunTransport, type ClientConfig, type WebhooksClient } from '../api/client.js';
import { deadlineFrom } from '../http/client.js';
import { redactHeaders } from '../output/redact.js';
import { escapeInline } from '../output/sanitize.js';
import type { WireRequest } from '../http/transport.js';
import type { Invocation } from './invocation.js';
import type { RequestSettings } from '../scope/resolve.js';
import type { RetrySettings } from '../http/client.js';

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
}

/** The client a command gets from its factory, with when its --deadline ends. */
export type RunClient = WebhooksClient & { deadlineAt: number };

export async function webhooksClient(ctx: Context, inv: Invocation, extras: ClientExtras = {}): Promise<RunClient> {
  const cfg = await clientConfig(ctx, inv, extras);
  return Object.assign(createWebhooksClient(cfg), { deadlineAt: cfg.settings.deadline!.at });
}

/** Everything a request of this run needs: scope, credentials, retry settings, the transport (or the dry-run one). */
export async function clientConfig(ctx: Context, inv: Invocation, extras: ClientExtras = {}): Promise<ClientConfig> {
  // --deadline counts from here: the request, its retries and their waits.
  const startedAt = ctx.now();
  const conn = inv.connection();
  // A dry run shows the request with the token redacted, so it needs none.
  const token = inv.dryRun ? (inv.presetToken() ?? '') : await inv.requireToken();
  ctx.io.scrubber.addToken(token);
  ctx.io.scrubber.addCredential(conn.csrfToken);
  const transport = inv.dryRun ? dryRunTransport((req) => printDryRun(ctx, inv, req)) : await ctx.transport();
  return {
    rerun: extras.rerun,
    baseUrl: conn.baseUrl,
    scope: conn.scope,
    token,
    origin: conn.origin,
    csrfToken: conn.csrfToken,
    userAgent: userAgent(ctx),
    settings: retrySettings(inv.settings(), startedAt),
    deps: {
      requestSignal: extras.requestSignal,
      agent: extras.agent,
      transport,
      now: ctx.now,
      sleep: ctx.sleep,
      randomUUID: ctx.randomUUID,
      random: ctx.random,
      signal: ctx.signal,
      trace: inv.output.debug ? (line) => ctx.io.stderr.write(`[debug] ${escapeInline(line)}\n`) : undefined,
      // Each wait, on a terminal or not (CI logs); io.notice is muted by --json and --quiet.
      announce: extras.announce === false ? undefined : (line) => ctx.io.notice(escapeInline(line)),
    },
  };
}

function retrySettings(s: RequestSettings, startedAt: number): RetrySettings {
  return { maxRetries: s.maxRetries, timeoutMs: s.timeoutMs, deadline: deadlineFrom(startedAt, s.deadlineMs) };
}

function printDryRun(ctx: Context, inv: Invocation, req: WireRequest): void {
  const headers = redactHeaders({ ...req.headers });
  delete headers['x-request-id'];
  const body: unknown = JSON.parse(req.body);
  if (inv.output.json) {
    ctx.io.stdout.write(JSON.stringify({ dryRun: true, request: { method: req.method, url: req.url, headers, body } }) + '\n');
  } else {
    const lines = [`${req.method} ${req.url}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'x-request-id: (a new UUID for each attempt)', '', JSON.stringify(body, null, 2), ''];
    ctx.io.stdout.write(lines.join('\n'));
  }
  ctx.io.notice('dry run: nothing was sent');
}
