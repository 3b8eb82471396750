// What create and rotate do with their request and its answer, through the
// secret's custody (secret/custody.ts): the record written before sending,
// the answer's bytes on disk as they arrive, the secret delivered to every
// destination, then rendered, so no rendering failure can come before the
// secret is safe. One path for every destination, stdout included: the
// sinks, or the JSON document (--json), or the terminal.
import type { Context } from '../../context.js';
import type { Factory } from '../app.js';
import type { SecretAnswer, SecretResponse } from '../../api/schemas.js';
import type { CallHooks } from '../../http/client.js';
import {
  Custody,
  type CustodyRun,
  deliveryCutShort,
  type DeliveryResult,
  destinationFlags,
  type GivenDestinations,
  type Got,
  type Holder,
  type InDelivery,
  notAttempted,
  runCustody,
  type Settled,
} from '../../secret/custody.js';
import type { RecordedRequest } from '../../secret/record.js';
import { holdsNoSecret, recordedSecretAnswer } from '../../http/api-client.js';
import { CREDENTIAL_IN_SECRET, deliverAll, type Delivered, describeFailure, planSecret, type SecretPlan, writeConfirmed } from '../../secret/deliver.js';
import { fingerprint } from '../../secret/facts.js';
import type { OutStream, Palette } from '../../output/io.js';
import { ciReportWanted, jsonDocumentText, shellQuote, stringifyJson } from '../../output/json.js';
import { explainError, reportError } from '../../errors/explain.js';
import { isCliError } from '../../errors/cli-error.js';
import type { ReportRow } from '../../run/ci-report.js';

/** The run's custody, as a single create or rotate sees it: a re-run with the same key delivers what it kept. */
export function commandCustody(ctx: Context, scope: string, escrow?: CustodyRun['escrow'], given?: GivenDestinations): CustodyRun {
  return {
    ...runCustody(ctx, scope, (key) => `re-run the same command with --idempotency-key ${shellQuote(key)}: it delivers the kept secret without rotating again`),
    escrow,
    destination: given ? (id) => destinationFlags(given, id) : undefined,
  };
}

export interface SecretRequest {
  /** The request's identity and what it asks (the record's header). */
  req: RecordedRequest;
  /** Sends it (the client's create or rotate) with the record's tap. */
  send(hooks: CallHooks): Promise<SecretAnswer>;
  /** The summary line of the result. */
  summary(body: SecretResponse): string;
  /** The user gave the Idempotency-Key (--idempotency-key): a replay of an earlier run's request is possible. */
  keyGiven?: boolean;
}

/**
 * A create or rotate from record to retire: what an earlier run left of the
 * same request (same endpoint and key) is delivered instead of sending; a
 * superseded one ends 13. A dry run sends nothing and keeps nothing.
 */
export async function runSecretRequest(f: Factory, plan: SecretPlan, r: SecretRequest, opts: SecretResultOptions = {}): Promise<void> {
  if (!f.ctx.env.GITHUB_STEP_SUMMARY || f.state().dryRun) {
    await custodyOf(f, plan, r, opts);
    return;
  }
  // GITHUB_STEP_SUMMARY: the run's one row goes there, whatever its outcome (run/ci-report.ts).
  let row: ReportRow;
  try {
    const done = await custodyOf(f, plan, r, opts);
    row = { endpointId: done.endpointId, outcome: r.req.op === 'create' ? 'created' : 'rotated', version: done.version, fingerprint: done.fingerprint, exitCode: 0 };
  } catch (err) {
    if (isCliError(err)) await stepSummary(f, r, (ci) => ci.rowOfError(err, r.req.endpointId ?? undefined, explainError(err)));
    throw err;
  }
  await stepSummary(f, r, () => row);
}

type CiReportModule = typeof import('../../run/ci-report.js');

/** Appends the run's one row to the step summary; a summary that cannot be written is said, not fatal. */
async function stepSummary(f: Factory, r: SecretRequest, rowOf: (ci: CiReportModule) => ReportRow): Promise<void> {
  const { ctx } = f;
  const ci = await import('../../run/ci-report.js');
  const problem = ci.reportOne(
    { env: { GITHUB_STEP_SUMMARY: ctx.env.GITHUB_STEP_SUMMARY }, annotate: ctx.io.stderr, scrub: (t) => ctx.io.scrubber.scrub(t), command: `chatctl webhooks ${r.req.op}` },
    rowOf(ci),
    `chatctl webhooks ${r.req.op}`,
  );
  if (problem) ctx.io.notice(problem);
}

