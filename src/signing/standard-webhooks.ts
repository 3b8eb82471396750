// Signed deliveries, as chatctl assumes they are signed: the Standard
// Webhooks scheme, which matches the service's `whsec_` secrets. The API
// specification does not say how deliveries are signed; this is the one
// implementation of that assumption, used by `webhooks sign`, `webhooks
// verify` and the sandbox's deliveries.
//
//   webhook-id: msg_…
//   webhook-timestamp: <Unix seconds>
//   webhook-signature: v1,<base64 HMAC-SHA256> [v1,<…> …]   (space-separated)
//
// The HMAC is over the bytes `{id}.{timestamp}.{body}`, keyed with the
// base64-decoded part of the secret after `whsec_`. Pure: no clock of its
// own (callers pass the time) and node:crypto is loaded on first use, not
// when the program starts.

export const SECRET_PREFIX = 'whsec_';
export const SIGNATURE_VERSION = 'v1';
export const DEFAULT_TOLERANCE_SECONDS = 300;
export const HEADER_NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
export type HeaderName = (typeof HEADER_NAMES)[number];

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

const crypto = () => process.getBuiltinModule('node:crypto');

/** A webhook id or timestamp as a header can carry it: visible ASCII, no spaces. */
const HEADER_TOKEN = /^[\x21-\x7e]{1,256}$/;
const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The HMAC key of a `whsec_…` secret (surrounding whitespace ignored). The
 * problem never quotes the secret.
 */
export function parseSecret(text: string): Checked<Buffer> {
  const secret = text.trim();
  if (!secret.startsWith(SECRET_PREFIX)) return { ok: false, problem: `the secret does not start with ${SECRET_PREFIX}` };
  const b64 = secret.slice(SECRET_PREFIX.length);
  const bare = b64.replace(/=+$/, '');
  if (!STRICT_BASE64.test(b64) || bare.length % 4 === 1 || (b64 !== bare && b64.length % 4 !== 0)) return { ok: false, problem: `the part after ${SECRET_PREFIX} is not base64` };
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) return { ok: false, problem: `the secret has no key after ${SECRET_PREFIX}` };
  return { ok: true, value: key };
}

export function checkWebhookId(id: string): string | null {
  return HEADER_TOKEN.test(id) ? null : 'must be 1 to 256 visible ASCII characters, no spaces';
}

/** Unix seconds as a header carries them: digits only, a safe integer. */
export function parseTimestamp(text: string): Checked<number> {
  const t = text.trim();
  if (!/^\d{1,16}$/.test(t) || !Number.isSafeInteger(Number(t))) return { ok: false, problem: 'must be Unix seconds (digits only)' };
  return { ok: true, value: Number(t) };
}

/** The base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` (without the `v1,`). */
export function signatureOf(key: Buffer, id: string, timestamp: number, body: Buffer | string): string {
  return crypto()
    .createHmac('sha256', key)
    .update(`${id}.${timestamp}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('base64');
}

/** The three headers of a delivery signed with each key in turn (newest first, by convention). */
export function signedHeaders(keys: readonly Buffer[], id: string, timestamp: number, body: Buffer | string): Record<HeaderName, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': keys.map((k) => `${SIGNATURE_VERSION},${signatureOf(k, id, timestamp, body)}`).join(' '),
  };
}

export interface ParsedHeaders {
  id: string;
  timestamp: number;
  /** Every entry of webhook-signature in order, whatever its version. */
  signatures: { version: string; value: string }[];
}

/**
 * The three headers, checked for form only: each present once, an id and a
 * timestamp a header can hold, and a signature list of `version,value`
 * entries. Names are case-insensitive; other headers are ignored.
 */
export function parseHeaders(headers: ReadonlyArray<readonly [string, string]>): Checked<ParsedHeaders> {
  const found = new Map<HeaderName, string>();
  for (const [rawName, value] of headers) {
    const name = rawName.trim().toLowerCase() as HeaderName;
    if (!(HEADER_NAMES as readonly string[]).includes(name)) continue;
    if (found.has(name)) return { ok: false, problem: `${name} is given more than once` };
    found.set(name, value.trim());
  }
  const missing = HEADER_NAMES.filter((n) => !found.has(n));
  if (missing.length) return { ok: false, problem: `missing header${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}` };
  const id = found.get('webhook-id')!;
  const idProblem = checkWebhookId(id);
  if (idProblem) return { ok: false, problem: `webhook-id ${idProblem}` };
  const timestamp = parseTimestamp(found.get('webhook-timestamp')!);
  if (!timestamp.ok) return { ok: false, problem: `webhook-timestamp ${timestamp.problem}` };
  const entries = found
    .get('webhook-signature')!
    .split(' ')
    .filter((e) => e !== '');
  if (entries.length === 0) return { ok: false, problem: 'webhook-signature is empty' };
  const signatures: ParsedHeaders['signatures'] = [];
  for (const [i, entry] of entries.entries()) {
    const comma = entry.indexOf(',');
    if (comma <= 0 || comma === entry.length - 1) return { ok: false, problem: `webhook-signature entry ${i + 1} is not of the form v1,<base64>` };
    signatures.push({ version: entry.slice(0, comma), value: entry.slice(comma + 1) });
  }
  return { ok: true, value: { id, timestamp: timestamp.value, signatures } };
}

export type Verdict =
  | { ok: true; matched: number; skewSeconds: number }
  | { ok: false; reason: 'no_matching_signature' | 'timestamp_too_old' | 'timestamp_too_new'; signatureMatched: boolean; skewSeconds: number };

/**
 * Whether one `v1` signature in the header is the HMAC of this body under
 * `key` (each compared in constant time, every entry looked at), and the
 * timestamp within `toleranceSeconds` of `nowSeconds`. `matched` is the
 * 1-based place of the matching entry. A failed signature is reported
 * before a timestamp out of tolerance.
 */
export function verifySignature(key: Buffer, headers: ParsedHeaders, body: Buffer | string, nowSeconds: number, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS): Verdict {
  const expected = Buffer.from(signatureOf(key, headers.id, headers.timestamp, body), 'utf8');
  const { timingSafeEqual } = crypto();
  let matched = 0;
  headers.signatures.forEach((s, i) => {
    if (s.version !== SIGNATURE_VERSION) return;
    const given = Buffer.from(s.value, 'utf8');
    // Lengths are public (every v1 signature is 44 characters); the bytes are compared in constant time.
    if (given.length === expected.length && timingSafeEqual(given, expected) && matched === 0) matched = i + 1;
  });
  const skewSeconds = nowSeconds - headers.timestamp;
  if (matched === 0) return { ok: false, reason: 'no_matching_signature', signatureMatched: false, skewSeconds };
  if (skewSeconds > toleranceSeconds) return { ok: false, reason: 'timestamp_too_old', signatureMatched: true, skewSeconds };
  if (-skewSeconds > toleranceSeconds) return { ok: false, reason: 'timestamp_too_new', signatureMatched: true, skewSeconds };
  return { ok: true, matched, skewSeconds };
}
