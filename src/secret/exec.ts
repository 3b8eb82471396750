// `exec:COMMAND` (docs/secret-destinations.md): run by /bin/sh -c with the secret on its stdin, in a process group
// of its own (a timeout or Ctrl-C ends whatever it started). Its own bundle: only a run with an exec: sink loads execa.
import { withoutCredentials } from '../system/process.js';
import type { Duplex } from 'node:stream';
import { execa } from 'execa';

export interface ExecSinkInput {
  command: string;
  secret: string;
  cwd: string;
  /** What the command sees (PATH and all), before chatctl's additions. */
  env: Record<string, string | undefined>;
  endpointId: string;
  fingerprint: string;
  /** Each piece of its stdout and stderr, in order of arrival. */
  output(text: string): void;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * COMMAND's stdin is a real pipe, as in a shell pipeline: Node hands a child
 * a socket, which tools that open /dev/stdin by path cannot open (kubectl
 * --from-file=/dev/stdin: "No such device or address"); `cat` copies into it.
 *
 * Nothing starts before chatctl writes `go` on descriptor 3, once the whole
 * secret and the end of input are in the kernel: a chatctl killed before
 * that closes 3 without `go`, and COMMAND never runs (125), where an end of
 * input alone would let it succeed on an empty or cut secret. `cat` ignores
 * SIGTERM, so a stop cannot cut the secret short either.
 *
 * Descriptor 4, a second read end of COMMAND's pipe: after an exit 0, `wc`
 * counts what COMMAND left unread and the count goes back on 3 (an exit 0
 * that left bytes unread is a failure). COMMAND sees neither descriptor.
 * The traps keep these shells alive through a SIGTERM until COMMAND ends (its
 * grace before the SIGKILL); a trap, unlike an ignore, is reset in COMMAND.
 */
const PIPE_WRAPPER = [
  'trap : TERM',
  'IFS= read -r go <&3 && [ "$go" = go ] || exit 125',
  '( trap "" TERM; exec /bin/cat ) 3>&- | {',
  '  trap : TERM; exec 4<&0',
  '  /bin/sh -c "$1" 3>&- 4<&-; s=$?',
  '  [ "$s" -ne 0 ] || { printf "left " && command -p wc -c <&4; } >&3',
  '  exit "$s"',
  '}',
].join('\n');

/** The largest secret given: all of it must fit in the socket's kernel buffer before COMMAND reads (8 KiB, macOS's, is the smallest). */
const MAX_EXEC_INPUT_BYTES = 8 * 1024;

/** Grace between SIGTERM and SIGKILL, and for the output to drain after exit. */
const KILL_GRACE_MS = 2000;
const DRAIN_MS = 250;

/** Resolves when COMMAND exited 0 in time, having read all its input; rejects with an Error saying what went wrong. Its exit, not the end of its output, ends the wait: a leftover process holding the pipes cannot hang chatctl. */
export async function runExecSink(input: ExecSinkInput): Promise<void> {
  // The command needs the secret, not chatctl's credentials.
  const env: Record<string, string | undefined> = withoutCredentials({ ...input.env, CHATCTL_ENDPOINT_ID: input.endpointId, CHATCTL_SECRET_FINGERPRINT: input.fingerprint });
  if (input.signal?.aborted) throw new Error('interrupted before it started');
  const secret = Buffer.from(input.secret, 'utf8');
  if (secret.length > MAX_EXEC_INPUT_BYTES) throw new Error(`not started: the secret is ${secret.length} bytes, more than the ${MAX_EXEC_INPUT_BYTES} an exec: command is given`);
  const child = execa('/bin/sh', ['-c', PIPE_WRAPPER, 'chatctl-exec', input.command], {
    cwd: input.cwd,
    env,
    extendEnv: false,
    // stdin, stdout, stderr, and descriptor 3: `go` to the wrapper, the unread count back.
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
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
  // The secret and the end of input first; `go` only once both are in the kernel.
  const control = child.stdio[3] as Duplex | null;
  let report = '';
  control?.setEncoding('utf8');
  control?.on('data', (text: string) => (report += text));
  control?.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  let handedOver = false;
  child.stdin?.once('finish', () => {
    if (why !== undefined) return void control?.end();
    handedOver = true;
    control?.write('go\n');
  });
  child.stdin?.end(secret);
  const stop = (reason: string) => {
    if (why !== undefined) return;
    why = reason;
    // A command not yet started never will be.
    if (!handedOver) control?.end();
    killGroup(child.pid, 'SIGTERM');
    timers.push(setTimeout(() => killGroup(child.pid, 'SIGKILL'), KILL_GRACE_MS));
  };
  timers.push(setTimeout(() => stop(`did not finish within ${formatSeconds(input.timeoutMs)}`), input.timeoutMs));
  const onAbort = () => stop('was stopped: chatctl was interrupted');
  input.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const ended = await new Promise<Ended>((done) => {
      child.once('exit', (code, signal) => done({ code, signal }));
      child.once('error', (error) => done({ error }));
    });
    // Let the last output (and the unread count) arrive, but not wait for pipes a leftover process holds.
    await Promise.race([
      Promise.all([child.stdout, child.stderr, control].map((s) => (s && !s.closed ? new Promise((r) => s.once('close', r)) : undefined))),
      new Promise((r) => timers.push(setTimeout(r, DRAIN_MS))),
    ]);
    child.stdout?.destroy();
    child.stderr?.destroy();
    control?.destroy();
    const failure = why ?? failureOf(ended, handedOver, report, secret.length);
    if (failure !== undefined) throw new Error(failure);
  } finally {
    for (const t of timers) clearTimeout(t);
    input.signal?.removeEventListener('abort', onAbort);
  }
}

type Ended = { code: number | null; signal: NodeJS.Signals | null } | { error: Error };

/** Why the command failed, by how it ended; undefined when it exited 0 having read all of its input. */
function failureOf(ended: Ended, handedOver: boolean, report: string, size: number): string | undefined {
  if ('error' in ended) return `could not be started: ${(ended.error as NodeJS.ErrnoException).code ?? ended.error.message}`;
  if (!handedOver) return 'was not started: its input could not be written';
  if (ended.signal) return `was ended by ${ended.signal}`;
  if (ended.code !== 0) return `exited with status ${ended.code}`;
  const left = /^left\s*(\d+)\s*$/.exec(report);
  if (!left) return 'exited 0, but whether it read all of its input could not be checked';
  if (Number(left[1]) > 0) return `exited 0 without reading all of its input (${left[1]} of ${size} bytes left unread)`;
  return undefined;
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
