// One attempt to rotate one item's secret: the request every webhook command
// sends (contract section 4, the client's headers), through the same
// transport, with a fresh x-request-id. No retries here: in a `--from` run
// they are the runner's, so that every worker shares one pause and one rate.
import { scopedPath } from '../api/spec.js';
import { requestHeaders } from '../api/client.js';
import { MAX_BODY_BYTES, type Transport, type WireResponse } from '../http/transport.js';
import { redactHeaders, redactSecretInBody } from '../output/redact.js';
import type { Connection } from '../scope/resolve.js';
import type { RotateOne } from './runner.js';

export interface AttemptSettings {
  transport: Transport;
  conn: Connection;
  token: string;
  timeoutMs: number;
  userAgent: string;
  randomUUID(): string;
  now(): number;
  /** A keep-alive agent shared by every attempt of the run. */
  agent?: import('node:http').Agent | undefined;
  /** --debug: one line at a time, already redacted here. */
  trace?: ((line: string) => void) | undefined;
}

export function makeRotateOne(s: AttemptSettings): RotateOne {
  return async (req, idempotencyKey, signal) => {
    const url = s.conn.baseUrl + scopedPath(s.conn.scope, 'webhook-endpoints', req.endpointId, 'secret', 'rotate');
    const headers = { ...requestHeaders({ token: s.token, origin: s.conn.origin, csrfToken: s.conn.csrfToken, userAgent: s.userAgent }, idempotencyKey), 'x-request-id': s.randomUUID() };
    const body = JSON.stringify({ expectedVersion: req.expectedVersion, mode: req.mode });
    if (s.trace) {
      s.trace(`> POST ${url}`);
      for (const [k, v] of Object.entries(redactHeaders(headers))) s.trace(`> ${k}: ${v}`);
      s.trace(`> ${body}`);
    }
    const started = s.now();
    let res: WireResponse;
    try {
      res = await s.transport({ method: 'POST', url, headers, body }, { timeoutMs: s.timeoutMs, maxBodyBytes: MAX_BODY_BYTES, signal, agent: s.agent });
    } catch (err) {
      s.trace?.(`< ${req.endpointId}: failed after ${s.now() - started} ms: ${(err as Error).message}`);
      throw err;
    }
    if (s.trace) {
      s.trace(`< ${req.endpointId}: ${res.status} in ${s.now() - started} ms`);
      if (res.body) s.trace(`< ${redactSecretInBody(res.body)}`);
    }
    return res;
  };
}
