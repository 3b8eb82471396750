// Running chatctl from a test: in-process through the execute seam (the
// default), or the real bin/chatctl.js as a child process where only a
// process will do (signals, pipes, exit timing, the packaged bin). Both get
// the same argv, a clean explicit environment (nothing inherited) and a
// fresh workspace.
import { inject } from 'vitest';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BIN, NODE, ROOT } from './fixtures.js';
import { assertJsonStderr, runInProcess, type InProcessOptions } from './in-process.js';
import { scaled } from './slowdown.js';

export { Capture, runInProcess, type InProcessOptions, type InProcessResult } from './in-process.js';

// ---------------------------------------------------------------- temp dirs

const temps: string[] = [];

export function tempDir(label = 'tmp'): string {
  const d = mkdtempSync(join(tmpdir(), `chatctl-test-${label}-`));
  temps.push(d);
  return d;
}

/** Call from afterAll in every file that makes temp dirs or workspaces. */
export function cleanupTempDirs(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Every regular file below dir, recursively ([] if dir does not exist). */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...listFiles(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

/** The names in dir ([] if it does not exist). */
export function listAll(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Permission bits of a path. */
export function fileMode(path: string): number {
  return statSync(path).mode & 0o777;
}

export interface Workspace {
  root: string;
  home: string;
  /** CHATCTL_CONFIG_DIR: does not exist until the CLI creates it. */
  configDir: string;
  /** A scratch directory used as cwd. */
  cwd: string;
}

export function workspace(): Workspace {
  const root = tempDir('ws');
  const home = join(root, 'home');
  const cwd = join(root, 'cwd');
  mkdirSync(home);
  mkdirSync(cwd);
  return { root, home, cwd, configDir: join(root, 'config') };
}

// ---------------------------------------------------------------- environment

/**
 * The compile-cache folder every chatctl child of this run shares
 * (test/support/global-setup.ts makes it, and removes it at the end).
 */
export const SHARED_CACHE_DIR = inject('compileCacheDir');

/** PATH, HOME, CHATCTL_CONFIG_DIR, CHATCTL_CACHE_DIR, LANG and (unless color) NO_COLOR=1: nothing inherited. */
export function baseEnv(ws: Pick<Workspace, 'home' | 'configDir'>, color = false): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${dirname(NODE)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: ws.home,
    CHATCTL_CONFIG_DIR: ws.configDir,
    CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
    LANG: 'C.UTF-8',
  };
  if (!color) env.NO_COLOR = '1';
  return env;
}

/** baseEnv plus extras; an `undefined` extra removes a variable. */
export function buildEnv(ws: Pick<Workspace, 'home' | 'configDir'>, extra: Record<string, string | undefined> = {}, color = false): Record<string, string> {
  const env: Record<string, string> = baseEnv(ws, color);
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

// ---------------------------------------------------------------- running

export interface RunOptions {
  /** Extra variables; `undefined` removes one. Only these CHATCTL_* are set. */
  env?: Record<string, string | undefined>;
  /** stdin contents (default: empty, not a TTY). */
  input?: string;
  ws?: Workspace;
  /** Leave NO_COLOR unset (default: NO_COLOR=1). */
  color?: boolean;
  timeoutMs?: number;
  /**
   * Run bin/chatctl.js as a child process. By default the run is in-process,
   * through the execute seam, with the same argv, environment, cwd and stdin;
   * a process is for what only a process has (the packaged bin's fast paths,
   * signals, pipes, exit timing).
   */
  spawn?: boolean;
  /** In-process only: which standard streams claim to be terminals. */
  tty?: { stdin?: boolean; stdout?: boolean; stderr?: boolean };
  /** In-process only: stdout is /dev/null. */
  stdoutDiscards?: boolean;
  /** In-process only: aborts the run (as a signal would). */
  signal?: AbortSignal;
  /** In-process only: the clock, sleep, random source or transport (fakes.ts virtualClock gives now and sleep). */
  inject?: InProcessOptions['inject'];
  /** Child only: the most stdout/stderr kept. */
  maxBuffer?: number;
}

export interface RunResult {
  exitCode: number;
  /** The signal that ended a child (never set in-process). */
  signal?: string | undefined;
  stdout: string;
  stderr: string;
  durationMs: number;
  ws: Workspace;
  timedOut: boolean;
}

/** Runs chatctl to completion: in-process unless `spawn`. */
export async function runCli(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const ws = opts.ws ?? workspace();
  if (!opts.spawn) {
    const env = buildEnv(ws, opts.env, opts.color);
    const r = await runInProcess(args, {
      env,
      cwd: ws.cwd,
      input: opts.input,
      tty: opts.tty,
      stdoutDiscards: opts.stdoutDiscards,
      signal: opts.signal,
      inject: opts.inject,
      timeoutMs: opts.timeoutMs ?? scaled(20_000),
    });
    return { ...r, signal: undefined, ws };
  }
  const started = Date.now();
  const r = await spawnCli(args, { ...opts, ws }).child;
  assertJsonStderr(args, buildEnv(ws, opts.env, opts.color), String(r.stderr ?? ''));
  return {
    exitCode: r.exitCode ?? -1,
    signal: r.signal ?? undefined,
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
    durationMs: Date.now() - started,
    ws,
    timedOut: r.timedOut ?? false,
  };
}

/**
 * The one child runner: bin/chatctl.js in the workspace's cwd with the clean
 * environment, stdin from `input` (then closed), stdout/stderr collected.
 * Returns the running child, for tests that signal it or read it as it goes.
 */
export function spawnCli(args: string[], opts: RunOptions = {}) {
  const ws = opts.ws ?? workspace();
  const child = execa(NODE, [BIN, ...args], {
    cwd: ws.cwd,
    env: buildEnv(ws, opts.env, opts.color),
    extendEnv: false,
    reject: false,
    input: opts.input ?? '',
    stripFinalNewline: false,
    timeout: opts.timeoutMs ?? scaled(20_000),
    encoding: 'utf8',
    ...(opts.maxBuffer !== undefined ? { maxBuffer: opts.maxBuffer } : {}),
  });
  return { child, ws };
}

/** The pid of a process that has exited (for a lock left by a killed process). */
export function deadPid(): number {
  const pid = Number(execFileSync(NODE, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }));
  try {
    process.kill(pid, 0);
  } catch {
    return pid;
  }
  throw new Error(`pid ${pid} was reused at once`);
}

/** A word for /bin/sh, single-quoted. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

// ---------------------------------------------------------------- waiting

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The one way a test waits for something it cannot be told about (a file
 * appearing, a process gone, a line in a log): polls cond (which may be
 * asynchronous) every 10 ms; throws naming `what` after maxMs. Where there
 * is an event to wait on (a child's 'exit', a server's request, a stream's
 * line), wait on that instead.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, maxMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// ---------------------------------------------------------------- shells

/** A PATH with `chatctl` on it and a config folder holding two profiles (for shell completion). */
export function shellEnv(): NodeJS.ProcessEnv {
  const dir = tempDir('completion');
  mkdirSync(join(dir, 'bin'));
  symlinkSync(BIN, join(dir, 'bin', 'chatctl'));
  mkdirSync(join(dir, 'cfg'), { mode: 0o700 });
  writeFileSync(join(dir, 'cfg', 'config.json'), JSON.stringify({ profiles: { prod: {}, 'staging-eu': {} } }), { mode: 0o600 });
  return {
    PATH: `${join(dir, 'bin')}:${process.env.PATH}`,
    HOME: dir,
    CHATCTL_CONFIG_DIR: join(dir, 'cfg'),
    CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
    TERM: 'dumb',
  };
}

/** Runs a command synchronously in ROOT; its stdout. */
export function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync(cmd, args, { env, cwd: ROOT, encoding: 'utf8', timeout: scaled(20_000) });
}

/**
 * Whether the kernel still holds `signal` for pid, not yet delivered to it
 * (its bit in /proc/PID/status SigPnd or ShdPnd). Once delivered, Node
 * dispatches the process's signals to their handlers in the order they came.
 */
export function signalPending(pid: number, signal: NodeJS.Signals): boolean {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const bit = 1n << BigInt(osConstants.signals[signal] - 1);
  return ['SigPnd', 'ShdPnd'].some((field) => (BigInt(`0x${new RegExp(`^${field}:\\s*([0-9a-f]+)$`, 'm').exec(status)![1]}`) & bit) !== 0n);
}
