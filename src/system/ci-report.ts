// What a run tells the CI system around it (docs/ci-systems.md): annotations, the step summary, a JUnit report.
// Every text passes the run's scrubber first. Loaded only by a run that has one of these to do.
import { appendFileSync, closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { errorCommand, inGitHubActions } from '../output/json.js';
import { randomBytes, writeFileAtomic } from './files.js';

/** One line of the report: an item of `rotate --from`, or the one endpoint of create or rotate. */
export interface ReportRow {
  endpointId: string;
  outcome: 'rotated' | 'created' | 'skipped' | 'failed';
  version: number | null;
  fingerprint: string | null;
  exitCode: number;
  message?: string | undefined;
  /** The first next step (the error's hint, up to its first "; or"). */
  next?: string | undefined;
  /** What an exec: destination printed last. */
  said?: string | undefined;
}

type ReportTotals = { ok: number; failed: number; skipped: number; notStarted?: number };

interface CiReportSettings {
  env: Record<string, string | undefined>;
  /** Where annotations go (stderr). */
  annotate: { write(text: string): unknown };
  scrub(text: string): string;
  /** "chatctl webhooks rotate": the annotations' title starts with it. */
  command: string;
  /** --report FILE, absolute. */
  junitPath?: string | undefined;
}

/** Rows the step summary shows (GitHub takes at most 1 MiB of it per step): failures first, then the rest. */
const SUMMARY_ROWS = 1000;

/** The first step of a hint: its text up to the first "; or". */
export const firstStep = (hint: string | undefined): string | undefined => (hint === undefined ? undefined : hint.split(/; or,? /)[0]);

function lastLineOf(output: string | undefined): string | undefined {
  const lines = (output ?? '').split(/\r?\n/).map((l) => l.trim());
  return lines.findLast((l) => l !== '')?.slice(0, 500);
}

export class CiReport {
  private readonly failures: string[] = [];
  private readonly others: string[] = [];
  private rowsLeft = 0;
  private junitRows: string | undefined;
  private junitCount = 0;
  private junitBroken: string | undefined;

  constructor(private readonly s: CiReportSettings) {
    if (s.junitPath !== undefined) {
      // Testcases go to a file beside the report as they come (a fleet's run
      // holds no more in memory for them), and into the report at the end.
      this.junitRows = join(dirname(s.junitPath), `.${basename(s.junitPath).slice(0, 200)}.${randomBytes(8).toString('hex')}.rows.tmp`);
      closeSync(openSync(this.junitRows, 'wx', 0o600));
    }
  }

  add(row: ReportRow): void {
    const clean = (text: string | undefined) => (text === undefined ? undefined : oneLine(this.s.scrub(text)));
    const message = clean(row.message);
    const next = clean(row.next);
    const said = clean(row.said);
    const why = [message, said !== undefined ? `the destination said: ${said}` : undefined, next !== undefined ? `next: ${next}` : undefined];
    if (row.outcome === 'failed' && inGitHubActions(this.s.env)) {
      const who = row.endpointId !== '' ? `endpoint ${row.endpointId}: ` : '';
      const text = [`${who}exit ${row.exitCode}`, ...why].filter((t) => t !== undefined).join('; ');
      this.s.annotate.write(errorCommand(this.s.scrub(`${this.s.command}${row.endpointId !== '' ? ` ${row.endpointId}` : ''} (exit ${row.exitCode})`), this.s.scrub(text)));
    }
    if (this.s.env.GITHUB_STEP_SUMMARY) {
      const cells = [
        code(row.endpointId),
        row.outcome,
        row.version !== null ? String(row.version) : '',
        row.fingerprint ? code(row.fingerprint) : '',
        String(row.exitCode),
        cell([next ?? '', said !== undefined ? `(the destination said: ${said})` : ''].filter(Boolean).join(' ')),
      ];
      const line = `| ${cells.join(' | ')} |\n`;
      if (row.outcome === 'failed' && this.failures.length < SUMMARY_ROWS) this.failures.push(line);
      else if (row.outcome !== 'failed' && this.others.length < SUMMARY_ROWS) this.others.push(line);
      else this.rowsLeft += 1;
    }
    if (this.junitRows !== undefined) this.addTestcase(this.junitRows, row, message, why.filter(Boolean).join('\n'));
  }

  /** One testcase on its way to the report; a failure to append drops the report (said at the end), never the run. */
  private addTestcase(rowsFile: string, row: ReportRow, message: string | undefined, why: string): void {
    this.junitCount += 1;
    const body =
      row.outcome === 'failed'
        ? `<failure message="${xml(`exit ${row.exitCode}: ${message ?? ''}`)}" type="exit ${row.exitCode}">${xml(why)}</failure>`
        : row.outcome === 'skipped'
          ? `<system-out>${xml(`skipped: done by an earlier run${row.version !== null ? ` (version ${row.version})` : ''}`)}</system-out>`
          : `<system-out>${xml(`${row.outcome}${row.version !== null ? `: version ${row.version}` : ''}${row.fingerprint ? `, ${row.fingerprint}` : ''}`)}</system-out>`;
    try {
      appendFileSync(rowsFile, `    <testcase classname="chatctl.rotate" name="${xml(row.endpointId)}"${row.version !== null ? ` version="${row.version}"` : ''}>${body}</testcase>\n`);
    } catch (err) {
      this.junitBroken = (err as NodeJS.ErrnoException).code ?? String(err);
    }
  }

  /** Appends the step summary and writes the JUnit report; what could not be written is returned, not thrown: the run's outcome stands. */
  finish(totals: ReportTotals, what = 'chatctl webhooks rotate'): string | undefined {
    let problem: string | undefined;
    const summaryPath = this.s.env.GITHUB_STEP_SUMMARY;
    if (summaryPath) {
      try {
        appendFileSync(summaryPath, this.s.scrub(this.markdown(totals, what)));
      } catch (err) {
        problem = `the step summary (GITHUB_STEP_SUMMARY) could not be written: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
      }
    }
    if (this.junitBroken !== undefined) {
      this.discard();
      return `the --report file could not be written: ${this.junitBroken}`;
    }
    if (this.junitRows !== undefined && this.s.junitPath !== undefined) {
      try {
        const head = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="${this.junitCount}" failures="${totals.failed}">\n  <testsuite name="${xml(what)}" tests="${this.junitCount}" failures="${totals.failed}" skipped="0" errors="0">\n`;
        const rows = readFileSync(this.junitRows);
        writeFileAtomic(this.s.junitPath, Buffer.concat([Buffer.from(head), Buffer.from(this.s.scrub(rows.toString('utf8'))), Buffer.from('  </testsuite>\n</testsuites>\n')]), { mode: 0o644 });
      } finally {
        rmSync(this.junitRows, { force: true });
        this.junitRows = undefined;
      }
    }
    return problem;
  }

  /** Drops the testcases' file (a run refused before it started). */
  discard(): void {
    if (this.junitRows !== undefined) rmSync(this.junitRows, { force: true });
    this.junitRows = undefined;
  }

  private markdown(t: ReportTotals, what: string): string {
    const parts = [`${t.ok} ok`, `${t.failed} failed`, `${t.skipped} skipped`, ...(t.notStarted ? [`${t.notStarted} not started`] : [])];
    let text = `### ${what}\n\n${parts.join(', ')}\n\n`;
    const rows = [...this.failures, ...this.others];
    if (rows.length > 0) {
      text += '| endpoint | outcome | version | fingerprint | exit code | next step |\n|---|---|---|---|---|---|\n' + rows.join('');
      if (this.rowsLeft > 0) text += `\n… and ${this.rowsLeft} more (\`--json\` lists every item)\n`;
    }
    return `${text}\n`;
  }
}

/** Written once for a single command: a one-row report. */
export function reportOne(s: CiReportSettings, row: ReportRow, what: string): string | undefined {
  const r = new CiReport({ ...s, junitPath: undefined });
  r.add(row);
  return r.finish(row.outcome === 'failed' ? { ok: 0, failed: 1, skipped: 0 } : { ok: 1, failed: 0, skipped: 0 }, what);
}

const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ').trim();
/** A Markdown table cell: no line break, no `|` that would end it. */
const cell = (text: string) => oneLine(text).replace(/\\/g, '\\\\').replace(/\|/g, '\\|');
const code = (text: string) => `\`${cell(text).replace(/`/g, "'")}\``;
/** XML text and attribute values: the five entities, and no character XML 1.0 forbids. */
const xml = (text: string) => text.replace(/[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '\ufffd').replace(/[&<>"']/g, (c) => XML_ENTITIES[c]!);
const XML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** A failed command's error as a report row; the next step is the hint's first, else what errors/explain.ts says under the message. */
export function rowOfError(e: { message: string; hint?: string | undefined; exitCode: number; details: unknown }, endpointId: string | undefined, explained: readonly string[] = []): ReportRow {
  const d = (e.details !== null && typeof e.details === 'object' ? e.details : {}) as { endpointId?: unknown; version?: unknown; fingerprint?: unknown; failed?: unknown };
  const failed = Array.isArray(d.failed) ? (d.failed as { output?: unknown }[]) : [];
  const output = failed.map((x) => (typeof x?.output === 'string' ? x.output : '')).find((o) => o.trim() !== '');
  return {
    endpointId: typeof d.endpointId === 'string' ? d.endpointId : (endpointId ?? ''),
    outcome: 'failed',
    version: typeof d.version === 'number' ? d.version : null,
    fingerprint: typeof d.fingerprint === 'string' ? d.fingerprint : null,
    exitCode: e.exitCode,
    message: e.message,
    next: firstStep(e.hint) ?? (explained.length > 0 ? explained.map((l) => l.trim().replace(/^next: /, '')).join('; ') : undefined),
    said: lastLineOf(output),
  };
}

/** The command a failed run was, from its arguments: "chatctl webhooks rotate" and the endpoint given, if any (flags and their values left out). */
export function commandOf(argv: readonly string[], globalsWithValue: ReadonlySet<string>): { command: string; endpointId: string | undefined } {
  const words: string[] = [];
  for (let i = 0; i < argv.length && words.length < 3; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (globalsWithValue.has(a)) {
        i++;
        continue;
      }
      if (words.length >= 2) break; // a command's own flag: what follows may be its value
      continue;
    }
    words.push(a);
  }
  return { command: ['chatctl', ...words.slice(0, 2)].join(' '), endpointId: words[0] === 'webhooks' ? words[2] : undefined };
}
