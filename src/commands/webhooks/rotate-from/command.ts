// chatctl webhooks rotate --from FILE|- (docs/fleet.md): the steps in
// order, everything that can be refused refused before anything is sent:
// flags → scope and token → sinks and the next manifest's file → journal
// (locked, read) → every manifest line checked (and each item's
// destinations) → confirmation of immediate rotations: the plan; then the
// run (runner.ts); then the next manifest (next-manifest.ts), the summary and
// the exit code.
// A bundle of its own (dist/lazy/bulk.cjs): single-endpoint runs never load it.
import { escrowOf, sayWaiting, type Factory } from '../../app.js';
import { dirname, resolve } from 'node:path';
import type { RotationMode } from '../../../api/spec.js';
import { secretResponseSchema } from '../../../api/schemas.js';
import { deliveryCutShort, lastApplied, runCustody, type CustodyRun, type InDelivery } from '../../../secret/custody.js';
import { prepareRecoveryFolder, scopeKey } from '../../../secret/record.js';
import { describeKeepFailure } from '../../../secret/deliver.js';
import { destinationFlags, type GivenDestinations } from '../../../secret/new-secret-hint.js';
import type { Context } from '../../../context.js';
import { CliError, isCliError, usageError, localError } from '../../../errors/cli-error.js';
import { EXIT } from '../../../errors/exit-codes.js';
import { reportError } from '../../../errors/report.js';
import { escapeInline, shellQuote } from '../../../output/sanitize.js';
import { JournalWriter, NO_JOURNAL, compactJournal, continuing, loadJournal, lockJournal, actFor, sameScope, settledOf, type ItemAct, type JournalScope, type LoadedJournal } from './journal.js';
import { bufferSource, checkManifest, fileSource, manifestItems, type ManifestCheck, type ManifestItem, type ManifestSource } from './manifest.js';
import { NextManifest } from './next-manifest.js';
import { humanOutput, jsonOutput, reportRow, summaryLine, type BulkOutput } from './output.js';
import { runBulk, type ItemResult, type RunSummary } from './runner.js';
import { planItemSecrets, type ItemSecrets } from './secrets.js';
import { refuseStale, withDoneAt } from './stale.js';
import { CiReport } from '../../../run/ci-report.js';
import { ciReportWanted } from '../../../output/actions-mask.js';
import type { EscrowFlags } from '../../../secret/escrow.js';

export interface FromOptions extends EscrowFlags {
  from: string;
  concurrency?: string;
  journal?: string;
  secretTo?: string[];
  secretFile?: string;
  force?: boolean;
  mode?: string;
  yes?: boolean;
  expectedVersion?: string;
  idempotencyKey?: string;
  nextManifest?: string;
  every?: string;
  report?: string;
}

export const DEFAULT_CONCURRENCY = 4;
export const MAX_CONCURRENCY = 64;

export function parseConcurrency(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_CONCURRENCY;
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > MAX_CONCURRENCY) throw usageError(`invalid --concurrency "${raw}": a whole number from 1 to ${MAX_CONCURRENCY}`);
  return Number(raw);
}

const scopeLabel = (s: JournalScope) => `${s.baseUrl} (${s.organizationId}/${s.applicationId}/${s.environmentKey})`;

/** What the run will do, worked out and checked before anything is sent. */
interface Plan {
  json: boolean;
  concurrency: number;
  defaultMode: RotationMode | undefined;
  scope: JournalScope;
  secrets: ItemSecrets;
  source: ManifestSource;
  journalPath: string | undefined;
  journal: LoadedJournal;
  check: ManifestCheck;
  acts: Record<ItemAct['act'], number>;
  next: NextManifest | undefined;
  /** --every, in milliseconds. */
  everyMs: number | undefined;
  /** Items whose secret an earlier run kept: delivered before anything is sent. */
  first: ManifestItem[];
  /** The first journal run whose work this run finishes (journal.ts continuing). */
  openFrom: number;
  escrow: CustodyRun['escrow'];
  /** --report FILE (absolute); GitHub's annotations and step summary need none. */
  reportPath: string | undefined;
  /** The destinations as given: each item's new-secret hint repeats them, {id} replaced. */
  given: GivenDestinations;
}

