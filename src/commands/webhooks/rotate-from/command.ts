// chatctl webhooks rotate --from FILE|- (docs/fleet.md): the steps in
// order, everything that can be refused refused before anything is sent:
// flags → scope and token → sinks → journal (locked, read) → every manifest
// line checked (and each item's destinations) → confirmation of immediate
// rotations → the run (runner.ts) → summary → exit code.
// A bundle of its own (dist/lazy/bulk.cjs): single-endpoint runs never load it.
import type { Factory } from '../../app.js';
import { resolve } from 'node:path';
import type { RotationMode } from '../../../api/spec.js';
import { deliveryCutShort, type CustodyRun, type InDelivery } from '../../../secret/custody.js';
import { prepareRecoveryFolder, scopeKey } from '../../../secret/record.js';
import { describeKeepFailure } from '../../../secret/deliver.js';
import type { Context } from '../../../context.js';
import { CliError, usageError, localError } from '../../../errors/cli-error.js';
import { EXIT } from '../../../errors/exit-codes.js';
import { reportError } from '../../../errors/report.js';
import { escapeInline, shellQuote } from '../../../output/sanitize.js';
import { JournalWriter, NO_JOURNAL, loadJournal, lockJournal, actFor, sameScope, type JournalScope, type LoadedJournal } from './journal.js';
import { bufferSource, checkManifest, fileSource, manifestItems, type ManifestSource } from './manifest.js';
import { humanOutput, jsonOutput } from './output.js';
import { runBulk } from './runner.js';
import { planItemSecrets } from './secrets.js';

export interface FromOptions {
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
}

export const DEFAULT_CONCURRENCY = 4;
export const MAX_CONCURRENCY = 64;

export function parseConcurrency(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_CONCURRENCY;
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > MAX_CONCURRENCY) throw usageError(`invalid --concurrency "${raw}": a whole number from 1 to ${MAX_CONCURRENCY}`);
  return Number(raw);
}

const scopeLabel = (s: JournalScope) => `${s.baseUrl} (${s.organizationId}/${s.applicationId}/${s.environmentKey})`;

