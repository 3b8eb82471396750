// What create and rotate do with a success body (contract section 6): deliver
// the one-time secret first, render after, so no rendering failure can come
// before the secret is safe. One path for every destination, stdout
// included: the sinks, or the JSON document (--json), or the terminal.
//
// Before delivery starts the secret is kept in <config>/recovered/; that copy
// is removed once every destination holds the whole secret (exit 0) and kept,
// named on stderr with the endpoint and the fingerprint, otherwise (exit 13).
// So a failing sink, a closed or full stdout, an unrenderable answer, a
// signal or a kill cannot lose it. The copy comes first even for stdout: a
// terminal that is not reading (Ctrl-S) blocks the write where no signal
// handler can run, a file on a nearly full disk can take the last free
// block, and a large document goes out in pieces.
import type { Context, GlobalOptions } from '../../context.js';
import { oddSecretHint, oddSecretText, type SecretAnswer, type SecretResponse } from '../../api/schemas.js';
import { CliError, localError } from '../../errors/cli-error.js';
import { describeKeepFailure, keepSecret, type KeptSecret } from '../../secret/deliver.js';
import { CREDENTIAL_IN_SECRET, deliverAll, describeFailure, writeConfirmed, type Delivered, type DeliveryFailure } from '../../secret/deliver-all.js';
import { fingerprint } from '../../secret/fingerprint.js';
import type { SecretPlan } from '../../secret/plan.js';
import type { OutStream } from '../../output/io.js';
import type { Palette } from '../../output/colors.js';
import { stringifyJson } from '../../output/json.js';
import { escapeInline, shellQuote } from '../../output/sanitize.js';
import { reportError } from '../../errors/report.js';
import { exit13Details, newSecretHint } from '../../secret/new-secret-hint.js';


/**
 * The answer as the spec's envelope; an odd answer that carries a secret has
 * it kept under recovered/ and ends with exit 13, naming where, the endpoint
 * and the fingerprint.
 */
export function checkSecretAnswer(ctx: Context, answer: SecretAnswer, what: { endpointId?: string | undefined; idempotencyKey: string }): SecretResponse {
  if (answer.ok) return answer.body;
  const { odd } = answer;
  const secret = odd.kept;
  if (odd.read !== undefined) ctx.io.redactor.addSecret(odd.read);
  const id = odd.endpointId ?? what.endpointId ?? 'endpoint';
  const fp = fingerprint(secret);
  const head = `the server's answer is not the expected response, but the change was applied (Idempotency-Key ${what.idempotencyKey}) and it carries ${oddSecretText(odd, fp)} of endpoint ${escapeInline(id)}`;
  let path: string;
  try {
    path = keepSecret(ctx.configDir, id, secret, new Date(ctx.now())).path;
  } catch (err) {
    const cause = describeKeepFailure(err, ctx.configDir);
    throw localError('secret_not_delivered', `${head}; no recovery copy could be written (${cause}), so nothing holds it: the secret is lost`, {
      details: exit13Details({ endpointId: id, fingerprint: fp, recoveredPath: null }, { recoveryError: cause }),
      idempotencyKey: what.idempotencyKey,
      hint: newSecretHint({ endpointId: id, now: ctx.now() }),
    });
  }
  throw localError('secret_not_delivered', `${head}; it is kept in ${path} (mode 0600), not delivered`, {
    details: exit13Details({ endpointId: id, fingerprint: fp, recoveredPath: path }),
    hint: oddSecretHint(odd, path),
  });
}

export interface SecretResultOptions {
  /** The id asked for (rotate), used when the answer carries none. */
  endpointId?: string | undefined;
  /** The limit for an exec: command (tests make it short). */
  execTimeoutMs?: number | undefined;
  /** The request's Idempotency-Key, named if a second signal ends delivery. */
  idempotencyKey?: string | undefined;
}

