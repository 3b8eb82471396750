// Every bundle in dist/ is ASCII: one character beyond it makes V8 hold the
// whole source as a two-byte string, and each run of chatctl then reads and
// compiles main.cjs at about half the speed (scripts/build.mjs says more).
// Reads dist/ only: npm test builds it before the suite.
import { expect, test } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../support/fixtures.js';

function bundles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? bundles(join(dir, e.name)) : e.name.endsWith('.cjs') ? [join(dir, e.name)] : []));
}

test('every bundle in dist/ is ASCII, main.cjs and the lazy ones alike', () => {
  const files = bundles(join(ROOT, 'dist'));
  expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['dist/main.cjs', 'dist/complete.cjs', 'dist/lazy/prompts.cjs']));
  const offenders = files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (/[^\x00-\x7f]/.test(line) ? [`${relative(ROOT, file)}:${i + 1}: ${line.trim().slice(0, 100)}`] : [])),
  );
  expect(offenders).toEqual([]);
});
