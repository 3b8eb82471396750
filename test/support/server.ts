// A real HTTP(S) server on loopback that records every request exactly as
// received (method, raw path, raw headers, raw body text) and answers from a
// per-test script: a queue of reply objects, a reply handler, or a raw
// (req, res) handler that writes the answer itself. Beside it, a CONNECT
// proxy and a port with nothing listening.
import http from 'node:http';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { cleanupTempDirs } from './run.js';
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import { networkInterfaces } from 'node:os';

export interface RecordedRequest {
  method: string;
  /** The request target exactly as received (`req.url`). */
  url: string;
  /** Header names lower-cased, as node parses them. */
  headers: http.IncomingHttpHeaders;
  /** [name, value, name, value, ...] exactly as received. */
  rawHeaders: string[];
  /** The body as text (utf8). */
  body: string;
  /** Which listener received it (127.0.0.1 or ::1). */
  localAddress: string;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** A string is sent verbatim; anything else is JSON.stringify'd. */
  body?: unknown;
  /** Never answer (the socket stays open until the server closes). */
  hang?: boolean;
  /** Destroy the connection without any response. */
  destroy?: boolean;
  /** Wait before answering. */
  delayMs?: number;
  /** Send the status line, headers and this much of the body, then stall forever. */
  stallAfterBytes?: number;
}

/** Answers with a reply object. */
export type Handler = (req: RecordedRequest, index: number) => Reply | Promise<Reply>;

/** Writes the answer itself, with raw access to the response and its socket. */
export type RawHandler = (req: http.IncomingMessage, res: http.ServerResponse, rec: RecordedRequest, index: number) => unknown;

export interface ServerOptions {
  /** Serve HTTPS with this key and certificate. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** How long an idle keep-alive socket stays open (default 1000 ms). */
  keepAliveTimeoutMs?: number;
}

export function hasIpv6Loopback(): boolean {
  const lo = Object.values(networkInterfaces()).flat();
  return lo.some((i) => i !== undefined && i.family === 'IPv6' && i.address === '::1');
}

export class RecordingServer {
  readonly requests: RecordedRequest[] = [];
  private queue: (Reply | Handler)[] = [];
  private handler: Handler | undefined;
  private rawHandler: RawHandler | undefined;
  private servers: http.Server[] = [];
  private sockets = new Set<net.Socket>();
  port = 0;
  /** Set when a second listener on [::1] with the same port is up. */
  ipv6 = false;

  constructor(private readonly options: ServerOptions = {}) {}

