// The two sandbox routes `webhooks trigger` uses, through sendWithRetries as the API's operations.
import { invalidResponse, isCliError, usageError } from '../errors/cli-error.js';
import { SANDBOX_MARKER_HEADER } from '../api/schemas.js';
import { headerValue, parseJson, sendWithRetries } from './client.js';
import { requestHeaders, type ClientConfig } from './api-client.js';

export type ReceiverAnswer = { status: number | null; ok: boolean; durationMs?: number; body: string | null; error: string | null };

export interface Delivery {
  endpointId: string;
  eventType: string;
  destinationUrl: string;
  webhookId: string;
  timestamp: number;
  signedWith: { fingerprint: string; secret: string; expiresAt?: string }[];
  receiver: ReceiverAnswer;
  [more: string]: unknown;
}

type DeliveryEnvelope = { data: { delivery: Delivery }; meta?: unknown };

/** Refuses (exit 2) a base URL that is not a chatctl sandbox, having sent it one GET of `/_sandbox` without any credential. */
export async function requireSandbox(cfg: ClientConfig): Promise<void> {
  const notSandbox = (why: string) =>
    usageError(
      `${cfg.baseUrl} is not a chatctl sandbox (${why}): webhooks trigger works against \`chatctl sandbox\` only, and sent nothing else`,
      'start one with chatctl sandbox and point --base-url (or CHATCTL_BASE_URL) at it',
    );
  let marker: string | undefined;
  try {
    const res = await sendWithRetries({ method: 'GET', url: `${cfg.baseUrl}/_sandbox`, headers: { Accept: 'application/json', 'User-Agent': cfg.userAgent }, body: '' }, cfg.settings, cfg.deps);
    marker = headerValue(res, SANDBOX_MARKER_HEADER);
  } catch (err) {
    // It answered, but not as a sandbox does; a failure to reach it is reported as it is.
    if (isCliError(err) && err.status !== null) throw notSandbox(`GET /_sandbox answered ${err.status}`);
    throw err;
  }
  if (marker !== '1') throw notSandbox(`its answer to GET /_sandbox has no ${SANDBOX_MARKER_HEADER} header`);
}

/** Longer than the sandbox gives a receiver (10 s): a slow receiver is reported, never makes chatctl time out and send again. */
const DELIVER_ATTEMPT_MS = 15_000;

export async function sandboxDeliver(cfg: ClientConfig, endpointId: string, body: { eventType: string }): Promise<DeliveryEnvelope> {
  const res = await sendWithRetries(
    { method: 'POST', url: `${cfg.baseUrl}/_sandbox/endpoints/${encodeURIComponent(endpointId)}/deliver`, headers: requestHeaders(cfg), body: JSON.stringify(body) },
    { ...cfg.settings, timeoutMs: Math.max(cfg.settings.timeoutMs, DELIVER_ATTEMPT_MS) },
    cfg.deps,
  );
  const json = parseJson(res.body) as DeliveryEnvelope | undefined;
  const d = json?.data?.delivery;
  if (!d || typeof d !== 'object' || typeof d.receiver !== 'object' || d.receiver === null)
    throw invalidResponse(`the sandbox answered ${res.status} with a body that is not a delivery report`, { status: res.status });
  return json!;
}
