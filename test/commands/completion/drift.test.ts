// What the build pre-computed for bin/chatctl.js's fast paths, and what
// completions/ holds, must equal what the real program produces.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { buildMeta } from '../../../src/app/main.js';
import { COMPLETION_FILES, SHELLS, completionScript } from '../../../src/completion/install.js';
import { BIN, ROOT } from '../../support/fixtures.js';
import { runInProcess } from '../../support/in-process.js';
import { SHARED_CACHE_DIR } from '../../support/run.js';

const meta = await buildMeta();
const fast = JSON.parse(readFileSync(join(ROOT, 'dist', 'fast.json'), 'utf8'));
const builtTree = JSON.parse(readFileSync(join(ROOT, 'dist', 'tree.json'), 'utf8'));
const run = (args: string[]) => execFileSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, CHATCTL_CACHE_DIR: SHARED_CACHE_DIR } });

describe('no drift', () => {
  it.each(SHELLS.map((s) => [s, s]))('completions/%s equals `chatctl completion %s`', (shell) => {
    const file = readFileSync(join(ROOT, 'completions', COMPLETION_FILES[shell]), 'utf8');
    expect(file).toBe(completionScript(shell));
    expect(run(['completion', shell])).toBe(file);
  });

  it('dist/ holds the help and tree of the current source (run npm run build)', () => {
    expect(fast.version).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    expect(fast.help).toEqual(meta.help);
    expect(builtTree).toEqual(meta.tree);
  });

  it('pre-rendered help is what commander prints, command by command', async () => {
    const paths = Object.keys(fast.help);
    expect(paths).toEqual(expect.arrayContaining(['', 'webhooks', 'webhooks create', 'webhooks rotate', 'webhooks reactivate', 'profile set', 'auth login', 'exit-codes', 'completion', 'sandbox']));
    // Every page live, in-process ("--no-color" first defeats no fast path
    // here: execute() always renders with commander).
    for (const p of paths) {
      const words = p ? p.split(' ') : [];
      const live = await runInProcess(['--no-color', ...words, '--help'], { env: { PATH: process.env.PATH }, cwd: ROOT });
      expect(live.exitCode).toBe(0);
      expect(live.stdout, p).toBe(fast.help[p]);
    }
    // The packaged bin's fast path prints those pages (a sample), and its slow
    // path (the whole program in a process, as in-process above) agrees.
    for (const p of ['', 'webhooks rotate', 'completion install', 'doctor']) {
      const words = p ? p.split(' ') : [];
      expect(run([...words, '--help'])).toBe(fast.help[p]);
    }
    expect(run(['--no-color', 'webhooks', 'rotate', '--help'])).toBe(fast.help['webhooks rotate']);
  });

  it('help exit-codes prints the exit-code table; aliases reach the same help', () => {
    const text = run(['help', 'exit-codes']);
    for (const code of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 130]) expect(text).toMatch(new RegExp(`^\\s*${code}\\s`, 'm'));
    expect(run(['webhook', 'rotate', '-h'])).toBe(run(['webhooks', 'rotate', '--help']));
    expect(run(['help', 'webhooks', 'rotate'])).toBe(run(['webhooks', 'rotate', '--help']));
  });

  it('--version is the package version', () => {
    expect(run(['--version'])).toBe(`${fast.version}\n`);
    expect(run(['-V'])).toBe(`${fast.version}\n`);
  });
});
