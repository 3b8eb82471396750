// The suite's own rule (CONTRIBUTING.md, "Building and testing"): no test
// asserts how long something took on the wall clock, since a loaded machine
// bends every such bound. Waits are checked on an injected clock, by what
// was not waited for, by counts, or by the order of timers; a run's speed
// is measured by `npm run bench`. This reads every test file for an
// expectation on a measured duration.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/fixtures.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'data' ? [] : testFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** A real clock read, or a duration measured with one, inside an expectation. */
const WALL_CLOCK = /\bDate\.now\(\)|\bperformance\.now\(\)|\bprocess\.hrtime\b|\bdurationMs\b|\breceivedAt\b|\belapsed\b/;

describe('the suite holds on a busy machine', () => {
  it('no expectation is on a wall-clock time', () => {
    const self = join(ROOT, 'test', 'docs', 'suite-rules.test.ts');
    const found: string[] = [];
    for (const file of testFiles(join(ROOT, 'test')).filter((f) => f !== self)) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/\bexpect\(/.test(line) && WALL_CLOCK.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('the check finds such an expectation', () => {
    expect(WALL_CLOCK.test('expect(r.durationMs).toBeLessThan(5000);')).toBe(true);
    expect(WALL_CLOCK.test('expect(performance.now() - started).toBeLessThan(300);')).toBe(true);
    // A duration on an injected clock is not the wall clock's.
    expect(WALL_CLOCK.test('expect(summary.elapsedMs).toBeLessThanOrEqual(5000 * 1.15);')).toBe(false);
  });
});
