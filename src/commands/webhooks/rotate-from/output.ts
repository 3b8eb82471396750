// What a `--from` run shows (docs/fleet.md): --json lines, or a progress line
// and a summary that keeps only the first skipped and failed items.
import type { IO } from '../../../output/io.js';
import { escapeInline, jsonLineText } from '../../../output/json.js';
import type { ManifestItem } from './manifest.js';
import type { ItemResult, Progress, RunSummary } from './runner.js';
import { settledOf, type Prior } from './journal.js';
import type { Clock } from '../../../system/clock.js';
import { rowOfError, type ReportRow } from '../../../system/ci-report.js';
import { currentVersionOf } from '../../../errors/explain.js';
import { EXIT } from '../../../errors/cli-error.js';

/** An item's result line as printed: a skipped item also says when the run that did it started. */
export type ItemLine = ItemResult | (Extract<ItemResult, { ok: true }> & { doneAt?: string });

/** A skipped item's result line, with the start of the run that finished it when the journal knows it (docs/fleet.md, "Stale lines"). */
export function withDoneAt(result: ItemResult, priors: ReadonlyMap<string, Prior>): ItemLine {
  if (!result.ok || !result.skipped || result.due === false) return result;
  const p = priors.get(result.endpointId);
  const at = p && (settledOf(p) ?? p).at;
  return at === undefined ? result : { ...result, doneAt: at };
}

type BulkOutput = { emit(result: ItemLine, item: ManifestItem): void; notice(text: string): void; progress(p: Progress): void; finish(summary: RunSummary, total: number): Promise<void> };

export function summaryLine(s: RunSummary): { summary: { ok: number; failed: number; skipped: number; notDue?: number; notStarted?: number } } {
  return { summary: { ok: s.ok, failed: s.failed, skipped: s.skipped, ...(s.notDue > 0 ? { notDue: s.notDue } : {}), ...(s.notStarted > 0 ? { notStarted: s.notStarted } : {}) } };
}

export function jsonOutput(io: IO): BulkOutput {
  return {
    // A server message may echo any secret of the run: stdout here carries none, so it is scrubbed of all.
    emit: (result) => {
      const text = jsonLineText(io, result);
      if (text !== '') io.stdout.write(io.scrubber.scrub(text));
    },
    notice: () => {},
    progress: () => {},
    async finish(summary) {
      const text = jsonLineText(io, summaryLine(summary));
      if (text !== '') io.stdout.write(text);
    },
  };
}

const SHOWN = 50;
const REDRAW_MS = 100;

type Failure = { endpointId: string; line: number; exitCode: number; message: string };

