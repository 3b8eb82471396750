// What the fuzz properties share: how many runs, how a child is run (several
// at once, each in a fresh workspace with a clean environment), and the
// invariants every run must keep.
//
// Runs: FUZZ_RUNS (children per property; default small enough for `npm
// test`), FUZZ_SEED to replay, FUZZ_CONCURRENCY children at a time.
// scripts/fuzz-long.mjs sets them for long runs by hand.
import { ALLOWED_EXIT } from '../support/fixtures.js';
import { leaks, stackTrace } from '../support/json.js';
import { buildEnv, runInProcess, spawnCli, workspace, type Workspace } from '../support/run.js';
import { assertJsonStderr } from '../support/in-process.js';
import { scaled } from '../support/slowdown.js';

export const CONCURRENCY = Math.max(1, Number(process.env.FUZZ_CONCURRENCY) || 4);

/** fast-check parameters for a property over batches of CONCURRENCY children. */
export function fuzzParams(defaultChildren: number): { numRuns: number; seed?: number; endOnFailure: boolean; verbose: number } {
  const children = Number(process.env.FUZZ_RUNS) || defaultChildren;
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
  return { numRuns: Math.max(1, Math.ceil(children / CONCURRENCY)), ...(seed !== undefined ? { seed } : {}), endOnFailure: true, verbose: 1 };
}

/** A per-test timeout that scales with the number of runs. */
export function fuzzTimeoutMs(defaultChildren: number, perChildMs = 400): number {
  const children = Number(process.env.FUZZ_RUNS) || defaultChildren;
  return scaled(Math.max(55_000, Math.ceil((children * perChildMs) / CONCURRENCY) * 3));
}

export interface ChildResult {
  args: string[];
  exitCode: number | undefined;
  signal: string | undefined;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** We had to stop it (it outlived stopAfterMs). */
  stoppedByUs: boolean;
  ws: Workspace;
}

/**
 * Runs chatctl in-process through execute() (or, with `spawn`, bin/chatctl.js
 * as a child); after stopAfterMs it gets SIGINT (then, a child, SIGKILL).
 */
export async function runChild(
  args: string[],
  opts: { env?: Record<string, string | undefined>; input?: string; stopAfterMs?: number; ws?: Workspace; prepare?: (ws: Workspace) => void; spawn?: boolean } = {},
): Promise<ChildResult> {
  const ws = opts.ws ?? workspace();
  opts.prepare?.(ws);
  if (!opts.spawn) {
    const controller = new AbortController();
    let stoppedByUs = false;
    const stopTimer = setTimeout(() => {
      stoppedByUs = true;
      controller.abort('SIGINT');
    }, opts.stopAfterMs ?? scaled(8000));
    try {
      const r = await runInProcess(args, { env: buildEnv(ws, opts.env), cwd: ws.cwd, input: opts.input, signal: controller.signal });
      return { args, exitCode: r.exitCode, signal: undefined, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, stoppedByUs, ws };
    } finally {
      clearTimeout(stopTimer);
    }
  }
  const started = Date.now();
  let stoppedByUs = false;
  // No timeout of its own: the stop timer ends it (SIGINT, then SIGKILL).
  const { child } = spawnCli(args, { ws, env: opts.env, input: opts.input, timeoutMs: 0, maxBuffer: 64 * 1024 * 1024 });
  const stopTimer = setTimeout(() => {
    stoppedByUs = true;
    child.kill('SIGINT');
    setTimeout(() => child.kill('SIGKILL'), 3000).unref();
  }, opts.stopAfterMs ?? scaled(8000));
  const r = await child;
  clearTimeout(stopTimer);
  assertJsonStderr(args, buildEnv(ws, opts.env), String(r.stderr ?? ''));
  return {
    args,
    exitCode: r.exitCode,
    signal: r.signal,
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
    durationMs: Date.now() - started,
    stoppedByUs,
    ws,
  };
}

/** main.ts's own test: the flag appears before any `--`. */
export function flagBeforeDoubleDash(argv: string[], flag: string): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes(flag);
}

export interface Invariants {
  /** Never on stderr or stdout. */
  credentials: string[];
  /** Never on stderr. */
  secrets: string[];
  /** A run that outlives its stop timer is only acceptable for these. */
  mayRunForever?: boolean;
  /** Extra exit codes that would be wrong for this run. */
  forbiddenExit?: number[];
}