/** The journal's lock while it is held; the journal's writer takes it over for the run. */
interface Held {
  release?: (() => void) | undefined;
}

export async function runRotateFrom(opts: FromOptions, f: Factory): Promise<void> {
  keepHeapSmall(); // before the manifest's first pass, which allocates with its length
  const setup = await prepare(opts, f);
  const source = await openManifest(opts.from, f.ctx).catch((err: unknown) => {
    setup.next?.unlock();
    throw err;
  });
  const held: Held = {};
  try {
    const plan = await planItems(setup, source, held, f);
    if (f.state().dryRun) return reportDryRun(plan, f.ctx);
    source.checkUnchanged();
    const { summary, output, report } = await runPlan(plan, held, f);
    // Written once the run is over, whatever its outcome; before the summary, which a closed stdout may cut short.
    const unwritten = writeNext(plan.next);
    const unreported = finishReport(report, summary);
    await output.finish(summary, plan.check.count);
    if (unreported) f.ctx.io.notice(unreported);
    finish(summary, unwritten, plan, f.ctx);
  } finally {
    held.release?.();
    source.close();
    setup.next?.unlock();
  }
}

type Setup = Pick<Plan, 'json' | 'concurrency' | 'defaultMode' | 'scope' | 'secrets' | 'journalPath' | 'next' | 'everyMs' | 'escrow' | 'reportPath' | 'given'> & { yes: boolean };

