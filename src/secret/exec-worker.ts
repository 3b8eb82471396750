// `exec:` destinations of a `rotate --from` run, run by runExecSink in a worker thread: starting a
// process holds its thread 2 to 35 ms, and the main thread's loop reads the other items' answers.
// Without a built exec bundle beside this code (the single executable, a run from source): this thread.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecSinkInput } from './exec.js';
import { singleExecutable } from '../system/process.js';

type Job = { input: ExecSinkInput; resolve: () => void; reject: (err: Error) => void };
type FromWorker = { id: number; output?: string; done?: true; error?: string } | { ready: true };

/** The worker's code (eval'd, so it refers to nothing outside it): runs each command, or aborts one; answers with output pieces, then done or error. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { runExecSink } = require(workerData.bundle);
const running = new Map();
parentPort.postMessage({ ready: true });
parentPort.on('message', (m) => {
  if (m.abort !== undefined) return void running.get(m.abort)?.abort();
  const ctl = new AbortController();
  running.set(m.id, ctl);
  runExecSink({ ...m.input, signal: ctl.signal, output: (text) => parentPort.postMessage({ id: m.id, output: text }) })
    .then(() => parentPort.postMessage({ id: m.id, done: true }), (e) => parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) }))
    .finally(() => running.delete(m.id));
});
`;

/** The built exec bundle (dist/lazy/exec.cjs) beside this code; never a file beside the single executable, which carries its code inside. */
function execBundle(): string | undefined {
  if (typeof __dirname !== 'string' || singleExecutable()) return undefined;
  return [join(__dirname, 'lazy', 'exec.cjs'), join(__dirname, 'exec.cjs')].find((p) => existsSync(p));
}

export class ExecWorker {
  private readonly jobs = new Map<number, Job>();
  private next = 0;
  /** Settles once the worker has loaded the exec bundle (or failed to). */
  readonly ready: Promise<void>;
  private constructor(private readonly worker: import('node:worker_threads').Worker) {
    let ready!: () => void;
    this.ready = new Promise<void>((r) => (ready = r));
    worker.once('exit', ready);
    worker.on('message', (m: FromWorker) => ('ready' in m ? ready() : this.onMessage(m)));
    // A worker that died takes its commands' outcomes with it: each is a failure (the secret is then kept).
    worker.on('error', (err) => this.failAll(`could not be run: ${err.message}`));
    worker.on('exit', () => this.failAll('could not be run: its worker ended'));
  }

  /** A worker running the exec bundle at `bundle` (the built one beside this code unless said); undefined when there is none. */
  static start(bundle = execBundle()): ExecWorker | undefined {
    if (!bundle) return undefined;
    try {
      const { Worker } = process.getBuiltinModule('node:worker_threads');
      // The worker needs no flag of chatctl's own (--liftoff-only and the rest come from the launcher).
      return new ExecWorker(new Worker(WORKER_SOURCE, { eval: true, workerData: { bundle }, execArgv: [], stdout: false, stderr: false }));
    } catch {
      return undefined;
    }
  }

  run(input: ExecSinkInput): Promise<void> {
    if (input.signal?.aborted) return Promise.reject(new Error('interrupted before it started'));
    const id = this.next++;
    const { output: _output, signal, ...data } = input;
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => this.worker.postMessage({ abort: id });
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        signal?.removeEventListener('abort', onAbort);
        this.jobs.delete(id);
        if (this.jobs.size === 0) this.worker.unref();
      };
      this.jobs.set(id, { input, resolve: () => (settle(), resolve()), reject: (err) => (settle(), reject(err)) });
      this.worker.ref();
      this.worker.postMessage({ id, input: data });
    });
  }

  /** Unreferenced while no command runs. */
  idle(): void {
    if (this.jobs.size === 0) this.worker.unref();
  }

  private onMessage(m: Extract<FromWorker, { id: number }>): void {
    const job = this.jobs.get(m.id);
    if (!job) return;
    if (m.output !== undefined) job.input.output(m.output);
    else if (m.done) job.resolve();
    else job.reject(new Error(m.error ?? 'failed'));
  }

  private failAll(why: string): void {
    for (const job of [...this.jobs.values()]) job.reject(new Error(why));
  }
}

let started: ExecWorker | undefined | null;

/** Starts the run's worker (once) and waits until it can run commands: called before the first request, so loading execa is not paid while answers arrive. */
export async function prepareExecWorker(): Promise<void> {
  started ??= ExecWorker.start() ?? null;
  await started?.ready;
  // Idle, it does not keep the process alive.
  started?.idle();
}

/** Runs an exec: destination: in the worker when the run prepared one, else on this thread. */
export async function runExec(input: ExecSinkInput): Promise<void> {
  if (started) return started.run(input);
  const { runExecSink } = await import('./exec.js');
  return runExecSink(input);
}
