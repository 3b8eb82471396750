// The record's raw tap (AnswerTap.raw): an attempt's answer bytes as the
// socket delivers them, before node:http's parser, only this attempt's, on a
// fresh or a kept-alive connection. Real servers on 127.0.0.1.
import { afterEach, describe, expect, test } from 'vitest';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AnswerTap, type AttemptOptions, nodeTransport, parseRawAnswer } from '../../src/http/transport.js';
import { readRecord, WriteAheadRecord } from '../../src/secret/record.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** A TCP server that answers each request it reads with the bytes `reply` gives. */
async function rawServer(reply: (n: number) => Buffer | string, opts: { end?: boolean } = {}): Promise<{ url: string; sockets: net.Socket[] }> {
  const sockets: net.Socket[] = [];
  let n = 0;
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    let seen = '';
    socket.on('data', (d) => {
      seen += d.toString('latin1');
      // One whole request (these carry a Content-Length body).
      const end = seen.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(seen.slice(0, end))?.[1] ?? 0);
      if (seen.length < end + 4 + length) return;
      seen = seen.slice(end + 4 + length);
      const out = reply(n++);
      if (opts.end) socket.end(out);
      else socket.write(out);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1/x`, sockets };
}

/** A tap that keeps what it is told, and whether the parsed calls came. */
function keepingTap() {
  const raws: { bytes: Buffer; at: number }[] = [];
  const parsed: string[] = [];
  const tap: AnswerTap = {
    head: (status) => parsed.push(`head ${status}`),
    chunk: () => parsed.push('chunk'),
    raw: (bytes, at) => raws.push({ bytes: Buffer.from(bytes), at }),
  };
  return { tap, raws, parsed, all: () => Buffer.concat(raws.map((r) => r.bytes)) };
}

const opts = (over: Partial<AttemptOptions> = {}): AttemptOptions => ({ timeoutMs: 10_000, maxBodyBytes: 1 << 20, signal: new AbortController().signal, ...over });
const post = (url: string, id = 'r1') => ({ method: 'POST' as const, url, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: '{}' });

const BODY = JSON.stringify({ data: { secret: 'whsec_abc' } });

describe('raw tap', () => {
  test('the bytes exactly as the server wrote them (status line, chunked framing), offsets counted; the parsed calls never come', async () => {
    const wire = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n${BODY.slice(0, 4)}\r\n${(BODY.length - 4).toString(16)}\r\n${BODY.slice(4)}\r\n0\r\n\r\n`;
    const s = await rawServer(() => wire, { end: true });
    const t = keepingTap();
    const res = await nodeTransport(post(s.url), opts({ tap: t.tap }));
    expect(res.body).toBe(BODY);
    expect(t.all().toString('latin1')).toBe(wire);
    let at = 0;
    for (const r of t.raws) {
      expect(r.at).toBe(at);
      at += r.bytes.length;
    }
    expect(t.parsed).toEqual([]);
  });

  test('bytes the parser rejects still reach the tap first (the socket, not the parser, feeds it)', async () => {
    const wire = `HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\nBad Header\r\n\r\n${BODY}`;
    const s = await rawServer(() => wire, { end: true });
    const t = keepingTap();
    await expect(nodeTransport(post(s.url), opts({ tap: t.tap }))).rejects.toMatchObject({ failure: 'malformed' });
    expect(t.all().toString('latin1')).toBe(wire);
  });

  test('a kept-alive connection: each attempt gets its own answer only, from its first byte', async () => {
    const answer = (n: number) => `HTTP/1.1 201 Created\r\nContent-Length: ${`{"n":${n}}`.length}\r\nConnection: keep-alive\r\n\r\n{"n":${n}}`;
    const s = await rawServer(answer);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(() => agent.destroy());
    const taps = [keepingTap(), keepingTap(), keepingTap()];
    for (const [i, t] of taps.entries()) {
      const res = await nodeTransport(post(s.url, `r${i}`), opts({ tap: t.tap, agent }));
      expect(res.body).toBe(`{"n":${i}}`);
    }
    // One connection served all three.
    expect(s.sockets).toHaveLength(1);
    for (const [i, t] of taps.entries()) {
      expect(t.all().toString('latin1')).toBe(answer(i));
      expect(t.raws[0]!.at).toBe(0);
    }
  });

  test('100 Continue before the answer is kept with it and skipped when read back', async () => {
    const wire = `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
    const s = await rawServer(() => wire, { end: true });
    const t = keepingTap();
    const res = await nodeTransport(post(s.url), opts({ tap: t.tap }));
    expect(res.status).toBe(200);
    expect(parseRawAnswer(t.all())).toMatchObject({ status: 200, whole: true, body: Buffer.from(BODY) });
  });

  test('into a record: a gzip chunked answer cut by the server reads back as what came, coded, not whole; a whole one as whole', async () => {
    const cfg = mkdtempSync(join(tmpdir(), 'chatctl-rawtap-'));
    closers.push(() => rmSync(cfg, { recursive: true, force: true }));
    const gz = gzipSync(BODY);
    const head = 'HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n';
    const whole = Buffer.concat([Buffer.from(`${head}${gz.length.toString(16)}\r\n`), gz, Buffer.from('\r\n0\r\n\r\n')]);
    const req = (key: string) => ({ op: 'rotate' as const, scope: 'o/a/e', endpointId: 'we_1', idempotencyKey: key });

    const s1 = await rawServer(() => whole, { end: true });
    const rec = WriteAheadRecord.open(cfg, req('k1'), new Date(0));
    await nodeTransport(post(s1.url), opts({ tap: rec.tap }));
    const a = readRecord(rec.path)!.answer!;
    expect(a).toMatchObject({ status: 200, contentEncoding: 'gzip', whole: true });
    expect(gunzipSync(a.body).toString()).toBe(BODY);
    rec.close();

    const cut = whole.subarray(0, whole.length - 9);
    const s2 = await rawServer(() => cut, { end: true });
    const rec2 = WriteAheadRecord.open(cfg, req('k2'), new Date(0));
    await expect(nodeTransport(post(s2.url), opts({ tap: rec2.tap }))).rejects.toMatchObject({ failure: 'truncated' });
    expect(readRecord(rec2.path)!.answer).toMatchObject({ status: 200, whole: false });
    rec2.close();
  });
});
