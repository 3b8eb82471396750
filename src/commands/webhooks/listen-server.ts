// The HTTP side of `webhooks listen` (a bundle of its own): each request, even one
// answered by status line alone, becomes one record for the caller to print.
// docs/signing.md has the table of answers and the limits.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { verifySignature, parseHeaders } from '../../signing/standard-webhooks.js';
import type { HeldSecret, SecretsNow } from './secret-files.js';
import type { IO } from '../../output/io.js';
import { escapeInline, jsonLineText } from '../../output/json.js';

/** What listen takes from a sender before it gives up on it; docs/signing.md ("Limits") states these figures. */
export const LISTEN_LIMITS = {
  /** A body beyond this is answered 413 and the connection closed. */
  maxBodyBytes: 1024 * 1024,
  /** All headers must arrive within this, the whole request within the next (else 408). */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  /** How often the server looks for requests past those limits. */
  checkIntervalMs: 1_000,
  keepAliveTimeoutMs: 5_000,
  /** The headers of one request, in bytes (else 431), and how many are read. */
  maxHeaderBytes: 16 * 1024,
  maxHeaderCount: 100,
  /** Connections at once; a new one beyond it is closed at once. */
  maxConnections: 64,
  /** How long the --forward-to target has to answer, and how much of its answer is passed back (else 502). */
  forwardTimeoutMs: 10_000,
  maxForwardAnswerBytes: 1024 * 1024,
};
export type ListenLimits = typeof LISTEN_LIMITS;

/** Why a delivery was refused (also each JSON line's `reason`). */
export type RefusalReason = 'missing_headers' | 'malformed_headers' | 'no_secret' | 'no_matching_signature' | 'timestamp_too_old' | 'timestamp_too_new' | RequestRefusal;
type RequestRefusal = 'method_not_allowed' | 'body_too_large' | 'request_timeout' | 'headers_too_large' | 'bad_request';

export interface Judgement {
  /** 204 verified, 400 missing headers, 401 any other failure. */
  status: 204 | 400 | 401;
  verified: boolean;
  reason: RefusalReason | null;
  /** Why it was refused, for the line (names files and fingerprints, never a secret). */
  message: string | null;
  webhookId: string | null;
  eventType: string | null;
  /** Every secret that verifies it, and the place of its signature. */
  matched: { file: string; fingerprint: string; signature: number }[];
  signatures: number | null;
  /** Now minus webhook-timestamp, in seconds. */
  skewSeconds: number | null;
}

/** Pairs from Node's rawHeaders ([name, value, name, value, …]). */
function headerPairs(rawHeaders: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) pairs.push([rawHeaders[i]!, rawHeaders[i + 1]!]);
  return pairs;
}

/** The event type the body names (`type`, else `eventType`), when it is a JSON object that names one. */
function eventTypeOf(body: Buffer): string | null {
  if (body.length === 0 || body[0] !== 0x7b) return null;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const type = parsed.type ?? parsed.eventType;
    return typeof type === 'string' ? type.slice(0, 200) : null;
  } catch {
    return null;
  }
}

const describe = (s: { file: string; fingerprint: string }) => `${s.file} (${s.fingerprint})`;

