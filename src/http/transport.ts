import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

// One HTTP attempt (proxy.ts behind a proxy): no redirect followed, the body limit enforced while reading, the answer's
// bytes handed to a record as they arrive (secret/record.ts), which parseRawAnswer reads back.

/** An HTTP/1.1 answer as the bytes hold it, interim (1xx) answers skipped. */
interface RawAnswer {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  contentEncoding: string | null;
  contentLength: number | null;
  /** Without its transfer coding, still in its content coding. */
  body: Buffer;
  /** Whether the framing says the bytes hold it all; an answer ended by the connection's close never counts as whole. */
  whole: boolean;
}

const STATUS_LINE = /^HTTP\/\d(?:\.\d)? (\d{3})(?: [^\r\n]*)?$/;

export function parseRawAnswer(bytes: Buffer): RawAnswer | undefined {
  let at = 0;
  for (;;) {
    const head = readHead(bytes, at);
    if (head === undefined) return undefined;
    // Cut off in its head: the status alone.
    if (head.end < 0) return { status: head.status, headers: {}, contentEncoding: null, contentLength: null, body: Buffer.alloc(0), whole: false };
    at = head.end;
    // Interim answers come before the final one (101 switches protocol: final).
    if (head.status >= 100 && head.status < 200 && head.status !== 101) continue;
    return { status: head.status, headers: head.headers, ...framed(head, bytes.subarray(at)) };
  }
}

interface Head {
  status: number;
  headers: Record<string, string>;
  end: number;
}

/** The line at `pos` without its LF (or CRLF), and where the next begins; undefined when no LF ends it. */
function lineAt(bytes: Buffer, pos: number): { line: string; next: number } | undefined {
  const eol = bytes.indexOf(0x0a, pos);
  return eol < 0 ? undefined : { line: bytes.subarray(pos, eol).toString('latin1').replace(/\r$/, ''), next: eol + 1 };
}

/** One head from `at`, up to the blank line (CRLF or a bare LF, as llhttp accepts); `end` -1 when it is cut off. */
function readHead(bytes: Buffer, at: number): Head | undefined {
  const prefix = bytes.subarray(at, at + 5).toString('latin1');
  if (!'HTTP/'.startsWith(prefix) && !prefix.startsWith('HTTP/')) return undefined;
  const lines: string[] = [];
  let pos = at;
  for (;;) {
    const read = lineAt(bytes, pos);
    pos = read ? read.next : -1;
    if (!read || read.line === '') break;
    lines.push(read.line);
  }
  const statusLine = STATUS_LINE.exec(lines[0] ?? '');
  if (!statusLine) return undefined;
  const status = Number(statusLine[1]);
  if (pos < 0) return { status, headers: {}, end: -1 };
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { status, headers, end: pos };
}

const codingsOf = (value: string | string[] | undefined) =>
  (Array.isArray(value) ? value.join(',') : (value ?? ''))
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '');

function framed(head: Head, rest: Buffer): Omit<RawAnswer, 'status' | 'headers'> {
  const contentEncoding = head.headers['content-encoding'] ?? null;
  const declared = declaredLength(head.headers['content-length']);
  const codings = codingsOf(head.headers['transfer-encoding']);
  // No body, whatever the headers say (RFC 9112 6.3).
  if (head.status === 204 || head.status === 304 || head.status === 101) return { contentEncoding, contentLength: declared, body: Buffer.alloc(0), whole: true };
  if (codings.at(-1) === 'chunked') return { contentEncoding, contentLength: declared, ...unchunk(rest) };
  if (codings.length === 0 && declared !== null) return { contentEncoding, contentLength: declared, body: rest.subarray(0, declared), whole: rest.length >= declared };
  return { contentEncoding, contentLength: declared, body: rest, whole: false };
}

function declaredLength(value: string | undefined): number | null {
  if (value === undefined) return null;
  const values = new Set(value.split(',').map((v) => v.trim()));
  if (values.size !== 1) return null;
  const [only] = values;
  return only !== undefined && /^\d{1,15}$/.test(only) ? Number(only) : null;
}

