// Signed deliveries, as chatctl assumes they are signed (the API does not
// say): Standard Webhooks, the one implementation of that assumption, used by
// `webhooks sign`, `verify`, `listen` and the sandbox's deliveries. The HMAC
// is over `{id}.{timestamp}.{body}`, keyed with the base64 after `whsec_`,
// the timestamp exactly as the header carries it (so `0<ts>` is not `<ts>`).
// Pure: callers pass the time. docs/signing.md describes it for users.

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

/** The HMAC key of a `whsec_…` secret (surrounding whitespace ignored); the problem never quotes the secret. */
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

/** Unix seconds as a header carries them: a plain decimal integer (no sign, no leading zero), a safe integer. */
export function parseTimestamp(text: string): Checked<number> {
  if (!/^(0|[1-9]\d{0,15})$/.test(text) || !Number.isSafeInteger(Number(text))) return { ok: false, problem: 'must be Unix seconds: a plain decimal integer (digits only, no sign, no leading zero)' };
  return { ok: true, value: Number(text) };
}

/** The base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` (without the `v1,`); a string timestamp is signed as it is. */
export function signatureOf(key: Buffer, id: string, timestamp: number | string, body: Buffer | string): string {
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
  /** The webhook-timestamp header as received (what was signed). */
  timestampText: string;
  /** Every entry of webhook-signature in order, whatever its version. */
  signatures: { version: string; value: string }[];
}

/** The three headers, checked for form only (each once, `version,value` signatures); names are case-insensitive, others ignored. */
export function parseHeaders(headers: ReadonlyArray<readonly [string, string]>): Checked<ParsedHeaders> & { missing?: HeaderName[] } {
  const found = new Map<HeaderName, string>();
  for (const [rawName, value] of headers) {
    const name = rawName.trim().toLowerCase() as HeaderName;
    if (!(HEADER_NAMES as readonly string[]).includes(name)) continue;
    if (found.has(name)) return { ok: false, problem: `${name} is given more than once` };
    // HTTP's optional whitespace around a value is not part of it.
    found.set(name, value.replace(/^[ \t]+|[ \t]+$/g, ''));
  }
  const missing = HEADER_NAMES.filter((n) => !found.has(n));
  if (missing.length) return { ok: false, problem: `missing header${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`, missing };
  const id = found.get('webhook-id')!;
  const idProblem = checkWebhookId(id);
  if (idProblem) return { ok: false, problem: `webhook-id ${idProblem}` };
  const timestampText = found.get('webhook-timestamp')!;
  const timestamp = parseTimestamp(timestampText);
  if (!timestamp.ok) return { ok: false, problem: `webhook-timestamp ${timestamp.problem}` };
  const entries = found.get('webhook-signature')!.split(' ').filter(Boolean);
  if (entries.length === 0) return { ok: false, problem: 'webhook-signature is empty' };
  const signatures: ParsedHeaders['signatures'] = [];
  for (const [i, entry] of entries.entries()) {
    const comma = entry.indexOf(',');
    if (comma <= 0 || comma === entry.length - 1) return { ok: false, problem: `webhook-signature entry ${i + 1} is not of the form v1,<base64>` };
    signatures.push({ version: entry.slice(0, comma), value: entry.slice(comma + 1) });
  }
  return { ok: true, value: { id, timestamp: timestamp.value, timestampText, signatures } };
}

/** One secret that verifies a delivery: its index among the keys given, and the 1-based place of its signature. */
export type KeyMatch = { key: number; signature: number };

export type Verdict =
  | { ok: true; matched: number; matches: KeyMatch[]; skewSeconds: number }
  | { ok: false; reason: 'no_matching_signature' | 'timestamp_too_old' | 'timestamp_too_new'; signatureMatched: boolean; matches: KeyMatch[]; skewSeconds: number };

/**
 * Whether a `v1` signature is the HMAC of this body under one of `keys` (each
 * entry compared in constant time with every key), and the timestamp within
 * the tolerance. `matches` lists every key that verifies it (an overlap's two
 * secrets both do); a failed signature is reported before a stale timestamp.
 */
export function verifySignature(keys: Buffer | readonly Buffer[], headers: ParsedHeaders, body: Buffer | string, nowSeconds: number, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS): Verdict {
  const { timingSafeEqual } = crypto();
  const given = headers.signatures.map((s) => (s.version === SIGNATURE_VERSION ? Buffer.from(s.value, 'utf8') : undefined));
  const matches: KeyMatch[] = [];
  (Buffer.isBuffer(keys) ? [keys] : keys).forEach((key, k) => {
    const expected = Buffer.from(signatureOf(key, headers.id, headers.timestampText, body), 'utf8');
    let place = 0;
    given.forEach((g, i) => {
      // Lengths are public (every v1 signature is 44 characters); the bytes are compared in constant time.
      if (g !== undefined && g.length === expected.length && timingSafeEqual(g, expected) && place === 0) place = i + 1;
    });
    if (place > 0) matches.push({ key: k, signature: place });
  });
  const skewSeconds = nowSeconds - headers.timestamp;
  if (matches.length === 0) return { ok: false, reason: 'no_matching_signature', signatureMatched: false, matches, skewSeconds };
  if (skewSeconds > toleranceSeconds) return { ok: false, reason: 'timestamp_too_old', signatureMatched: true, matches, skewSeconds };
  if (-skewSeconds > toleranceSeconds) return { ok: false, reason: 'timestamp_too_new', signatureMatched: true, matches, skewSeconds };
  return { ok: true, matched: matches[0]!.signature, matches, skewSeconds };
}
