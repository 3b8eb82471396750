// A last line of defence: every byte chatctl writes to stderr passes through
// a Redactor that knows the token, the anti-forgery value and any signing
// secret seen in this run, so even a server message that echoes one of them
// cannot leak it. Stdout scrubs the credentials but not the secret, which
// belongs there in the cases contract section 6 allows.

export const REDACTED = '[REDACTED]';

/** Values shorter than this are redacted where they are known to appear
 * (headers), but not scrubbed from free text, where "1" would mangle it. */
const MIN_SCRUB_LENGTH = 6;

export class Redactor {
  private readonly credentials = new Set<string>();
  private readonly secrets = new Set<string>();

  addCredential(value: string | undefined): void {
    if (value && value.length >= MIN_SCRUB_LENGTH) this.credentials.add(value);
  }

  addSecret(value: string | null | undefined): void {
    if (value && value.length >= MIN_SCRUB_LENGTH) this.secrets.add(value);
  }

  /** For stderr, debug traces and logs: credentials and secrets. */
  scrubAll(text: string): string {
    return scrub(scrub(text, this.credentials), this.secrets);
  }

  /** For stdout: credentials only. */
  scrubCredentials(text: string): string {
    return scrub(text, this.credentials);
  }
}

function scrub(text: string, values: Set<string>): string {
  let out = text;
  for (const v of values) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

/** Header names whose values are never shown. */
const SECRET_HEADERS = new Set(['authorization', 'x-service-csrf', 'proxy-authorization', 'cookie', 'set-cookie']);

export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!SECRET_HEADERS.has(lower)) out[name] = value;
    else if (lower === 'authorization' && /^bearer /i.test(value)) out[name] = `Bearer ${REDACTED}`;
    else out[name] = REDACTED;
  }
  return out;
}

/**
 * A response body with every string under a key that names a secret
 * ("secret", "previousSecret", …) blanked, for debug traces; a body cut off
 * inside such a string is blanked to its end.
 */
export function redactSecretInBody(body: string): string {
  return body.replace(/("[^"\\]*secret[^"\\]*"\s*:\s*)"(?:[^"\\]|\\.)*(?:"|\\?$)/gi, `$1"${REDACTED}"`);
}

/** A timestamp is never a secret: `previousSecretExpiresAt` merely mentions one (contract section 6). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/** A copy of a server's JSON (error details, say) with secret-named string fields blanked. */
export function redactSecretFields(value: unknown, depth = 0): unknown {
  if (depth > 50 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactSecretFields(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = typeof v === 'string' && /secret/i.test(k) && !ISO_TIME.test(v) ? REDACTED : redactSecretFields(v, depth + 1);
  }
  return out;
}
