// Fakes for command-level tests: streams with a TTY switch each, a clock
// that advances only when slept on, a seeded random source, and a transport
// that answers from a script and records what it was sent.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { factoryOf, type Factory } from '../../src/commands/app.js';
import type { Prompter } from '../../src/prompts/prompter.js';
import { Scrubber } from '../../src/output/scrub.js';
import { type IO, PLAIN } from '../../src/output/io.js';
import type { Context } from '../../src/context.js';
import { resolveRunState, type GlobalOptions, type RunState } from '../../src/run/state.js';
import { nodeTransport, type AttemptOptions, type Transport, type WireRequest, type WireResponse } from '../../src/http/transport.js';

export interface FakeIO extends IO {
  out(): string;
  err(): string;
}

export function fakeIO(tty: { stdin?: boolean; stdout?: boolean; stderr?: boolean } = {}, stdinText = ''): FakeIO {
  const scrubber = new Scrubber();
  let out = '';
  let err = '';
  return {
    scrubber,
    stdout: { isTTY: Boolean(tty.stdout), write: (s) => void (out += scrubber.scrubCredentials(s)) },
    stderr: { isTTY: Boolean(tty.stderr), write: (s) => void (err += scrubber.scrub(s)) },
    stdin: { isTTY: Boolean(tty.stdin), readAll: async () => stdinText, readBytes: async () => Buffer.from(stdinText) },
    raw: { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
    columns: 100,
    color: { stdout: false, stderr: false },
    paint: { stdout: PLAIN, stderr: PLAIN },
    notice: (s) => void (err += scrubber.scrub(`chatctl: ${s}\n`)),
    stdoutIsData: () => {},
    out: () => out,
    err: () => err,
  };
}

export type Answer = Partial<WireResponse> | Error | ((req: WireRequest) => Partial<WireResponse> | Error);

export function scriptedTransport(answers: Answer[]): Transport & { sent: WireRequest[]; options: AttemptOptions[] } {
  const sent: WireRequest[] = [];
  const options: AttemptOptions[] = [];
  const t = (async (req: WireRequest, opts: AttemptOptions) => {
    sent.push(req);
    options.push(opts);
    let a = answers.shift();
    if (a === undefined) throw new Error('scriptedTransport: no answer left');
    if (typeof a === 'function') a = a(req);
    if (a instanceof Error) throw a;
    return { status: a.status ?? 200, headers: a.headers ?? {}, body: a.body ?? '' };
  }) as unknown as Transport & { sent: WireRequest[]; options: AttemptOptions[] };
  t.sent = sent;
  t.options = options;
  return t;
}

/**
 * The real node:http transport, recording the time limit chatctl gave each
 * attempt: a test asserts the limit, not how long the run took. That the
 * transport's timer fires at exactly that limit is shown once, on virtual
 * timers (test/http/network-faults.test.ts).
 */
export function limitRecordingTransport(): { transport: Transport; limits: number[] } {
  const limits: number[] = [];
  const transport: Transport = (req, opts) => {
    limits.push(opts.timeoutMs);
    return nodeTransport(req, opts);
  };
  return { transport, limits };
}

/** A virtual clock: sleep() advances it and records the wait, never really waits. */
export function virtualClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)) {
  let now = start;
  const waits: number[] = [];
  return {
    now: () => now,
    waits,
    /** Time passing without a sleep (an attempt that takes a while). */
    advance: (ms: number) => {
      now += ms;
    },
    sleep: async (ms: number, signal: AbortSignal) => {
      if (signal.aborted) throw new Error('aborted');
      waits.push(ms);
      now += ms;
    },
  };
}

let uuidCounter = 0;
export const sequentialUUID = () => `00000000-0000-4000-8000-${String(++uuidCounter).padStart(12, '0')}`;

/** Each fake context's config folder: a new empty one (custody writes its facts and records there), removed when the worker exits. */
const fakeConfigDirs: string[] = [];
function fakeConfigDir(): string {
  if (fakeConfigDirs.length === 0)
    process.once('exit', () => {
      for (const d of fakeConfigDirs) rmSync(d, { recursive: true, force: true });
    });
  const d = mkdtempSync(join(tmpdir(), 'chatctl-fake-config-'));
  fakeConfigDirs.push(d);
  return d;
}

/** A context as execute() makes it. */
export function fakeContext(overrides: Partial<Context> & { io: IO; transportImpl?: Transport }): Context {
  const clock = virtualClock();
  const { transportImpl, ...rest } = overrides;
  const ctx: Context = {
    env: {},
    cwd: '/nonexistent-chatctl-test-cwd',
    configDir: overrides.configDir ?? fakeConfigDir(),
    version: '9.9.9',
    now: clock.now,
    sleep: clock.sleep,
    randomUUID: sequentialUUID,
    random: () => 0.5,
    signal: new AbortController().signal,
    transport: async () => {
      if (!transportImpl) throw new Error('no transport in this test');
      return transportImpl;
    },
    ...rest,
  };
  return ctx;
}

/** The run-state of each test context, as a run keeps one (the config read and the token obtained once). */
const states = new WeakMap<Context, RunState>();

/**
 * The factory a command's action hands its run function, over a test's
 * context: the given global options (worked out as a run would), the given
 * prompter, and the real client code over the context's transport.
 */
export function fakeFactory(ctx: Context, prompter?: Prompter, globals?: GlobalOptions): Factory {
  if (globals !== undefined) states.set(ctx, resolveRunState(globals, ctx));
  const state = states.get(ctx) ?? resolveRunState({}, ctx);
  states.set(ctx, state);
  return factoryOf(
    ctx,
    () => state,
    async () => prompter,
  );
}
