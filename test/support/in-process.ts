// Runs chatctl in this process through the execute seam: the same argv,
// environment, working folder and standard input a child process would get,
// with stdout and stderr captured. Most behaviour tests use this; a process is
// spawned only where one is the thing under test (signals, pipes, a real
// terminal, shell completion, the packaged bin).
import { Readable, Writable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execute, type ExecuteContext } from '../../src/app/execute.js';

export interface InProcessOptions {
  env: Record<string, string | undefined>;
  cwd: string;
  /** Standard input (default: empty); bytes as they are. */
  input?: string | Buffer;
  tty?: { stdin?: boolean; stdout?: boolean; stderr?: boolean };
  /** stdout is /dev/null (as main.ts marks it). */
  stdoutDiscards?: boolean;
  columns?: number;
  signal?: AbortSignal;
  /** Injected clock, random source, sleep or transport. */
  inject?: Pick<ExecuteContext, 'now' | 'random' | 'randomUUID' | 'sleep' | 'transport' | 'credentialLimits'>;
  /** Aborts the run (as SIGTERM would) after this long; the test then sees the exit code. */
  timeoutMs?: number;
  /** Called after each write to stdout with everything written so far (to act mid-run, as on a child's output). */
  onStdout?: (text: string) => void;
}

export interface InProcessResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

export class Capture extends Writable {
  text = '';
  constructor(
    readonly isTTY: boolean,
    private readonly onText?: (text: string) => void,
  ) {
    super({ decodeStrings: false });
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.text += String(chunk);
    this.onText?.(this.text);
    done();
  }
}

export async function runInProcess(argv: string[], opts: InProcessOptions): Promise<InProcessResult> {
  const stdin = Object.assign(Readable.from(opts.input ? [Buffer.from(opts.input)] : []), { isTTY: Boolean(opts.tty?.stdin) });
  const stdout = Object.assign(new Capture(Boolean(opts.tty?.stdout), opts.onStdout), { discards: Boolean(opts.stdoutDiscards) });
  const stderr = new Capture(Boolean(opts.tty?.stderr));
  const controller = new AbortController();
  let timedOut = false;
  const timer = opts.timeoutMs
    ? setTimeout(() => {
        timedOut = true;
        controller.abort('SIGTERM');
      }, opts.timeoutMs)
    : undefined;
  const onOuterAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const started = Date.now();
  try {
    const exitCode = await execute(argv, {
      env: opts.env,
      cwd: opts.cwd,
      io: { stdin, stdout, stderr, columns: opts.columns },
      signal: controller.signal,
      ...opts.inject,
    });
    assertJsonStderr(argv, opts.env, stderr.text);
    return { exitCode, stdout: stdout.text, stderr: stderr.text, durationMs: Date.now() - started, timedOut };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * Every run with --json, in every test: stderr holds JSON lines only. The
 * exceptions are GitHub Actions' `::add-mask::` and `::error` lines (GITHUB_ACTIONS=true)
 * and --debug's `[debug]` trace. Called by both runners (in-process and child).
 */
export function assertJsonStderr(argv: readonly string[], env: Record<string, string | undefined>, stderr: string): void {
  // Only as an option: after `--` it is an operand.
  // or as the value of an option before it (`--org --json`).
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  const valued = valueOptions();
  if (!options.some((a, i) => a === '--json' && !valued.has(options[i - 1] ?? ''))) return;
  const masks = env.GITHUB_ACTIONS === 'true';
  const debug = options.includes('--debug');
  for (const line of stderr.split('\n')) {
    if (line.trim() === '') continue;
    if (masks && (line.startsWith('::add-mask::') || line.startsWith('::error '))) continue;
    if (debug && line.startsWith('[debug] ')) continue;
    try {
      JSON.parse(line);
    } catch {
      throw new Error(`chatctl ${argv.join(' ')}: with --json, a stderr line is not JSON: ${JSON.stringify(line.slice(0, 300))}\nstderr was:\n${stderr.slice(0, 2000)}`);
    }
  }
}

let valueOptionsMemo: Set<string> | undefined;

/** Every flag of the command tree that takes a value (from the build's dist/tree.json). */
function valueOptions(): Set<string> {
  if (valueOptionsMemo) return valueOptionsMemo;
  const found = new Set<string>();
  interface Node {
    options?: { flags: string[]; takesValue: boolean }[];
    commands?: Node[];
  }
  const walk = (n: Node) => {
    for (const o of n.options ?? []) if (o.takesValue) for (const f of o.flags) found.add(f);
    for (const c of n.commands ?? []) walk(c);
  };
  walk(JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'dist', 'tree.json'), 'utf8')) as Node);
  return (valueOptionsMemo = found);
}