export async function deliverSecretResult(
  ctx: Context,
  g: GlobalOptions,
  plan: SecretPlan,
  body: SecretResponse,
  summary: string,
  opts: SecretResultOptions = {},
): Promise<void> {
  const { endpoint, secret, secretAvailable } = body.data;
  if (typeof secret === 'string') ctx.io.redactor.addSecret(secret);
  const rawId = typeof endpoint.id === 'string' || typeof endpoint.id === 'number' ? String(endpoint.id) : opts.endpointId;
  const endpointId = rawId ?? 'endpoint';

  if (typeof secret !== 'string' || secret === '' || secretAvailable === false) {
    await renderAfter(ctx, g, plan, plan.sinks.length > 0 || plan.fallback !== 'json' ? withoutSecret(body, plan, []) : body, summary);
    throw withheld(ctx, body.data, rawId, secret, secretAvailable);
  }

  // Computed when first needed (node:crypto costs a few ms): a --json run that succeeds never needs it.
  let fpMemo: string | undefined;
  const fpOf = () => (fpMemo ??= fingerprint(secret));
  let kept: KeptSecret | undefined;
  let firstKeepError: unknown;
  try {
    kept = keepSecret(ctx.configDir, endpointId, secret, new Date(ctx.now()), { durable: false });
  } catch (err) {
    kept = undefined; // tried again below, if it is needed
    firstKeepError = err;
  }

  // A second signal ends the process at once: it still names the kept copy.
  const after = { endpointId, version: endpoint.version, answer: body.data, now: ctx.now() };
  ctx.setLastWords?.(() => reportError(forcedExit(after, fpOf(), kept?.path, opts.idempotencyKey, kept ? undefined : describeKeepFailure(firstKeepError, ctx.configDir)), ctx.io, Boolean(g.json), false));

  let delivered: Delivered[] = [];
  let failures: DeliveryFailure[] = [];
  if (plan.sinks.length > 0) {
    ({ delivered, failures } = await deliverAll(plan.sinks, { endpointId, secret }, {
      cwd: ctx.cwd,
      env: ctx.env,
      stdout: ctx.io.stdout,
      stderr: ctx.io.stderr,
      redactor: ctx.io.redactor,
      signal: ctx.signal,
      execTimeoutMs: opts.execTimeoutMs,
      captureExecOutput: Boolean(g.json),
    }));
  } else {
    // The fallback destinations: the JSON document or the terminal, written as one confirmed write.
    try {
      if (ctx.io.redactor.holdsCredential(secret)) throw new Error(CREDENTIAL_IN_SECRET);
      let text: string;
      if (plan.fallback === 'json') text = jsonDocument(ctx.io.stdout, body);
      else {
        const r = await loadRender();
        text = humanText(r, body, summary, ctx.io.paint.stdout, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }, ctx.io.columns) + r.renderSecretBlock(secret, ctx.io.paint.stdout, fpOf());
      }
      await writeConfirmed(ctx.io.stdout, text, ctx.signal);
      // (For --json the envelope is the record; nothing more is shown of this delivery.)
      if (plan.fallback !== 'json') delivered = [{ to: 'stdout', fingerprint: fpOf() }];
    } catch (err) {
      failures = [{ to: 'stdout', reason: describeFailure(err) }];
    }
  }

  if (failures.length === 0) {
    ctx.setLastWords?.(undefined);
    try {
      kept?.discard();
    } catch {
      /* a copy left in recovered/ is untidy, not a failure: every destination holds the secret */
    }
    if (plan.sinks.length > 0) await renderAfter(ctx, g, plan, withoutSecret(body, plan, delivered), summary, fpOf(), delivered);
    return;
  }

  kept?.persist();
  let where = kept?.path;
  let keepError: unknown;
  if (where === undefined) {
    try {
      where = keepSecret(ctx.configDir, endpointId, secret, new Date(ctx.now())).path;
    } catch (err) {
      keepError = err;
    }
  }
  if (plan.sinks.length > 0) await renderAfter(ctx, g, plan, withoutSecret(body, plan, delivered), summary, fpOf(), delivered);
  const error = notDelivered(ctx, { endpointId, fp: fpOf(), failures, delivered, where, keepError, serverRequestId: body.meta.requestId, idempotencyKey: opts.idempotencyKey, after });
  ctx.setLastWords?.(undefined);
  throw error;
}

