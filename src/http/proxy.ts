// nodeTransport's contract through the proxy proxyFor() chose, tunnelling https (never http:) with undici's ProxyAgent.
// A bundle of its own (dist/lazy/proxy.cjs), loaded only behind a proxy.
import { subscribe } from 'node:diagnostics_channel';
import { ProxyAgent } from 'undici';
import { NEVER_CONNECTED, TransportError, attemptTimer, decodeBody, malformedMessage, rawFeedFor, type RawFeed, type Transport, tooLarge, type AttemptState } from './transport.js';

/** Failures before the request could reach the server: the proxy or the tunnel's TLS failed. */
const notSent = (code: string) => NEVER_CONNECTED.has(code) || code === 'UND_ERR_CONNECT_TIMEOUT' || /CERT|SELF_SIGNED|ERR_TLS|ERR_SSL/.test(code);

/** The attempts whose bytes go to a record, by x-request-id: undici names on a channel the socket (the tunnel's TLS socket) each went out on. */
const feeds = new Map<string, RawFeed>();
let listening = false;
function tapSockets(): void {
  if (listening) return;
  listening = true;
  subscribe('undici:client:sendHeaders', (message) => {
    const { headers, socket } = message as { headers: string; socket: import('node:stream').Readable };
    const id = /^x-request-id: *([^\r\n]*)\r?$/im.exec(headers)?.[1]?.trim();
    const feed = id === undefined ? undefined : feeds.get(id);
    feed?.attach(socket);
  });
}

/** Requests through the proxy at `proxyUrl` (credentials in it are sent as Proxy-Authorization). */
export function proxyTransport(proxyUrl: string): Transport {
  const dispatcher = new ProxyAgent(proxyUrl);
  return async (req, opts) => {
    const url = new URL(req.url);
    const requestId = req.headers['x-request-id'];
    const feed = requestId === undefined ? undefined : rawFeedFor(opts.tap);
    if (feed && requestId !== undefined) {
      tapSockets();
      feeds.set(requestId, feed);
    }
    // Without its socket's bytes (none seen for this attempt), a record is told the parsed answer.
    let tap = feed ? undefined : opts.tap;
    const controller = new AbortController();
    let timedOut: TransportError | undefined;
    // Through a proxy, when the request reaches the server cannot be seen: it may have from the start.
    const at: AttemptState = { status: undefined, sent: true };
    const timer = attemptTimer(opts, at, (err) => {
      timedOut = err;
      controller.abort();
    });
    opts.onSent?.();
    timer.sent();
    const onAbort = () => controller.abort();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await dispatcher.request({
        origin: url.origin,
        // The path exactly as built: segments already percent-encoded.
        path: req.url.slice(url.origin.length) || '/',
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: controller.signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const status = (at.status = res.statusCode);
      if (feed && !feed.attached) tap = opts.tap;
      tap?.head(status, res.headers);
      timer.progress();
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBodyBytes) {
        controller.abort();
        throw tooLarge(opts.maxBodyBytes, status, declared);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        tap?.chunk(chunk as Buffer);
        timer.progress();
        size += (chunk as Buffer).length;
        if (size > opts.maxBodyBytes) {
          controller.abort();
          throw tooLarge(opts.maxBodyBytes, status);
        }
        chunks.push(chunk as Buffer);
      }
      const headers: Record<string, string | string[] | undefined> = {};
      for (const [k, v] of Object.entries(res.headers)) headers[k.toLowerCase()] = v;
      return { status: res.statusCode, headers, ...(await decodeBody(Buffer.concat(chunks), headers['content-encoding'], opts.maxBodyBytes, res.statusCode)) };
    } catch (err) {
      if (err instanceof TransportError) throw err;
      if (opts.signal.aborted) throw new TransportError('aborted', 'interrupted');
      if (timedOut) throw timedOut;
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const parse = parseErrorCode(e);
      if (parse) throw new TransportError('malformed', malformedMessage(parse), at.status);
      // undici: "Proxy response (403) !== 200 when HTTP Tunneling".
      const refused = /^Proxy response \((\d+)\)/.exec(e.message);
      if (refused) throw new TransportError('connect', `the proxy refused to connect to ${url.host} (it answered ${refused[1]})`, undefined, false);
      const code = e.cause?.code ?? e.code ?? e.message;
      if (at.status !== undefined) throw new TransportError('truncated', `the connection failed during the response (${code})`, at.status);
      throw new TransportError('connect', `cannot connect to ${url.host} through the proxy: ${code}`, undefined, !notSent(code));
    } finally {
      if (requestId !== undefined) feeds.delete(requestId);
      feed?.detach();
      timer.clear();
      opts.signal.removeEventListener('abort', onAbort);
    }
  };
}

/** undici's parse failures: HeadersOverflowError, HTTPParserError ("… (Expected HTTP/ …)"). */
function parseErrorCode(e: Error & { code?: string }): string | undefined {
  if (e.code === 'UND_ERR_HEADERS_OVERFLOW' || e.name === 'HeadersOverflowError') return 'UND_ERR_HEADERS_OVERFLOW';
  if (e.name === 'HTTPParserError') {
    if (typeof e.code === 'string' && e.code.startsWith('HPE_')) return e.code;
    if (/Expected HTTP\//.test(e.message)) return 'HPE_INVALID_CONSTANT';
    const detail = /\(([^()]+)\)\s*$/.exec(e.message)?.[1];
    return detail ? `llhttp: ${detail}` : 'HPE_UNKNOWN';
  }
  return undefined;
}
