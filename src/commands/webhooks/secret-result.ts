// What create and rotate do with a success body: deliver the one-time
// secret first (secret/custody.ts: a kept copy, every destination, the copy
// discarded or kept with exit 13), render after, so no rendering failure can
// come before the secret is safe. One path for every destination, stdout
// included: the sinks, or the JSON document (--json), or the terminal.
import type { Context, GlobalOptions } from '../../context.js';
import type { Factory } from '../app.js';
import type { SecretAnswer, SecretResponse } from '../../api/schemas.js';
import { deliverInCustody, deliveryCutShort, keepOddAnswer, secretWithheld, type Holder } from '../../secret/custody.js';
import { CREDENTIAL_IN_SECRET, deliverAll, describeFailure, writeConfirmed, type Delivered } from '../../secret/deliver-all.js';
import { fingerprint } from '../../secret/fingerprint.js';
import { readKeptCopy } from '../../secret/deliver.js';
import { planSecret, type SecretPlan } from '../../secret/plan.js';
import type { OutStream } from '../../output/io.js';
import type { Palette } from '../../output/colors.js';
import { stringifyJson } from '../../output/json.js';
import { reportError } from '../../errors/report.js';

/**
 * The answer as the spec's envelope; an odd answer that carries a secret has
 * it kept under recovered/ and ends with exit 13, naming where, the endpoint
 * and the fingerprint.
 */
export function checkSecretAnswer(ctx: Context, answer: SecretAnswer, what: { endpointId?: string | undefined; idempotencyKey: string }): SecretResponse {
  if (answer.ok) return answer.body;
  const { odd } = answer;
  if (odd.read !== undefined) ctx.io.scrubber.addSecret(odd.read);
  // (An answer naming another endpoint is kept under the one asked for.)
  const endpointId = (odd.whole === 'endpoint' ? what.endpointId : undefined) ?? odd.endpointId ?? what.endpointId ?? 'endpoint';
  throw keepOddAnswer(odd, { endpointId, idempotencyKey: what.idempotencyKey }, ctx);
}

/** Where a create's or rotate's secret goes, from its flags and the run, decided before anything is sent. */
export function secretPlanOf(f: Factory, opts: { secretTo?: string[] | undefined; secretFile?: string | undefined; force?: boolean | undefined }, endpointId?: string): SecretPlan {
  const { ctx } = f;
  const g = f.globals();
  return planSecret({
    secretTo: opts.secretTo,
    secretFile: opts.secretFile,
    force: Boolean(opts.force),
    json: Boolean(g.json),
    stdoutIsTTY: ctx.io.stdout.isTTY,
    stdoutDiscards: ctx.io.stdout.discards,
    dryRun: Boolean(g.dryRun),
    cwd: ctx.cwd,
    env: ctx.env,
    endpointId,
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

export async function deliverSecretResult(ctx: Context, g: GlobalOptions, plan: SecretPlan, body: SecretResponse, summary: string, opts: SecretResultOptions = {}): Promise<void> {
  const { endpoint } = body.data;
  const rawId = typeof endpoint.id === 'string' || typeof endpoint.id === 'number' ? String(endpoint.id) : opts.endpointId;
  const holder = holderOf(body, rawId ?? 'endpoint', opts.idempotencyKey);
  body = withKeptCopy(ctx, body, holder);
  const { secret, secretAvailable } = body.data;
  if (typeof secret === 'string') ctx.io.scrubber.addSecret(secret);

  if (typeof secret !== 'string' || secret === '' || secretAvailable === false) {
    await renderAfter(ctx, g, plan, plan.sinks.length > 0 || plan.fallback !== 'json' ? withoutSecret(body, plan, []) : body, summary);
    throw secretWithheld({ ...holder, endpointId: rawId ?? 'ENDPOINT_ID' }, { secret, secretAvailable }, ctx.now());
  }

  const outcome = await deliverInCustody(
    secret,
    holder,
    async () => {
      if (plan.sinks.length > 0) {
        return deliverAll(
          plan.sinks,
          { endpointId: holder.endpointId, secret },
          {
            cwd: ctx.cwd,
            env: ctx.env,
            stdout: ctx.io.stdout,
            stderr: ctx.io.stderr,
            scrubber: ctx.io.scrubber,
            signal: ctx.signal,
            execTimeoutMs: opts.execTimeoutMs,
            // --json: stderr holds JSON lines only; a failing command's output goes into its failure.
            captureExecOutput: Boolean(g.json),
          },
        );
      }
      // The fallback destinations: the JSON document or the terminal, written as one confirmed write.
      try {
        if (ctx.io.scrubber.holdsCredential(secret)) throw new Error(CREDENTIAL_IN_SECRET);
        let text: string;
        if (plan.fallback === 'json') text = jsonDocument(ctx.io.stdout, body);
        else {
          const r = await loadRender();
          text =
            humanText(r, body, summary, ctx.io.paint.stdout, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }, ctx.io.columns) +
            r.renderSecretBlock(secret, ctx.io.paint.stdout, fingerprint(secret));
        }
        await writeConfirmed(ctx.io.stdout, text, ctx.signal);
        // (For --json the envelope is the record; nothing more is shown of this delivery.)
        return { delivered: plan.fallback === 'json' ? [] : [{ to: 'stdout', fingerprint: fingerprint(secret) }], failures: [] };
      } catch (err) {
        return { delivered: [], failures: [{ to: 'stdout', reason: describeFailure(err) }] };
      }
    },
    ctx,
    {
      // A second signal ends the process at once: it still names the kept copy.
      delivering: (state) => ctx.setLastWords?.(state ? () => reportError(deliveryCutShort(state), ctx.io, Boolean(g.json), false) : undefined),
    },
  );
  if (plan.sinks.length > 0) await renderAfter(ctx, g, plan, withoutSecret(body, plan, outcome.delivered), summary, outcome.fp, outcome.delivered);
  if (!outcome.ok) {
    // Until now a second signal named the copy (custody keeps the state after a failure); the error says it from here.
    ctx.setLastWords?.(undefined);
    throw outcome.error;
  }
}

/**
 * A request re-sent with the key of one whose run was killed while it held
 * the secret: the server replays its answer without the secret, but that
 * run kept a copy named after the key, which is delivered now.
 */
function withKeptCopy(ctx: Context, body: SecretResponse, holder: Holder): SecretResponse {
  const { secret, secretAvailable } = body.data;
  if ((typeof secret === 'string' && secret !== '' && secretAvailable !== false) || holder.idempotencyKey === undefined) return body;
  const copy = readKeptCopy(ctx.configDir, holder.endpointId, holder.idempotencyKey);
  const kept = copy?.bytes.toString('utf8');
  if (!kept) return body;
  ctx.io.notice(`the server does not return the secret twice; delivering the copy kept by an earlier run with this Idempotency-Key (${copy!.path})`);
  return { ...body, data: { ...body.data, secret: kept, secretAvailable: true } };
}

/** Whose secret this answer carries, for custody's messages: the endpoint, its new version, an overlap's end. */
function holderOf(body: SecretResponse, endpointId: string, idempotencyKey: string | undefined): Holder {
  const { endpoint } = body.data;
  return { endpointId, idempotencyKey, version: typeof endpoint.version === 'number' ? endpoint.version : null, answer: body.data, serverRequestId: body.meta.requestId };
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
  const clean = (text: string) => (plan.sinks.length > 0 ? ctx.io.scrubber.scrub(text) : text);
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
