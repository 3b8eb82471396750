// One delivery path for every `--secret-to` destination: each sink gets the
// secret in turn, and each outcome is recorded, so the caller knows exactly
// which destinations hold it (exit 0 only if all do) and which do not (the
// secret then goes to recovered/, exit 13). Nothing here prints the secret
// anywhere but its destination; a sink command's output is scrubbed.
//
// Used by create and rotate once, and by `rotate --from` once per item.
import type { OutStream } from '../output/io.js';
import type { Scrubber } from '../output/scrub/scrubber.js';
import { appendGitHubValue, writeEnvFile, writeSecretFile } from './deliver.js';
import { fingerprint } from './fingerprint.js';
import { sinkHolds } from './readback.js';
import { substituteId, type Sink } from './sinks.js';

export const EXEC_TIMEOUT_MS = 60_000;

/** Stdout is scrubbed of the credentials: a secret holding one would arrive there mangled. */
export const CREDENTIAL_IN_SECRET = 'the secret contains the bearer token or the x-service-csrf value, which are never written to stdout';

export interface DeliverDeps {
  cwd: string;
  /** The environment an exec: command sees (its PATH included). */
  env: Record<string, string | undefined>;
  /** Where the `stdout` sink writes (confirmed writes, so a closed pipe is a failure). */
  stdout: OutStream;
  /** Where an exec: command's output goes, scrubbed of every known secret. */
  stderr: OutStream;
  scrubber: Scrubber;
  /** Aborted on a signal: a running exec: command is stopped, the rest skipped. */
  signal?: AbortSignal | undefined;
  /** The limit for one exec: command; 60 s unless a test says otherwise. */
  execTimeoutMs?: number | undefined;
  /** rotate --from: replace `{id}` in file: and env-file: paths with the endpoint id. */
  idPlaceholder?: boolean | undefined;
  /**
   * rotate --from: file: and env-file: destinations fsync on the thread pool,
   * so the event loop reads other items' answers meanwhile. A single command
   * has nothing else to do and syncs on its own thread (no hand-over).
   */
  offLoop?: boolean | undefined;
  /** A resumed delivery: a file: or env-file: destination already holding exactly this secret counts as delivered. */
  skipHeld?: boolean | undefined;
  /**
   * --json: stderr holds JSON lines only, so an exec: command's output is not
   * passed through; its tail (scrubbed) is kept for its failure's `output`.
   */
  captureExecOutput?: boolean | undefined;
  /**
   * A CI report (GitHub annotation, step summary, --report): the failure
   * carries the tail of the command's output also when it was shown on
   * stderr, so the report can say what the command said.
   */
  keepExecOutput?: boolean | undefined;
}

/** How much of a failed exec: command's output its failure carries (--json). */
export const EXEC_OUTPUT_TAIL_BYTES = 4096;

export interface Delivered {
  to: string;
  fingerprint: string;
}

export interface DeliveryFailure {
  to: string;
  reason: string;
  /** --json, exec: only: the last 4,096 bytes of the command's output, secrets and token blanked. */
  output?: string;
}

export interface DeliveryOutcome {
  fingerprint: string;
  delivered: Delivered[];
  failures: DeliveryFailure[];
}

/**
 * Resolves once the text is accepted by the stream; rejects with its error,
 * or when `signal` aborts first (a reader that never reads must not hold the
 * secret hostage: Ctrl-C then keeps it in recovered/).
 */
export function writeConfirmed(stream: OutStream, text: string, signal?: AbortSignal): Promise<void> {
  if (!stream.writeConfirmed) {
    stream.write(text);
    return Promise.resolve();
  }
  const written = stream.writeConfirmed(text);
  if (!signal) return written;
  if (signal.aborted) return Promise.reject(new Error('interrupted before it was written'));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(new Error('interrupted while the reader was not reading'));
    signal.addEventListener('abort', onAbort, { once: true });
    written.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function describeFailure(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const known: Record<string, string> = {
    EPIPE: 'the reader went away (closed pipe)',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    EEXIST: 'the file exists now',
    ENOENT: 'the folder no longer exists',
    EACCES: 'permission denied',
    EROFS: 'read-only file system',
    EIO: 'input/output error',
  };
  if (code && known[code]) return `${known[code]} (${code})`;
  const message = e instanceof Error ? e.message : String(err);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/** Every sink in order; a failure of one does not stop the others. */
export async function deliverAll(sinks: readonly Sink[], item: { endpointId: string; secret: string }, deps: DeliverDeps): Promise<DeliveryOutcome> {
  deps.scrubber.addSecret(item.secret);
  const fp = fingerprint(item.secret);
  const outcome: DeliveryOutcome = { fingerprint: fp, delivered: [], failures: [] };
  for (const given of sinks) {
    let sink = given;
    try {
      if (deps.signal?.aborted) throw new Error('not attempted: chatctl was interrupted');
      if (deps.idPlaceholder) sink = substituteId(given, item.endpointId);
      if (!(deps.skipHeld && sinkHolds(sink, fp))) await deliverOne(sink, item, fp, deps);
      outcome.delivered.push({ to: sink.to, fingerprint: fp });
    } catch (err) {
      const output = (err as { execOutput?: unknown } | undefined)?.execOutput;
      outcome.failures.push({ to: sink.to, reason: describeFailure(err), ...(typeof output === 'string' ? { output } : {}) });
    }
  }
  return outcome;
}

async function deliverOne(sink: Sink, item: { endpointId: string; secret: string }, fp: string, deps: DeliverDeps): Promise<void> {
  switch (sink.kind) {
    case 'file':
      return writeSecretFile(sink.path, item.secret, sink.force, deps.offLoop);
    case 'env-file':
      return writeEnvFile(sink.path, sink.name, item.secret, deps.offLoop);
    case 'github':
      return appendGitHubValue(sink.path, sink.name, item.secret);
    case 'stdout':
      if (deps.scrubber.holdsCredential(item.secret)) throw new Error(CREDENTIAL_IN_SECRET);
      return writeConfirmed(deps.stdout, `${item.secret}\n`, deps.signal);
    case 'exec': {
      const { runExec } = await import('./exec-worker.js');
      const scrubber = deps.scrubber.stream();
      // --json: kept, not shown; the last EXEC_OUTPUT_TAIL_BYTES of it (in
      // UTF-16 units at most that many, each at least a byte) once scrubbed.
      let kept = '';
      const show = (clean: string) => {
        if (!deps.captureExecOutput) deps.stderr.write(clean);
        if (deps.captureExecOutput || deps.keepExecOutput) kept = (kept + clean).slice(-EXEC_OUTPUT_TAIL_BYTES);
      };
      try {
        await runExec({
          command: sink.command,
          secret: item.secret,
          cwd: deps.cwd,
          env: deps.env,
          endpointId: item.endpointId,
          fingerprint: fp,
          output: (text) => {
            const clean = scrubber.push(text);
            if (clean) show(clean);
          },
          timeoutMs: deps.execTimeoutMs ?? EXEC_TIMEOUT_MS,
          signal: deps.signal,
        });
      } catch (err) {
        if (deps.captureExecOutput || deps.keepExecOutput) {
          const rest = scrubber.end();
          if (rest) show(rest);
          throw Object.assign(err instanceof Error ? err : new Error(String(err)), { execOutput: lastBytes(kept, EXEC_OUTPUT_TAIL_BYTES) });
        }
        throw err;
      } finally {
        const rest = scrubber.end();
        if (rest) show(rest);
      }
      return;
    }
  }
}

/** The last `max` bytes of text in UTF-8, starting at a whole character. */
export function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}
