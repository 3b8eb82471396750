// Prints vitest's JSON report as the one plain line CI reads:
// "N passed, M failed" (", K skipped" when any were skipped).
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.test-results/results.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  console.error(`test-summary: no test report at ${file} (the type check or the test run failed before reporting)`);
  process.exit(1);
}
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(report.numFailedTests > 0 ? 1 : 0);
