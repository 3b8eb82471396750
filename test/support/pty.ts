// Runs bin/chatctl.js with stdin and stdout on a pseudo-terminal, using
// util-linux `script -qfec "<cmd>" /dev/null`. stderr can be split off to a
// file (then stderr is not the terminal) so that what reaches each stream can
// be asserted separately.
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, NODE } from './fixtures.js';
import { buildEnv, workspace, type Workspace } from './run.js';

export interface PtyOptions {
  env?: Record<string, string | undefined>;
  ws?: Workspace;
  /** Leave NO_COLOR unset (default: NO_COLOR=1). */
  color?: boolean;
  /** Send stderr to a file instead of the terminal. */
  splitStderr?: boolean;
  /** Send stdout to a file (stdin stays the terminal). */
  splitStdout?: boolean;
  timeoutMs?: number;
}

export interface PtyResult {
  exitCode: number;
  /** Everything written to the terminal (CRLF line ends as the pty gives them). */
  output: string;
  /** Only with splitStderr. */
  stderr: string;
  /** Only with splitStdout. */
  stdout: string;
  ws: Workspace;
  timedOut: boolean;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export async function runInPty(args: string[], opts: PtyOptions = {}): Promise<PtyResult> {
  const ws = opts.ws ?? workspace();
  const env = buildEnv(ws, { TERM: 'xterm-256color', SHELL: '/bin/sh', ...opts.env }, opts.color);
  const stamp = process.hrtime.bigint();
  const stderrFile = join(ws.cwd, `.pty-stderr-${stamp}`);
  const stdoutFile = join(ws.cwd, `.pty-stdout-${stamp}`);
  let cmd = ['exec', NODE, BIN, ...args].map((a, i) => (i === 0 ? a : shellQuote(a))).join(' ');
  if (opts.splitStderr) cmd += ` 2>${shellQuote(stderrFile)}`;
  if (opts.splitStdout) cmd += ` >${shellQuote(stdoutFile)}`;
  const r = await execa('script', ['-qfec', cmd, '/dev/null'], {
    cwd: ws.cwd,
    env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    stripFinalNewline: false,
    timeout: opts.timeoutMs ?? 20_000,
    encoding: 'utf8',
  });
  const slurp = (on: boolean | undefined, f: string) => {
    if (!on) return '';
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  };
  const stderr = slurp(opts.splitStderr, stderrFile);
  const stdout = slurp(opts.splitStdout, stdoutFile);
  return {
    exitCode: r.exitCode ?? -1,
    output: String(r.stdout ?? ''),
    stderr,
    stdout,
    ws,
    timedOut: r.timedOut ?? false,
  };
}
