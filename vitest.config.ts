import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { QUIET_TEST_TIMEOUT_MS } from './test/support/slowdown.js';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The files that take longest (npm installs from a fresh copy, the 300-item
 * fleet, TLS and proxy processes, terminals, shells) start first, so that
 * none of them is left running alone at the end. No list of them is kept:
 * - after a run, vitest's own results cache (under node_modules/.vite) has
 *   each file's duration, and the longest starts first;
 * - a file it has no duration for (a fresh clone, a new file) is weighed by
 *   its code: the places it starts a process (a child, a shell, npm, a
 *   terminal) times its size. Such files start before those with a
 *   duration, heaviest first, as vitest runs unknown files first.
 */
const STARTS_A_PROCESS = /\b(?:spawn|spawnSync|spawnCli|execa|execFile|execFileSync|execSync|fork)\s*\(|\bspawn: true\b/g;

function processWeight(source: string): number {
  return (1 + (source.match(STARTS_A_PROCESS) ?? []).length) * source.length;
}

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const duration = (f: TestSpecification) => this.ctx.cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`)?.duration;
    const weighed = new Map<TestSpecification, number>();
    const weight = (f: TestSpecification) => {
      let w = weighed.get(f);
      if (w === undefined) weighed.set(f, (w = processWeight(readFileSync(f.moduleId, 'utf8'))));
      return w;
    };
    const known = (await super.sort(files)).map((f) => ({ f, ms: duration(f) }));
    return [
      ...known
        .filter((k) => k.ms === undefined)
        .map(({ f }) => f)
        .sort((a, b) => weight(b) - weight(a)),
      ...known
        .filter((k): k is { f: TestSpecification; ms: number } => k.ms !== undefined)
        .sort((a, b) => b.ms - a.ms)
        .map(({ f }) => f),
    ];
  }
}

export default defineConfig({
  // What the build defines: in-process runs report the package's version too.
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
  test: {
    include: ['test/**/*.test.ts'],
    // One compile-cache folder for every chatctl child of the run.
    globalSetup: ['test/support/global-setup.ts'],
    // The tests' own fetch() opens a connection per request, so none is
    // reused after the server closed it; limits scale with the machine's
    // load (test/support/worker-setup.ts).
    setupFiles: ['test/support/worker-setup.ts'],
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
    // On a quiet machine; scaled with its load before each file
    // (test/support/slowdown.ts, test/support/worker-setup.ts).
    testTimeout: QUIET_TEST_TIMEOUT_MS,
    hookTimeout: QUIET_TEST_TIMEOUT_MS,
    // The JSON report feeds the "N passed, M failed" line that .ci/run prints.
    reporters: ['default', ['json', { outputFile: '.test-results/results.json' }]],
    // `npm run coverage` (and .ci/run): what the suite exercises of src/,
    // in-process. Spawned runs (signals, terminals, the packaged bin) are not
    // counted, so the figure is a floor.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      // The single executable's launcher runs only inside the executable (test/sea), as bin/chatctl.js runs only as a process.
      exclude: ['src/**/*.d.ts', 'src/sea/launcher.ts'],
      reporter: ['text-summary', 'text', 'json-summary'],
      reportsDirectory: '.test-results/coverage',
      thresholds: { statements: 90, lines: 90 },
    },
  },
});
