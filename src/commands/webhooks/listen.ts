// chatctl webhooks listen: a receiver for rehearsing a rotation. It serves
// HTTP (127.0.0.1 unless --host says otherwise), verifies every POST as a
// Standard Webhooks delivery against each --secret-file, looked at again
// before every delivery, answers as a receiver would, forwards what it
// verified when asked, prints one line per delivery, and stops on Ctrl-C or
// SIGTERM with a summary and exit 0 (SIGHUP: 129). A bundle of its own
// (dist/lazy/listen.cjs): no other command loads it. docs/signing.md is the
// user's description.
import type { Factory } from '../../app.js';
import { interrupted, usageError } from '../../../errors/cli-error.js';
import { escapeInline } from '../../../output/sanitize.js';
import { isLoopbackHost } from '../../../sandbox/ip.js';
import { SecretFiles } from '../secret-files.js';
import { parseTolerance } from '../signing.js';
import { LISTEN_LIMITS, type ListenLimits } from './limits.js';
import { ListenOutput } from './output.js';
import { startListener, type RunningListener } from './server.js';

export interface ListenFlags {
  secretFile?: string[];
  port?: string;
  host?: string;
  forwardTo?: string;
  tolerance?: string;
}

export async function runListen(flags: ListenFlags, f: Factory, limits: ListenLimits = LISTEN_LIMITS): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const files = secretFileList(flags.secretFile);
  const port = parsePort(flags.port);
  const host = flags.host ?? '127.0.0.1';
  const forwardTo = flags.forwardTo === undefined ? undefined : forwardTarget(flags.forwardTo);
  const toleranceSeconds = parseTolerance(flags.tolerance);
  // The lines are data (`--json | jq`), the first saying where it listens:
  // GitHub Actions' mask lines, written as each secret is read, go to stderr.
  ctx.io.stdoutIsData();
  const secrets = SecretFiles.load(files, ctx.cwd, (s) => ctx.io.scrubber.addSecret(s));
  const out = new ListenOutput(ctx.io, state.output.json);
  let listener: RunningListener;
  try {
    listener = await startListener(host, port, { secrets: () => secrets.refresh(), now: ctx.now, toleranceSeconds, forwardTo, limits, onRecord: (r) => out.delivery(r) });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw usageError(`cannot listen on ${escapeInline(host)} port ${port} (${code})`, 'choose another --port, or --port 0 for a free one');
    throw err;
  }
  if (!isLoopbackHost(host.replace(/^\[|\]$/g, ''))) ctx.io.notice(`listening on ${escapeInline(host)}, beyond loopback: anyone who can reach it can send deliveries`);
  out.listening(listener.url, listener.port, secrets.held, forwardTo);
  await untilStopped(ctx.signal, ctx.io.raw.stdout);
  await listener.close();
  out.stopped(listener.dropped());
  // Stopping it is its normal end (exit 0); a terminal that closed is not (129, as for every command).
  if (ctx.signal.aborted && ctx.signal.reason === 'SIGHUP') throw interrupted();
}

/** Ctrl-C, SIGTERM or SIGHUP (the run's signal), or nobody reading stdout any more (`| head`). */
function untilStopped(signal: AbortSignal, stdout: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
    stdout.once('error', () => resolve());
  });
}

function secretFileList(given: string[] | undefined): string[] {
  if (!given?.length)
    throw usageError('--secret-file is required', 'a file holding a secret of the endpoint; repeat it for each secret the receiver holds, e.g. --secret-file old.whsec --secret-file new.whsec');
  if (given.includes('-')) throw usageError('--secret-file - is not possible here: listen reads each file again before every delivery', 'give a file, e.g. --secret-file ./hook.whsec');
  return given;
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined) return 0;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) throw usageError(`invalid --port "${escapeInline(raw)}": a whole number from 0 to 65535 (0 picks a free one)`);
  return Number(raw);
}

/** --forward-to: an absolute http:// or https:// URL on a loopback host, without credentials. */
function forwardTarget(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`invalid --forward-to "${escapeInline(raw)}": not an absolute URL`, 'e.g. --forward-to http://127.0.0.1:3000/webhooks');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`invalid --forward-to "${escapeInline(raw)}": http:// or https:// only`);
  if (!isLoopbackHost(url.hostname.replace(/^\[|\]$/g, '')))
    throw usageError(
      `invalid --forward-to "${escapeInline(raw)}": the target must be on this machine (localhost, 127.0.0.0/8 or [::1])`,
      'forward to your local app, e.g. --forward-to http://127.0.0.1:3000/webhooks',
    );
  if (url.username || url.password) throw usageError('--forward-to must not contain credentials');
  return url;
}