/** Flags, scope and token (exit 3 before anything is read), destinations: everything that needs no manifest. */
async function prepare(opts: FromOptions, f: Factory): Promise<Setup> {
  const { ctx } = f;
  if (opts.expectedVersion !== undefined) throw usageError('--expected-version cannot be used with --from', 'each manifest line gives its own "expectedVersion"');
  if (opts.idempotencyKey !== undefined) throw usageError('--idempotency-key cannot be used with --from', 'each item gets its own key; --journal keeps them, so a re-run reuses them');
  if (opts.from === '') throw usageError('--from needs a file, or - for standard input');
  const concurrency = parseConcurrency(opts.concurrency);
  const state = f.state();
  const json = state.output.json;

  const conn = state.connection();
  if (!state.dryRun) await state.requireToken();
  const scope: JournalScope = { baseUrl: conn.baseUrl, ...conn.scope };

  const specs = [...(opts.secretFile !== undefined ? [`file:${opts.secretFile}`] : []), ...(opts.secretTo ?? [])];
  const secrets = planItemSecrets({
    specs,
    settings: { cwd: ctx.cwd, env: ctx.env, json, stdoutIsTTY: ctx.io.stdout.isTTY, stdoutDiscards: ctx.io.stdout.discards, force: Boolean(opts.force) },
    deliverDeps: {
      cwd: ctx.cwd,
      env: ctx.env,
      stdout: ctx.io.stdout,
      stderr: ctx.io.stderr,
      scrubber: ctx.io.scrubber,
      captureExecOutput: json,
      keepExecOutput: ciReportWanted(ctx.env, opts.report),
    },
  });
  const journalPath = opts.journal !== undefined ? resolve(ctx.cwd, opts.journal) : undefined;
  if (opts.nextManifest === '') throw usageError('--next-manifest needs a file');
  const next = opts.nextManifest !== undefined ? NextManifest.plan(resolve(ctx.cwd, opts.nextManifest), journalPath) : undefined;
  const everyMs = opts.every !== undefined ? parseEvery(opts.every) : undefined;
  const escrow = await escrowOf(opts, ctx, opts);
  if (opts.report === '') throw usageError('--report needs a file');
  const reportPath = opts.report !== undefined ? resolve(ctx.cwd, opts.report) : undefined;
  // Taken last: nothing after it may refuse the run while the file is held.
  if (next && !state.dryRun) await next.lock(ctx);
  return {
    json,
    concurrency,
    defaultMode: opts.mode as RotationMode | undefined,
    scope,
    secrets,
    journalPath,
    next,
    everyMs,
    escrow,
    reportPath,
    given: { secretTo: opts.secretTo, secretFile: opts.secretFile, force: opts.force },
    yes: Boolean(opts.yes),
  };
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `--every 30d`: a whole number and a unit (s, m, h, d, w), at most ten years. */
export function parseEvery(raw: string): number {
  const m = /^([1-9][0-9]{0,5})([smhdw])$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * UNITS[m[2]!]! : NaN;
  if (!Number.isFinite(ms) || ms > 3650 * UNITS.d!) throw usageError(`invalid --every "${raw}": a whole number and a unit, e.g. 30d, 12h, 2w (s, m, h, d, w)`);
  return ms;
}

async function openManifest(from: string, ctx: Factory['ctx']): Promise<ManifestSource> {
  if (from !== '-') return fileSource(resolve(ctx.cwd, from));
  if (ctx.io.stdin.isTTY) throw usageError('--from - reads the manifest from standard input, which is a terminal', 'pipe it in, or give the file: --from manifest.ndjson');
  return bufferSource('standard input', await ctx.io.stdin.readBytes());
}

/**
 * The journal locked and read, every line and every item's destinations
 * checked (the journal's rules refuse what cannot go on: journal.ts actFor,
 * stale.ts), and immediate rotations confirmed.
 */
async function planItems(setup: Setup, source: ManifestSource, held: Held, f: Factory): Promise<Plan> {
  const { ctx } = f;
  const { journalPath, secrets, next } = setup;
  const dryRun = f.state().dryRun;
  if (journalPath !== undefined && !dryRun) held.release = await lockJournal(journalPath, ctx);
  const journal: LoadedJournal = journalPath !== undefined ? loadJournal(journalPath) : { scope: null, priors: new Map(), unreadable: 0, openFrom: 0, runAts: [] };
  const first: ManifestItem[] = [];
  const openFrom = continuing(journal, ctx.now(), setup.everyMs);
  if (journal.scope && !sameScope(journal.scope, setup.scope))
    throw usageError(`the journal ${journalPath} belongs to a run against ${scopeLabel(journal.scope)}, not ${scopeLabel(setup.scope)}`, 'keep one journal per environment (and per manifest)');
  if (journal.unreadable > 0) ctx.io.notice(`the journal ${journalPath} has ${journal.unreadable} unreadable line(s), from a write cut short; they are ignored`);

  const acts = { send: 0, resend: 0, skip: 0, redeliver: 0 };
  const check = checkManifest(source, setup.defaultMode, (item) => {
    const planned = actFor(journal.priors, item, openFrom);
    if (planned.act === 'send') refuseStale(journal.priors.get(item.endpointId), item);
    // A secret an earlier run kept goes first (runner.ts deliverFirst); the few such items are held.
    if (planned.act === 'redeliver') first.push(item);
    acts[planned.act] += 1;
    secrets.claim(item);
    next?.add(item);
    // Done earlier: its secret is kept nowhere now, so every destination named now must hold it already.
    if (planned.act === 'skip') secrets.checkDone(item, planned.prior);
    // A delivery resumed from a kept copy may find its own file there already (it then counts as delivered).
    if (planned.act === 'send' || planned.act === 'resend') secrets.check(item);
  });
  secrets.checkShared(check.count);
  if (check.immediate > 0 && !setup.yes && !dryRun) await confirmImmediate(check.immediate, setup.json, f);
  return { ...setup, source, journal, check, acts, first, openFrom };
}

async function confirmImmediate(count: number, json: boolean, f: Factory): Promise<void> {
  const prompter = await f.prompter();
  const what = `${count} endpoint${count === 1 ? '' : 's'}`;
  if (!prompter) throw usageError('--yes is required when not running interactively', `the manifest rotates ${what} with mode immediate: their current secrets stop working at once`);
  if (await prompter.confirmImmediate(what)) return;
  // Declining is an answer, not a failure: a plain notice, and still 130.
  const message = 'immediate rotation declined; nothing was sent';
  if (!json) f.ctx.io.notice(message);
  throw localError('interrupted', message, { reported: !json });
}

function reportDryRun({ json, check, acts }: Plan, ctx: Factory['ctx']): void {
  const line = { dryRun: true, items: check.count, ...acts };
  if (json) ctx.io.stdout.write(JSON.stringify(line) + '\n');
  else
    ctx.io.stdout.write(
      `Would rotate ${acts.send + acts.resend} of ${check.count} endpoints (${acts.resend} re-sent from the journal with their recorded keys), skip ${acts.skip} done earlier, and deliver again ${acts.redeliver} whose delivery an earlier run did not confirm.\n`,
    );
  ctx.io.notice('dry run: nothing was sent');
}

/** The run itself (runner.ts), on one pool of connections; the journal written throughout. */
async function runPlan(plan: Plan, held: Held, f: Factory): Promise<{ summary: RunSummary; output: BulkOutput; report: CiReport | undefined }> {
  const { ctx } = f;
  const { journalPath, secrets, next, journal } = plan;
  // recovered/ holds each item's record from before its request: a folder that cannot is found now, not after a change.
  const custody: CustodyRun = { ...fleetCustody(ctx, scopeKey(f.state().connection().scope), journalPath), escrow: plan.escrow, destination: (id) => destinationFlags(plan.given, id) };
  // Before the journal's first record: a --report that cannot be written is refused with nothing sent.
  const report = ciReport(plan, ctx);
  let writer: JournalWriter | undefined;
  if (journalPath !== undefined) {
    writer = await JournalWriter.open(journalPath, held.release!);
    held.release = undefined; // the writer releases it on close
    await writer.append({ t: 'run', v: 1, at: new Date(ctx.now()).toISOString(), scope: plan.scope });
  }
  const output = plan.json ? jsonOutput(ctx.io) : humanOutput(ctx.io, ctx.now, secrets.targets);
  const { client, agent, delivering } = await runClient(plan, f);
  // exec: destinations start from a worker thread, started now: never on the loop that reads the answers.
  if (secrets.targets.some((t) => t.startsWith('exec:'))) await (await import('../../../secret/exec-worker.js')).prepareExecWorker();
  // zod builds the answer's schema on its first use: built now, not while the first answers arrive.
  secretResponseSchema().safeParse({ data: { endpoint: {}, secret: null, secretAvailable: false }, meta: {} });
  // A bench-only hook (CONTRIBUTING): the run's event-loop stalls, written at its end.
  const loopDelayPath = ctx.env.CHATCTL_LOOP_DELAY_REPORT;
  const loopDelay = loopDelayPath ? (await import('../../../system/loop-delay.js')).loopDelayReport(loopDelayPath) : () => {};
  try {
    const summary = await runBulk(
      manifestItems(plan.source, plan.defaultMode),
      { concurrency: plan.concurrency, total: plan.check.count, signal: ctx.signal, deadlineAt: client.deadlineAt },
      {
        clock: { now: ctx.now, sleep: ctx.sleep, random: ctx.random },
        rotate: (req, key, hooks) => client.rotate(req.endpointId, { expectedVersion: req.expectedVersion, mode: req.mode }, key, hooks),
        trace: f.state().output.debug ? (item) => (line) => ctx.io.stderr.write(`[debug] ${escapeInline(item.endpointId)}: ${escapeInline(line)}\n`) : undefined,
        secrets,
        custody,
        journal: writer ?? NO_JOURNAL,
        priors: journal.priors,
        openFrom: plan.openFrom,
        first: plan.first,
        notDue: plan.everyMs !== undefined ? notDueCheck(plan.everyMs, journal, custody, ctx.now) : undefined,
        newKey: ctx.randomUUID,
        emit: (r, item) => {
          next?.settle(r);
          const line = withDoneAt(r, journal.priors);
          output.emit(line, item);
          report?.add(reportRow(line));
        },
        notice: (t) => output.notice(t),
        progress: (p) => output.progress(p),
        delivering,
      },
    );
    if (writer) await endJournal(writer, summary, plan, ctx);
    return { summary, output, report };
  } catch (err) {
    report?.discard();
    throw err;
  } finally {
    agent.destroy();
    await writer?.close();
    loopDelay();
  }
}

/**
 * The run's end in its journal (clean: every item done, nothing cut short),
 * then the journal compacted to what later runs decide by, under its lock.
 * Neither can change the run's outcome: a journal that cannot take them
 * keeps every record it had.
 */
async function endJournal(writer: JournalWriter, summary: RunSummary, plan: Plan, ctx: Context): Promise<void> {
  const clean = !summary.interrupted && summary.stopped === null && summary.failed === 0 && summary.notStarted === 0;
  try {
    await writer.append({ t: 'end', at: new Date(ctx.now()).toISOString(), clean });
    compactJournal(writer.path, plan.scope);
  } catch {
    /* the records stand as they are */
  }
}

/** --every: an item whose endpoint the journal or this machine's facts show rotated less than that ago is not due. */
function notDueCheck(everyMs: number, journal: LoadedJournal, custody: CustodyRun, now: () => number) {
  return (item: ManifestItem): Extract<ItemResult, { ok: true }> | undefined => {
    const p = journal.priors.get(item.endpointId);
    const s = p && settledOf(p);
    const fromJournal = s && (s.appliedAt ?? s.at) !== undefined ? { at: (s.appliedAt ?? s.at)!, version: s.version } : undefined;
    const fromFacts = lastApplied(custody, item.endpointId);
    const last = [fromJournal, fromFacts && { at: fromFacts.at, version: fromFacts.version as number | null }]
      .filter((x): x is { at: string; version: number | null } => x !== undefined && Number.isFinite(Date.parse(x.at)))
      .sort((a, b) => Date.parse(b.at) - Date.parse(a.at))[0];
    if (!last || now() - Date.parse(last.at) >= everyMs) return undefined;
    return {
      endpointId: item.endpointId,
      ok: true,
      skipped: true,
      due: false,
      lastRotatedAt: last.at,
      ...(last.version !== null ? { version: last.version } : {}),
      fingerprint: s?.fp ?? '',
      delivery: [],
      requestId: null,
    };
  };
}

/**
 * The one request engine, as a single rotate uses it, with one keep-alive
 * connection per worker. A request already sent is not abandoned on Ctrl-C
 * (it finishes and delivers), and a re-run with the journal is how a key is
 * re-sent.
 */
async function runClient(plan: Plan, f: Factory) {
  const { ctx } = f;
  const { baseUrl } = f.state().connection();
  const { Agent } = baseUrl.startsWith('https:') ? await import('node:https') : await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: plan.concurrency, maxFreeSockets: plan.concurrency });
  // Items whose secret is being delivered: a second signal ends the process
  // at once, and must still say where each of their secrets is.
  const inDelivery = new Map<string, InDelivery>();
  // Requests sent and awaited after a first signal: a second one abandons them, and says which keys.
  const awaited = new Set<string>();
  const lastWords = () => {
    let code: number = EXIT.secretNotDelivered;
    for (const state of inDelivery.values()) code = reportError(deliveryCutShort(state), ctx.io, plan.json, false);
    if (inDelivery.size === 0 && awaited.size > 0) code = reportError(abandoned(awaited, plan.journalPath, signalled), ctx.io, plan.json, false);
    return code;
  };
  const delivering = (item: ManifestItem, state: InDelivery | undefined) => {
    if (state) inDelivery.set(item.endpointId, state);
    else inDelivery.delete(item.endpointId);
    ctx.setLastWords?.(inDelivery.size > 0 || awaited.size > 0 ? lastWords : undefined);
  };
  const { journalPath } = plan;
  let signalled = 'SIGINT';
  const client = await f.client({
    agent,
    waiting: (w, done) => {
      if (!w) {
        // That answer came: its item goes on to deliver.
        if (done !== undefined) awaited.delete(done);
        ctx.setLastWords?.(inDelivery.size > 0 || awaited.size > 0 ? lastWords : undefined);
        return;
      }
      if (awaited.size === 0 && inDelivery.size === 0) {
        const then = journalPath !== undefined ? `a re-run with --journal ${shellQuote(journalPath)} collects them` : 'without a --journal, a re-run of each with its --idempotency-key collects it';
        sayWaiting(
          f,
          `${w.signal === 'SIGINT' ? 'interrupted' : `${w.signal} received`}: no new item starts; the requests already sent are waited for${w.graceMs === null ? '' : ` (up to ${w.graceMs / 1000} s)`}, so that their secrets are delivered (a second Ctrl-C abandons them: ${then})`,
        );
      }
      signalled = w.signal;
      awaited.add(w.idempotencyKey);
      ctx.setLastWords?.(lastWords);
    },
    announce: false,
    rerun: () => (journalPath !== undefined ? `a re-run with --journal ${shellQuote(journalPath)} re-sends it` : 'keep a --journal so that a re-run re-sends it'),
  });
  return { client, agent, delivering };
}