export function judge(rawHeaders: readonly string[], body: Buffer, secrets: SecretsNow, nowSeconds: number, toleranceSeconds: number): Judgement {
  const pairs = headerPairs(rawHeaders);
  const rawId = pairs.find(([n]) => n.toLowerCase() === 'webhook-id')?.[1] ?? null;
  const base = { webhookId: rawId?.slice(0, 256) ?? null, eventType: eventTypeOf(body), matched: [], signatures: null, skewSeconds: null };
  const parsed = parseHeaders(pairs);
  if (!parsed.ok) {
    const missing = parsed.missing !== undefined;
    return { ...base, status: missing ? 400 : 401, verified: false, reason: missing ? 'missing_headers' : 'malformed_headers', message: parsed.problem };
  }
  const headers = parsed.value;
  const counted = { signatures: headers.signatures.length, skewSeconds: nowSeconds - headers.timestamp };
  if (secrets.held.length === 0) return { ...base, ...counted, status: 401, verified: false, reason: 'no_secret', message: 'no secret file holds a secret now' };
  const keys = secrets.held.map((s) => s.key);
  const verdict = verifySignature(keys, headers, body, nowSeconds, toleranceSeconds);
  const matched = verdict.matches.map((m) => ({ file: secrets.held[m.key]!.file, fingerprint: secrets.held[m.key]!.fingerprint, signature: m.signature }));
  const result = { ...base, ...counted, matched, skewSeconds: verdict.skewSeconds };
  if (verdict.ok) return { ...result, status: 204, verified: true, reason: null, message: null };
  const message =
    verdict.reason === 'no_matching_signature'
      ? `none of the ${headers.signatures.length} signatures matches ${secrets.held.map(describe).join(' or ')}`
      : `the signature matches ${matched.map(describe).join(' and ')}, but the timestamp is beyond the tolerance of ${toleranceSeconds} s`;
  return { ...result, status: 401, verified: false, reason: verdict.reason, message };
}

/** `--forward-to`: a verified delivery goes on byte for byte (`webhook-*` and content-type as received), straight to the target, one connection each; no answer is 502. */
const forwardedHeaders = (rawHeaders: readonly string[]) => Object.fromEntries(headerPairs(rawHeaders).filter(([name]) => /^(webhook-.*|content-type)$/is.test(name)));

