// `chatctl sandbox`: start, print where it listens, wait for the stop signal,
// close. The CLI wiring parses flags and supplies `stopped` (SIGINT/SIGTERM).
import { shellWord } from '../../output/json.js';
import { isLoopbackHost } from '../../sandbox/ip.js';
import type { DeliveryReport } from '../../sandbox/deliverer.js';
import type { RecordedRequest } from '../../sandbox/request-log.js';
import { SandboxOptionError, startSandbox, type RunningSandbox } from '../../sandbox/server.js';

export interface SandboxCommandOptions {
  host: string;
  port: number;
  token?: string;
  endpointLimit: number;
  rateLimit: number;
  /** Milliseconds before each API answer; 0 when absent. */
  latencyMs?: number;
  json: boolean;
}

export interface SandboxIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Told of the token before it is printed (a CI job's log masks it). */
  secret?: (value: string) => void;
  /** The --json document's text (--query applies there); without it, the document on one line. */
  document?: (value: unknown) => string;
}

/** Quotes a value for a POSIX shell only when it needs it. */

function describe(s: RunningSandbox): string {
  const exports = [
    ['CHATCTL_BASE_URL', s.baseUrl],
    ['CHATCTL_TOKEN', s.token],
    ['CHATCTL_ORG', s.organizationId],
    ['CHATCTL_APP', s.applicationId],
    ['CHATCTL_ENV', s.environmentKey],
  ].map(([k, v]) => `${k}=${shellWord(v!)}`);
  return [
    `chatctl sandbox is listening (in memory; Ctrl-C stops it)`,
    ``,
    `  base URL      ${s.baseUrl}`,
    `  token         ${s.token}`,
    `  organization  ${s.organizationId}`,
    `  application   ${s.applicationId}`,
    `  environment   ${s.environmentKey}`,
    ``,
    `Point chatctl at it:`,
    ``,
    `  export ${exports.join(' ')}`,
    ``,
  ].join('\n');
}

const logLine = (r: RecordedRequest) => `${r.at} ${r.method} ${r.path} -> ${r.status ?? 'dropped'} ${r.requestId}\n`;
const deliveryLine = ({ delivery: d }: DeliveryReport, at: string) =>
  `${at} deliver ${d.eventType} to ${d.destinationUrl} (${d.signedWith.length} signature${d.signedWith.length === 1 ? '' : 's'}) -> ${d.receiver.status ?? d.receiver.error} ${d.webhookId}\n`;

function usageError(io: SandboxIo, json: boolean, message: string): number {
  io.stderr(json ? JSON.stringify({ error: { code: 'usage_error', message, requestId: null, status: null, details: {} }, exitCode: 2 }) + '\n' : `chatctl sandbox: ${message}\n`);
  return 2;
}

export async function runSandboxCommand(opts: SandboxCommandOptions, io: SandboxIo, stopped: Promise<unknown>): Promise<number> {
  if (!isLoopbackHost(opts.host)) return usageError(io, opts.json, `refusing to listen on ${opts.host}: the sandbox serves loopback only (127.0.0.1, ::1, localhost)`);
  let sandbox: RunningSandbox;
  try {
    sandbox = await startSandbox({
      host: opts.host,
      port: opts.port,
      token: opts.token,
      endpointLimit: opts.endpointLimit,
      rateLimit: opts.rateLimit,
      latencyMs: opts.latencyMs ?? 0,
      onRequest: opts.json ? undefined : (r) => io.stderr(logLine(r)),
      onDelivery: opts.json ? undefined : (d, at) => io.stderr(deliveryLine(d, at)),
    });
  } catch (error) {
    if (error instanceof SandboxOptionError) return usageError(io, opts.json, error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')
      return usageError(io, opts.json, `cannot listen on ${opts.host} port ${opts.port} (${code}); choose another --port, or --port 0 for a free one`);
    throw error;
  }
  const { baseUrl, token, organizationId, applicationId, environmentKey } = sandbox;
  io.secret?.(token);
  const started = { baseUrl, token, organizationId, applicationId, environmentKey };
  io.stdout(opts.json ? (io.document?.(started) ?? JSON.stringify(started) + '\n') : describe(sandbox));
  try {
    await stopped;
  } finally {
    await sandbox.close();
  }
  if (!opts.json) io.stderr('chatctl sandbox stopped\n');
  return 0;
}