/** What a second signal says when requests sent were still awaited: their keys, and how a re-run collects them. */
function abandoned(keys: Set<string>, journalPath: string | undefined, signal: string): CliError {
  const list = [...keys];
  const code = signal === 'SIGTERM' ? EXIT.terminated : signal === 'SIGHUP' ? EXIT.hangup : EXIT.interrupted;
  return new CliError(
    'interrupted',
    `interrupted: the answers to ${list.length} request(s) already sent were abandoned; the changes may have been applied (Idempotency-Keys ${list.join(', ')})`,
    code,
    {
      details: { idempotencyKeys: list },
      hint:
        journalPath !== undefined
          ? `re-run with --journal ${shellQuote(journalPath)}: it re-sends each with its key (never applied twice) and delivers what reached chatctl from recovered/`
          : 'without a journal, re-run each endpoint alone with its --idempotency-key: the same key is never applied twice',
    },
  );
}

/** The next manifest written; a failure to write it, to report once the run's own outcome is known. */
function writeNext(next: NextManifest | undefined): CliError | undefined {
  try {
    next?.write();
    return undefined;
  } catch (err) {
    if (isCliError(err)) return err;
    throw err;
  }
}

/** The exit code: 130 on Ctrl-C, 14 when the run stopped or any item failed, 1 when only the next manifest could not be written. */
function finish(summary: RunSummary, unwritten: CliError | undefined, plan: Plan, ctx: Factory['ctx']): void {
  const { json, check, journalPath, next } = plan;
  const failing = summary.interrupted || summary.stopped !== null || summary.failed > 0;
  if (unwritten && failing) reportError(unwritten, ctx.io, json, false);
  else if (next && !unwritten) ctx.io.notice(`the next rotation's manifest (${next.size} item${next.size === 1 ? '' : 's'}) is in ${next.path}`);
  if (summary.interrupted) {
    const hint = journalPath !== undefined ? `re-run with --journal ${journalPath} to continue` : 'with --journal FILE a re-run continues where a run stopped';
    throw localError('interrupted', `interrupted: ${summary.ok + summary.failed + summary.skipped} of ${check.count} items finished, ${summary.notStarted} not started`, { hint });
  }
  if (summary.stopped) {
    const e = summary.stopped;
    throw new CliError(e.code, `stopped: ${e.message}; ${summary.notStarted} item(s) not started`, EXIT.partial, { status: e.status, requestId: e.requestId, details: e.details });
  }
  if (summary.failed > 0) {
    // Every failure is in its result line (--json) or the table above.
    if (!json) ctx.io.notice(`${summary.failed} of ${check.count} items failed`);
    throw localError('partial_failure', `${summary.failed} of ${check.count} items failed`, { reported: true });
  }
  if (unwritten) throw unwritten;
}

