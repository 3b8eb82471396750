// `webhooks listen --forward-to URL`: a verified delivery goes on to a local
// app, byte for byte: the body as received, every `webhook-*` header with
// its name and value as received, and the content type. Plain node:http(s)
// straight to the target (a loopback address, never through a proxy), one
// connection per delivery. The target's answer (status, content type, body)
// is what the sender gets; no answer is 502.
import http from 'node:http';
import https from 'node:https';

export interface ForwardAnswer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

export interface ForwardFailure {
  error: string;
}

/** The headers that go on: `webhook-*` and content-type, names and values as received. */
export function forwardedHeaders(rawHeaders: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (lower.startsWith('webhook-') || lower === 'content-type') out[name] = rawHeaders[i + 1]!;
  }
  return out;
}

export class Forwarder {
  private readonly inFlight = new Set<http.ClientRequest>();

  constructor(
    readonly target: URL,
    private readonly timeoutMs: number,
    private readonly maxAnswerBytes: number,
  ) {}

  send(headers: Record<string, string>, body: Buffer): Promise<ForwardAnswer | ForwardFailure> {
    return new Promise((resolve) => {
      const client = this.target.protocol === 'https:' ? https : http;
      const req = client.request(this.target, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) }, agent: false, timeout: this.timeoutMs });
      this.inFlight.add(req);
      req.on('close', () => this.inFlight.delete(req));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ? `${err.code}: ${err.message}` : err.message }));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.maxAnswerBytes) req.destroy(new Error(`its answer is longer than ${this.maxAnswerBytes} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 502, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }));
        res.on('error', (err) => resolve({ error: err.message }));
      });
      req.end(body);
    });
  }

  /** Ends every forward still waiting for the target. */
  close(): void {
    for (const req of this.inFlight) req.destroy(new Error('the listener stopped'));
    this.inFlight.clear();
  }
}
