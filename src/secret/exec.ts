// `exec:COMMAND` (contract section 6): COMMAND run by /bin/sh -c with the
// secret on its stdin (no newline, then end of input). A bundle of its own
// (dist/lazy/exec.cjs): execa is loaded only by a run that has an exec: sink.
//
// The command runs in a process group of its own, so a timeout or Ctrl-C
// ends it and whatever it started; its output is handed back in pieces for
// the caller to scrub and put on stderr. Success is exit 0 within the time
// limit; the command's exit, not the end of its output, ends the wait, so a
// background process it leaves holding the pipes cannot hang chatctl.
import { execa } from 'execa';

export interface ExecSinkInput {
  command: string;
  secret: string;
  cwd: string;
  /** The environment the command sees (PATH and all), without chatctl's additions. */
  env: Record<string, string | undefined>;
  endpointId: string;
  fingerprint: string;
  /** Each piece of the command's stdout and stderr, in order of arrival. */
  output(text: string): void;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * COMMAND's standard input is a real pipe, as in a shell pipeline: Node
 * hands a child a socket, which tools that open /dev/stdin by path cannot
 * open (`kubectl create secret … --from-file=secret=/dev/stdin`: "No such
 * device or address"). `cat` copies the secret from chatctl's socket into
 * the pipe. The trap makes this shell outlive a SIGTERM to the group until
 * COMMAND ends, so COMMAND keeps its grace before the SIGKILL; a trap (not an
 * ignore) is reset in COMMAND, which sees SIGTERM as before. Its status is
 * COMMAND's (the last of the pipeline).
 */
const PIPE_WRAPPER = 'trap : TERM; /bin/cat | /bin/sh -c "$1"';

/** The variables that carry chatctl's own credentials (the bearer token, the x-service-csrf value): never passed to COMMAND. */
export const CREDENTIAL_VARIABLES: readonly string[] = ['CHATCTL_TOKEN', 'CHATCTL_CSRF_TOKEN'];

/** Grace between SIGTERM and SIGKILL, and for the output to drain after exit. */
const KILL_GRACE_MS = 2000;
const DRAIN_MS = 250;

/** Resolves when COMMAND exited 0 in time; rejects with an Error saying what went wrong. */
export async function runExecSink(input: ExecSinkInput): Promise<void> {
  const env: Record<string, string | undefined> = { ...input.env, CHATCTL_ENDPOINT_ID: input.endpointId, CHATCTL_SECRET_FINGERPRINT: input.fingerprint };
  // The command needs the secret, not chatctl's credentials.
  for (const name of CREDENTIAL_VARIABLES) delete env[name];
  if (input.signal?.aborted) throw new Error('interrupted before it started');

  const child = execa('/bin/sh', ['-c', PIPE_WRAPPER, 'chatctl-exec', input.command], {
    cwd: input.cwd,
    env,
    extendEnv: false,
    input: input.secret,
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    detached: true,
    cleanup: false,
    stripFinalNewline: false,
  });
  // execa's own promise settles when the pipes close too; the exit below is what counts.
  child.catch(() => undefined);
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (text: string) => input.output(text));
    stream?.on('error', () => undefined);
  }

  let why: string | undefined;
  const timers: NodeJS.Timeout[] = [];
  const stop = (reason: string) => {
    if (why !== undefined) return;
    why = reason;
    killGroup(child.pid, 'SIGTERM');
    timers.push(setTimeout(() => killGroup(child.pid, 'SIGKILL'), KILL_GRACE_MS));
  };
  timers.push(setTimeout(() => stop(`did not finish within ${formatSeconds(input.timeoutMs)}`), input.timeoutMs));
  const onAbort = () => stop('was stopped: chatctl was interrupted');
  input.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: Error }>((done) => {
      child.once('exit', (code, signal) => done({ code, signal }));
      child.once('error', (error) => done({ error }));
    });
    // Let the last output arrive, but not wait for pipes a leftover process holds.
    await Promise.race([
      Promise.all([child.stdout, child.stderr].map((s) => (s && !s.closed ? new Promise((r) => s.once('close', r)) : undefined))),
      new Promise((r) => timers.push(setTimeout(r, DRAIN_MS))),
    ]);
    child.stdout?.destroy();
    child.stderr?.destroy();
    if (why !== undefined) throw new Error(why);
    if ('error' in ended) throw new Error(`could not be started: ${(ended.error as NodeJS.ErrnoException).code ?? ended.error.message}`);
    if (ended.signal) throw new Error(`was ended by ${ended.signal}`);
    if (ended.code !== 0) throw new Error(`exited with status ${ended.code}`);
  } finally {
    for (const t of timers) clearTimeout(t);
    input.signal?.removeEventListener('abort', onAbort);
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

const formatSeconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`);