/**
 * A run of thousands of items allocates steadily (requests, responses,
 * journal lines) while holding little: a few megabytes live, whatever the
 * manifest's length. Left to its defaults, V8 lets both generations grow with
 * the run's duration, not its data: it doubles the young generation every
 * time enough survives scavenges (up to 32 MiB more on Node 20), and after
 * its first full collection lets the old generation reach up to four times
 * what is live before the next one. What an item leaves there is garbage
 * within seconds, but only a run long enough to reach that limit collects
 * it, so the peak grew with the manifest (5,000 items: 1.4x of 500). Holding
 * the young generation at its size and letting the old one grow by 50%
 * trades a few more collections for memory that stays flat. 30% (V8's own
 * factor when it saves memory) collected so often that the event loop
 * stalled 11-13 ms in a 30-item run, past the 10 ms an answer may wait on
 * its socket (CONTRIBUTING, "The event loop of a run"); 50% stalls under
 * 7 ms, for about the same peak (measured beside other work). Set
 * before the manifest's first pass, which would otherwise grow the young
 * generation by the manifest's length. The flags are read only when V8
 * decides to grow; if one is ever unknown, nothing changes.
 */
function keepHeapSmall(): void {
  try {
    process.getBuiltinModule('node:v8').setFlagsFromString('--semi-space-growth-factor=1 --heap-growing-percent=50');
  } catch {
    /* only memory is at stake */
  }
}