export async function runRotateFrom(opts: FromOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const prompter = await f.prompter();
  // ---- flags
  if (opts.expectedVersion !== undefined) throw usageError('--expected-version cannot be used with --from', 'each manifest line gives its own "expectedVersion"');
  if (opts.idempotencyKey !== undefined) throw usageError('--idempotency-key cannot be used with --from', 'each item gets its own key; --journal keeps them, so a re-run reuses them');
  if (opts.from === '') throw usageError('--from needs a file, or - for standard input');
  const concurrency = parseConcurrency(opts.concurrency);
  const defaultMode = opts.mode as RotationMode | undefined;
  const json = Boolean(g.json);

  // ---- scope and token (exit 3 before anything is read or sent)
  const inv = f.invocation();
  const conn = inv.connection();
  if (!inv.dryRun) await inv.requireToken();
  const scope: JournalScope = { baseUrl: conn.baseUrl, ...conn.scope };

  // ---- where the secrets go
  const specs = [...(opts.secretFile !== undefined ? [`file:${opts.secretFile}`] : []), ...(opts.secretTo ?? [])];
  const secrets = planItemSecrets({
    specs,
    settings: { cwd: ctx.cwd, env: ctx.env, json, stdoutIsTTY: ctx.io.stdout.isTTY, stdoutDiscards: ctx.io.stdout.discards, force: Boolean(opts.force) },
    deliverDeps: { cwd: ctx.cwd, env: ctx.env, stdout: ctx.io.stdout, stderr: ctx.io.stderr, scrubber: ctx.io.scrubber, captureExecOutput: json },
  });

  // ---- the manifest and the journal
  let source: ManifestSource;
  if (opts.from === '-') {
    if (ctx.io.stdin.isTTY) throw usageError('--from - reads the manifest from standard input, which is a terminal', 'pipe it in, or give the file: --from manifest.ndjson');
    source = bufferSource('standard input', await ctx.io.stdin.readBytes());
  } else {
    source = fileSource(resolve(ctx.cwd, opts.from));
  }
  const journalPath = opts.journal !== undefined ? resolve(ctx.cwd, opts.journal) : undefined;
  let release: (() => void) | undefined;
  try {
    if (journalPath !== undefined && !g.dryRun) release = await lockJournal(journalPath, ctx);
    const journal: LoadedJournal = journalPath !== undefined ? loadJournal(journalPath) : { scope: null, priors: new Map(), unreadable: 0 };
    if (journal.scope && !sameScope(journal.scope, scope))
      throw usageError(`the journal ${journalPath} belongs to a run against ${scopeLabel(journal.scope)}, not ${scopeLabel(scope)}`, 'keep one journal per environment (and per manifest)');
    if (journal.unreadable > 0) ctx.io.notice(`the journal ${journalPath} has ${journal.unreadable} unreadable line(s), from a write cut short; they are ignored`);

    // ---- every line checked, and every destination of an item that will be sent
    // (The journal's rules refuse, before anything is sent, an item that cannot go on: journal.ts actFor.)
    const acts = { send: 0, resend: 0, skip: 0, redeliver: 0 };
    const check = checkManifest(source, defaultMode, (item) => {
      const planned = actFor(journal.priors, item);
      acts[planned.act] += 1;
      secrets.claim(item);
      // Done earlier: its secret is kept nowhere now, so every destination named now must hold it already.
      if (planned.act === 'skip') secrets.checkDone(item, planned.prior);
      // A delivery resumed from a kept copy may find its own file there already (it then counts as delivered).
      if (planned.act === 'send' || planned.act === 'resend') secrets.check(item);
    });
    secrets.checkShared(check.count);

    if (check.immediate > 0 && !opts.yes && !g.dryRun) {
      const what = `${check.immediate} endpoint${check.immediate === 1 ? '' : 's'}`;
      if (!prompter) throw usageError('--yes is required when not running interactively', `the manifest rotates ${what} with mode immediate: their current secrets stop working at once`);
      if (!(await prompter.confirmImmediate(what))) {
        // Declining is an answer, not a failure: a plain notice, and still 130.
        const message = 'immediate rotation declined; nothing was sent';
        if (!json) ctx.io.notice(message);
        throw localError('interrupted', message, { reported: !json });
      }
    }

    if (g.dryRun) {
      const line = { dryRun: true, items: check.count, ...acts };
      if (json) ctx.io.stdout.write(JSON.stringify(line) + '\n');
      else
        ctx.io.stdout.write(
          `Would rotate ${acts.send + acts.resend} of ${check.count} endpoints (${acts.resend} re-sent from the journal with their recorded keys), skip ${acts.skip} done earlier, and deliver again ${acts.redeliver} whose delivery an earlier run did not confirm.\n`,
        );
      ctx.io.notice('dry run: nothing was sent');
      return;
    }
    source.checkUnchanged();
    // recovered/ holds each item's record from before its request: a folder that cannot is found now, not after a change.
    const custody = fleetCustody(ctx, scopeKey(conn.scope), journalPath);

    // ---- the run
    let writer: JournalWriter | undefined;
    if (journalPath !== undefined) {
      writer = await JournalWriter.open(journalPath, release!);
      release = undefined; // the writer releases it on close
      await writer.append({ t: 'run', v: 1, at: new Date(ctx.now()).toISOString(), scope });
    }
    keepYoungGenerationSmall();
    const output = json ? jsonOutput(ctx.io) : humanOutput(ctx.io, ctx.now, secrets.targets);
    // One pool of connections for the whole run, as many as there are workers.
    const { Agent } = conn.baseUrl.startsWith('https:') ? await import('node:https') : await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
    // Items whose secret is being delivered: a second signal ends the process
    // at once, and must still say where each of their secrets is.
    const inDelivery = new Map<string, InDelivery>();
    const lastWords = () => {
      let code: number = EXIT.secretNotDelivered;
      for (const state of inDelivery.values()) code = reportError(deliveryCutShort(state), ctx.io, json, false);
      return code;
    };
    // The one request engine, as a single rotate uses it: a request already
    // sent is not abandoned on Ctrl-C (it finishes and delivers), and a
    // re-run with the journal is how the key is re-sent.
    let toldWaiting = false;
    const client = await f.client({
      agent,
      waiting: (w) => {
        if (!w || toldWaiting) return;
        toldWaiting = true;
        output.notice(
          `${w.signal === 'SIGINT' ? 'interrupted' : `${w.signal} received`}: no new item starts; the requests already sent are waited for${w.graceMs === null ? '' : ` (up to ${w.graceMs / 1000} s)`}, so that their secrets are delivered (a second Ctrl-C abandons them: a re-run with the journal collects them)`,
        );
      },
      announce: false,
      rerun: () => (journalPath !== undefined ? `a re-run with --journal ${shellQuote(journalPath)} re-sends it` : 'keep a --journal so that a re-run re-sends it'),
    });
    let summary;
    try {
      summary = await runBulk(
        manifestItems(source, defaultMode),
        { concurrency, total: check.count, signal: ctx.signal, deadlineAt: client.deadlineAt },
        {
          clock: { now: ctx.now, sleep: ctx.sleep, random: ctx.random },
          rotate: (req, key, hooks) => client.rotate(req.endpointId, { expectedVersion: req.expectedVersion, mode: req.mode }, key, hooks),
          trace: inv.output.debug ? (item) => (line) => ctx.io.stderr.write(`[debug] ${escapeInline(item.endpointId)}: ${escapeInline(line)}\n`) : undefined,
          secrets,
          custody,
          journal: writer ?? NO_JOURNAL,
          priors: journal.priors,
          newKey: ctx.randomUUID,
          emit: (r, item) => output.emit(r, item),
          notice: (t) => output.notice(t),
          progress: (p) => output.progress(p),
          delivering: (item, state) => {
            if (state) inDelivery.set(item.endpointId, state);
            else inDelivery.delete(item.endpointId);
            ctx.setLastWords?.(inDelivery.size > 0 ? lastWords : undefined);
          },
        },
      );
    } finally {
      agent.destroy();
      await writer?.close();
    }
    await output.finish(summary, check.count);

    // ---- the exit code
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
  } finally {
    release?.();
    source.close();
  }
}

/**
 * A run of thousands of items allocates steadily (requests, responses,
 * journal lines) while holding little: a few megabytes live, whatever the
 * manifest's length. V8 nevertheless doubles its young generation every time
 * enough survives scavenges, up to 32 MiB more on Node 20, so the peak RSS of
 * a long run would grow with its duration, not its data. Holding the young
 * generation at its current size trades a few more (sub-millisecond)
 * scavenges for memory that stays flat. The flag is read only when V8 decides
 * to grow; if it is ever unknown, nothing changes.
 */
function keepYoungGenerationSmall(): void {
  try {
    process.getBuiltinModule('node:v8').setFlagsFromString('--semi-space-growth-factor=1');
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
  return {
    configDir: ctx.configDir,
    now: ctx.now,
    scope,
    scrubber: ctx.io.scrubber,
    rerun: (key) =>
      journalPath !== undefined
        ? `re-run with --journal ${shellQuote(journalPath)}: it delivers the kept secret without rotating again`
        : `re-run that endpoint alone with --idempotency-key ${shellQuote(key)}: it delivers the kept secret without rotating again`,
  };
}
