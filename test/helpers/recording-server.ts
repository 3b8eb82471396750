// A real HTTP server on loopback that records every request exactly as
// received (method, raw path, raw headers, raw body text) and answers from a
// per-test script: a queue of replies, or a handler function.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
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
  /** Date.now() when the request head arrived. */
  receivedAt: number;
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

export type Handler = (req: RecordedRequest, index: number) => Reply | Promise<Reply>;

export function hasIpv6Loopback(): boolean {
  const lo = Object.values(networkInterfaces()).flat();
  return lo.some((i) => i !== undefined && i.family === 'IPv6' && i.address === '::1');
}

export class RecordingServer {
  readonly requests: RecordedRequest[] = [];
  private queue: (Reply | Handler)[] = [];
  private handler: Handler | undefined;
  private servers: http.Server[] = [];
  private sockets = new Set<Socket>();
  port = 0;
  /** Set when a second listener on [::1] with the same port is up. */
  ipv6 = false;

  /** http://127.0.0.1:PORT */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Queue replies, answered in order (a function in the queue is called). */
  enqueue(...replies: (Reply | Handler)[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** Answer every request (once the queue is empty) with this handler. */
  setHandler(handler: Handler | undefined): this {
    this.handler = handler;
    return this;
  }

  /** Forget recorded requests, queue and handler. */
  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
    this.handler = undefined;
  }

  /** Requests whose raw path includes `fragment`. */
  requestsTo(fragment: string): RecordedRequest[] {
    return this.requests.filter((r) => r.url.includes(fragment));
  }

  async start(options: { ipv6?: boolean } = {}): Promise<this> {
    const first = this.makeServer();
    first.listen(0, '127.0.0.1');
    await once(first, 'listening');
    this.port = (first.address() as AddressInfo).port;
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

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
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
    const server = http.createServer((req, res) => {
      const receivedAt = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt,
          localAddress: req.socket.localAddress ?? '',
        };
        const index = this.requests.length;
        this.requests.push(recorded);
        void this.answer(recorded, index, req, res);
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    // Keep-alive sockets must not hold the test process open.
    server.keepAliveTimeout = 1000;
    return server;
  }

  private async answer(
    recorded: RecordedRequest,
    index: number,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    let reply: Reply;
    try {
      const next = this.queue.shift();
      if (typeof next === 'function') reply = await next(recorded, index);
      else if (next !== undefined) reply = next;
      else if (this.handler) reply = await this.handler(recorded, index);
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
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
          headers['Content-Type'] = 'application/json';
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

export async function startServer(options: { ipv6?: boolean } = {}): Promise<RecordingServer> {
  return new RecordingServer().start(options);
}

/** A port on 127.0.0.1 with nothing listening (bound then released). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
