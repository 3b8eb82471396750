// Redacting: blanking a field by its name, whatever its value: the headers
// that carry credentials, and the JSON fields that hold a secret (`secret`,
// `previousSecret`…) in a traced body or a server's error details. "Redact"
// is this module's one verb; finding a known value by what it is, in any
// text, is the scrubber's (scrub/scrubber.ts).

import { KnownValues, REDACTED, scrubText } from './scrub/known.js';

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
 * A key whose value is a secret: `secret`, or one ending in it
 * (`previousSecret`, `signing_secret`). Keys that merely mention one
 * (`secretAvailable`, `previousSecretExpiresAt`, `secretFile`) are not.
 */
export function isSecretKey(key: string): boolean {
  return /secret$/i.test(key);
}

/**
 * A response body for --debug, with the string under every secret key
 * redacted (an object or array there is redacted whole), however the key is
 * escaped (`"s\u0065cret"`), and every other copy of such a value in the
 * body scrubbed, in any form (the body is traced before the run's scrubber
 * knows the secret). A body cut off inside such a string is redacted to its
 * end. The body is walked token by token, so a string that merely contains
 * `"secret":` is left alone. With it, a scrubber for the rest of the same
 * response (its headers): a header that echoes the secret is traced before
 * the run's scrubber has been told of it, so it is scrubbed of the values
 * found here.
 */
export function redactSecretsInBody(body: string): { body: string; scrub: (text: string) => string } {
  const found: string[] = [];
  let out = '';
  let last = 0;
  const n = body.length;
  for (let i = 0; i < n; ) {
    if (body.charCodeAt(i) !== 0x22) {
      i++;
      continue;
    }
    const keyEnd = stringEnd(body, i + 1);
    if (keyEnd >= n) break;
    const j = valueStart(body, keyEnd + 1);
    if (j < 0 || !isSecretKey(decodeJsonString(body.slice(i + 1, keyEnd)))) {
      i = keyEnd + 1;
      continue;
    }
    const end = secretValueEnd(body, j, found);
    if (end < 0) {
      i = j;
      continue;
    }
    out += body.slice(last, j) + `"${REDACTED}"`;
    last = i = end;
  }
  out += body.slice(Math.min(last, n));
  const values = new KnownValues();
  for (const value of found) values.add(value);
  return { body: scrubText(out, [values]), scrub: (text) => scrubText(text, [values]) };
}

/** The index of the closing quote of the JSON string whose inside starts at `start`, or the body's length. */
function stringEnd(body: string, start: number): number {
  for (let j = start; j < body.length; ) {
    const c = body.charCodeAt(j);
    if (c === 0x5c) j += 2;
    else if (c === 0x22) return j;
    else j++;
  }
  return body.length;
}

/** After a key's closing quote at `from`: where its value starts, or -1 when no `:` follows (not a key). */
function valueStart(body: string, from: number): number {
  let j = from;
  while (j < body.length && /\s/.test(body[j]!)) j++;
  if (body[j] !== ':') return -1;
  j++;
  while (j < body.length && /\s/.test(body[j]!)) j++;
  return j;
}

/**
 * The end (exclusive) of the secret value at j, its strings added to
 * `found`; -1 when there is nothing there to redact (null, true, false).
 */
function secretValueEnd(body: string, j: number, found: string[]): number {
  const c = body[j];
  if (c === '{' || c === '[') {
    // A secret wrapped in an object or array ({"secret":{"value":"…"}}):
    // the whole of it is redacted, to its closing bracket (or the end of a
    // body cut off inside it), and every string in it, key or value, is
    // scrubbed wherever else the body repeats it.
    let depth = 0;
    let k = j;
    for (; k < body.length; k++) {
      const d = body[k]!;
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        if (--depth === 0) break;
      } else if (d === '"') {
        const end = stringEnd(body, k + 1);
        found.push(decodeJsonString(body.slice(k + 1, end)));
        k = end;
      }
    }
    return k + 1;
  }
  if (c !== '"') {
    // A number there is kept as possibly the secret (an odd answer): redacted too.
    const num = /^-?[0-9][0-9.eE+-]*/.exec(body.slice(j, j + 4096));
    return num ? j + num[0].length : -1;
  }
  const end = stringEnd(body, j + 1);
  found.push(decodeJsonString(body.slice(j + 1, end)));
  return end + 1;
}

/** The text of a JSON string's inside, leniently: a bad escape is kept as it is. */
function decodeJsonString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw.replace(/\\u([0-9a-fA-F]{4})|\\(.)/g, (_m, hex: string | undefined, ch: string | undefined) => (hex ? String.fromCharCode(parseInt(hex, 16)) : (ch ?? '')));
  }
}

/**
 * A copy of a server's JSON (error details, say) with the strings under
 * secret keys blanked, at any depth, without recursion.
 */
export function redactSecretFields(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const root: { v: unknown } = { v: undefined };
  const work: { from: unknown; put: (v: unknown) => void }[] = [{ from: value, put: (v) => (root.v = v) }];
  const seen = new Set<object>();
  while (work.length > 0) {
    const { from, put } = work.pop()!;
    if (from === null || typeof from !== 'object' || seen.has(from)) {
      put(from);
      continue;
    }
    seen.add(from);
    if (Array.isArray(from)) {
      const copy: unknown[] = new Array(from.length);
      put(copy);
      for (const [idx, item] of from.entries()) work.push({ from: item, put: (v) => (copy[idx] = v) });
      continue;
    }
    const copy: Record<string, unknown> = {};
    put(copy);
    // defineProperty: a key named __proto__ stays an ordinary key; defined
    // now, in order, and filled in when its value's turn comes.
    const set = (k: string, x: unknown) => Object.defineProperty(copy, k, { value: x, enumerable: true, writable: true, configurable: true });
    for (const [k, v] of Object.entries(from)) {
      if (typeof v === 'string' && isSecretKey(k)) set(k, REDACTED);
      else {
        set(k, undefined);
        work.push({ from: v, put: (x) => set(k, x) });
      }
    }
  }
  return root.v;
}
