// A webhook receiver on 127.0.0.1 for the sandbox's deliveries: records each
// request (headers and raw body) and answers with the status the test sets,
// or holds the answer until the test releases it. Verification is the
// test's own, with node:crypto (see `signatureFor`), independent of src/.
import { afterEach } from 'vitest';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const open: http.Server[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())))));
});

export async function receiver() {
  const received: Received[] = [];
  let status = 204;
  let answer = '';
  let hold: Promise<void> | undefined;
  const hungUp: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    // The sender closed the connection before this receiver answered.
    res.on('close', () => {
      if (!res.writableFinished) for (const tell of hungUp.splice(0)) tell();
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      if (hold) await hold;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(answer);
    });
  });
  open.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answerWith(s: number, text = '') {
      status = s;
      answer = text;
    },
    /** Resolves when the sender next closes a connection whose answer was still held. */
    nextHangUp(): Promise<void> {
      return new Promise<void>((r) => hungUp.push(r));
    },
    /** Holds every answer until the returned function is called. */
    holdAnswers(): () => void {
      let release!: () => void;
      hold = new Promise<void>((r) => (release = r));
      return () => {
        hold = undefined;
        release();
      };
    },
  };
}

/** The base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under a `whsec_` secret: what a receiver computes. */
export function signatureFor(secret: string, id: string, timestamp: string | number, body: Buffer | string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

/** The signatures of a delivery, in order, each checked against the secrets: the index of the secret it verifies with, or -1. */
export function signaturesOf(r: Received, secrets: string[]): number[] {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  return String(r.headers['webhook-signature'])
    .split(' ')
    .map((entry) => {
      if (!entry.startsWith('v1,')) return -1;
      return secrets.findIndex((s) => signatureFor(s, id, ts, r.body) === entry.slice(3));
    });
}
