// The typed client for the spec's three operations: a checked body in, the parsed envelope (or a CliError) out.
import {
  type CreateRequest,
  type ExpectedVersionRequest,
  type MutationResponse,
  mutationResponseSchema,
  parseSecretAnswer,
  type RotateRequest,
  type Scope,
  scopedPath,
  type SecretAnswer,
} from '../api/schemas.js';
import { type ApiRequest, type CallHooks, type HttpDeps, parseJson, type RetrySettings, sendWithRetries } from './client.js';
import { CliError, invalidResponse } from '../errors/cli-error.js';
import { MAX_BODY_BYTES, decodeBody, type Transport, type WireResponse } from './transport.js';
import { redactHeaders } from '../output/scrub.js';
import { jsonDocumentText } from '../output/json.js';
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
  const mutation = (json: unknown) => mutationResponseSchema().safeParse(json).data;
  const endpoints = (...rest: string[]) => scopedPath(cfg.scope, 'webhook-endpoints', ...rest);
  return {
    create: (body, key, hooks) => send(endpoints(), body, parseSecretAnswer, key, hooks),
    rotate: (id, body, key, hooks) => send(endpoints(id, 'secret', 'rotate'), body, (json, res) => parseSecretAnswer(json, res, { endpointId: id }), key, hooks),
    reactivate: (id, body) => send(endpoints(id, 'reactivate'), body, mutation),
  };
}

/** Errors for an answer read whole that carries nothing that may be a secret: its record has nothing to keep. */
export const holdsNoSecret = new WeakSet<object>();

/** The answer a record holds (secret/record.ts), checked as a live one is; undefined when it is not one to deliver. */
export const recordedSecretAnswer =
  (endpointId: string | undefined) =>
  async (status: number, contentEncoding: string | null, raw: Buffer): Promise<SecretAnswer | undefined> => {
    const res: WireResponse = { status, headers: {}, ...(await decodeBody(raw, contentEncoding ?? undefined, MAX_BODY_BYTES, status)) };
    return parseSecretAnswer(parseJson(res.body), res, endpointId !== undefined ? { endpointId } : undefined);
  };

/** Shows the request (credentials redacted), then ends the run with exit 0 and nothing more to report: no command needs a --dry-run branch. */
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
    throw new CliError('dry_run', 'dry run: nothing was sent', 0, { reported: true });
  };
}
