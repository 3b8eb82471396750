#!/usr/bin/env node
// The fuzz properties of test/fuzz (argv and server answers), with many more
// runs than `npm test` gives them. For use by hand:
//
//   node scripts/fuzz-long.mjs --runs 2000
//   node scripts/fuzz-long.mjs --runs 500 --only responses --seed 42 --stats
//
// Options: --runs N (children per property, default 2000), --seed N (replay a
// failure: fast-check prints the seed), --concurrency N (children at a time,
// default 4), --only argv|responses, --stats (print how the runs ended).
// It runs vitest with FUZZ_RUNS / FUZZ_SEED / FUZZ_CONCURRENCY / FUZZ_STATS
// set, so the properties are exactly those of the suite.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opts = { runs: '2000', seed: undefined, concurrency: undefined, only: undefined, stats: false };

for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
  const value = () => inline ?? args[++i];
  switch (flag) {
    case '--runs':
      opts.runs = value();
      break;
    case '--seed':
      opts.seed = value();
      break;
    case '--concurrency':
      opts.concurrency = value();
      break;
    case '--only':
      opts.only = value();
      break;
    case '--stats':
      opts.stats = true;
      break;
    case '-h':
    case '--help':
      process.stdout.write('usage: node scripts/fuzz-long.mjs [--runs N] [--seed N] [--concurrency N] [--only argv|responses] [--stats]\n');
      process.exit(0);
      break;
    default:
      process.stderr.write(`fuzz-long: unknown option ${a}\n`);
      process.exit(2);
  }
}

const positive = (name, v) => {
  if (v !== undefined && !/^\d+$/.test(String(v))) {
    process.stderr.write(`fuzz-long: ${name} must be a whole number\n`);
    process.exit(2);
  }
};
positive('--runs', opts.runs);
positive('--seed', opts.seed);
positive('--concurrency', opts.concurrency);
if (opts.only !== undefined && !['argv', 'responses'].includes(opts.only)) {
  process.stderr.write('fuzz-long: --only takes argv or responses\n');
  process.exit(2);
}

const files = opts.only ? [`test/fuzz/${opts.only}.test.ts`] : ['test/fuzz/argv.test.ts', 'test/fuzz/responses.test.ts'];
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
if (!existsSync(vitest)) {
  process.stderr.write('fuzz-long: vitest is not installed (npm install)\n');
  process.exit(1);
}

const env = { ...process.env, FUZZ_RUNS: opts.runs };
if (opts.seed !== undefined) env.FUZZ_SEED = opts.seed;
if (opts.concurrency !== undefined) env.FUZZ_CONCURRENCY = opts.concurrency;
if (opts.stats) env.FUZZ_STATS = '1';

process.stdout.write(`fuzz-long: ${opts.runs} children per property${opts.seed ? `, seed ${opts.seed}` : ''}: ${files.join(' ')}\n`);
// --reporter=verbose replaces the config's reporters, so a long run does not
// overwrite the suite's .test-results/results.json.
const child = spawn(process.execPath, [vitest, 'run', ...files, '--reporter=verbose'], { cwd: root, env, stdio: 'inherit' });
const forward = (sig) => child.kill(sig);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 1)));