/** The chunked body's data: whole once the last (zero-size) chunk and the trailers' blank line came. */
function unchunk(rest: Buffer): { body: Buffer; whole: boolean } {
  const parts: Buffer[] = [];
  let pos = 0;
  const cut = () => ({ body: Buffer.concat(parts), whole: false });
  for (;;) {
    const sizeLine = lineAt(rest, pos);
    if (!sizeLine) return cut();
    const sizeText = sizeLine.line.split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) return cut();
    const size = Number.parseInt(sizeText, 16);
    pos = sizeLine.next;
    if (size === 0) {
      for (let trailer = lineAt(rest, pos); trailer; trailer = lineAt(rest, trailer.next)) if (trailer.line === '') return { body: Buffer.concat(parts), whole: true };
      return cut();
    }
    const data = rest.subarray(pos, pos + size);
    parts.push(data);
    if (data.length < size) return cut();
    pos += size;
    if (rest[pos] === 0x0d) pos++;
    if (pos >= rest.length || rest[pos] !== 0x0a) return cut();
    pos++;
  }
}

export interface WireRequest {
  /** GET only for doctor's round trip, which sends no token. */
  method: 'POST' | 'GET';
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface WireResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's bytes when they are not valid UTF-8 (`body` then holds U+FFFD): parseSecretAnswer keeps these instead. */
  notUtf8?: Buffer;
}

export interface AttemptOptions {
  timeoutMs: number;
  maxBodyBytes: number;
  signal: AbortSignal;
  /** Connections kept open between attempts (rotate --from: one TLS handshake, not hundreds); the proxy transport pools its own. */
  agent?: import('node:http').Agent | undefined;
  /** Told of the answer as it arrives, before anything parses it: a create's or rotate's record. */
  tap?: AnswerTap | undefined;
  /** Called once the request may have reached the server (handed whole to the OS; behind a proxy, as it starts). */
  onSent?: (() => void) | undefined;
  /** Bounds the wait for a sent create's or rotate's answer (what is left of --deadline); `timeoutMs` then bounds each stall (docs/configuration.md). */
  answerWaitMs?: number | undefined;
}

/** What a record is told of an answer: with `raw`, the bytes the socket delivers (after TLS), before the parser; else the parsed answer. */
export type AnswerTap = { head(status: number, headers: IncomingHttpHeaders): void; chunk(bytes: Uint8Array): void; raw?(bytes: Buffer, at: number): void };

/** Feeds one attempt's bytes to a tap's `raw`, from a listener put before the parser's, only while the attempt has the socket. */
export class RawFeed {
  private socket: import('node:stream').Readable | undefined;
  private at = 0;
  private readonly onData = (bytes: Buffer) => {
    this.raw(bytes, this.at);
    this.at += bytes.length;
  };
  constructor(private readonly raw: (bytes: Buffer, at: number) => void) {}
  get received(): boolean {
    return this.at > 0;
  }
  get attached(): boolean {
    return this.socket !== undefined;
  }
  attach(socket: import('node:stream').Readable): void {
    if (this.socket === socket) return;
    this.detach();
    this.socket = socket;
    socket.prependListener('data', this.onData);
  }
  detach(): void {
    this.socket?.removeListener('data', this.onData);
    this.socket = undefined;
  }
}

export const rawFeedFor = (tap: AnswerTap | undefined): RawFeed | undefined => (tap?.raw ? new RawFeed(tap.raw.bind(tap)) : undefined);

export type Transport = (req: WireRequest, opts: AttemptOptions) => Promise<WireResponse>;

/** connect: no response began (safe to retry); truncated: one began, not finished; malformed: not HTTP/1.1 (never retried). */
type TransportFailure = 'connect' | 'timeout' | 'truncated' | 'too_large' | 'malformed' | 'aborted';

export class TransportError extends Error {
  constructor(
    readonly failure: TransportFailure,
    message: string,
    readonly status?: number,
    /** Whether the request may have reached the server (false: certainly not, e.g. refused); unknown counts as sent. */
    readonly sent: boolean = true,
    /** A timeout waiting for a sent request's answer (answerWaitMs ran out): the deadline, not --timeout. */
    readonly waited: boolean = false,
    /** A kept-alive connection the server had closed before any byte of an answer: sent again at once (client.ts). */
    readonly staleConnection: boolean = false,
  ) {
    super(message);
    this.name = 'TransportError';
  }
}

function describeParseError(code: string): string {
  if (code === 'HPE_HEADER_OVERFLOW' || code === 'UND_ERR_HEADERS_OVERFLOW') return 'its headers exceed the size limit';
  if (code === 'HPE_INVALID_CONSTANT') return 'it does not start with an HTTP status line';
  return code === 'HPE_INVALID_STATUS' ? 'its status line is not valid' : `it is not valid HTTP/1.1 (${code})`;
}

export const malformedMessage = (code: string) => `the server's response could not be read: ${describeParseError(code)}`;

export const tooLarge = (max: number, status: number, declared?: number) =>
  new TransportError('too_large', `response body ${declared === undefined ? '' : `of ${declared} bytes `}exceeds the ${max}-byte limit`, status);