function forwarder(target: URL, { forwardTimeoutMs: timeoutMs, maxForwardAnswerBytes: maxAnswerBytes }: ListenLimits) {
  const inFlight = new Set<http.ClientRequest>();
  const send = (headers: Record<string, string>, body: Buffer) =>
    new Promise<{ status: number; contentType: string | undefined; body: Buffer } | { error: string }>((resolve) => {
      const client = target.protocol === 'https:' ? https : http;
      const req = client.request(target, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) }, agent: false, timeout: timeoutMs });
      inFlight.add(req);
      req.on('close', () => inFlight.delete(req));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ? `${err.code}: ${err.message}` : err.message }));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxAnswerBytes) req.destroy(new Error(`its answer is longer than ${maxAnswerBytes} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 502, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }));
        res.on('error', (err) => resolve({ error: err.message }));
      });
      req.end(body);
    });
  const close = () => {
    for (const req of inFlight) req.destroy(new Error('the listener stopped'));
    inFlight.clear();
  };
  return { target, send, close };
}

export interface DeliveryRecord extends Omit<Judgement, 'status'> {
  /** When it was received (ISO 8601). */
  time: string;
  /** The status answered (a forwarded status, 405, 408, 413, 431, 502 besides the judge's). */
  status: number;
  method: string | null;
  path: string | null;
  skipped: SecretsNow['skipped'];
  reloaded: SecretsNow['reloaded'];
  forward: { url: string; status: number | null; error: string | null } | null;
}

export interface ListenerDeps {
  /** Looks at the secret files again (secret-files.ts), before each delivery. */
  secrets: () => SecretsNow;
  now: () => number;
  toleranceSeconds: number;
  forwardTo: URL | undefined;
  limits: ListenLimits;
  onRecord: (record: DeliveryRecord) => void;
}

export type RunningListener = Awaited<ReturnType<typeof startListener>>;

type Blank = Omit<DeliveryRecord, 'time' | 'status' | 'reason' | 'message' | 'method' | 'path'>;
const NOTHING: Blank = { verified: false, webhookId: null, eventType: null, matched: [], signatures: null, skewSeconds: null, skipped: [], reloaded: [], forward: null };

export async function startListener(host: string, port: number, deps: ListenerDeps) {
  const { limits } = deps;
  const forwarding = deps.forwardTo ? forwarder(deps.forwardTo, limits) : undefined;
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxHeaderSize: limits.maxHeaderBytes,
  });
  server.maxHeadersCount = limits.maxHeaderCount;
  server.maxConnections = limits.maxConnections;
  // A connection that never sends a byte: no request timer runs for it yet.
  // Longer than the request timeout, which must answer a slow request first
  // (408), and than a forward, during which the connection is quiet.
  server.setTimeout(2 * Math.max(limits.requestTimeoutMs, limits.forwardTimeoutMs));
  let dropped = 0;
  server.on('drop', () => dropped++);
  const refused = (req: { method?: string | undefined; url?: string | undefined } | undefined, status: number, reason: RefusalReason, message: string): DeliveryRecord => {
    return { ...NOTHING, time: new Date(deps.now()).toISOString(), status, reason, message, method: req?.method ?? null, path: req?.url ?? null };
  };
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const [status, reason, message]: [number, RefusalReason, string] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', `the request did not arrive within the time allowed (headers ${limits.headersTimeoutMs / 1000} s, whole request ${limits.requestTimeoutMs / 1000} s)`]
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'headers_too_large', `its headers are larger than ${limits.maxHeaderBytes} bytes`]
          : [400, 'bad_request', `not an HTTP request this receiver can read (${err.code ?? 'error'})`];
    deps.onRecord(refused(undefined, status, reason, message));
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  server.on('request', (req, res) => void handle(req, res, deps, forwarding, refused));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => (server.off('error', reject), resolve()));
  });
  const address = server.address() as { port: number };
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${address.port}/`,
    port: address.port,
    /** Connections closed at once because the cap was reached. */
    dropped: () => dropped,
    close: () =>
      new Promise<void>((resolve) => {
        forwarding?.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Refused = (req: http.IncomingMessage, status: number, reason: RefusalReason, message: string) => DeliveryRecord;

async function handle(req: http.IncomingMessage, res: http.ServerResponse, deps: ListenerDeps, forwarding: ReturnType<typeof forwarder> | undefined, refused: Refused): Promise<void> {
  const { limits } = deps;
  if (req.method !== 'POST') {
    deps.onRecord(refused(req, 405, 'method_not_allowed', 'a delivery is a POST'));
    return answer(res, 405, 'a delivery is a POST', { allow: 'POST', connection: 'close' });
  }
  const tooLarge = () => {
    deps.onRecord(refused(req, 413, 'body_too_large', `its body is larger than ${limits.maxBodyBytes} bytes`));
    answer(res, 413, `a delivery body is at most ${limits.maxBodyBytes} bytes`, { connection: 'close' });
  };
  if (Number(req.headers['content-length']) > limits.maxBodyBytes) return tooLarge();
  const body = await readBody(req, limits.maxBodyBytes);
  if (body === 'too large') return tooLarge();
  // Gone before its body ended (the sender left, or the request timed out: recorded as such).
  if (body === 'aborted') return;
  const received = deps.now();
  const secrets = deps.secrets();
  const judged = judge(req.rawHeaders, body, secrets, Math.floor(received / 1000), deps.toleranceSeconds);
  const record: DeliveryRecord = { ...judged, time: new Date(received).toISOString(), method: req.method, path: req.url ?? null, skipped: secrets.skipped, reloaded: secrets.reloaded, forward: null };
  if (!judged.verified) {
    deps.onRecord(record);
    return answer(res, judged.status, `${judged.status === 400 ? 'malformed delivery' : 'signature not verified'}: ${judged.reason}`);
  }
  if (!forwarding) {
    deps.onRecord(record);
    return answer(res, 204, '');
  }
  const got = await forwarding.send(forwardedHeaders(req.rawHeaders), body);
  const url = forwarding.target.href;
  if ('error' in got) {
    deps.onRecord({ ...record, status: 502, forward: { url, status: null, error: got.error } });
    return answer(res, 502, 'verified, but the --forward-to target could not be reached');
  }
  deps.onRecord({ ...record, status: got.status, forward: { url, status: got.status, error: null } });
  res.writeHead(got.status, got.contentType ? { 'content-type': got.contentType } : {}).end(got.body);
}

function answer(res: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, text ? { 'content-type': 'text/plain; charset=utf-8', ...headers } : headers).end(text);
}

/** The whole body, or why not: beyond `max` bytes, or the request ended before its body did. */
function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | 'too large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        resolve('too large');
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('close', () => resolve('aborted'));
    req.on('error', () => resolve('aborted'));
  });
}