export function humanOutput(io: IO, now: Clock['now'], targets: readonly string[], quiet = false): BulkOutput {
  const live = io.stderr.isTTY && !quiet;
  const failures: Failure[] = [];
  const skipped: string[] = [];
  let drawn = false;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let last: Progress | undefined;
  const clear = () => {
    if (drawn) io.stderr.write('\r\x1b[2K');
    drawn = false;
  };
  const draw = (p: Progress) => {
    const parts = [`rotating: ${p.ok + p.failed + p.skipped}/${p.total}`, `ok ${p.ok}`];
    if (p.failed) parts.push(`failed ${p.failed}`);
    if (p.skipped) parts.push(`skipped ${p.skipped}`);
    if (p.rate !== null) parts.push(`${Math.round(p.rate)}/s allowed`);
    if (p.pausedMs > 0) parts.push(`paused ${(p.pausedMs / 1000).toFixed(1)} s (rate limited)`);
    io.stderr.write(`\r\x1b[2K${parts.join(' · ')}`);
    drawn = true;
  };
  return {
    emit(result, item) {
      if (result.ok) {
        if (result.skipped && skipped.length < SHOWN) skipped.push(skippedLine(result));
        return;
      }
      if (failures.length >= SHOWN) return;
      // Scrubbed now, in one line: a secret is found as it is, not once the table wraps it.
      const message = io.scrubber.scrub(result.error.hint ? `${result.error.message}; next: ${result.error.hint}` : result.error.message);
      failures.push({ endpointId: result.endpointId, line: item.line, exitCode: result.exitCode, message });
    },
    notice(text) {
      clear();
      io.notice(text);
      if (last && live) draw(last);
    },
    progress(p) {
      last = p;
      if (!live) return;
      const t = now();
      if (t - lastDraw < REDRAW_MS && p.ok + p.failed + p.skipped < p.total) return;
      lastDraw = t;
      draw(p);
    },
    async finish(s, total) {
      clear();
      // With --secret-to stdout, stdout holds the secret and nothing else: the summary goes to stderr.
      const toStderr = targets.includes('stdout');
      const out = toStderr ? io.stderr : io.stdout;
      const lines = [
        `Rotated ${s.ok} of ${total} endpoint${total === 1 ? '' : 's'} in ${(s.elapsedMs / 1000).toFixed(1)} s: ${s.failed} failed, ${s.skipped} skipped (${s.notDue > 0 ? `${s.notDue} not due, ${s.skipped - s.notDue} ` : ''}done by an earlier run)${s.notStarted ? `, ${s.notStarted} not started` : ''}.`,
      ];
      if (s.ok > 0) lines.push(`New secrets went to: ${targets.map((t) => escapeInline(t)).join(', ')}`);
      if (s.throttled > 0) lines.push(`The server asked to slow down ${s.throttled} time${s.throttled === 1 ? '' : 's'}; ${s.requests} requests in all.`);
      // Failure messages came from the server and may echo any secret of the run.
      const write = (text: string) => out.write(io.scrubber.scrub(text));
      write(lines.join('\n') + '\n');
      if (skipped.length > 0) {
        write(`\nSkipped, done by an earlier run (a line left at its old version, or a re-run)${s.notDue > 0 ? ' or not due (--every)' : ''}:\n${skipped.join('')}`);
        if (s.skipped > skipped.length) write(`… and ${s.skipped - skipped.length} more (--json lists every item)\n`);
      }
      if (failures.length === 0) return;
      write('\nFailed:\n');
      write(await failureTable(failures, out.isTTY, toStderr ? io.color.stderr : io.color.stdout, io.columns));
      if (s.failed > failures.length) write(`… and ${s.failed - failures.length} more (--json lists every item)\n`);
    },
  };
}

async function failureTable(failures: readonly Failure[], tty: boolean, color: boolean, columns: number): Promise<string> {
  if (!tty) return failures.map((f) => `${escapeInline(f.endpointId)}\tline ${f.line}\texit ${f.exitCode}\t${escapeInline(f.message)}\n`).join('');
  const { default: Table } = await import('cli-table3');
  const table = new Table({
    head: ['endpoint', 'line', 'exit', 'error'],
    style: { head: [], border: color ? ['grey'] : [] },
    colWidths: [26, 7, 6, Math.max(30, columns - 26 - 7 - 6 - 5)],
    wordWrap: true,
  });
  for (const f of failures) table.push([escapeInline(f.endpointId), String(f.line), String(f.exitCode), escapeInline(f.message)]);
  return table.toString() + '\n';
}

/** "  we_1  version 4, rotated by the run of 2026-01-01T04:00:00.000Z" */
function skippedLine(r: Extract<ItemLine, { ok: true }>): string {
  const version = r.version !== undefined ? `version ${r.version}, ` : '';
  if (r.due === false) return `  ${escapeInline(r.endpointId)}  ${version}not due: last rotated at ${escapeInline(r.lastRotatedAt ?? 'an unknown time')}\n`;
  const when = 'doneAt' in r && r.doneAt !== undefined ? `by the run of ${escapeInline(r.doneAt)}` : 'by an earlier run';
  return `  ${escapeInline(r.endpointId)}  ${version}rotated ${when}\n`;
}

/** An item's result line as the CI report shows it (system/ci-report.ts); a 7 says which expectedVersion to give. */
export function reportRow(r: ItemLine): ReportRow {
  if (r.ok) return { endpointId: r.endpointId, outcome: r.skipped ? 'skipped' : 'rotated', version: r.version ?? null, fingerprint: r.fingerprint || null, exitCode: 0 };
  const current = r.exitCode === EXIT.versionConflict ? currentVersionOf(r.error.details) : undefined;
  const explained =
    current !== undefined ? [`the endpoint is at version ${current}: give its manifest line "expectedVersion":${current} (--next-manifest writes each endpoint's version after a run)`] : [];
  return rowOfError({ ...r.error, exitCode: r.exitCode }, r.endpointId, explained);
}
