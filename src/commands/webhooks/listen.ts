// chatctl webhooks listen: a receiver for rehearsing a rotation
// (docs/signing.md). Its server (listen-server.ts) is a bundle of its own.
import type { Command } from 'commander';
import { collect, examples, SIGNING_MORE, type Factory } from '../app.js';
import { interrupted, usageError } from '../../errors/cli-error.js';
import { escapeInline } from '../../output/json.js';

export function registerListen(parent: Command, f: Factory): void {
  parent
    .command('listen')
    .description('receive signed deliveries on this machine, verify each with every secret file you hold (re-read as they change) and say which matched: a receiver for rehearsing a rotation')
    .option('--secret-file <path>', "a file holding one of the endpoint's whsec_ secrets; repeat it for each (old and new during an overlap). Looked at again before every delivery", collect)
    .option('--port <port>', 'the port to listen on (default 0: a free one, printed on the first line)')
    .option('--host <host>', 'the address to listen on (default 127.0.0.1)')
    .option('--forward-to <url>', 'pass every verified delivery on, byte for byte, to this http:// or https:// URL on this machine, and answer with its status')
    .option('--tolerance <seconds>', 'how far the timestamp may be from now, in seconds (default 300)')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks listen --secret-file ./hook.whsec --port 8080',
        'chatctl webhooks listen --secret-file ./old.whsec --secret-file ./new.whsec --port 8080 --forward-to http://127.0.0.1:3000/webhooks',
        "chatctl webhooks listen --secret-file ./hook.whsec --port 0 --json | jq -c 'select(.verified == false)'",
      ) +
        `
Point an endpoint's destination at it (the sandbox accepts http:// on
loopback), then trigger deliveries or rotate: a rotation that rewrites a
secret file (rotate --secret-file FILE --force) is in effect at the next
delivery. One line per delivery on stdout: time, status answered,
webhook-id, event type, which secret files matched (file and fingerprint,
never the secret) or why none did, the timestamp's skew, and secret files
that changed or were skipped (a missing file is skipped). With --json, one
JSON object a line; the first is {"listening":URL,"port":P}.

Answers: 204 verified (with --forward-to: the target's status, 502 if it
cannot be reached), 400 missing webhook-* headers, 401 any other failure
(no matching signature, timestamp out of tolerance or not a plain decimal
integer, no v1 signature), 405 not a POST, 413 a body over 1 MiB, 408 a
sender too slow (headers 10 s, whole request 30 s), 431 headers over 16 KiB;
at most 64 connections at once. Ctrl-C or SIGTERM stops it with a summary
(received, verified, refused) on stderr, or as the last JSON line, and exit
0. Exit 2: a secret file missing or not a secret at start, a port in use.
` +
        SIGNING_MORE,
    )
    .action((opts) => runListen(opts, f));
}

export async function runListen(flags: { secretFile?: string[]; port?: string; host?: string; forwardTo?: string; tolerance?: string }, f: Factory): Promise<void> {
  const [{ startListener, LISTEN_LIMITS, listenOutput }, { loadSecretFiles, parseTolerance }, { isLoopbackHost }] = await Promise.all([
    import('./listen-server.js'),
    import('./secret-files.js'),
    import('../../sandbox/ip.js'),
  ]);
  const { ctx } = f;
  const state = f.state();
  const files = secretFileList(flags.secretFile);
  const port = parsePort(flags.port);
  const host = flags.host ?? '127.0.0.1';
  const forwardTo = flags.forwardTo === undefined ? undefined : forwardTarget(flags.forwardTo, isLoopbackHost);
  const toleranceSeconds = parseTolerance(flags.tolerance);
  // The lines are data (`--json | jq`), the first saying where it listens:
  // GitHub Actions' mask lines, written as each secret is read, go to stderr.
  ctx.io.stdoutIsData();
  const secrets = loadSecretFiles(files, ctx.cwd, (s) => ctx.io.scrubber.addSecret(s));
  const out = listenOutput(ctx.io, state.output.json);
  let listener: import('./listen-server.js').RunningListener;
  try {
    listener = await startListener(host, port, { secrets: () => secrets.refresh(), now: ctx.now, toleranceSeconds, forwardTo, limits: LISTEN_LIMITS, onRecord: (r) => out.delivery(r) });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw usageError(`cannot listen on ${escapeInline(host)} port ${port} (${code})`, 'choose another --port, or --port 0 for a free one');
    throw err;
  }
  if (!isLoopbackHost(host.replace(/^\[|\]$/g, ''))) ctx.io.notice(`listening on ${escapeInline(host)}, beyond loopback: anyone who can reach it can send deliveries`);
  out.listening(listener.url, listener.port, secrets.held(), forwardTo);
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
function forwardTarget(raw: string, isLoopbackHost: (host: string) => boolean): URL {
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
