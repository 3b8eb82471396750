import { defineConfig } from 'vitest/config';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig({
  // What the build defines: in-process runs report the package's version too.
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
  test: {
    include: ['test/**/*.test.ts'],
    // Many files wait on sockets, timers and child processes rather than the
    // CPU: four at a time keep two cores busy (vitest's default here is one;
    // measured, four finished the suite in 79 s where three took 84 s).
    maxWorkers: 4,
    // Files in one worker share its module graph: the in-process tests load
    // the whole program once per worker instead of once per file, which
    // halves their CPU time. No test mocks modules, and every run through
    // execute() gets its own world (env, streams, clock), so nothing carries
    // over from one file to the next.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report feeds the "N passed, M failed" line that .ci/run prints.
    reporters: ['default', ['json', { outputFile: '.test-results/results.json' }]],
    // `npm run coverage` (and .ci/run): what the suite exercises of src/,
    // in-process. Spawned runs (signals, terminals, the packaged bin) are not
    // counted, so the figure is a floor.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/**/*.d.ts'],
      reporter: ['text-summary', 'text', 'json-summary'],
      reportsDirectory: '.test-results/coverage',
      thresholds: { statements: 90, lines: 90 },
    },
  },
});
