// What create and rotate share once their own flags are read: the key, where
// the secret goes, the re-run line, and custody (secret/custody.ts): recorded
// before sending, delivered, then rendered, so no rendering failure can come
// before the secret is safe.
import type { Context } from '../../context.js';
import { escrowOf, sayWaiting, type Factory, type RunClient } from '../app.js';
import type { SecretAnswer, SecretResponse } from '../../api/schemas.js';
import type { CallHooks, WaitingForAnswer } from '../../http/client.js';
import { Custody, deliveryCutShort, destinationFlags, keptByEarlierRun, keptByEarlierRunError, notAttempted, runCustody } from '../../secret/custody.js';
import type { CustodyRun, GivenDestinations, Got, Holder, Settled } from '../../secret/custody.js';
import { scopeKey, type RecordedRequest } from '../../secret/record.js';
import { holdsNoSecret, recordedSecretAnswer } from '../../http/api-client.js';
import { CREDENTIAL_IN_SECRET, deliverAll, describeFailure, planSecret, writeConfirmed, type Delivered, type SecretPlan } from '../../secret/deliver.js';
import { EndpointFacts, fingerprint, noteConflict } from '../../secret/facts.js';
import type { EscrowFlags } from '../../secret/escrow.js';
import type { Prompter } from '../../prompts/prompter.js';
import { ciReportWanted, escapeInline, jsonDocumentText, stringifyJson } from '../../output/json.js';
import type { Palette } from '../../output/io.js';
import { CliError, EXIT, isCliError, SIGNAL_EXIT, usageError, type RerunContext } from '../../errors/cli-error.js';
import { VERSION_SOURCES, explainError, missingFlagError, reportError, rerunWords, sameRequestCommand, withRerun } from '../../errors/explain.js';
import { checkIdempotencyKey } from '../../input/parse.js';
import type { ReportRow } from '../../system/ci-report.js';

export type SecretFlags = EscrowFlags & { idempotencyKey?: string; secretFile?: string; secretTo?: string[]; force?: boolean; yes?: boolean };

/** What one create or rotate adds to the shared flow. */
export interface SecretCommand {
  /** With the endpoint id for rotate; `flags` are its own as a re-run repeats them, before the destinations'. */
  words: ['webhooks', 'create'] | ['webhooks', 'rotate', string];
  flags: string[][];
  mode?: string;
  expectedVersion?: number;
  /** Once every flag is checked, before anything is sent (rotate --mode immediate asks here). */
  confirm?(): Promise<void>;
  send(client: RunClient, idempotencyKey: string, hooks: CallHooks): Promise<SecretAnswer>;
  /** A refusal, before it gets the re-run line; may throw another error (rotate's conflict). */
  refused?(err: unknown): Promise<void>;
  summary(body: SecretResponse): string;
}

export async function secretCommand(f: Factory, opts: SecretFlags, c: SecretCommand): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const endpointId = c.words[2];
  const idempotencyKey = opts.idempotencyKey !== undefined ? checkIdempotencyKey(opts.idempotencyKey) : ctx.randomUUID();
  const plan = planSecret({
    ...{ secretTo: opts.secretTo, secretFile: opts.secretFile, force: Boolean(opts.force), json: state.output.json, query: state.output.query !== undefined },
    ...{ stdoutIsTTY: ctx.io.stdout.isTTY, stdoutDiscards: ctx.io.stdout.discards, dryRun: state.dryRun, ci: state.ci, cwd: ctx.cwd, env: ctx.env, endpointId },
  });
  const escrow = await escrowOf(opts, ctx, opts);
  await c.confirm?.();
  const flags = [
    ...c.flags,
    ...(opts.secretFile !== undefined ? [['--secret-file', opts.secretFile]] : []),
    ...(opts.secretTo ?? []).map((to) => ['--secret-to', to]),
    ...(opts.force ? [['--force']] : []),
    ...(opts.yes ? [['--yes']] : []),
    ...(opts.escrow ?? []).map((r) => ['--escrow', r]),
    ...(opts.escrowFile !== undefined ? [['--escrow-file', opts.escrowFile]] : []),
    ...(opts.escrowDir !== undefined ? [['--escrow-dir', opts.escrowDir]] : []),
    ...(state.given.profile ? [['--profile', state.given.profile]] : []),
  ];
  // On a conflict or exhausted retries, the report gives the command to re-run (errors/explain.ts).
  const rerun: RerunContext = { words: c.words, expectedVersion: c.expectedVersion, flags, idempotencyKey };
  const client = await f.client({ rerun: rerunWords(rerun), waiting: (w) => waitingForAnswer(f, w) });
  const send = (hooks: CallHooks) =>
    c.send(client, idempotencyKey, hooks).catch(async (err: unknown) => {
      await c.refused?.(err);
      throw namingTheKey(withRerun(err, { ...rerun, now: ctx.now() }), endpointId);
    });
  const scope = scopeKey(state.connection().scope);
  const req = { op: c.words[1], scope, endpointId: endpointId ?? null, idempotencyKey, ...(c.mode !== undefined ? { mode: c.mode, expectedVersion: c.expectedVersion } : {}) };
  await runSecretRequest(f, plan, { keyGiven: opts.idempotencyKey !== undefined, req, send, summary: c.summary }, { escrow, given: opts });
}

