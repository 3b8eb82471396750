// The one seam from argv to exit code: the world of the run comes in, the exit status goes out.
// No process globals: main.ts adapts a real process.
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { homedir } from 'node:os';
import type { Context } from '../context.js';
import type { Transport } from '../http/transport.js';
import { createIO, loadPalettes, type RawStreams } from '../output/io.js';
import { configDir } from '../config/schema.js';
import { randomUUID } from '../system/files.js';
import { explainError, reportError, scopeOriginOf, toCliError } from '../errors/explain.js';
import { CliError, EXIT, SIGNAL_EXIT } from '../errors/cli-error.js';
import { configuredProgram, focusOf, GLOBALS_WITH_VALUE, runCli } from './cli.js';
import { inGitHubActions } from '../output/json.js';
import { outputMode, type GlobalOptions, type RunStateSlot } from '../run/state.js';
import { explainCredential } from '../credentials/source.js';

declare const __CHATCTL_VERSION__: string;
export const VERSION = typeof __CHATCTL_VERSION__ === 'string' ? __CHATCTL_VERSION__ : '0.0.0-dev';

/** The Context's parts a caller may hand in, the rest made here; aborting `signal` with reason 'SIGTERM' exits 143, 'SIGHUP' 129, anything else 130. */
export type ExecuteContext = Pick<Context, 'env' | 'cwd'> &
  Partial<Pick<Context, 'signal' | 'now' | 'sleep' | 'random' | 'randomUUID' | 'setLastWords' | 'credentialLimits'>> & {
    /** `columns`: terminal width for tables; defaults to stdout's own, else 100. */
    io: RawStreams & { columns?: number };
    transport?: Transport;
    /** The user's home folder (for the default config folder); defaults to $HOME, else the OS's. */
    home?: string;
  };

export async function execute(argv: string[], given: ExecuteContext): Promise<number> {
  const env = { ...given.env };
  const io = createIO(given.io, { env, columns: given.io.columns });
  const signal = given.signal ?? new AbortController().signal;
  // `rotate --from --concurrency 16` has more listeners than Node's default 10, which would print a warning.
  setMaxListeners(0, signal);
  const ctx: Context = {
    io,
    env,
    cwd: given.cwd,
    configDir: configDir(env, process.platform, given.home ?? (env.HOME || homedir())),
    version: VERSION,
    now: given.now ?? (() => Date.now()),
    sleep: given.sleep ?? ((ms, s) => delay(ms, undefined, { signal: s })),
    randomUUID: given.randomUUID ?? randomUUID,
    random: given.random ?? Math.random,
    signal,
    setLastWords: given.setLastWords,
    credentialLimits: given.credentialLimits,
    transport: given.transport ? async () => given.transport! : async () => (await import('../http/select-transport.js')).selectTransport(env),
  };
  const focus = focusOf(argv);
  const run: RunStateSlot = {};
  const program = configuredProgram(ctx, focus, run);
  try {
    await runCli(program, argv, focus);
    return EXIT.ok;
  } catch (err) {
    // Parsing may have failed part-way: report in the mode the flags asked for, as far as commander got.
    const mode = run.state?.output ?? outputMode(program.opts<GlobalOptions>());
    if (!run.state) {
      io.setOutputMode(mode);
      io.paint = await loadPalettes(io.color);
    }
    const e = toCliError(err);
    const origin = e.exitCode === EXIT.auth ? run.state?.tokenOrigin() : undefined;
    if (origin) e.explanation ??= explainCredential(origin);
    if (e.status !== null && (e.exitCode === EXIT.permission || e.exitCode === EXIT.notFound)) e.scope ??= scopeOriginOf(run.state?.describe);
    const bySignal = signal.aborted ? SIGNAL_EXIT[String(signal.reason)] : undefined;
    const final =
      e.exitCode === EXIT.interrupted && bySignal !== undefined && bySignal !== EXIT.interrupted
        ? new CliError('interrupted', signalMessage(String(signal.reason), e.message), bySignal, { hint: e.hint, details: e.details, idempotencyKey: e.idempotencyKey })
        : err;
    if (inGitHubActions(env)) await annotate(toCliError(final), argv, io);
    return reportError(final, io, mode.json, mode.debug);
  }
}

/** In GitHub Actions a failed command leaves an `::error` annotation (system/ci-report.ts), unless already reported (each failed item of `rotate --from`). */
async function annotate(e: CliError, argv: readonly string[], io: ReturnType<typeof createIO>): Promise<void> {
  if (e.reported) return;
  try {
    const { CiReport, rowOfError, commandOf } = await import('../system/ci-report.js');
    const { command, endpointId } = commandOf(argv, GLOBALS_WITH_VALUE);
    new CiReport({ env: { GITHUB_ACTIONS: 'true' }, annotate: io.stderr, scrub: (t) => io.scrubber.scrub(t), command }).add(rowOfError(e, endpointId, explainError(e)));
  } catch {
    /* the error itself is reported next; the annotation is a courtesy */
  }
}

function signalMessage(signal: string, message: string): string {
  const what = signal === 'SIGHUP' ? 'hung up (SIGHUP)' : 'terminated (SIGTERM)';
  return message === 'interrupted' ? what : `${what}: ${message.replace(/^interrupted[:;]? ?/, '')}`;
}
