// The typed client for the three operations of the spec. A command calls
// create/rotate/reactivate with a checked request body and gets the parsed
// success envelope back, or a CliError: building headers and paths, retries,
// --debug traces and response checks all live below this line. A dry run is
// a transport that prints the request instead of sending it.
import type { Scope } from '../api/spec.js';
import { scopedPath } from '../api/spec.js';
import { mutationResponseSchema, parseSecretAnswer, type CreateRequest, type ExpectedVersionRequest, type MutationResponse, type RotateRequest, type SecretAnswer } from '../api/schemas.js';
import { sendWithRetries, type ApiRequest, type CallHooks, type HttpDeps, type RetrySettings } from './client.js';
import { parseJson } from './classify.js';
import { CliError, invalidResponse } from '../errors/cli-error.js';
import { MAX_BODY_BYTES, decodeBody, type Transport, type WireResponse } from './transport.js';
import { redactHeaders } from '../output/redact.js';
import { jsonDocumentText } from '../output/json-output.js';
import type { IO } from '../output/io.js';

export interface ClientConfig {
  baseUrl: string;
  scope: Scope;
  token: string;
  origin: string;
  csrfToken: string;
  userAgent: string;
  settings: RetrySettings;
  deps: HttpDeps;
  /** How a re-run avoids applying a change twice, for a key (default: --idempotency-key; a `--from` run: its journal). */
  rerun?: ((idempotencyKey: string) => string) | undefined;
}

export interface WebhooksClient {
  /** The spec's envelope, or (rarely) an odd answer that still carries the secret: see parseSecretAnswer. */
  create(body: CreateRequest, idempotencyKey: string, hooks?: CallHooks): Promise<SecretAnswer>;
  rotate(endpointId: string, body: RotateRequest, idempotencyKey: string, hooks?: CallHooks): Promise<SecretAnswer>;
  reactivate(endpointId: string, body: ExpectedVersionRequest): Promise<MutationResponse>;
}

/** The headers every request carries (docs/configuration.md, what goes on the wire), less x-request-id, which is new for each attempt. */
export function requestHeaders(cfg: Pick<ClientConfig, 'token' | 'origin' | 'csrfToken' | 'userAgent'>, idempotencyKey?: string): Record<string, string> {
  const headers: Record<string, string> = {
    Authorization: `Bearer ${cfg.token}`,
    'Content-Type': 'application/json',
    Accept: 'application/json',
    Origin: cfg.origin,
    'x-service-csrf': cfg.csrfToken,
    'User-Agent': cfg.userAgent,
  };
  if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
  return headers;
}

export function createWebhooksClient(cfg: ClientConfig): WebhooksClient {
  /** Sends; `parse` gives the answer, or undefined for a body that is not one (an invalid_response). */
  const send = async <T>(path: string, body: object, parse: (json: unknown, res: WireResponse) => T | undefined, idempotencyKey?: string, hooks?: CallHooks): Promise<T> => {
    const headers = requestHeaders(cfg, idempotencyKey);
    const rerun = idempotencyKey !== undefined ? cfg.rerun?.(idempotencyKey) : undefined;
    const req: ApiRequest = { method: 'POST', url: cfg.baseUrl + path, headers, body: JSON.stringify(body), idempotencyKey, rerun };
    const res = await sendWithRetries(req, cfg.settings, cfg.deps, hooks);
    const parsed = parse(parseJson(res.body), res);
    if (parsed === undefined) {
      const keyNote = idempotencyKey ? `; the change may have been applied (Idempotency-Key ${idempotencyKey})` : '';
      const err = invalidResponse(`the server answered ${res.status} with a body that is not the expected response${keyNote}`, { status: res.status, idempotencyKey });
      // Read whole, and nothing in it may be a secret (parseSecretAnswer keeps anything that might): nothing to keep.
      holdsNoSecret.add(err);
      throw err;
    }
    return parsed;
  };
  const mutation = (json: unknown) => {
    const parsed = mutationResponseSchema().safeParse(json);
    return parsed.success ? parsed.data : undefined;
  };
  const endpoints = (...rest: string[]) => scopedPath(cfg.scope, 'webhook-endpoints', ...rest);
  return {
    create: (body, key, hooks) => send(endpoints(), body, parseSecretAnswer, key, hooks),
    rotate: (id, body, key, hooks) => send(endpoints(id, 'secret', 'rotate'), body, (json, res) => parseSecretAnswer(json, res, { endpointId: id }), key, hooks),
    reactivate: (id, body) => send(endpoints(id, 'reactivate'), body, mutation),
  };
}

/** Errors for an answer read whole that carries nothing that may be a secret: its record has nothing to keep. */
export const holdsNoSecret = new WeakSet<object>();

/**
 * The answer a record holds (secret/record.ts: its status, coding and bytes
 * as they arrived), checked as a live one is: the secret answer, or
 * undefined when it is not one to deliver.
 */
export const recordedSecretAnswer =
  (endpointId: string | undefined) =>
  async (status: number, contentEncoding: string | null, raw: Buffer): Promise<SecretAnswer | undefined> => {
    const res: WireResponse = { status, headers: {}, ...(await decodeBody(raw, contentEncoding ?? undefined, MAX_BODY_BYTES, status)) };
    return parseSecretAnswer(parseJson(res.body), res, endpointId !== undefined ? { endpointId } : undefined);
  };

/**
 * Ends a dry run once the request is printed: not a failure, exit 0, and
 * nothing more to report. Thrown by the dry-run transport, so no command
 * needs a branch of its own for --dry-run.
 */
export class DryRunComplete extends CliError {
  constructor() {
    super('dry_run', 'dry run: nothing was sent', 0, { reported: true });
  }
}

/** A transport that prints the request (credentials redacted) and sends nothing. */
export function dryRunTransport(io: IO, json: boolean): Transport {
  return async (req) => {
    const headers = redactHeaders({ ...req.headers });
    delete headers['x-request-id'];
    const body: unknown = JSON.parse(req.body);
    if (json) io.stdout.write(jsonDocumentText(io, { dryRun: true, request: { method: req.method, url: req.url, headers, body } }, 'one-line'));
    else {
      const lines = [`${req.method} ${req.url}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'x-request-id: (a new UUID for each attempt)', '', JSON.stringify(body, null, 2), ''];
      io.stdout.write(lines.join('\n'));
    }
    io.notice('dry run: nothing was sent');
    throw new DryRunComplete();
  };
}
