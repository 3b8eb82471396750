// A rebuild never leaves dist/ missing or half-written: chatctl runs started
// while `node scripts/build.mjs` runs all answer, from the old files or the
// new ones. (The build moves each file in with an atomic rename.)
import { describe, expect, test } from 'vitest';
import { execa } from 'execa';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, NODE, ROOT, PKG_VERSION } from '../support/fixtures.js';
import { scaled } from '../support/slowdown.js';

describe('the build', () => {
  test('chatctl keeps working while dist/ is rebuilt', { timeout: scaled(120_000) }, async () => {
    const build = execa(NODE, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, reject: false });
    let done = false;
    void build.finally(() => (done = true));
    const runs: Array<{ exitCode: number | undefined; stdout: string; stderr: string }> = [];
    // Until the build ends (and at least a few times), run the program both
    // through the launcher's fast path and through the full bundle.
    while (!done || runs.length < 6) {
      const batch = await Promise.all([
        execa(NODE, [BIN, '--version'], { reject: false, env: { CHATCTL_COMPILE_CACHE: '0' } }),
        execa(NODE, [BIN, 'exit-codes'], { reject: false, env: { CHATCTL_COMPILE_CACHE: '0' } }),
      ]);
      for (const r of batch) runs.push({ exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) });
    }
    expect((await build).exitCode).toBe(0);
    for (const r of runs) {
      expect(r.stderr, r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
    }
    // Every other run is --version (one of each per batch), and each printed it (execa drops the final newline).
    expect(runs.filter((r) => r.stdout === PKG_VERSION)).toHaveLength(runs.length / 2);
    // Nothing of the build is left beside dist/.
    expect(readdirSync(ROOT).filter((n) => n.startsWith('dist.'))).toEqual([]);
    expect(existsSync(join(ROOT, 'dist', 'main.cjs'))).toBe(true);
  });
});
