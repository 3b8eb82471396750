import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The files that take longest (npm installs from a fresh copy, the 300-item
 * fleet, TLS and proxy processes, terminals, shells) start first, so that
 * none of them is left running alone at the end. vitest's own order (by the
 * last run's times, or by file size on a fresh clone) follows.
 */
const LONGEST_FIRST = [
  'test/readme/readme.test.ts',
  'test/e2e/fleet.test.ts',
  'test/faults/proxy-tls.test.ts',
  'test/terminal/pty.test.ts',
  'test/e2e/secret-sinks.test.ts',
  'test/faults/signals-pipes.test.ts',
  'test/faults/compile-cache.test.ts',
  'test/demo/demo.test.ts',
  'test/completion/install.test.ts',
  'test/completion/shells.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(`/${name}`));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return (await super.sort(files))
      .map((f, at) => ({ f, at }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.at - b.at)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  // What the build defines: in-process runs report the package's version too.
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
  test: {
    include: ['test/**/*.test.ts'],
    // One compile-cache folder for every chatctl child of the run.
    globalSetup: ['test/support/global-setup.ts'],
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
    sequence: { sequencer: LongestFirst },
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
