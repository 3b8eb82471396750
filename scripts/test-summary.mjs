// Prints vitest's JSON reports as the one plain line CI reads:
// "N passed, M failed" (", K skipped" when any were skipped), summed over
// the reports named on the command line (one per Node version).
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) files.push('.test-results/results.json');
let passed = 0;
let failed = 0;
let skipped = 0;
let missing = false;
for (const file of files) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  } catch {
    console.error(`test-summary: no test report at ${file} (that run failed before reporting)`);
    missing = true;
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || missing ? 1 : 0);
