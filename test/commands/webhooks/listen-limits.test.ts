// What `webhooks listen` does with hostile senders: a huge body, a sender
// too slow with its headers or its body, a request that is not HTTP,
// headers too large, more connections than it takes. Its HTTP side
// (startListener) runs here with small limits, so the socket timeouts are
// real timers at a few tenths of a second (as elsewhere in the suite); the
// figures the command uses are checked against the docs at the end.
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import http from 'node:http';
import { join } from 'node:path';
import { LISTEN_LIMITS, startListener, type DeliveryRecord, type ListenLimits, type RunningListener } from '../../../src/commands/webhooks/listen-server.js';
import { ROOT } from '../../support/fixtures.js';

const LIMITS: ListenLimits = {
  ...LISTEN_LIMITS,
  maxBodyBytes: 1024,
  headersTimeoutMs: 300,
  requestTimeoutMs: 600,
  checkIntervalMs: 50,
  maxHeaderBytes: 2048,
  maxConnections: 2,
};

const running: RunningListener[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((l) => l.close()));
});

async function start() {
  const records: DeliveryRecord[] = [];
  const l = await startListener('127.0.0.1', 0, {
    secrets: () => ({ held: [], skipped: [], reloaded: [] }),
    now: () => 0,
    toleranceSeconds: 300,
    forwardTo: undefined,
    limits: LIMITS,
    onRecord: (r) => records.push(r),
  });
  running.push(l);
  return { l, records };
}

/** Opens a raw connection, writes `text`, and resolves with all it reads until the server closes it. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.setEncoding('utf8').on('data', (c: string) => (got += c));
    socket.on('close', () => resolve(got));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(got) : reject(err)));
  });
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);

describe('webhooks listen: limits', () => {
  it('a body over the limit is 413, whether its length is declared or it comes in chunks; the connection is closed', async () => {
    const { l, records } = await start();
    const declared = await raw(l.port, `POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n`);
    expect(statusOf(declared)).toBe(413);
    expect(declared).toMatch(/\r\nconnection: close\r\n/i);
    const chunk = 'x'.repeat(600);
    const chunked = await raw(l.port, `POST /hooks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n${chunk}\r\n258\r\n${chunk}\r\n`);
    expect(statusOf(chunked)).toBe(413);
    expect(records.map((r) => [r.status, r.reason])).toEqual([
      [413, 'body_too_large'],
      [413, 'body_too_large'],
    ]);
    expect(records[0]!.message).toBe('its body is larger than 1024 bytes');
    // Exactly the limit is a body (refused for its signature, not its size).
    const at = await raw(l.port, `POST /hooks HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 1024\r\n\r\n${'y'.repeat(1024)}`);
    expect(statusOf(at)).toBe(400);
  });

  it('a sender too slow with its headers, or with its body, gets 408 and the connection is closed', async () => {
    const { l, records } = await start();
    const headers = await raw(l.port, 'POST /hooks HTTP/1.1\r\nHost: x\r\n');
    expect(statusOf(headers)).toBe(408);
    const body = await raw(l.port, 'POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"half":');
    expect(statusOf(body)).toBe(408);
    expect(records.map((r) => [r.status, r.reason])).toEqual([
      [408, 'request_timeout'],
      [408, 'request_timeout'],
    ]);
  });

  it('what is not HTTP is 400; headers over the limit are 431', async () => {
    const { l, records } = await start();
    expect(statusOf(await raw(l.port, 'HELLO THERE\r\n\r\n'))).toBe(400);
    expect(statusOf(await raw(l.port, `POST /hooks HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(4096)}\r\n\r\n`))).toBe(431);
    expect(statusOf(await raw(l.port, `POST /hooks HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n`))).toBe(400);
    expect(records.map((r) => [r.status, r.reason])).toEqual([
      [400, 'bad_request'],
      [431, 'headers_too_large'],
      [400, 'bad_request'],
    ]);
  });

  it('beyond the connection cap a new connection is closed at once, and counted; the ones held are served', async () => {
    const { l, records } = await start();
    const held = await Promise.all(
      [1, 2].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect(l.port, '127.0.0.1', () => resolve(s));
          }),
      ),
    );
    // Each held connection has been accepted once it carries a request; the third is closed with no answer.
    const extra = await raw(l.port, 'POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    expect(extra).toBe('');
    expect(l.dropped()).toBe(1);
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      held[0]!.setEncoding('utf8').on('data', (c: string) => {
        got += c;
        if (got.includes('\r\n\r\n')) resolve(got);
      });
      held[0]!.write('POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    });
    expect(statusOf(answer)).toBe(400);
    expect(records.map((r) => r.status)).toEqual([400]);
    for (const s of held) s.destroy();
  });

  it('closing ends kept-alive connections at once', async () => {
    const { l } = await start();
    const agent = new http.Agent({ keepAlive: true });
    const status = await new Promise<number>((resolve) => http.request({ host: '127.0.0.1', port: l.port, method: 'POST', agent }, (res) => (res.resume(), resolve(res.statusCode!))).end());
    expect(status).toBe(400);
    await l.close();
    running.length = 0;
    agent.destroy();
  });

  it('the figures in force are the ones docs/signing.md states', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'signing.md'), 'utf8');
    const limits = doc.slice(doc.indexOf('### Limits'));
    expect(LISTEN_LIMITS.maxBodyBytes).toBe(1024 * 1024);
    expect(limits).toContain('1 MiB (1,048,576 bytes)');
    expect(limits).toContain(`${LISTEN_LIMITS.headersTimeoutMs / 1000} s`);
    expect(limits).toContain(`${LISTEN_LIMITS.requestTimeoutMs / 1000} s`);
    expect(limits).toContain(`${LISTEN_LIMITS.maxHeaderBytes / 1024} KiB`);
    expect(limits).toContain(`${LISTEN_LIMITS.maxHeaderCount} headers`);
    expect(limits).toContain(`${LISTEN_LIMITS.maxConnections} connections`);
    expect(limits).toContain(`${LISTEN_LIMITS.forwardTimeoutMs / 1000} s`);
    expect(limits).toContain(`${LISTEN_LIMITS.keepAliveTimeoutMs / 1000} s`);
  });
});
