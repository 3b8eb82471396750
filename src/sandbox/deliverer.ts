// How the sandbox sends a delivery and what it reports: one POST to the
// destination, plain node:http(s), no proxy, one connection per delivery,
// and the receiver's answer (never retried). src/sandbox/deliver.ts signs
// the event; the sandbox's state holds the one Deliverer, which ends the
// deliveries in flight when the sandbox stops.
import http from 'node:http';
import https from 'node:https';
import type { HeaderName } from '../signing/standard-webhooks.js';
import type { ValidSecret } from './endpoints.js';

/** How long a receiver has to answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of the receiver's answer the report keeps. */
const MAX_ANSWER_CHARS = 1024;

export interface ReceiverAnswer {
  /** Its HTTP status, or null when it could not be reached or did not answer in time. */
  status: number | null;
  /** A 2xx status. */
  ok: boolean;
  durationMs: number;
  /** The start of its body (at most 1024 characters), or null. */
  body: string | null;
  /** Why there is no status. */
  error: string | null;
}

/** What POST /_sandbox/endpoints/{id}/deliver answers, and what the sandbox logs. */
export interface DeliveryReport {
  delivery: {
    endpointId: string;
    eventType: string;
    destinationUrl: string;
    webhookId: string;
    timestamp: number;
    /** Which secrets signed it, by fingerprint (never the secrets), newest first, in the order of the signatures. */
    signedWith: { fingerprint: string; secret: ValidSecret['role']; expiresAt?: string }[];
    request: { headers: Record<HeaderName, string>; body: string };
    receiver: ReceiverAnswer;
  };
}

/** Sends deliveries and ends the ones in flight when the sandbox stops. */
export class Deliverer {
  private readonly inFlight = new Set<http.ClientRequest>();

  send(url: string, headers: Record<string, string>, body: string): Promise<ReceiverAnswer> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<ReceiverAnswer>((resolve) => {
      const failed = (error: string) => resolve({ status: null, ok: false, durationMs: elapsed(), body: null, error });
      const target = new URL(url);
      const client = target.protocol === 'https:' ? https : http;
      const req = client.request(target, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        timeout: DELIVERY_TIMEOUT_MS,
      });
      this.inFlight.add(req);
      req.on('close', () => this.inFlight.delete(req));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) => failed(err.code ? `${err.code}: ${err.message}` : err.message));
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < MAX_ANSWER_CHARS) text += chunk;
        });
        const done = () => {
          const status = res.statusCode ?? null;
          resolve({ status, ok: status !== null && status >= 200 && status < 300, durationMs: elapsed(), body: text.slice(0, MAX_ANSWER_CHARS), error: null });
        };
        res.on('end', done);
        // A receiver that answers and then drops the connection still answered.
        res.on('aborted', done);
        res.on('error', done);
      });
      req.end(body);
    });
  }

  /** Ends every delivery still waiting for its receiver. */
  close(): void {
    for (const req of this.inFlight) req.destroy(new Error('the sandbox stopped'));
    this.inFlight.clear();
  }
}
