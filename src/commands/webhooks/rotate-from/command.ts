// chatctl webhooks rotate --from FILE|- (docs/fleet.md): everything that can
// be refused is refused before anything is sent (flags, token, destinations,
// next manifest, journal, every line, confirmation); then the run (runner.ts).
// A bundle of its own (dist/lazy/bulk.cjs): single-endpoint runs never load it.
import { escrowOf, type Factory, sayWaiting } from '../../app.js';
import { dirname, resolve } from 'node:path';
import { type RotationMode, secretResponseSchema } from '../../../api/schemas.js';
import { type CustodyRun, deliveryCutShort, destinationFlags, type InDelivery, lastApplied, runCustody } from '../../../secret/custody.js';
import { prepareRecoveryFolder, scopeKey } from '../../../secret/record.js';
import { deliverAll, type DeliverDeps, describeKeepFailure, hasIdPlaceholder, parseSinks, sinkHolds, type SinkSettings, sinksFor, substituteId } from '../../../secret/deliver.js';
import type { Context } from '../../../context.js';
import { CliError, EXIT, isCliError, localError, usageError } from '../../../errors/cli-error.js';
import { reportError } from '../../../errors/explain.js';
import { ciReportWanted, escapeInline, shellQuote, shellWord } from '../../../output/json.js';
import { JournalWriter, compactJournal, continuing, loadJournal, lockJournal, actFor, refuseStale, sameScope, settledOf } from './journal.js';
import type { JournalScope, LoadedJournal, Prior } from './journal.js';
import { bufferSource, checkManifest, fileSource, manifestItems, type ManifestItem, type ManifestSource } from './manifest.js';
import { NextManifest } from './next-manifest.js';
import { humanOutput, jsonOutput, reportRow, summaryLine, withDoneAt } from './output.js';
import { runBulk, type ItemResult, type RunSummary } from './runner.js';
import { CiReport } from '../../../system/ci-report.js';
import type { EscrowFlags } from '../../../secret/escrow.js';

type StringFlag = 'concurrency' | 'journal' | 'secretFile' | 'mode' | 'expectedVersion' | 'idempotencyKey' | 'nextManifest' | 'every' | 'report';
type FromOptions = EscrowFlags & { from: string; secretTo?: string[]; force?: boolean; yes?: boolean } & { [K in StringFlag]?: string };

const MAX_CONCURRENCY = 64;
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

const scopeLabel = (s: JournalScope) => `${s.baseUrl} (${scopeKey(s)})`;

type Setup = Awaited<ReturnType<typeof prepare>>;
type Plan = Awaited<ReturnType<typeof planItems>>;
type Held = { release?: (() => void) | undefined }; // the journal's lock, which its writer takes over for the run

export async function runRotateFrom(opts: FromOptions, f: Factory): Promise<void> {
  keepHeapSmall(); // before the manifest's first pass, which allocates with its length
  const setup = await prepare(opts, f);
  const held: Held = {};
  let source: ManifestSource | undefined;
  try {
    source = await openManifest(opts.from, f.ctx);
    const plan = await planItems(setup, source, held, f);
    if (f.state().dryRun) return reportDryRun(plan, f.ctx);
    source.checkUnchanged();
    const { summary, output, report } = await runPlan(plan, held, f);
    // Written once the run is over, whatever its outcome; before the summary, which a closed stdout may cut short.
    let unwritten: CliError | undefined;
    try {
      plan.next?.write();
    } catch (err) {
      if (!isCliError(err)) throw err;
      unwritten = err; // reported once the run's own outcome is known
    }
    const unreported = finishReport(report, summary);
    await output.finish(summary, plan.check.count);
    if (unreported) f.ctx.io.notice(unreported);
    finish(summary, unwritten, plan, f.ctx);
  } finally {
    held.release?.();
    source?.close();
    setup.next?.unlock();
  }
}

