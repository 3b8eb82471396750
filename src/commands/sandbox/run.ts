// `chatctl sandbox`: start, print where it listens, wait for `stopped` (SIGINT/SIGTERM), close. register.ts parses the flags.
import { shellWord } from '../../output/json.js';
import { isLoopbackHost } from '../../sandbox/ip.js';
import type { DeliveryReport } from '../../sandbox/protocol.js';
import { SandboxOptionError, startSandbox, type RunningSandbox } from '../../sandbox/server.js';
import type { RecordedRequest } from '../../sandbox/state.js';

export type SandboxCommandOptions = { host: string; port: number; token?: string; endpointLimit: number; rateLimit: number; latencyMs?: number; json: boolean };

/** `secret` is told of the token before it is printed (a CI job's log masks it); `document` gives the --json document's text (--query applies there). */
export type SandboxIo = { stdout: (s: string) => void; stderr: (s: string) => void; secret?: (value: string) => void; document?: (value: unknown) => string };

function describe(s: RunningSandbox): string {
  const exports = Object.entries({ CHATCTL_BASE_URL: s.baseUrl, CHATCTL_TOKEN: s.token, CHATCTL_ORG: s.organizationId, CHATCTL_APP: s.applicationId, CHATCTL_ENV: s.environmentKey });
  return `chatctl sandbox is listening (in memory; Ctrl-C stops it)

  base URL      ${s.baseUrl}
  token         ${s.token}
  organization  ${s.organizationId}
  application   ${s.applicationId}
  environment   ${s.environmentKey}

Point chatctl at it:

  export ${exports.map(([k, v]) => `${k}=${shellWord(v)}`).join(' ')}
`;
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
  const { host, port, token, endpointLimit, rateLimit, latencyMs, json } = opts;
  let sandbox: RunningSandbox;
  try {
    const log = json ? {} : { onRequest: (r: RecordedRequest) => io.stderr(logLine(r)), onDelivery: (d: DeliveryReport, at: string) => io.stderr(deliveryLine(d, at)) };
    sandbox = await startSandbox({ host, port, token, endpointLimit, rateLimit, latencyMs, ...log });
  } catch (error) {
    if (error instanceof SandboxOptionError) return usageError(io, json, error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')
      return usageError(io, json, `cannot listen on ${host} port ${port} (${code}); choose another --port, or --port 0 for a free one`);
    throw error;
  }
  const { baseUrl, organizationId, applicationId, environmentKey } = sandbox;
  io.secret?.(sandbox.token);
  const started = { baseUrl, token: sandbox.token, organizationId, applicationId, environmentKey };
  io.stdout(json ? (io.document?.(started) ?? JSON.stringify(started) + '\n') : describe(sandbox));
  try {
    await stopped;
  } finally {
    await sandbox.close();
  }
  if (!json) io.stderr('chatctl sandbox stopped\n');
  return 0;
}
