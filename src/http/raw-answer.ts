// An HTTP/1.1 answer read back from the bytes the socket delivered (after
// TLS), as a record keeps them (secret/record.ts): the status line, the
// headers, and the body framed by Content-Length or chunked transfer coding,
// still in its content coding (gzip stays gzip: decodeBody undoes it when the
// answer is used). Interim answers (1xx: 100 Continue, 103 Early Hints) are
// skipped: the answer is the final one. Bytes cut short anywhere give what
// arrived, marked not whole; bytes that are not an HTTP answer give nothing.
//
// Pure: no I/O, no clock. The transport hands a record only the bytes of one
// attempt's answer, from its first byte (a kept-alive connection's earlier
// answers are never among them).

/** The answer as the bytes hold it. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  contentEncoding: string | null;
  /** The Content-Length the server declared, when it did. */
  contentLength: number | null;
  /** The body without its transfer coding, still in its content coding. */
  body: Buffer;
  /**
   * Whether the bytes hold the whole answer as its framing says
   * (Content-Length reached, or the last chunk came). An answer that ends
   * when the connection closes cannot tell, and counts as not whole.
   */
  whole: boolean;
}

const STATUS_LINE = /^HTTP\/\d(?:\.\d)? (\d{3})(?: [^\r\n]*)?$/;

/** The final answer the bytes begin with; undefined when they hold no complete status line. */
export function parseRawAnswer(bytes: Buffer): RawAnswer | undefined {
  let at = 0;
  for (;;) {
    const head = readHead(bytes, at);
    if (head === 'not-http') return undefined;
    if (head === 'short') return partialHead(bytes.subarray(at));
    at = head.end;
    // Interim answers come before the final one (101 switches protocol: final).
    if (head.status >= 100 && head.status < 200 && head.status !== 101) continue;
    return { status: head.status, headers: head.headers, ...framed(head, bytes.subarray(at)) };
  }
}

interface Head {
  status: number;
  headers: Record<string, string>;
  /** Where the body begins. */
  end: number;
}

/** A head whose blank line has not come: the status alone, if its line is complete. */
function partialHead(rest: Buffer): RawAnswer | undefined {
  const eol = rest.indexOf(0x0a);
  if (eol < 0) return undefined;
  const status = statusOf(rest.subarray(0, eol).toString('latin1').replace(/\r$/, ''));
  if (status === undefined) return undefined;
  return { status, headers: {}, contentEncoding: null, contentLength: null, body: Buffer.alloc(0), whole: false };
}

const statusOf = (line: string): number | undefined => {
  const m = STATUS_LINE.exec(line);
  return m ? Number(m[1]) : undefined;
};

/** One head from `at`: its status and headers, up to the blank line (CRLF or a bare LF, as llhttp accepts). */
function readHead(bytes: Buffer, at: number): Head | 'short' | 'not-http' {
  const prefix = bytes.subarray(at, at + 5).toString('latin1');
  if (!'HTTP/'.startsWith(prefix) && !prefix.startsWith('HTTP/')) return 'not-http';
  const lines: string[] = [];
  let pos = at;
  for (;;) {
    const eol = bytes.indexOf(0x0a, pos);
    if (eol < 0) return 'short';
    const line = bytes.subarray(pos, eol).toString('latin1').replace(/\r$/, '');
    pos = eol + 1;
    if (line === '') break;
    lines.push(line);
  }
  const status = statusOf(lines[0] ?? '');
  if (status === undefined) return 'not-http';
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

function framed(head: Head, rest: Buffer): Omit<RawAnswer, 'status' | 'headers'> {
  const contentEncoding = head.headers['content-encoding'] ?? null;
  const declared = declaredLength(head.headers['content-length']);
  const codings = (head.headers['transfer-encoding'] ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '');
  // No body, whatever the headers say (RFC 9112 6.3).
  if (head.status === 204 || head.status === 304 || head.status === 101) return { contentEncoding, contentLength: declared, body: Buffer.alloc(0), whole: true };
  if (codings.at(-1) === 'chunked') return { contentEncoding, contentLength: declared, ...unchunk(rest) };
  if (codings.length === 0 && declared !== null) return { contentEncoding, contentLength: declared, body: rest.subarray(0, declared), whole: rest.length >= declared };
  // Delimited by the connection's close: what came, never known whole.
  return { contentEncoding, contentLength: declared, body: rest, whole: false };
}

/** Content-Length as a number: repeated equal values are one; differing or unreadable ones are none. */
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
    const eol = rest.indexOf(0x0a, pos);
    if (eol < 0) return cut();
    const sizeText = rest.subarray(pos, eol).toString('latin1').replace(/\r$/, '').split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) return cut();
    const size = Number.parseInt(sizeText, 16);
    pos = eol + 1;
    if (size === 0) {
      // Trailers, then a blank line.
      for (;;) {
        const end = rest.indexOf(0x0a, pos);
        if (end < 0) return cut();
        const line = rest.subarray(pos, end).toString('latin1').replace(/\r$/, '');
        pos = end + 1;
        if (line === '') return { body: Buffer.concat(parts), whole: true };
      }
    }
    const data = rest.subarray(pos, pos + size);
    parts.push(data);
    if (data.length < size) return cut();
    pos += size;
    // The CRLF after the data.
    if (rest[pos] === 0x0d) pos++;
    if (pos >= rest.length) return cut();
    if (rest[pos] !== 0x0a) return cut();
    pos++;
  }
}