/** Flags, scope and token (exit 3 before anything is read), destinations: everything that needs no manifest. */
async function prepare(opts: FromOptions, f: Factory) {
  const { ctx } = f;
  if (opts.expectedVersion !== undefined) throw usageError('--expected-version cannot be used with --from', 'each manifest line gives its own "expectedVersion"');
  if (opts.idempotencyKey !== undefined) throw usageError('--idempotency-key cannot be used with --from', 'each item gets its own key; --journal keeps them, so a re-run reuses them');
  if (opts.from === '') throw usageError('--from needs a file, or - for standard input');
  const raw = opts.concurrency;
  if (raw !== undefined && (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > MAX_CONCURRENCY)) throw usageError(`invalid --concurrency "${raw}": a whole number from 1 to ${MAX_CONCURRENCY}`);
  const state = f.state();
  const json = state.output.json;
  const conn = state.connection();
  if (!state.dryRun) await state.requireToken();
  const secrets = itemSecrets(opts, ctx, json);
  const journalPath = opts.journal !== undefined ? resolve(ctx.cwd, opts.journal) : undefined;
  if (opts.nextManifest === '') throw usageError('--next-manifest needs a file');
  const next = opts.nextManifest !== undefined ? NextManifest.plan(resolve(ctx.cwd, opts.nextManifest), journalPath) : undefined;
  const everyMs = opts.every !== undefined ? parseEvery(opts.every) : undefined;
  const escrow = await escrowOf(opts, ctx, opts);
  if (opts.report === '') throw usageError('--report needs a file');
  const reportPath = opts.report !== undefined ? resolve(ctx.cwd, opts.report) : undefined;
  // Taken last: nothing after it may refuse the run while the file is held.
  if (next && !state.dryRun) await next.lock(ctx);
  const scope: JournalScope = { baseUrl: conn.baseUrl, ...conn.scope };
  const concurrency = raw === undefined ? 4 : Number(raw);
  return { json, concurrency, defaultMode: opts.mode as RotationMode | undefined, scope, secrets, journalPath, next, everyMs, escrow, reportPath, opts };
}

function parseEvery(raw: string): number {
  const m = /^([1-9][0-9]{0,5})([smhdw])$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * UNITS[m[2]!]! : NaN;
  if (!Number.isFinite(ms) || ms > 3650 * UNITS.d!) throw usageError(`invalid --every "${raw}": a whole number and a unit, e.g. 30d, 12h, 2w (s, m, h, d, w)`);
  return ms;
}