/** An interrupt once the request may have been sent (the HTTP client put the key on it) names the endpoint and the key. */
function namingTheKey(err: unknown, endpointId: string | undefined): unknown {
  if (!isCliError(err) || err.code !== 'interrupted' || err.idempotencyKey === undefined) return err;
  const endpoint = endpointId !== undefined ? ` for endpoint ${escapeInline(endpointId)}` : '';
  return new CliError('interrupted', `interrupted: the request${endpoint} had been sent and may have been applied (Idempotency-Key ${err.idempotencyKey})`, err.exitCode, {
    hint: err.hint,
    details: { endpointId: endpointId ?? null, idempotencyKey: err.idempotencyKey },
    idempotencyKey: err.idempotencyKey,
  });
}

/** A signal while a sent request waits for its answer: said once, and what a second signal says as the process ends. */
function waitingForAnswer(f: Factory, w: WaitingForAnswer | undefined): void {
  const { ctx } = f;
  if (!w) return ctx.setLastWords?.(undefined);
  const how = w.graceMs === null ? 'a second Ctrl-C abandons it' : `for up to ${w.graceMs / 1000} s (${w.signal})`;
  sayWaiting(f, `waiting for the server's answer, which carries the new secret (Idempotency-Key ${w.idempotencyKey}); ${how}`);
  const error = new CliError(
    'interrupted',
    `interrupted: the answer to the request with Idempotency-Key ${w.idempotencyKey} was abandoned; the change may have been applied`,
    SIGNAL_EXIT[w.signal] ?? EXIT.interrupted,
    {
      idempotencyKey: w.idempotencyKey,
      hint: `re-run ${sameRequestCommand(undefined, w.idempotencyKey)}: the same key is never applied twice, and an answer that reached chatctl before it was abandoned is delivered from recovered/`,
    },
  );
  ctx.setLastWords?.(() => reportError(error, ctx.io, f.state().output.json, false));
}

/**
 * A rotate refused: a 7 because an earlier run here rotated and kept the
 * secret undelivered is that 13, not a 7 whose hint rotates again; a 7 that
 * names the current version goes into the facts (`--expected-version last`).
 */
export async function rotateRefused(f: Factory, endpointId: string, err: unknown): Promise<void> {
  const { ctx } = f;
  const scope = scopeKey(f.state().connection().scope);
  const kept = isCliError(err) && err.exitCode === EXIT.versionConflict ? keptByEarlierRun(ctx.configDir, scope, endpointId) : undefined;
  if (kept) throw keptByEarlierRunError(kept, err as CliError);
  noteConflict({ configDir: ctx.configDir, scope, now: ctx.now }, endpointId, err, 'rotate');
}

export function missing(flag: string): never {
  throw missingFlagError(flag);
}

/** --expected-version left out (used at a terminal) or `last`: the version this machine last saw (docs/inventory.md). */
export async function expectedVersionFor(f: Factory, endpointId: string, given: string | undefined, prompter: Prompter | undefined): Promise<string> {
  if (given !== undefined && given !== 'last') return given;
  const { ctx } = f;
  const state = f.state();
  // No scope set: nothing seen here can be its; the request's own check says what is missing.
  let scope: string | undefined;
  try {
    scope = scopeKey(state.connection().scope);
  } catch (err) {
    if (given === 'last') throw err;
  }
  const last = scope === undefined ? undefined : EndpointFacts.read(ctx.configDir, scope, endpointId).lastVersion();
  const id = escapeInline(endpointId);
  if (given === 'last') {
    if (!last) throw usageError(`--expected-version last: this machine has seen no version of endpoint ${id} in ${escapeInline(scope!)}`, VERSION_SOURCES);
    ctx.io.notice(`expected version ${last.version} (--expected-version last), as this machine last saw it at ${escapeInline(last.at)}`);
    return String(last.version);
  }
  if (last && state.interactive) {
    ctx.io.notice(`expected version ${last.version}, as this machine last saw it at ${escapeInline(last.at)}; pass --expected-version to set it`);
    return String(last.version);
  }
  if (prompter) return prompter.expectedVersion();
  if (last)
    throw usageError(
      'missing --expected-version',
      `this machine last saw version ${last.version} of endpoint ${id} (at ${escapeInline(last.at)}): pass --expected-version ${last.version}, or --expected-version last to use the last-seen version without naming it`,
    );
  throw missingFlagError('--expected-version');
}

export interface SecretRequest {
  req: RecordedRequest;
  send(hooks: CallHooks): Promise<SecretAnswer>;
  summary(body: SecretResponse): string;
  /** --idempotency-key given: a replay of an earlier run's request is possible. */
  keyGiven?: boolean;
}

