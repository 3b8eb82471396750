// The HTTP side of `webhooks listen`: every POST is read (within the limits
// of limits.ts), judged (judge.ts), forwarded when verified and asked to
// (forward.ts), and answered as a receiver would; each request becomes one
// record for the caller to print. Requests that never become one (a
// malformed request line, a sender too slow, headers too large) are
// answered by status line alone and recorded too.
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { SecretsNow } from '../secret-files.js';
import { Forwarder, forwardedHeaders } from './forward.js';
import { judge, type Judgement, type RefusalReason } from './judge.js';
import type { ListenLimits } from './limits.js';

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

export interface RunningListener {
  url: string;
  port: number;
  /** Connections closed at once because the cap was reached. */
  dropped(): number;
  close(): Promise<void>;
}

const NOTHING: Omit<DeliveryRecord, 'time' | 'status' | 'reason' | 'message' | 'method' | 'path'> = {
  verified: false,
  webhookId: null,
  eventType: null,
  matched: [],
  signatures: null,
  skewSeconds: null,
  skipped: [],
  reloaded: [],
  forward: null,
};

export async function startListener(host: string, port: number, deps: ListenerDeps): Promise<RunningListener> {
  const { limits } = deps;
  const forwarder = deps.forwardTo ? new Forwarder(deps.forwardTo, limits.forwardTimeoutMs, limits.maxForwardAnswerBytes) : undefined;
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
  const refused = (req: { method?: string | undefined; url?: string | undefined } | undefined, status: number, reason: RefusalReason, message: string): DeliveryRecord => ({
    ...NOTHING,
    time: new Date(deps.now()).toISOString(),
    status,
    reason,
    message,
    method: req?.method ?? null,
    path: req?.url ?? null,
  });
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
  server.on('request', (req, res) => void handle(req, res, deps, forwarder, refused));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => (server.off('error', reject), resolve()));
  });
  const address = server.address() as { port: number };
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${address.port}/`,
    port: address.port,
    dropped: () => dropped,
    close: () =>
      new Promise<void>((resolve) => {
        forwarder?.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Refused = (req: http.IncomingMessage, status: number, reason: RefusalReason, message: string) => DeliveryRecord;

async function handle(req: http.IncomingMessage, res: http.ServerResponse, deps: ListenerDeps, forwarder: Forwarder | undefined, refused: Refused): Promise<void> {
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
  if (!forwarder) {
    deps.onRecord(record);
    return answer(res, 204, '');
  }
  const got = await forwarder.send(forwardedHeaders(req.rawHeaders), body);
  const url = forwarder.target.href;
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