/** Where each item's secret goes: the --secret-to sinks, `{id}` standing for its endpoint id; checked before anything is sent. */
function itemSecrets(opts: FromOptions, ctx: Context, json: boolean) {
  const specs = [...(opts.secretFile !== undefined ? [`file:${opts.secretFile}`] : []), ...(opts.secretTo ?? [])];
  if (specs.length === 0)
    throw usageError('rotate --from needs --secret-to: where each new secret goes', 'e.g. --secret-to file:secrets/{id}.whsec, or --secret-to "exec:store-secret" (it sees CHATCTL_ENDPOINT_ID)');
  const { cwd, env, io } = ctx;
  const settings: SinkSettings = { cwd, env, json, stdoutIsTTY: io.stdout.isTTY, stdoutDiscards: io.stdout.discards, force: Boolean(opts.force), idPlaceholder: true };
  const sinks = parseSinks(specs, settings);
  // Other items' answers arrive while one is delivered: its files fsync off the event loop.
  const scrubber = io.scrubber;
  const deps: DeliverDeps = { cwd, env, stdout: io.stdout, stderr: io.stderr, scrubber, captureExecOutput: json, keepExecOutput: ciReportWanted(env, opts.report), idPlaceholder: true, offLoop: true };
  const claimed = new Map<string, string>();
  return {
    targets: sinks.map((s) => s.to),
    targetsFor: (item: ManifestItem) => sinks.map((s) => substituteId(s, item.endpointId).to),
    check: (item: ManifestItem) => void sinksFor(sinks, item.endpointId, settings),
    /** A destination without {id} cannot serve `count` items (exec: aside). */
    checkShared(count: number) {
      const shared = count > 1 ? sinks.find((sink) => sink.kind !== 'exec' && !hasIdPlaceholder(sink)) : undefined;
      if (shared)
        throw usageError(
          `--secret-to ${shared.to}: one destination for ${count} endpoints`,
          'put {id} in the path or name, which stands for each endpoint id (e.g. file:secrets/{id}.whsec, github-output:SECRET_{id}), or use exec:, which sees CHATCTL_ENDPOINT_ID',
        );
    },
    /** No destination of this item is one another item's {id} also leads to: the second secret would replace the first. */
    claim(item: ManifestItem) {
      for (const given of sinks) {
        if (!hasIdPlaceholder(given)) continue; // one destination for many items is refused by checkShared
        let sink;
        try {
          sink = substituteId(given, item.endpointId);
        } catch {
          continue; // an id that cannot stand for {id}: refused by check() when it is sent
        }
        // Keyed as parseSinks keys one item's destinations: a path is one place whatever the variable in it.
        const place = sink.kind === 'github' ? `github:${sink.path}\0${sink.name}` : sink.kind === 'file' || sink.kind === 'env-file' ? `path:${sink.path}` : undefined;
        const other = place === undefined ? undefined : claimed.get(place);
        if (other !== undefined && other !== item.endpointId)
          throw usageError(
            `manifest line ${item.line}: endpoints ${JSON.stringify(other)} and ${JSON.stringify(item.endpointId)} would both be delivered to ${sink.to} (--secret-to ${given.to}); the second secret would replace the first`,
            'use a destination whose {id} keeps the ids apart, or exec:, which sees CHATCTL_ENDPOINT_ID',
          );
        if (place !== undefined) claimed.set(place, item.endpointId);
      }
    },
    deliver: (item: ManifestItem, secret: string, o?: { skipHeld?: boolean }) => deliverAll(sinks, { endpointId: item.endpointId, secret }, { ...deps, skipHeld: o?.skipHeld }),
    holds: (item: ManifestItem, fp: string) => sinks.every((given) => sinkHolds(substituteId(given, item.endpointId), fp)),
    /** Done earlier: its secret is kept nowhere now, so every destination named now must hold it (stdout and GitHub's files: that run's only). */
    checkDone(item: ManifestItem, prior: Prior) {
      const went = new Set((prior.delivery ?? []).map((d) => d.to));
      const missing = sinks
        .map((given) => substituteId(given, item.endpointId))
        .filter((sink) => sink.kind === 'stdout' || sink.kind === 'github' || !(went.has(sink.to) || (prior.fp !== null && sinkHolds(sink, prior.fp))))
        .map((sink) => sink.to);
      if (missing.length > 0)
        throw usageError(
          `manifest line ${item.line}: endpoint ${item.endpointId} was rotated by an earlier run with this journal and its secret delivered to ${[...went].join(', ') || 'its destinations then'}; it is not kept to deliver to ${missing.join(', ')} now`,
          'give the --secret-to of that run (stdout and github-output:/github-env: hold it for that run only), or take it from where it went; a manifest with the next expectedVersion rotates it again',
        );
    },
  };
}

async function openManifest(from: string, ctx: Context): Promise<ManifestSource> {
  if (from !== '-') return fileSource(resolve(ctx.cwd, from));
  if (ctx.io.stdin.isTTY) throw usageError('--from - reads the manifest from standard input, which is a terminal', 'pipe it in, or give the file: --from manifest.ndjson');
  return bufferSource('standard input', await ctx.io.stdin.readBytes());
}