/** What the step summary shows of a delivered secret. */
interface Done {
  endpointId: string;
  version: number | null;
  fingerprint: string | null;
}

async function custodyOf(f: Factory, plan: SecretPlan, r: SecretRequest, opts: SecretResultOptions): Promise<Done> {
  const { ctx } = f;
  const state = f.state();
  if (state.dryRun) {
    await r.send({});
    return { endpointId: r.req.endpointId ?? '', version: null, fingerprint: null };
  }
  const run = commandCustody(ctx, r.req.scope, opts.escrow, opts.given);
  const custody = await Custody.begin(run, r.req, recordedSecretAnswer(r.req.endpointId ?? undefined));
  if (custody.next === 'superseded') throw custody.error!;
  let got: Got;
  if (custody.next === 'deliver') {
    got = custody.got!;
    ctx.io.notice(
      `the request with this Idempotency-Key was applied by an earlier run, which kept its secret (${custody.heldAt}); the server does not return the secret twice, so it is delivered from there, without sending again`,
    );
  } else {
    if (custody.resent) ctx.io.notice(`an earlier run sent this request and its outcome is not known: sending it again with the same Idempotency-Key, so it cannot be applied twice`);
    try {
      got = { answer: await r.send({ tap: custody.tap, mayHaveApplied: custody.resent }) };
    } catch (err) {
      custody.failed(err, holdsNoSecret.has(err as object));
      throw err;
    }
  }
  const resent = custody.next === 'deliver' || custody.resent ? true : r.keyGiven ? ('maybe' as const) : false;
  const outcome = await settleSingle(
    custody,
    got,
    resent,
    (secret, holder) => deliverTo(ctx, state.output.json, plan, secret, holder, got, r, opts),
    (cut) =>
      // A second signal ends the process at once: it still names the record.
      ctx.setLastWords?.(cut ? () => reportError(deliveryCutShort(cut), ctx.io, state.output.json, false) : undefined),
  );
  // A secret an earlier run kept comes without its answer: the result shows what is known of it.
  const body = outcome.body ?? ('kept' in got ? bodyWith(got, outcome.holder, '') : undefined);
  const withheld = !outcome.ok && outcome.fp === null;
  let unqueried: unknown;
  if (body && (plan.sinks.length > 0 || withheld)) {
    const shown = plan.sinks.length > 0 || plan.fallback !== 'json' ? withoutSecret(body, plan, outcome.delivered) : body;
    unqueried = await renderAfter(ctx, state.output.json, plan, shown, r.summary(body), outcome.fp ?? undefined, outcome.delivered);
  }
  if (!outcome.ok) {
    // Until now a second signal named the record (custody keeps the state after a failure); the error says it from here.
    ctx.setLastWords?.(undefined);
    throw outcome.error;
  }
  // The secret is where it was asked; only --query's output failed (exit 1).
  if (unqueried !== undefined) throw unqueried;
  return { endpointId: outcome.holder.endpointId, version: typeof outcome.holder.version === 'number' ? outcome.holder.version : null, fingerprint: outcome.fp };
}

/** Custody's accept → deliver → finish for one command: the record goes as soon as every destination holds the secret. */
async function settleSingle(
  custody: Custody,
  got: Got,
  resent: boolean | 'maybe',
  deliver: (secret: string, holder: Holder) => Promise<DeliveryResult>,
  cutShort: (d: InDelivery | undefined) => void,
): Promise<Settled> {
  const accepted = await custody.accept(got, { resent });
  if (!accepted.ok) return accepted.outcome;
  cutShort(accepted.delivery);
  const outcome = await custody.finish(accepted, await deliver(accepted.secret, accepted.holder).catch(notAttempted));
  if (outcome.ok) {
    cutShort(undefined);
    custody.retire();
  }
  return outcome;
}