  /** http(s)://127.0.0.1:PORT */
  get url(): string {
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** How many requests arrived. */
  get hits(): number {
    return this.requests.length;
  }

  /** Queue replies, answered in order (a function in the queue is called). */
  enqueue(...replies: (Reply | Handler)[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** Answer every request (once the queue is empty) with this handler. */
  setHandler(handler: Handler | undefined): this {
    this.handler = handler;
    this.rawHandler = undefined;
    return this;
  }

  /** Answer every request (once the queue is empty) by writing the response directly. */
  setRawHandler(handler: RawHandler | undefined): this {
    this.rawHandler = handler;
    this.handler = undefined;
    return this;
  }

  /** Forget recorded requests, queue and handlers; then answer with `raw`, if given. */
  reset(raw?: RawHandler): void {
    this.requests.length = 0;
    this.queue.length = 0;
    this.handler = undefined;
    this.rawHandler = raw;
  }

  /** Requests whose raw path includes `fragment`. */
  requestsTo(fragment: string): RecordedRequest[] {
    return this.requests.filter((r) => r.url.includes(fragment));
  }

  async start(options: { ipv6?: boolean } = {}): Promise<this> {
    const first = this.makeServer();
    first.listen(0, '127.0.0.1');
    await once(first, 'listening');
    this.port = (first.address() as net.AddressInfo).port;
    this.servers.push(first);
    if (options.ipv6 && hasIpv6Loopback()) {
      const second = this.makeServer();
      try {
        second.listen(this.port, '::1');
        await Promise.race([
          once(second, 'listening'),
          once(second, 'error').then(([e]) => {
            throw e;
          }),
        ]);
        this.servers.push(second);
        this.ipv6 = true;
      } catch {
        second.close();
      }
    }
    return this;
  }

  /** Drop every open connection (a hung answer, say) without stopping. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.closeAllConnections();
            s.close(() => resolve());
          }),
      ),
    );
  }

  private makeServer(): http.Server {
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body: Buffer.concat(chunks).toString('utf8'),
          localAddress: req.socket.localAddress ?? '',
        };
        const index = this.requests.length;
        this.requests.push(recorded);
        void this.answer(recorded, index, req, res);
      });
    };
    const tls = this.options.tls;
    const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, onRequest) : http.createServer(onRequest);
    const track = (socket: net.Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    };
    server.on('connection', track);
    if (tls) server.on('secureConnection', track);
    server.on('clientError', (_e, s) => s.destroy());
    // Keep-alive sockets must not hold the test process open.
    server.keepAliveTimeout = this.options.keepAliveTimeoutMs ?? 1000;
    return server;
  }

  private async answer(recorded: RecordedRequest, index: number, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let reply: Reply;
    try {
      const next = this.queue.shift();
      if (typeof next === 'function') reply = await next(recorded, index);
      else if (next !== undefined) reply = next;
      else if (this.rawHandler) {
        const raw = this.rawHandler;
        await Promise.resolve(raw(req, res, recorded, index)).catch(() => res.destroy());
        return;
      } else if (this.handler) reply = await this.handler(recorded, index);
      else
        reply = {
          status: 599,
          body: { error: { code: 'unscripted', message: 'no reply scripted', requestId: 'unscripted', details: {} } },
        };
    } catch (e) {
      reply = { status: 598, body: `handler failed: ${String(e)}` };
    }
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.hang) return;
    if (reply.destroy) {
      req.socket.destroy();
      return;
    }
    const status = reply.status ?? 200;
    let text = '';
    const headers: Record<string, string> = { ...(reply.headers ?? {}) };
    if (reply.body !== undefined) {
      if (typeof reply.body === 'string') {
        text = reply.body;
      } else {
        text = JSON.stringify(reply.body);
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
      }
    }
    headers['Content-Length'] = String(Buffer.byteLength(text));
    res.writeHead(status, headers);
    if (reply.stallAfterBytes !== undefined) {
      res.write(Buffer.from(text).subarray(0, reply.stallAfterBytes));
      return;
    }
    res.end(text);
  }
}

export async function startServer(options: { ipv6?: boolean } & ServerOptions = {}): Promise<RecordingServer> {
  const { ipv6, ...rest } = options;
  return new RecordingServer(rest).start({ ipv6 });
}

/**
 * A recording server for every test of the calling file: started before
 * them, reset before each, closed (with the run's temporary folders) after.
 */
export function useRecordingServer(): RecordingServer {
  const server = new RecordingServer();
  beforeAll(async () => {
    await server.start();
  });
  afterAll(async () => {
    await server.close();
    cleanupTempDirs();
  });
  beforeEach(() => server.reset());
  return server;
}

/** For raw handlers: a JSON answer with Content-Length. */
export const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
};

/** A port on 127.0.0.1 with nothing listening (bound then released). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
// ---------------------------------------------------------------- proxy

export interface ProxyRecord {
  kind: 'connect' | 'forward';
  target: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A forward proxy on 127.0.0.1: CONNECT tunnels (for https, and for http when
 * the client tunnels it too) and plain-HTTP forwarding of absolute-URI
 * requests. Records what it carries; refuses any target off loopback.
 * `aliases` are host names it resolves to 127.0.0.1 itself: chatctl never
 * proxies loopback, so a test reaches a local server through the proxy by a
 * name only the proxy knows (a reserved .test name that no DNS answers).
 */
export class ConnectProxy {
  readonly records: ProxyRecord[] = [];
  private server!: http.Server;
  private sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly aliases: string[] = []) {}

  private local(host: string): boolean {
    return host === '127.0.0.1' || host === 'localhost' || this.aliases.includes(host);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  reset(): void {
    this.records.length = 0;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let target: URL;
      try {
        target = new URL(req.url ?? '');
      } catch {
        res.writeHead(400).end();
        return;
      }
      this.records.push({ kind: 'forward', target: req.url ?? '', headers: req.headers });
      if (!this.local(target.hostname)) {
        res.writeHead(403).end();
        return;
      }
      const headers = { ...req.headers };
      delete headers['proxy-connection'];
      const up = http.request({ host: '127.0.0.1', port: Number(target.port || 80), path: target.pathname + target.search, method: req.method, headers, agent: false }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
        ur.on('error', () => res.destroy());
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    this.server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      const target = req.url ?? '';
      this.records.push({ kind: 'connect', target, headers: req.headers });
      const m = /^([^:]+):(\d+)$/.exec(target);
      if (!m || !this.local(m[1]!)) {
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      const up = net.connect(Number(m[2]), '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) up.write(head);
        up.pipe(client);
        client.pipe(up);
      });
      this.sockets.add(up);
      up.on('close', () => this.sockets.delete(up));
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    this.server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
