// How much longer than on a quiet machine a wait may take now. The limits
// tests put on what is not an event (vitest's per-test limit, the guards
// that stop a hung child or run) were set on a quiet machine running the
// suite alone, which keeps about two tasks runnable per core (four workers
// and their children on two cores). Beyond that, each task more per core
// makes a wait that much longer: six spinning processes beside the suite
// on two cores, about 2.5x; another agent's suite, about 2x. Read afresh
// at each call (the load of a shared machine comes and goes); vitest's
// limit is set from it before each file (test/support/worker-setup.ts).
//
// The load is the larger of the 1-minute load average (what was running a
// while) and the tasks runnable right now (what just started, which the
// average takes a minute to show), less the reading process. Where neither
// can be read (not Linux), 1. CHATCTL_TEST_SLOWDOWN=N fixes the factor.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** vitest's per-test and per-hook limit on a quiet machine (vitest.config.ts). */
export const QUIET_TEST_TIMEOUT_MS = 30_000;

/** The runnable tasks per core the quiet limits allow for. */
const SUITE_LOAD_PER_CORE = 2;
/** A hang is still found, within ten times the quiet limit. */
const MAX_SLOWDOWN = 10;

/** The factor; `loadavg` is /proc/loadavg's text (null where there is none). */
export function slowdown(loadavg: string | null = readLoadavg(), cores = availableParallelism()): number {
  const fixed = Number(process.env.CHATCTL_TEST_SLOWDOWN);
  if (fixed >= 1) return fixed;
  const [oneMinute, , , runnable] = (loadavg ?? '').split(' ');
  const load = Math.max(Number(oneMinute) || 0, (Number(runnable?.split('/')[0]) || 1) - 1);
  return Math.min(MAX_SLOWDOWN, Math.max(1, load / (SUITE_LOAD_PER_CORE * cores)));
}

function readLoadavg(): string | null {
  try {
    return readFileSync('/proc/loadavg', 'utf8');
  } catch {
    return null; // not Linux: no reading, no scaling
  }
}

/** `ms` on a quiet machine, as long as this machine needs now. */
export function scaled(ms: number): number {
  return Math.round(ms * slowdown());
}