/**
 * What listen prints: where it listens (the first line), one line per
 * delivery and the summary, human or one JSON object a line. Every line
 * passes the scrubber: a sender controls what it prints from.
 */
export function listenOutput(io: IO, json: boolean) {
  const summary = { received: 0, verified: 0, refused: 0, forwarded: 0, forwardFailed: 0, dropped: 0 };
  const line = (text: string) => io.stdout.write(io.scrubber.scrub(text) + '\n');
  /** One JSON line; with --query, what it selects from that line (jsonLineText), nothing for null. */
  const jsonLine = (value: unknown) => {
    const text = jsonLineText(io, value);
    if (text !== '') io.stdout.write(io.scrubber.scrub(text));
  };
  return {
    listening(url: string, port: number, secrets: readonly HeldSecret[], forwardTo: URL | undefined): void {
      if (json) return jsonLine({ listening: url, port });
      const held = secrets.map((s) => `${escapeInline(s.file)} (${s.fingerprint})`).join(', ');
      const forward = forwardTo ? `, forwarding verified deliveries to ${escapeInline(forwardTo.href)}` : '';
      line(`listening on ${url} (port ${port}), verifying with ${held}${forward}; Ctrl-C stops it`);
    },
    delivery(r: DeliveryRecord): void {
      const s = summary;
      s.received++;
      if (r.verified) s.verified++;
      else s.refused++;
      if (r.forward?.status != null) s.forwarded++;
      else if (r.forward) s.forwardFailed++;
      if (json) jsonLine(r);
      else line(describeDelivery(r));
    },
    stopped(dropped: number): void {
      summary.dropped = dropped;
      const s = summary;
      if (json) return jsonLine({ summary: s });
      const forwarded = s.forwarded + s.forwardFailed > 0 ? `, ${s.forwarded} forwarded${s.forwardFailed ? `, ${s.forwardFailed} not (502)` : ''}` : '';
      const drops = s.dropped ? `; ${s.dropped} connection${s.dropped === 1 ? '' : 's'} closed at once (over the cap)` : '';
      io.stderr.write(`chatctl webhooks listen stopped: ${s.received} received, ${s.verified} verified, ${s.refused} refused${forwarded}${drops}\n`);
    },
  };
}

const skew = (seconds: number) => (seconds >= 0 ? `timestamp ${seconds} s old` : `timestamp ${-seconds} s in the future`);

/** One delivery as a human line: time, status, id, event type, the verdict, the skew, then what changed among the secret files. */
function describeDelivery(r: DeliveryRecord): string {
  const id = r.webhookId === null ? '-' : escapeInline(r.webhookId);
  const parts = [r.time, String(r.status), id, r.eventType === null ? '-' : escapeInline(r.eventType)];
  const count = r.signatures ?? 0;
  const verdict = r.verified
    ? `verified: ${r.matched.map((m) => `${escapeInline(m.file)} (${m.fingerprint}) signature ${m.signature} of ${count}`).join(', ')}`
    : `refused (${r.reason}): ${escapeInline(r.message ?? '')}`;
  const extra = [
    ...(r.skewSeconds === null ? [] : [skew(r.skewSeconds)]),
    ...(r.forward
      ? [r.forward.status === null ? `forward to ${escapeInline(r.forward.url)} failed: ${escapeInline(r.forward.error ?? '')}` : `forwarded to ${escapeInline(r.forward.url)}: ${r.forward.status}`]
      : []),
    ...r.reloaded.map((f) => `${escapeInline(f.file)} changed: now ${f.fingerprint}`),
    ...r.skipped.map((f) => `${escapeInline(f.file)} skipped: ${escapeInline(f.reason)}`),
  ];
  return `${parts.join(' ')} ${[verdict, ...extra].join('; ')}`;
}
