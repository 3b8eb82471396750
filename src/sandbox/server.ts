// The HTTP shell around the sandbox's state: reads bodies, hands requests to the API or control handlers, records, delays, answers.
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Scope } from '../api/schemas.js';
import type { Clock } from '../system/clock.js';
import { handleApiRequest } from './api.js';
import { handleControlRequest, isControlPath } from './control.js';
import { applyFaultPatch, checkFaultPatch, NO_FAULTS, type FaultPatch } from './faults.js';
import { isLoopbackHost } from './ip.js';
import { ApiFailure, MAX_BODY_BYTES, newRequestId, newToken, toAnswer, type DeliveryReport, type Outcome, type RandomBytes, type RawBody, type SandboxRequest } from './protocol.js';
import { SandboxState, type RecordedRequest } from './state.js';

export interface SandboxOptions {
  host?: string;
  port?: number;
  token?: string;
  endpointLimit?: number;
  /** In force from the start: the faults `rateLimit` and `delayMs` (see faults.ts), and any other of POST /_sandbox/faults's fields. */
  rateLimit?: number;
  latencyMs?: number;
  faults?: FaultPatch;
  now?: Clock['now'];
  randomBytes?: RandomBytes;
  /** After each API answer, and each delivery with the sandbox's time (the CLI logs both). */
  onRequest?: (entry: RecordedRequest) => void;
  onDelivery?: (report: DeliveryReport, at: string) => void;
}

export type RunningSandbox = Scope & { baseUrl: string; token: string; close(): Promise<void> };

/** Options that cannot work; the command turns this into exit 2. */
export class SandboxOptionError extends Error {
  override name = 'SandboxOptionError';
}

function checkOptions(opts: SandboxOptions, token: string) {
  const { host = '127.0.0.1', port = 0, endpointLimit = 10, rateLimit = 0, latencyMs = 0 } = opts;
  const problems: string[] = [];
  if (!isLoopbackHost(host)) problems.push(`host ${host} is not a loopback address (the sandbox is a local tool)`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push('port must be an integer from 0 to 65535');
  if (!/^[\x21-\x7e]{1,512}$/.test(token)) problems.push('token must be 1 to 512 visible ASCII characters');
  for (const [value, what] of [
    [endpointLimit, 'endpoint limit'],
    [rateLimit, 'rate limit'],
    [latencyMs, 'latency'],
  ] as const)
    if (!Number.isInteger(value) || value < 0) problems.push(`${what} must be a non-negative integer`);
  const faults = checkFaultPatch({ rateLimit, delayMs: latencyMs, ...opts.faults });
  if (!faults.ok) problems.push(...faults.problems.map((p) => `faults.${p.field} ${p.problem}`));
  if (problems.length) throw new SandboxOptionError(problems.join('; '));
  return { host, port, endpointLimit, faults: applyFaultPatch(NO_FAULTS, faults.ok ? faults.value : {}) };
}

// Beyond 64 KiB a body is refused; beyond 1 MiB it is not even drained.
function readBody(req: http.IncomingMessage): Promise<RawBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total <= MAX_BODY_BYTES) chunks.push(chunk);
      else if (total > 1024 * 1024) req.destroy();
    });
    req.on('end', () => resolve({ contentType: req.headers['content-type'], bytes: Buffer.concat(chunks), tooLarge: total > MAX_BODY_BYTES }));
    req.on('error', reject);
    req.on('close', () => reject(new Error('request closed before its body ended')));
  });
}

/** Handlers may throw their refusals; any other throw is a 500, never a dropped server. */
async function outcomeOf(state: SandboxState, request: SandboxRequest, control: boolean): Promise<Outcome> {
  try {
    return control ? await handleControlRequest(state, request) : handleApiRequest(state, request);
  } catch (error) {
    return error instanceof ApiFailure ? error : new ApiFailure(500, 'internal_error', 'the sandbox failed unexpectedly', { reason: String(error) });
  }
}

export async function startSandbox(opts: SandboxOptions = {}): Promise<RunningSandbox> {
  const random = opts.randomBytes ?? cryptoRandomBytes;
  const token = opts.token ?? newToken(random);
  const { host, port, endpointLimit, faults } = checkOptions(opts, token);
  const state = new SandboxState({ token, endpointLimit, faults, now: opts.now ?? Date.now, randomBytes: random, onDelivery: opts.onDelivery });
  // Ends the `delayMs` fault's waits when the sandbox stops, so close() never waits for them.
  const stopping = new AbortController();
  let closing: Promise<void> | null = null;

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && /^[\x21-\x7e]{1,200}$/.test(given) ? given : newRequestId(random);
    const target = req.url ?? '/';
    // "//x" is a path here, not a host.
    const absolute = target.startsWith('/') ? 'http://sandbox' + target : target;
    const pathname = URL.canParse(absolute) ? new URL(absolute).pathname : target;
    const control = isControlPath(pathname);
    const { method = 'GET', headers } = req;
    const request: SandboxRequest = { method, pathname, headers, body: await readBody(req), remoteAddress: req.socket.remoteAddress };
    const outcome = await outcomeOf(state, request, control);
    const answer = outcome === 'drop' ? null : toAnswer(outcome, requestId);
    if (!control) {
      const body = request.body.bytes.toString('utf8');
      const entry = { at: new Date(state.now()).toISOString(), requestId, method, path: target, headers: { ...headers }, body, status: answer?.status ?? null };
      state.logRequest(entry);
      opts.onRequest?.(entry);
      const { delayMs } = state.faults.current;
      if (delayMs > 0) await delay(delayMs, undefined, { signal: stopping.signal }).catch(() => {});
    }
    if (!answer || closing) return void req.socket.destroy();
    const text = JSON.stringify(answer.body);
    const length = String(Buffer.byteLength(text));
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': length, 'cache-control': 'no-store', 'x-request-id': requestId, ...answer.headers });
    res.end(text);
  }

  const server = http.createServer((req, res) => {
    serve(req, res).catch(() => req.socket.destroy());
  });
  server.listen({ host, port });
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const baseUrl = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    baseUrl,
    token,
    ...state.scope,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const req of state.deliveries) req.destroy(new Error('the sandbox stopped'));
        stopping.abort();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