/** What a second signal during delivery says before the process ends: exit 13, where the secret is (or that it is lost), the key. */
function forcedExit(after: Parameters<typeof newSecretHint>[0] & { endpointId: string }, fp: string, where: string | undefined, idempotencyKey: string | undefined, keepFailure?: string): CliError {
  const { endpointId } = after;
  const key = idempotencyKey ? ` (Idempotency-Key ${idempotencyKey})` : '';
  const head = `interrupted: the change was applied to endpoint ${escapeInline(endpointId)}${key}, and delivery of the signing secret ${fp} was cut short`;
  const details = exit13Details({ endpointId, version: after.version, fingerprint: fp, recoveredPath: where });
  if (where !== undefined) {
    return localError('secret_not_delivered', `${head}; it is kept in ${where} (mode 0600)`, {
      details,
      idempotencyKey,
      hint: `put it where it belongs, then delete ${where}`,
    });
  }
  return localError('secret_not_delivered', `${head}; no recovery copy could be written (${keepFailure ?? 'unknown error'}): it may not have reached every destination`, {
    details: { ...details, recoveryError: keepFailure ?? null },
    idempotencyKey,
    hint: `if a destination lacks it, ${newSecretHint(after)}`,
  });
}

/** The envelope as --json prints it after delivery: no secret; where it went instead. */
function withoutSecret(body: SecretResponse, plan: SecretPlan, delivered: Delivered[]): SecretResponse {
  const data: Record<string, unknown> = { ...body.data, secret: null };
  const file = plan.sinks.find((s) => s.kind === 'file');
  if (file && file.kind === 'file' && delivered.some((d) => d.to === file.to)) data.secretFile = file.path;
  if (plan.sinks.length > 0) data.secretDelivery = delivered;
  return { ...body, data: data as SecretResponse['data'] };
}

function jsonDocument(stdout: OutStream, value: unknown): string {
  return stringifyJson(value, stdout.isTTY ? 2 : undefined) + '\n';
}

type Render = typeof import('../../output/render.js');

/** The summary and the endpoint table; a record too odd to render is named, not fatal. */
function humanText(r: Render, body: SecretResponse, summary: string, paint: Palette, target: { color: boolean; tty: boolean }, columns: number): string {
  let table: string;
  try {
    table = r.renderEndpoint(body.data.endpoint, target, columns);
  } catch {
    table = '(the endpoint record could not be shown here; --json shows it)\n';
  }
  return r.renderSummary(summary, paint) + table;
}

// render.ts (and cli-table3) are needed only by human output: loaded on first use.
const loadRender = (): Promise<Render> => import('../../output/render.js');

/**
 * The result after delivery: the envelope with --json, else the summary, the
 * table and where the secret went. Best effort: stdout may be closed, the
 * record odd; the secret is already safe, so nothing here may throw.
 */
async function renderAfter(ctx: Context, g: GlobalOptions, plan: SecretPlan, body: SecretResponse, summary: string, fp?: string, delivered: Delivered[] = []): Promise<void> {
  // When the secret went to sinks, stdout is not one of its places: a copy the
  // server put in another field (a record echoing it) is scrubbed there too.
  const clean = (text: string) => (plan.sinks.length > 0 ? ctx.io.redactor.scrubAll(text) : text);
  try {
    if (g.json) {
      ctx.io.stdout.write(clean(jsonDocument(ctx.io.stdout, body)));
      return;
    }
    const r = await loadRender();
    // With `--secret-to stdout`, stdout holds the secret and nothing else: the result goes to stderr.
    const toStderr = plan.sinks.some((s) => s.kind === 'stdout');
    const out = toStderr ? ctx.io.stderr : ctx.io.stdout;
    const paint = toStderr ? ctx.io.paint.stderr : ctx.io.paint.stdout;
    const color = toStderr ? ctx.io.color.stderr : ctx.io.color.stdout;
    out.write(clean(humanText(r, body, summary, paint, { color, tty: out.isTTY }, ctx.io.columns) + (fp ? r.renderDelivery(fp, delivered, paint) : '')));
  } catch {
    /* the secret is delivered or kept; a failure to show the result must not hide that */
  }
}