/** Every broken invariant, as readable strings (empty: all good). */
export function violations(r: ChildResult, inv: Invariants): string[] {
  const out: string[] = [];
  const stack = stackTrace(r.stderr) ?? stackTrace(r.stdout.includes('node:internal') ? r.stdout : '');
  if (stack) out.push(`stack trace on stderr: ${JSON.stringify(stack)}`);
  if (r.stoppedByUs && !inv.mayRunForever) out.push(`still running after its stop timer (${r.durationMs} ms)`);
  if (r.signal && !r.stoppedByUs) out.push(`killed by ${r.signal}`);
  if (r.exitCode === undefined || !ALLOWED_EXIT.has(r.exitCode)) out.push(`exit code ${String(r.exitCode)} is not in the table`);
  if (r.exitCode !== undefined && inv.forbiddenExit?.includes(r.exitCode)) out.push(`exit code ${r.exitCode} is wrong for this run`);
  const leakedErr = leaks(r.stderr, [...inv.credentials, ...inv.secrets]);
  if (leakedErr.length) out.push(`stderr leaks ${leakedErr.map((v) => v.slice(0, 16) + '…').join(', ')}`);
  const leakedOut = leaks(r.stdout, inv.credentials);
  if (leakedOut.length) out.push(`stdout leaks ${leakedOut.map((v) => v.slice(0, 16) + '…').join(', ')}`);

  const json = flagBeforeDoubleDash(r.args, '--json');
  const debug = flagBeforeDoubleDash(r.args, '--debug');
  // --json: stderr holds nothing on success, and exactly the one error line on failure.
  if (json && !debug && !r.stoppedByUs && r.exitCode !== undefined) {
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    if (r.exitCode === 0) {
      if (lines.length) out.push(`--json success: stderr is not empty: ${JSON.stringify(r.stderr.slice(0, 200))}`);
    } else {
      if (lines.length !== 1) out.push(`--json: exit ${r.exitCode} with ${lines.length} lines on stderr (want exactly one error line)`);
      const last = lines[lines.length - 1];
      if (last !== undefined) {
        try {
          const parsed = JSON.parse(last) as { error?: { code?: unknown; message?: unknown }; exitCode?: unknown };
          if (typeof parsed.error?.code !== 'string' || typeof parsed.error?.message !== 'string') out.push('--json: stderr line is not an error object');
          if (parsed.exitCode !== r.exitCode) out.push(`--json: exitCode ${String(parsed.exitCode)} in the line, ${String(r.exitCode)} from the process`);
        } catch {
          out.push(`--json: stderr line does not parse: ${JSON.stringify(last.slice(0, 200))}`);
        }
      }
    }
  }
  return out;
}

/** FUZZ_STATS=1: how the runs ended, printed once at the end (to see what the fuzz reached). */
const stats = new Map<string, number>();
export function tally(label: string): void {
  stats.set(label, (stats.get(label) ?? 0) + 1);
}
export function printStats(title: string): void {
  if (!process.env.FUZZ_STATS) return;
  const rows = [...stats.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => `  ${String(n).padStart(5)}  ${k}`);
  process.stderr.write(`${title}\n${rows.join('\n')}\n`);
}

/** The error code of a --json error line, or a short description of stderr. */
export function errCode(stderr: string): string {
  const m = /"code":"([^"]*)"/.exec(stderr);
  if (m) return m[1]!;
  return stderr === '' ? '(quiet)' : (/error: (.{0,40})/.exec(stderr)?.[1] ?? '(text)');
}

/** A readable failure report for one child. */
export function describeChild(r: ChildResult, problems: string[]): string {
  return [
    `argv: ${JSON.stringify(r.args)}`,
    `exit: ${String(r.exitCode)} signal: ${String(r.signal)} in ${r.durationMs} ms`,
    `problems: ${problems.join('; ')}`,
    `stderr: ${JSON.stringify(r.stderr.slice(0, 1500))}`,
    `stdout: ${JSON.stringify(r.stdout.slice(0, 300))}`,
  ].join('\n');
}

/** No NUL (argv cannot carry it); nothing absolute or climbing out of the workspace. */
export function tame(s: string): string {
  return s
    .replace(/\0/g, '')
    .replace(/\.\./g, '._')
    .replace(/^[/~\\]+/, '')
    .replace(/=[/~\\]+/g, '=');
}
