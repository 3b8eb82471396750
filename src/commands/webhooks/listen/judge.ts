// What `webhooks listen` answers to one delivery, decided from its headers,
// its body and the secrets held at that moment, with the one verifier that
// `webhooks verify` uses (src/signing/). Pure: no sockets, no clock of its
// own. docs/signing.md has the table of answers.
import { verifySignature, parseHeaders } from '../../../signing/standard-webhooks.js';
import type { SecretsNow } from '../secret-files.js';

/** Why a delivery was refused (also each JSON line's `reason`). */
export type RefusalReason =
  | 'missing_headers'
  | 'malformed_headers'
  | 'no_secret'
  | 'no_matching_signature'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'method_not_allowed'
  | 'body_too_large'
  | 'request_timeout'
  | 'headers_too_large'
  | 'bad_request';

export interface Judgement {
  /** 204 verified, 400 missing headers, 401 any other failure. */
  status: 204 | 400 | 401;
  verified: boolean;
  reason: RefusalReason | null;
  /** Why it was refused, for the line (names files and fingerprints, never a secret). */
  message: string | null;
  webhookId: string | null;
  eventType: string | null;
  /** Every secret that verifies it, and the place of its signature. */
  matched: { file: string; fingerprint: string; signature: number }[];
  signatures: number | null;
  /** Now minus webhook-timestamp, in seconds. */
  skewSeconds: number | null;
}

/** Pairs from Node's rawHeaders ([name, value, name, value, …]). */
export function headerPairs(rawHeaders: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) pairs.push([rawHeaders[i]!, rawHeaders[i + 1]!]);
  return pairs;
}

/** The event type the body names (`type`, else `eventType`), when it is a JSON object that names one. */
export function eventTypeOf(body: Buffer): string | null {
  if (body.length === 0 || body[0] !== 0x7b) return null;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const type = parsed.type ?? parsed.eventType;
    return typeof type === 'string' ? type.slice(0, 200) : null;
  } catch {
    return null;
  }
}

const describe = (s: { file: string; fingerprint: string }) => `${s.file} (${s.fingerprint})`;

export function judge(rawHeaders: readonly string[], body: Buffer, secrets: SecretsNow, nowSeconds: number, toleranceSeconds: number): Judgement {
  const pairs = headerPairs(rawHeaders);
  const rawId = pairs.find(([n]) => n.toLowerCase() === 'webhook-id')?.[1] ?? null;
  const base = { webhookId: rawId?.slice(0, 256) ?? null, eventType: eventTypeOf(body), matched: [], signatures: null, skewSeconds: null };
  const parsed = parseHeaders(pairs);
  if (!parsed.ok) {
    const missing = parsed.missing !== undefined;
    return { ...base, status: missing ? 400 : 401, verified: false, reason: missing ? 'missing_headers' : 'malformed_headers', message: parsed.problem };
  }
  const headers = parsed.value;
  const counted = { signatures: headers.signatures.length, skewSeconds: nowSeconds - headers.timestamp };
  if (secrets.held.length === 0) return { ...base, ...counted, status: 401, verified: false, reason: 'no_secret', message: 'no secret file holds a secret now' };
  const verdict = verifySignature(
    secrets.held.map((s) => s.key),
    headers,
    body,
    nowSeconds,
    toleranceSeconds,
  );
  const matched = verdict.matches.map((m) => ({ file: secrets.held[m.key]!.file, fingerprint: secrets.held[m.key]!.fingerprint, signature: m.signature }));
  const result = { ...base, ...counted, matched, skewSeconds: verdict.skewSeconds };
  if (verdict.ok) return { ...result, status: 204, verified: true, reason: null, message: null };
  const message =
    verdict.reason === 'no_matching_signature'
      ? `none of the ${headers.signatures.length} signatures matches ${secrets.held.map(describe).join(' or ')}`
      : `the signature matches ${matched.map(describe).join(' and ')}, but the timestamp is beyond the tolerance of ${toleranceSeconds} s`;
  return { ...result, status: 401, verified: false, reason: verdict.reason, message };
}
