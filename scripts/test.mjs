// `npm test`: the build, then the type check and the suite side by side.
// tsc is one process waiting mostly on one core while the suite's workers
// wait on sockets and children, so running them together takes less time
// than one after the other. tsc's output is held and printed after the
// suite's; the exit status is the suite's, or tsc's if the suite passed.
// Arguments go to vitest (`npm test -- --coverage`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (p) => join(root, 'node_modules', p);

await import('./build.mjs');

// Incremental: a second run re-checks only what changed (its notes are kept
// under node_modules/.cache, beside vite's).
const tsc = spawn(
  process.execPath,
  [bin('typescript/bin/tsc'), '--noEmit', '--incremental', '--tsBuildInfoFile', bin('.cache/chatctl/tsc.tsbuildinfo'), '--pretty', String(Boolean(process.stdout.isTTY))],
  { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
);
let checked = '';
tsc.stdout.on('data', (c) => (checked += c));
tsc.stderr.on('data', (c) => (checked += c));
const typecheck = new Promise((resolve) => tsc.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const vitest = spawn(process.execPath, [bin('vitest/vitest.mjs'), 'run', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
const suite = await new Promise((resolve) => vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const typed = await typecheck;
if (typed === 0) {
  process.stdout.write('typecheck (tsc --noEmit): no errors\n');
} else {
  process.stdout.write(`typecheck (tsc --noEmit) failed:\n${checked}`);
}
process.exitCode = suite !== 0 ? suite : typed;