/** By its shape, not its class: the proxy transport's bundle (dist/lazy/proxy.cjs) has its own copy of the class. */
export function isTransportError(err: unknown): err is TransportError {
  return err instanceof Error && err.name === 'TransportError' && typeof (err as TransportError).failure === 'string';
}

/** The variables that send requests through a proxy; NO_PROXY only exempts. */
export const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const;

export const MAX_BODY_BYTES = 1024 * 1024;

// Loaded once: in the CommonJS bundle each import() copies the module's exports anew.
let httpModule: typeof import('node:http') | undefined;
let httpsModule: typeof import('node:https') | undefined;

/** The body as text: chatctl sends no Accept-Encoding, so any coding may come (RFC 9110 12.5.3), and a compressed secret must not be lost. */
export async function decodeBody(raw: Buffer, contentEncoding: string | string[] | undefined, maxBytes: number, status: number): Promise<Pick<WireResponse, 'body' | 'notUtf8'>> {
  const codings = codingsOf(contentEncoding).filter((c) => c !== 'identity');
  let data = raw;
  if (codings.length > 0) {
    const zlib = await import('node:zlib');
    const opts = { maxOutputLength: maxBytes };
    // Undone last first.
    for (const coding of codings.reverse()) {
      try {
        if (coding === 'gzip' || coding === 'x-gzip') data = zlib.gunzipSync(data, opts);
        else if (coding === 'br') data = zlib.brotliDecompressSync(data, opts);
        else if (coding === 'deflate') {
          // "deflate" is zlib-wrapped by the RFC, raw by some servers.
          try {
            data = zlib.inflateSync(data, opts);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw err;
            data = zlib.inflateRawSync(data, opts);
          }
        } else throw new TransportError('malformed', `the server's response could not be read: its body is encoded as ${JSON.stringify(coding)}, which chatctl cannot decode`, status);
      } catch (err) {
        if (err instanceof TransportError) throw err;
        if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new TransportError('too_large', `response body exceeds the ${maxBytes}-byte limit once decoded (${coding})`, status);
        throw new TransportError('malformed', `the server's response could not be read: its ${coding} body is corrupt`, status);
      }
    }
  }
  const text = data.toString('utf8');
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return isUtf8(data) ? { body } : { body, notUtf8: data };
}

const isParseError = (err: NodeJS.ErrnoException): err is NodeJS.ErrnoException & { code: string } => typeof err.code === 'string' && err.code.startsWith('HPE_');

export const nodeTransport: Transport = async (req, opts) => {
  const url = new URL(req.url);
  const http = url.protocol === 'https:' ? (httpsModule ??= await import('node:https')) : (httpModule ??= await import('node:http'));
  return new Promise<WireResponse>((resolve, reject) => {
    let settled = false;
    // sent: the whole request was handed to the OS, so from here it may be applied.
    const at: AttemptState = { status: undefined, sent: false };
    const timer = attemptTimer(opts, at, (err) => fail(err));
    const feed = rawFeedFor(opts.tap);
    // The parsed answer goes to a tap only when its raw bytes do not.
    const parsedTap = feed ? undefined : opts.tap;
    const settle = () => {
      settled = true;
      feed?.detach();
      timer.clear();
      opts.signal.removeEventListener('abort', onAbort);
    };
    const fail = (err: TransportError) => {
      if (settled) return;
      settle();
      request.destroy();
      reject(err);
    };
    const onAbort = () => fail(new TransportError('aborted', 'interrupted'));
    opts.signal.addEventListener('abort', onAbort, { once: true });

    const request = http.request(requestOptions(req, url, opts), (res) => {
      const answered = res.statusCode ?? 0;
      at.status = answered;
      parsedTap?.head(answered, res.headers);
      timer.progress();
      collectBody(res, answered, { ...opts, tap: parsedTap }, timer, fail, (raw) => {
        if (settled) return;
        settle();
        decodeBody(raw, res.headers['content-encoding'], opts.maxBodyBytes, answered).then((decoded) => resolve({ status: answered, headers: res.headers, ...decoded }), reject);
      });
    });
    // The socket's bytes reach the record before the parser's listener sees them.
    if (feed) request.on('socket', (socket) => feed.attach(socket));
    request.on('finish', () => {
      at.sent = true;
      opts.onSent?.();
      timer.sent();
    });
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (isParseError(err)) fail(new TransportError('malformed', malformedMessage(err.code), at.status));
      else if (at.status !== undefined) fail(new TransportError('truncated', `the connection failed during the response (${err.code ?? err.message})`, at.status));
      else {
        // No byte of an answer came on a connection an earlier request used: the server closed it as it sat idle.
        const stale = request.reusedSocket && !feed?.received && STALE_CODES.has(err.code ?? '');
        // No connection was ever made: nothing reached the server, though node:http may have counted the body as written.
        const reached = at.sent && !NEVER_CONNECTED.has(err.code ?? '');
        fail(
          new TransportError('connect', stale ? `the kept-alive connection to ${url.host} was closed by the server (${err.code})` : describeConnectError(err, url), undefined, reached, false, stale),
        );
      }
    });
    request.end(req.body);
  });
};

