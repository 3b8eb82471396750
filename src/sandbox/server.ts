// The HTTP shell around the sandbox's state: reads bodies, hands requests to the API or control handlers, records, delays, answers.
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { handleApiRequest, type Outcome, type SandboxRequest } from './api.js';
import { handleControlRequest, isControlPath } from './control.js';
import { applyFaultPatch, checkFaultPatch, NO_FAULTS, type FaultPatch } from './faults.js';
import { isLoopbackHost } from './ip.js';
import { ApiFailure, MAX_BODY_BYTES, newRequestId, newToken, toAnswer, type Answer, type DeliveryReport, type RandomBytes, type RawBody } from './protocol.js';
import { SandboxState, type RecordedRequest } from './state.js';
import type { Clock } from '../system/clock.js';

export interface SandboxOptions {
  host?: string;
  port?: number;
  token?: string;
  endpointLimit?: number;
  /** API requests per second per bearer token (a token bucket with a burst of as many), 0 = off. */
  rateLimit?: number;
  /** Milliseconds every API answer waits before it is sent (the fault setting delayMs). */
  latencyMs?: number;
  /** Faults in force from the start (same fields as POST /_sandbox/faults). */
  faults?: FaultPatch;
  /** ms since the epoch; injectable. */
  now?: Clock['now'];
  randomBytes?: (n: number) => Buffer;
  /** Called after each API request is answered (the CLI logs it). */
  onRequest?: (entry: RecordedRequest) => void;
  /** Called after each delivery (POST /_sandbox/endpoints/{id}/deliver) with its report and the sandbox's time (the CLI logs it). */
  onDelivery?: (report: DeliveryReport, at: string) => void;
}

export interface RunningSandbox {
  baseUrl: string;
  token: string;
  organizationId: string;
  applicationId: string;
  environmentKey: string;
  close(): Promise<void>;
}

/** Options that cannot work; the command turns this into exit 2. */
export class SandboxOptionError extends Error {
  override name = 'SandboxOptionError';
}

// Beyond 64 KiB a body is refused; beyond this it is not even drained.
const MAX_DRAIN_BYTES = 1024 * 1024;
const TOKEN_PATTERN = /^[\x21-\x7e]{1,512}$/;

function checkOptions(opts: SandboxOptions, random: RandomBytes) {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 0;
  const token = opts.token ?? newToken(random);
  const endpointLimit = opts.endpointLimit ?? 10;
  const rateLimit = opts.rateLimit ?? 0;
  const latencyMs = opts.latencyMs ?? 0;
  const problems: string[] = [];
  if (!isLoopbackHost(host)) problems.push(`host ${host} is not a loopback address (the sandbox is a local tool)`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push('port must be an integer from 0 to 65535');
  if (!TOKEN_PATTERN.test(token)) problems.push('token must be 1 to 512 visible ASCII characters');
  if (!Number.isInteger(endpointLimit) || endpointLimit < 0) problems.push('endpoint limit must be a non-negative integer');
  if (!Number.isInteger(rateLimit) || rateLimit < 0) problems.push('rate limit must be a non-negative integer');
  if (!Number.isInteger(latencyMs) || latencyMs < 0) problems.push('latency must be a non-negative integer');
  const faults = checkFaultPatch({ rateLimit, delayMs: latencyMs, ...opts.faults });
  if (!faults.ok) problems.push(...faults.problems.map((p) => `faults.${p.field} ${p.problem}`));
  if (problems.length) throw new SandboxOptionError(problems.join('; '));
  return { host, port, token, endpointLimit, faults: applyFaultPatch(NO_FAULTS, faults.ok ? faults.value : {}) };
}

function readBody(req: http.IncomingMessage): Promise<RawBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total <= MAX_BODY_BYTES) chunks.push(chunk);
      else if (total > MAX_DRAIN_BYTES) req.destroy();
    });
    req.on('end', () => resolve({ contentType: req.headers['content-type'], bytes: Buffer.concat(chunks), tooLarge: total > MAX_BODY_BYTES }));
    req.on('error', reject);
    req.on('close', () => reject(new Error('request closed before its body ended')));
  });
}

/** The caller's x-request-id when it is a sane token, else a new one. */
function requestIdFor(req: http.IncomingMessage, random: RandomBytes): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[\x21-\x7e]{1,200}$/.test(given) ? given : newRequestId(random);
}

/** The path of a request target; "//x" is a path here, not a host. */
function pathOf(target: string): string {
  const absolute = target.startsWith('/') ? 'http://sandbox' + target : target;
  return URL.canParse(absolute) ? new URL(absolute).pathname : target;
}

/** What the handlers make of a request: their refusals may be thrown; any other throw is a 500, never a dropped server. */
async function outcomeOf(state: SandboxState, request: SandboxRequest, control: boolean): Promise<Outcome> {
  try {
    return control ? await handleControlRequest(state, request) : handleApiRequest(state, request);
  } catch (error) {
    return error instanceof ApiFailure ? error : new ApiFailure(500, 'internal_error', 'the sandbox failed unexpectedly', { reason: String(error) });
  }
}

/** An API request in the log and the counts (control requests are not logged). */
function recordRequest(state: SandboxState, opts: SandboxOptions, request: SandboxRequest, target: string, requestId: string, answer: Answer | null): void {
  const { method, headers, body } = request;
  const entry = { at: new Date(state.now()).toISOString(), requestId, method, path: target, headers: { ...headers }, body: body.bytes.toString('utf8'), status: answer?.status ?? null };
  state.logRequest(entry);
  opts.onRequest?.(entry);
}

function writeAnswer(res: http.ServerResponse, answer: Answer, requestId: string): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    'x-request-id': requestId,
    ...answer.headers,
  });
  res.end(text);
}

/** Listens on host:port; resolves with the URL it answers on. */
async function listen(server: http.Server, host: string, port: number): Promise<string> {
  server.listen({ host, port });
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${urlHost}:${address.port}`;
}

export async function startSandbox(opts: SandboxOptions = {}): Promise<RunningSandbox> {
  const random = opts.randomBytes ?? cryptoRandomBytes;
  const { host, port, token, endpointLimit, faults } = checkOptions(opts, random);
  const state = new SandboxState({ token, endpointLimit, faults, now: opts.now ?? Date.now, randomBytes: random, onDelivery: opts.onDelivery });
  // Ends the `delayMs` fault's waits when the sandbox stops, so close() never waits for them.
  const stopping = new AbortController();
  let closing: Promise<void> | null = null;

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestId = requestIdFor(req, random);
    const target = req.url ?? '/';
    const pathname = pathOf(target);
    const control = isControlPath(pathname);
    const request: SandboxRequest = { method: req.method ?? 'GET', pathname, headers: req.headers, body: await readBody(req), remoteAddress: req.socket.remoteAddress };
    const outcome = await outcomeOf(state, request, control);
    const answer = outcome === 'drop' ? null : toAnswer(outcome, requestId);
    if (!control) {
      recordRequest(state, opts, request, target, requestId, answer);
      const { delayMs } = state.faults.current;
      if (delayMs > 0) await delay(delayMs, undefined, { signal: stopping.signal }).catch(() => {});
    }
    if (!answer || closing) req.socket.destroy();
    else writeAnswer(res, answer, requestId);
  }

  const server = http.createServer((req, res) => {
    serve(req, res).catch(() => req.socket.destroy());
  });
  return {
    baseUrl: await listen(server, host, port),
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
