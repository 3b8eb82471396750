// The steps every webhook command shares after its input is checked:
// scope → request → dry run or send with retries → parsed success body.
import type { Context, GlobalOptions } from '../../context.js';
import { configStoreFor } from '../../config/store.js';
import { requireToken, resolveConnection, resolveRequestSettings, resolveToken, selectProfile, type Connection } from '../../scope/resolve.js';
import { deadlineFrom, sendWithRetries, type ApiRequest } from '../../http/client.js';
import { parseJson } from '../../http/classify.js';
import { invalidResponse } from '../../errors/cli-error.js';
import { redactHeaders } from '../../output/redact.js';
import { escapeControl } from '../../output/sanitize.js';
import type * as z from 'zod/mini';

export interface RequestSpec {
  path: (conn: Connection) => string;
  body: object;
  idempotencyKey?: string | undefined;
}

export function userAgent(ctx: Context): string {
  return `chatctl/${ctx.version} node/${process.versions.node}`;
}

/** Sends the request; resolves with the parsed body, or undefined after --dry-run. */
export async function callApi<T>(ctx: Context, g: GlobalOptions, spec: RequestSpec, schema: z.ZodMiniType<T>): Promise<T | undefined> {
  // --deadline counts from here: the request path, retries and waits.
  const startedAt = ctx.now();
  const flags = { ...g, noInput: g.input === false };
  const config = configStoreFor(ctx).read();
  const selected = selectProfile(flags, ctx.env, config);
  const conn = resolveConnection(flags, ctx.env, selected);
  const settings = resolveRequestSettings(flags, ctx.env);
  // A dry run shows the request with the token redacted, so it needs none.
  const token = g.dryRun ? (resolveToken(ctx.env, selected)?.token ?? '') : requireToken(ctx.env, selected);
  ctx.io.redactor.addCredential(token);
  ctx.io.redactor.addCredential(conn.csrfToken);

  const headers: Record<string, string> = {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/json',
    Accept: 'application/json',
    Origin: conn.origin,
    'x-service-csrf': conn.csrfToken,
    'User-Agent': userAgent(ctx),
  };
  if (spec.idempotencyKey !== undefined) headers['Idempotency-Key'] = spec.idempotencyKey;
  const req: ApiRequest = {
    method: 'POST',
    url: conn.baseUrl + spec.path(conn),
    headers,
    body: JSON.stringify(spec.body),
    idempotencyKey: spec.idempotencyKey,
  };

  if (g.dryRun) {
    printDryRun(ctx, g, req, spec.body);
    return undefined;
  }

  const retry = { maxRetries: settings.maxRetries, timeoutMs: settings.timeoutMs, deadline: deadlineFrom(startedAt, settings.deadlineMs) };
  const res = await sendWithRetries(req, retry, {
    transport: await ctx.transport(),
    now: ctx.now,
    sleep: ctx.sleep,
    randomUUID: ctx.randomUUID,
    random: ctx.random,
    signal: ctx.signal,
    trace: g.debug ? (line) => ctx.io.stderr.write(`[debug] ${escapeControl(line)}\n`) : undefined,
    // Each wait, on a terminal or not (CI logs); io.notice is muted by --json and --quiet.
    announce: (line) => ctx.io.notice(escapeControl(line)),
  });
  const parsed = schema.safeParse(parseJson(res.body));
  if (!parsed.success) {
    const keyNote = spec.idempotencyKey ? `; the change may have been applied (Idempotency-Key ${spec.idempotencyKey})` : '';
    throw invalidResponse(`the server answered ${res.status} with a body that is not the expected response${keyNote}`, {
      status: res.status,
      idempotencyKey: spec.idempotencyKey,
    });
  }
  return parsed.data;
}

function printDryRun(ctx: Context, g: GlobalOptions, req: ApiRequest, body: object): void {
  const headers = redactHeaders({ ...req.headers });
  if (g.json) {
    ctx.io.stdout.write(JSON.stringify({ dryRun: true, request: { method: req.method, url: req.url, headers, body } }) + '\n');
  } else {
    const lines = [`${req.method} ${req.url}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'x-request-id: (a new UUID for each attempt)', '', JSON.stringify(body, null, 2), ''];
    ctx.io.stdout.write(lines.join('\n'));
  }
  ctx.io.notice('dry run: nothing was sent');
}