function requestOptions(req: WireRequest, url: URL, opts: AttemptOptions): import('node:http').RequestOptions {
  return {
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port || undefined,
    // The path exactly as built, never normalised: an encoded "%2F" stays one segment.
    path: req.url.slice(url.origin.length) || '/',
    method: req.method,
    headers: { ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) },
    agent: opts.agent ?? false,
  };
}

function collectBody(
  res: IncomingMessage,
  status: number,
  opts: AttemptOptions,
  timer: Pick<ReturnType<typeof attemptTimer>, 'progress'>,
  fail: (err: TransportError) => void,
  done: (raw: Buffer) => void,
): void {
  const truncated = () => new TransportError('truncated', 'the connection closed before the response was complete', status);
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > opts.maxBodyBytes) return fail(tooLarge(opts.maxBodyBytes, status, declared));
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    // On disk first: a kill from here on leaves these bytes in the record.
    opts.tap?.chunk(chunk);
    timer.progress();
    size += chunk.length;
    if (size > opts.maxBodyBytes) return fail(tooLarge(opts.maxBodyBytes, status));
    chunks.push(chunk);
  });
  res.on('aborted', () => fail(truncated()));
  res.on('error', (err: NodeJS.ErrnoException) => fail(isParseError(err) ? new TransportError('malformed', malformedMessage(err.code), status) : truncated()));
  res.on('end', () => (res.complete ? done(Buffer.concat(chunks)) : fail(truncated())));
}

/** Where an attempt stands: the status once an answer began, and whether the request may have reached the server. */
export type AttemptState = { status: number | undefined; sent: boolean };

/** An attempt's time limits: one for the whole exchange, or with answerWaitMs, --timeout to send and per stall, answerWaitMs to the end. */
export function attemptTimer(opts: Pick<AttemptOptions, 'timeoutMs' | 'answerWaitMs'>, at: Readonly<AttemptState>, fail: (err: TransportError) => void) {
  const patient = opts.answerWaitMs !== undefined;
  let phase: ReturnType<typeof setTimeout> | undefined;
  let whole: ReturnType<typeof setTimeout> | undefined;
  const self = {
    sent() {
      if (!patient) return;
      clearTimeout(phase);
      whole = setTimeout(() => fail(new TransportError('timeout', 'no complete answer came before the deadline', at.status, true, true)), opts.answerWaitMs);
    },
    /** The answer began, or more of it came: with answerWaitMs, each stall is bounded by --timeout. */
    progress() {
      if (patient) stalls();
    },
    clear() {
      clearTimeout(phase);
      clearTimeout(whole);
    },
  };
  const startPhase = (err: () => TransportError) => {
    clearTimeout(phase);
    phase = setTimeout(() => fail(err()), opts.timeoutMs);
  };
  const stalls = () => startPhase(() => new TransportError('timeout', `the answer stalled for ${opts.timeoutMs / 1000} s`, at.status, true));
  startPhase(
    patient
      ? () => new TransportError('timeout', `could not connect and send within ${opts.timeoutMs / 1000} s`, undefined, at.sent)
      : () => new TransportError('timeout', `no complete response within ${opts.timeoutMs / 1000} s`, at.status, at.sent),
  );
  return self;
}

/** Errors of a connection that was never made: the request cannot have reached the server. */
export const NEVER_CONNECTED: ReadonlySet<string> = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH']);

/** How a kept-alive connection the server closed fails a request written to it ('socket hang up' is ECONNRESET). */
const STALE_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

function describeConnectError(err: NodeJS.ErrnoException, url: URL): string {
  if (err.code === 'ECONNREFUSED') return `connection refused by ${url.host}`;
  if (err.code === 'ECONNRESET') return `connection to ${url.host} was reset before a response`;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `cannot resolve host ${url.hostname}`;
  return `cannot connect to ${url.host}: ${err.code ?? err.message}`;
}