async function planItems(setup: Setup, source: ManifestSource, held: Held, f: Factory) {
  const { ctx } = f;
  const { journalPath, secrets, next } = setup;
  const dryRun = f.state().dryRun;
  if (journalPath !== undefined && !dryRun) held.release = await lockJournal(journalPath, ctx);
  const journal: LoadedJournal = journalPath !== undefined ? loadJournal(journalPath) : { scope: null, priors: new Map(), unreadable: 0, openFrom: 0, runAts: [] };
  const first: { item: ManifestItem; prior: Prior }[] = [];
  const openFrom = continuing(journal, ctx.now(), setup.everyMs);
  if (journal.scope && !sameScope(journal.scope, setup.scope))
    throw usageError(`the journal ${journalPath} belongs to a run against ${scopeLabel(journal.scope)}, not ${scopeLabel(setup.scope)}`, 'keep one journal per environment (and per manifest)');
  if (journal.unreadable > 0) ctx.io.notice(`the journal ${journalPath} has ${journal.unreadable} unreadable line(s), from a write cut short; they are ignored`);
  const acts = { send: 0, resend: 0, skip: 0, redeliver: 0 };
  const check = checkManifest(source, setup.defaultMode, (item) => {
    const planned = actFor(journal.priors, item, openFrom);
    if (planned.act === 'send') refuseStale(journal.priors.get(item.endpointId), item);
    if (planned.act === 'redeliver') first.push({ item, prior: planned.prior });
    acts[planned.act] += 1;
    secrets.claim(item);
    next?.add(item);
    if (planned.act === 'skip') secrets.checkDone(item, planned.prior);
    // A delivery resumed from a kept copy may find its own file there already (it then counts as delivered).
    if (planned.act === 'send' || planned.act === 'resend') secrets.check(item);
  });
  secrets.checkShared(check.count);
  if (check.immediate > 0 && !setup.opts.yes && !dryRun) await confirmImmediate(check.immediate, setup.json, f);
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

function reportDryRun({ json, check, acts }: Plan, ctx: Context): void {
  if (json) ctx.io.stdout.write(JSON.stringify({ dryRun: true, items: check.count, ...acts }) + '\n');
  else
    ctx.io.stdout.write(
      `Would rotate ${acts.send + acts.resend} of ${check.count} endpoints (${acts.resend} re-sent from the journal with their recorded keys), skip ${acts.skip} done earlier, and deliver again ${acts.redeliver} whose delivery an earlier run did not confirm.\n`,
    );
  ctx.io.notice('dry run: nothing was sent');
}

async function runPlan(plan: Plan, held: Held, f: Factory) {
  const { ctx } = f;
  const state = f.state();
  const { journalPath, secrets, next, journal } = plan;
  const custody: CustodyRun = { ...fleetCustody(ctx, scopeKey(state.connection().scope), journalPath), escrow: plan.escrow, destination: (id) => destinationFlags(plan.opts, id) };
  const report = ciReport(plan.reportPath, ctx); // before the journal's first record: refused with nothing sent
  const writer = journalPath !== undefined ? await JournalWriter.open(journalPath, held.release!) : undefined;
  if (writer) {
    held.release = undefined; // the writer releases it on close
    await writer.append({ t: 'run', v: 1, at: new Date(ctx.now()).toISOString(), scope: plan.scope });
  }
  const output = plan.json ? jsonOutput(ctx.io) : humanOutput(ctx.io, ctx.now, secrets.targets, state.output.quiet);
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
        trace: state.output.debug ? (item) => (line) => ctx.io.stderr.write(`[debug] ${escapeInline(item.endpointId)}: ${escapeInline(line)}\n`) : undefined,
        secrets,
        custody,
        journal: writer,
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
    // The run's end (clean: every item done, nothing cut short), then the journal compacted; neither can change the outcome.
    if (writer) {
      const clean = !summary.interrupted && summary.stopped === null && summary.failed === 0 && summary.notStarted === 0;
      await writer
        .append({ t: 'end', at: new Date(ctx.now()).toISOString(), clean })
        .then(() => compactJournal(writer.path, plan.scope))
        .catch(() => {});
    }
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
    const version = last.version !== null ? { version: last.version } : {};
    return { endpointId: item.endpointId, ok: true, skipped: true, due: false, lastRotatedAt: last.at, ...version, fingerprint: s?.fp ?? '', delivery: [], requestId: null };
  };
}

/**
 * The one request engine, one keep-alive connection per worker. A request sent
 * is not abandoned on Ctrl-C; a second signal ends the process at once, and
 * says where each secret in delivery is and which keys it left.
 */
