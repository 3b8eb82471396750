// `npm test`: the build (when the sources changed), then the type check and
// the suite side by side.
// tsc is one process waiting mostly on one core while the suite's workers
// wait on sockets and children, so running them together takes less time
// than one after the other. tsc's output is held and printed after the
// suite's; the exit status is the suite's, or tsc's if the suite passed.
// Arguments go to vitest (`npm test -- --coverage`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distIsCurrent } from './build-stamp.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (p) => join(root, 'node_modules', p);

// The suite talks to loopback only, with test certificates it makes and
// hands over itself; a machine-wide NODE_EXTRA_CA_CERTS (a bundle of every
// public root, on some machines) would only double the start-up of each of
// the hundreds of Node processes the tests start (0.06 → 0.12 s of CPU).
const env = { ...process.env };
delete env.NODE_EXTRA_CA_CERTS;

// dist/ is rebuilt only when its sources changed since it was built
// (scripts/build-stamp.mjs): after `npm install` it is current already.
if (distIsCurrent()) process.stdout.write('build: dist/ is current (sources unchanged since it was built)\n');
else await import('./build.mjs');

// Incremental: a second run re-checks only what changed (its notes are kept
// under node_modules/.cache, beside vite's).
// A larger young generation: tsc allocates fast and its scavenges cost a
// fifth of its CPU at V8's default (measured: 15.4 → 12.5 s of CPU for a
// full check, beside the suite on two cores).
const tsc = spawn(
  process.execPath,
  ['--max-semi-space-size=64', bin('typescript/bin/tsc'), '--noEmit', '--incremental', '--tsBuildInfoFile', bin('.cache/chatctl/tsc.tsbuildinfo'), '--pretty', String(Boolean(process.stdout.isTTY))],
  { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
);
let checked = '';
tsc.stdout.on('data', (c) => (checked += c));
tsc.stderr.on('data', (c) => (checked += c));
const typecheck = new Promise((resolve) => tsc.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const vitest = spawn(process.execPath, [bin('vitest/vitest.mjs'), 'run', ...process.argv.slice(2)], { cwd: root, env, stdio: 'inherit' });
const suite = await new Promise((resolve) => vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const typed = await typecheck;
if (typed === 0) {
  process.stdout.write('typecheck (tsc --noEmit): no errors\n');
} else {
  process.stdout.write(`typecheck (tsc --noEmit) failed:\n${checked}`);
}
process.exitCode = suite !== 0 ? suite : typed;
