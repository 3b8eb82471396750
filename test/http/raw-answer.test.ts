// parseRawAnswer (src/http/transport.ts): a record's raw answer bytes read
// back as the HTTP parser would have read them, whole or cut.
import { describe, expect, it } from 'vitest';
import { gunzipSync, gzipSync } from 'node:zlib';
import { parseRawAnswer } from '../../src/http/transport.js';

const BODY = JSON.stringify({ data: { endpoint: { id: 'we_1', version: 4 }, secret: 'whsec_abc', secretAvailable: true } });
const bytes = (...parts: (string | Buffer)[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));

describe('parseRawAnswer', () => {
  it('Content-Length: the status, the headers and exactly the declared body', () => {
    const a = parseRawAnswer(bytes(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nX-Request-Id: r1\r\n\r\n${BODY}`));
    expect(a).toMatchObject({ status: 200, contentEncoding: null, contentLength: BODY.length, whole: true, headers: { 'x-request-id': 'r1' } });
    expect(a!.body.toString()).toBe(BODY);
  });

  it('chunked: the chunks joined, extensions and trailers skipped, whole once the last chunk and blank line came', () => {
    const raw = bytes(
      'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n',
      `5;ext=1\r\n${BODY.slice(0, 5)}\r\n`,
      `${(BODY.length - 5).toString(16)}\r\n${BODY.slice(5)}\r\n`,
      '0\r\nX-Trailer: t\r\n\r\n',
    );
    const a = parseRawAnswer(raw);
    expect(a).toMatchObject({ status: 201, contentLength: null, whole: true });
    expect(a!.body.toString()).toBe(BODY);
    // Cut anywhere before the end: what arrived, not whole.
    for (const cut of [raw.length - 1, raw.length - 10, raw.indexOf('\r\n\r\n') + 4 + 8]) {
      const part = parseRawAnswer(raw.subarray(0, cut));
      expect(part).toMatchObject({ status: 201, whole: false });
      expect(BODY.startsWith(part!.body.toString())).toBe(true);
    }
  });

  it('a gzip body is kept as coded, with its coding named', () => {
    const gz = gzipSync(BODY);
    const a = parseRawAnswer(bytes(`HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n\r\n`, gz));
    expect(a).toMatchObject({ status: 200, contentEncoding: 'gzip', whole: true });
    expect(a!.body.equals(gz)).toBe(true);
    expect(gunzipSync(a!.body).toString()).toBe(BODY);
  });

  it('truncated: a cut body is what came, a cut head is the status alone, a cut status line is nothing', () => {
    const raw = bytes(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`);
    const body = parseRawAnswer(raw.subarray(0, raw.length - 7));
    expect(body).toMatchObject({ status: 200, whole: false, contentLength: BODY.length });
    expect(body!.body.toString()).toBe(BODY.slice(0, -7));
    expect(parseRawAnswer(raw.subarray(0, 30))).toMatchObject({ status: 200, whole: false, body: Buffer.alloc(0) });
    expect(parseRawAnswer(raw.subarray(0, 10))).toBeUndefined();
    expect(parseRawAnswer(Buffer.alloc(0))).toBeUndefined();
  });

  it('interim answers (100 Continue, 103 Early Hints) are skipped: the final one counts', () => {
    const a = parseRawAnswer(bytes('HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n', `HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`));
    expect(a).toMatchObject({ status: 200, whole: true });
    expect(a!.body.toString()).toBe(BODY);
    // Only the interim answer so far: nothing final yet.
    expect(parseRawAnswer(bytes('HTTP/1.1 100 Continue\r\n\r\n'))).toBeUndefined();
  });

  it('bytes that are not HTTP give nothing; a body delimited by the close is never known whole', () => {
    expect(parseRawAnswer(bytes(`{"status":200}\n${BODY}`))).toBeUndefined();
    expect(parseRawAnswer(bytes('HTTP/1.1 abc\r\n\r\n'))).toBeUndefined();
    const a = parseRawAnswer(bytes(`HTTP/1.0 200 OK\r\n\r\n${BODY}`));
    expect(a).toMatchObject({ status: 200, whole: false });
    expect(a!.body.toString()).toBe(BODY);
    expect(parseRawAnswer(bytes('HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n'))).toMatchObject({ status: 204, whole: true, body: Buffer.alloc(0) });
  });

  it('repeated headers are joined; equal repeated Content-Lengths are one, differing ones none', () => {
    const a = parseRawAnswer(bytes('HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nSet-Thing: a\r\nset-thing: b\r\n\r\nokEXTRA'));
    expect(a).toMatchObject({ contentLength: 2, whole: true, headers: { 'set-thing': 'a, b' } });
    expect(a!.body.toString()).toBe('ok');
    expect(parseRawAnswer(bytes('HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok'))).toMatchObject({ contentLength: null, whole: false });
  });
});