/** A create or rotate from record to retire: what an earlier run kept of the same request is delivered instead of sending. */
export async function runSecretRequest(f: Factory, plan: SecretPlan, r: SecretRequest, opts: SecretResultOptions = {}): Promise<void> {
  const { ctx } = f;
  if (f.state().dryRun) return void (await r.send({}));
  if (!ctx.env.GITHUB_STEP_SUMMARY) return void (await custodyOf(f, plan, r, opts));
  // GITHUB_STEP_SUMMARY: the run's one row goes there, whatever its outcome; one that cannot be written is said, not fatal.
  const ci = await import('../../system/ci-report.js');
  const command = `chatctl webhooks ${r.req.op}`;
  const summary = (row: ReportRow) => {
    const problem = ci.reportOne({ env: { GITHUB_STEP_SUMMARY: ctx.env.GITHUB_STEP_SUMMARY }, annotate: ctx.io.stderr, scrub: (t) => ctx.io.scrubber.scrub(t), command }, row, command);
    if (problem) ctx.io.notice(problem);
  };
  let done: Awaited<ReturnType<typeof custodyOf>>;
  try {
    done = await custodyOf(f, plan, r, opts);
  } catch (err) {
    if (isCliError(err)) summary(ci.rowOfError(err, r.req.endpointId ?? undefined, explainError(err)));
    throw err;
  }
  summary({ ...done, outcome: r.req.op === 'create' ? 'created' : 'rotated', exitCode: 0 });
}

async function custodyOf(f: Factory, plan: SecretPlan, r: SecretRequest, opts: SecretResultOptions): Promise<Pick<ReportRow, 'endpointId' | 'version' | 'fingerprint'>> {
  const { ctx } = f;
  const state = f.state();
  // A re-run with the same key delivers what this run kept.
  const run: CustodyRun = {
    ...runCustody(ctx, r.req.scope, (key) => `re-run ${sameRequestCommand(undefined, key)}: it delivers the kept secret without rotating again`),
    escrow: opts.escrow,
    destination: opts.given ? (id) => destinationFlags(opts.given!, id) : undefined,
  };
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
  // accept → deliver → finish: the record goes as soon as every destination holds the secret.
  const accepted = await custody.accept(got, { resent });
  let outcome: Settled;
  if (!accepted.ok) outcome = accepted.outcome;
  else {
    // A second signal ends the process at once: it still names the record.
    const cut = accepted.delivery;
    ctx.setLastWords?.(cut ? () => reportError(deliveryCutShort(cut), ctx.io, state.output.json, false) : undefined);
    outcome = await custody.finish(accepted, await deliverTo(ctx, state.output.json, plan, accepted.secret, accepted.holder, got, r, opts).catch(notAttempted));
    if (outcome.ok) {
      ctx.setLastWords?.(undefined);
      custody.retire();
    }
  }
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
        // A CI report says what a failing exec: destination said (system/ci-report.ts).
        keepExecOutput: ciReportWanted(ctx.env),
      },
    );
  }
  try {
    if (ctx.io.scrubber.holdsCredential(secret)) throw new Error(CREDENTIAL_IN_SECRET);
    const body = bodyWith(got, holder, secret);
    const fp = fingerprint(secret);
    let text: string;
    // The whole document, never --query's part of it: planSecret refuses --query without a destination.
    if (plan.fallback === 'json') text = stringifyJson(body, ctx.io.stdout.isTTY ? 2 : undefined) + '\n';
    else {
      const rr = await import('../../output/render.js');
      text =
        humanText(rr, body, r.summary(body), ctx.io.paint.stdout, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }, ctx.io.columns) + rr.renderSecretBlock(secret, ctx.io.paint.stdout, fp);
    }
    await writeConfirmed(ctx.io.stdout, text, ctx.signal.aborted ? undefined : ctx.signal);
    // (For --json the envelope is the record; nothing more is shown of this delivery.)
    return { delivered: plan.fallback === 'json' ? [] : [{ to: 'stdout', fingerprint: fp }], failures: [] };
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

export interface SecretResultOptions {
  /** The limit for an exec: command (tests make it short). */
  execTimeoutMs?: number | undefined;
  /** The destinations as the user gave them: the new-secret hint repeats them. */
  given?: GivenDestinations | undefined;
  /** --escrow: custody's hook (escrowOf in commands/app.ts). */
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

// render.ts (and cli-table3) load only for human output.
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

/**
 * The result after delivery, best effort: the secret is already safe, so
 * nothing here may throw. It returns the error of a --query that could not
 * be applied, for the caller to throw once custody is done.
 */
async function renderAfter(ctx: Context, json: boolean, plan: SecretPlan, body: SecretResponse, summary: string, fp?: string, delivered: Delivered[] = []): Promise<unknown> {
  // When the secret went to sinks, a copy the server echoed in another field is scrubbed from stdout too.
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
    const r = await import('../../output/render.js');
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