/** The run's custody: each item's record under recovered/ (checked now), and how a re-run delivers what it keeps. */
function fleetCustody(ctx: Context, scope: string, journalPath: string | undefined): CustodyRun {
  try {
    prepareRecoveryFolder(ctx.configDir);
  } catch (err) {
    throw localError('config_error', `cannot keep the secrets' records before sending: ${describeKeepFailure(err, ctx.configDir)}`, { hint: 'nothing was sent' });
  }
  return runCustody(ctx, scope, (key) =>
    journalPath !== undefined
      ? `re-run with --journal ${shellQuote(journalPath)}: it delivers the kept secret without rotating again`
      : `re-run that endpoint alone with --idempotency-key ${shellQuote(key)}: it delivers the kept secret without rotating again`,
  );
}

/** The run's CI report (run/ci-report.ts), when it has one: GitHub's annotations and step summary, --report's JUnit XML. */
function ciReport(plan: Plan, ctx: Context): CiReport | undefined {
  if (!ciReportWanted(ctx.env, plan.reportPath)) return undefined;
  try {
    return new CiReport({ env: ctx.env, annotate: ctx.io.stderr, scrub: (t) => ctx.io.scrubber.scrub(t), command: 'chatctl webhooks rotate', junitPath: plan.reportPath });
  } catch (err) {
    throw usageError(`--report ${plan.reportPath}: cannot write beside it (${describeKeepFailure(err, dirname(plan.reportPath ?? '.'))})`);
  }
}

/** The report finished; what went wrong with it, to say once the run's outcome is known (never its exit code). */
function finishReport(report: CiReport | undefined, summary: RunSummary): string | undefined {
  try {
    return report?.finish(summaryLine(summary).summary, 'chatctl webhooks rotate --from');
  } catch (err) {
    return `the --report file could not be written: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
}