/** The server applied the change but sent no usable secret: exit 13, with the way to a new one. */
function withheld(ctx: Context, data: SecretResponse['data'], id: string | undefined, secret: unknown, secretAvailable: boolean): CliError {
  const what = secret === null || secret === undefined ? 'secret: null' : secret === '' ? 'an empty secret' : 'a secret';
  return localError('secret_not_delivered', `the change was applied, but the signing secret is not available (the server answered ${what} and secretAvailable: ${String(secretAvailable)})`, {
      details: exit13Details({ endpointId: id, version: data.endpoint.version, fingerprint: null, recoveredPath: null }),
      hint: newSecretHint({ endpointId: id, version: data.endpoint.version, answer: data, now: ctx.now() }),
    }, );
}

interface NotDelivered {
  endpointId: string;
  fp: string;
  failures: DeliveryFailure[];
  delivered: Delivered[];
  where: string | undefined;
  keepError: unknown;
  serverRequestId: string;
  idempotencyKey: string | undefined;
  /** The endpoint after the change, for the details and the rotate command that gets a new secret. */
  after: Parameters<typeof newSecretHint>[0];
}

function notDelivered(ctx: Context, n: NotDelivered): CliError {
  const why = n.failures.map((f) => `${f.to}: ${f.reason}`).join('; ');
  const got = n.delivered.length > 0 ? ` (it did reach ${n.delivered.map((d) => d.to).join(', ')})` : '';
  const details = exit13Details(
    { endpointId: n.endpointId, version: n.after.version, fingerprint: n.fp, recoveredPath: n.where },
    { delivered: n.delivered, failed: n.failures, serverRequestId: n.serverRequestId },
  );
  const key = n.idempotencyKey ? ` (Idempotency-Key ${n.idempotencyKey})` : '';
  const head = `the change was applied to endpoint ${escapeInline(n.endpointId)}${key}, but the signing secret ${n.fp} was not delivered to ${why}${got}`;
  if (n.where !== undefined) {
    return localError('secret_not_delivered', `${head}; it is kept in ${n.where} (mode 0600)`, {
      details,
      idempotencyKey: n.idempotencyKey,
      hint: `put it where it belongs, then delete ${n.where}; or, ${newSecretHint(n.after)}`,
    });
  }
  // No recovery copy either. There is no safe last resort: the secret goes
  // only where it was asked to go (contract section 6), never to stderr, and
  // not onto a terminal that was not one of its destinations. So say exactly
  // what failed, where the secret still is (if a destination got it), and how
  // to get a new one.
  const cause = describeKeepFailure(n.keepError, ctx.configDir);
  const rotate = newSecretHint(n.after);
  const withCause = { ...details, recoveryError: cause };
  if (n.delivered.length > 0) {
    const holders = n.delivered.map((d) => d.to).join(', ');
    return localError('secret_not_delivered', `${head}; no recovery copy could be written either (${cause}), so only ${holders} holds it`, {
      details: withCause,
      idempotencyKey: n.idempotencyKey,
      hint: `copy it from ${holders} to the other destinations; or, ${rotate}`,
    });
  }
  return localError('secret_not_delivered', `${head}; no recovery copy could be written either (${cause}), so nothing holds it: the secret is lost`, {
    details: withCause,
    idempotencyKey: n.idempotencyKey,
    hint: rotate,
  });
}
