// test/support/slowdown.ts: the factor the suite's limits on waits are
// scaled by, read from the machine's load.
import { afterEach, describe, expect, it } from 'vitest';
import { QUIET_TEST_TIMEOUT_MS, scaled, slowdown } from '../support/slowdown.js';

const fixed = process.env.CHATCTL_TEST_SLOWDOWN;
afterEach(() => {
  if (fixed === undefined) delete process.env.CHATCTL_TEST_SLOWDOWN;
  else process.env.CHATCTL_TEST_SLOWDOWN = fixed;
});

describe('slowdown', () => {
  it('is 1 while the load is the suite alone: up to two runnable tasks per core', () => {
    delete process.env.CHATCTL_TEST_SLOWDOWN;
    expect(slowdown('0.02 0.10 0.30 1/180 4242\n', 2)).toBe(1);
    expect(slowdown('3.90 3.00 2.00 5/180 4242\n', 2)).toBe(1);
  });

  it('grows with the 1-minute load beyond that: six spinning processes beside the suite on two cores, 2.5x', () => {
    delete process.env.CHATCTL_TEST_SLOWDOWN;
    expect(slowdown('10.00 8.00 4.00 3/180 4242\n', 2)).toBe(2.5);
    expect(slowdown('10.00 8.00 4.00 3/180 4242\n', 4)).toBe(1.25);
  });

  it('sees load that just started, before the average does: the tasks runnable now, less the reader', () => {
    delete process.env.CHATCTL_TEST_SLOWDOWN;
    expect(slowdown('1.00 0.50 0.20 13/180 4242\n', 2)).toBe(3);
  });

  it('stops at ten times, and is 1 where there is no reading', () => {
    delete process.env.CHATCTL_TEST_SLOWDOWN;
    expect(slowdown('200.00 100.00 50.00 300/900 4242\n', 2)).toBe(10);
    expect(slowdown(null, 2)).toBe(1);
    expect(slowdown('garbage', 2)).toBe(1);
  });

  it('CHATCTL_TEST_SLOWDOWN fixes it', () => {
    process.env.CHATCTL_TEST_SLOWDOWN = '3';
    expect(slowdown('0.00 0.00 0.00 1/100 1\n', 2)).toBe(3);
    expect(scaled(1000)).toBe(3000);
  });

  it("sets this file's per-test limit: the quiet one or more, at most ten times it", ({ task }) => {
    expect(task.timeout).toBeGreaterThanOrEqual(QUIET_TEST_TIMEOUT_MS);
    expect(task.timeout).toBeLessThanOrEqual(10 * QUIET_TEST_TIMEOUT_MS);
  });
});
