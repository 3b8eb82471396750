import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report feeds the "N passed, M failed" line that .ci/run prints.
    reporters: ['default', ['json', { outputFile: '.test-results/results.json' }]],
  },
});