async function runClient(plan: Plan, f: Factory) {
  const { ctx } = f;
  const { baseUrl } = f.state().connection();
  const { Agent } = baseUrl.startsWith('https:') ? await import('node:https') : await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: plan.concurrency, maxFreeSockets: plan.concurrency });
  const inDelivery = new Map<string, InDelivery>();
  const awaited = new Set<string>(); // keys of the requests sent and awaited after a first signal
  const { journalPath } = plan;
  let signalled = 'SIGINT';
  const lastWords = () => {
    let code: number = EXIT.secretNotDelivered;
    for (const state of inDelivery.values()) code = reportError(deliveryCutShort(state), ctx.io, plan.json, false);
    if (inDelivery.size === 0 && awaited.size > 0) code = reportError(abandoned(awaited, journalPath, signalled), ctx.io, plan.json, false);
    return code;
  };
  const sayLastWords = () => ctx.setLastWords?.(inDelivery.size > 0 || awaited.size > 0 ? lastWords : undefined);
  const delivering = (item: ManifestItem, state: InDelivery | undefined) => {
    if (state) inDelivery.set(item.endpointId, state);
    else inDelivery.delete(item.endpointId);
    sayLastWords();
  };
  const client = await f.client({
    agent,
    waiting: (w, done) => {
      if (!w) {
        if (done !== undefined) awaited.delete(done);
        return sayLastWords();
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

function abandoned(keys: Set<string>, journalPath: string | undefined, signal: string): CliError {
  const list = [...keys];
  const code = signal === 'SIGTERM' ? EXIT.terminated : signal === 'SIGHUP' ? EXIT.hangup : EXIT.interrupted;
  const hint =
    journalPath !== undefined
      ? `re-run with --journal ${shellQuote(journalPath)}: it re-sends each with its key (never applied twice) and delivers what reached chatctl from recovered/`
      : 'without a journal, re-run each endpoint alone with its --idempotency-key: the same key is never applied twice';
  const message = `interrupted: the answers to ${list.length} request(s) already sent were abandoned; the changes may have been applied (Idempotency-Keys ${list.join(', ')})`;
  return new CliError('interrupted', message, code, { details: { idempotencyKeys: list }, hint });
}

/** The exit code: 130 on Ctrl-C, 14 when the run stopped or any item failed, 1 when only the next manifest could not be written. */
function finish(summary: RunSummary, unwritten: CliError | undefined, plan: Plan, ctx: Context): void {
  const { json, check, journalPath, next } = plan;
  const failing = summary.interrupted || summary.stopped !== null || summary.failed > 0;
  if (unwritten && failing) reportError(unwritten, ctx.io, json, false);
  else if (next && !unwritten) ctx.io.notice(`the next rotation's manifest (${next.size} item${next.size === 1 ? '' : 's'}) is in ${next.path}`);
  if (summary.interrupted) {
    const hint = journalPath !== undefined ? `re-run with --journal ${shellWord(journalPath)} to continue` : 'with --journal FILE a re-run continues where a run stopped';
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

/** V8's defaults let the heap grow with a run's duration, not its data: measured in CONTRIBUTING ("The event loop of a run", "Fleet rotation, measured"). */
function keepHeapSmall(): void {
  try {
    process.getBuiltinModule('node:v8').setFlagsFromString('--semi-space-growth-factor=1 --heap-growing-percent=50');
  } catch {
    /* only memory is at stake */
  }
}

/** Each item's record under recovered/ (the folder checked now, not after a change), and how a re-run delivers what it keeps. */
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

function ciReport(reportPath: string | undefined, ctx: Context): CiReport | undefined {
  if (!ciReportWanted(ctx.env, reportPath)) return undefined;
  try {
    return new CiReport({ env: ctx.env, annotate: ctx.io.stderr, scrub: (t) => ctx.io.scrubber.scrub(t), command: 'chatctl webhooks rotate', junitPath: reportPath });
  } catch (err) {
    throw usageError(`--report ${reportPath}: cannot write beside it (${describeKeepFailure(err, dirname(reportPath ?? '.'))})`);
  }
}

/** What went wrong with the report, to say once the run's outcome is known (never its exit code). */
function finishReport(report: CiReport | undefined, summary: RunSummary): string | undefined {
  try {
    return report?.finish(summaryLine(summary).summary, 'chatctl webhooks rotate --from');
  } catch (err) {
    return `the --report file could not be written: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
}