/** Every destination of the plan, or the fallback (the JSON document or the terminal) as one confirmed write. */
async function deliverTo(ctx: Context, json: boolean, plan: SecretPlan, secret: string, holder: Holder, got: { answer: SecretAnswer } | { kept: string }, r: SecretRequest, opts: SecretResultOptions) {
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
        // A first Ctrl-C while the answer was awaited is spent: the secret is in hand and goes where it was asked.
        signal: ctx.signal.aborted ? new AbortController().signal : ctx.signal,
        execTimeoutMs: opts.execTimeoutMs,
        // --json: stderr holds JSON lines only; a failing command's output goes into its failure.
        captureExecOutput: json,
        // A CI report says what a failing exec: destination said (run/ci-report.ts).
        keepExecOutput: ciReportWanted(ctx.env),
      },
    );
  }
  try {
    if (ctx.io.scrubber.holdsCredential(secret)) throw new Error(CREDENTIAL_IN_SECRET);
    const body = bodyWith(got, holder, secret);
    let text: string;
    // The whole document, never --query's part of it: planSecret refuses --query without a destination.
    if (plan.fallback === 'json') text = jsonDocument(ctx.io.stdout, body);
    else {
      const rr = await loadRender();
      text =
        humanText(rr, body, r.summary(body), ctx.io.paint.stdout, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }, ctx.io.columns) +
        rr.renderSecretBlock(secret, ctx.io.paint.stdout, fingerprint(secret));
    }
    await writeConfirmed(ctx.io.stdout, text, ctx.signal.aborted ? undefined : ctx.signal);
    // (For --json the envelope is the record; nothing more is shown of this delivery.)
    return { delivered: plan.fallback === 'json' ? [] : [{ to: 'stdout', fingerprint: fingerprint(secret) }], failures: [] };
  } catch (err) {
    return { delivered: [], failures: [{ to: 'stdout', reason: describeFailure(err) }] };
  }
}

/** The envelope that carries the secret: the answer's, or, for a secret an earlier run kept, one built from what is known. */
function bodyWith(got: { answer: SecretAnswer } | { kept: string }, holder: Holder, secret: string): SecretResponse {
  if ('answer' in got && got.answer.ok) return { ...got.answer.body, data: { ...got.answer.body.data, secret, secretAvailable: true } };
  const endpoint = { id: holder.endpointId, ...(typeof holder.version === 'number' ? { version: holder.version } : {}) };
  return { data: { endpoint, secret, secretAvailable: true }, meta: { requestId: holder.serverRequestId ?? null } } as unknown as SecretResponse;
}

/** Where a create's or rotate's secret goes, from its flags and the run, decided before anything is sent. */
export function secretPlanOf(f: Factory, opts: { secretTo?: string[] | undefined; secretFile?: string | undefined; force?: boolean | undefined }, endpointId?: string): SecretPlan {
  const { ctx } = f;
  const state = f.state();
  return planSecret({
    secretTo: opts.secretTo,
    secretFile: opts.secretFile,
    force: Boolean(opts.force),
    json: state.output.json,
    query: state.output.query !== undefined,
    stdoutIsTTY: ctx.io.stdout.isTTY,
    stdoutDiscards: ctx.io.stdout.discards,
    dryRun: state.dryRun,
    cwd: ctx.cwd,
    env: ctx.env,
    endpointId,
  });
}

export interface SecretResultOptions {
  /** The limit for an exec: command (tests make it short). */
  execTimeoutMs?: number | undefined;
  /** The destinations as the user gave them: the new-secret hint repeats them. */
  given?: GivenDestinations | undefined;
  /** --escrow: custody's hook (commands/webhooks/escrow-flags.ts). */
  escrow?: CustodyRun['escrow'];
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
 * record odd; the secret is already safe, so nothing here may throw. What
 * it returns is the error of a --query that could not be applied to the
 * document, for the caller to throw once custody is done.
 */
async function renderAfter(ctx: Context, json: boolean, plan: SecretPlan, body: SecretResponse, summary: string, fp?: string, delivered: Delivered[] = []): Promise<unknown> {
  // When the secret went to sinks, stdout is not one of its places: a copy the
  // server put in another field (a record echoing it) is scrubbed there too.
  const clean = (text: string) => (plan.sinks.length > 0 ? ctx.io.scrubber.scrub(text) : text);
  try {
    if (json) {
      let text: string;
      try {
        text = jsonDocumentText(ctx.io, body);
      } catch (err) {
        return err; // --query could not be applied to this document: the caller reports it once custody is done
      }
      ctx.io.stdout.write(clean(text));
      return undefined;
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
