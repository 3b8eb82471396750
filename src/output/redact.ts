// A last line of defence: every byte chatctl writes to stderr passes through
// a Redactor that knows the token, the anti-forgery value and any signing
// secret seen in this run, so even a server message that echoes one of them
// cannot leak it. Stdout scrubs the credentials but not the secret, which
// belongs there in the cases docs/secrets.md lists.
//
// Values are found by what they are, not by the key they sit under: in any
// JSON escaping (`\u0077`, `\/`, `\"`, doubled backslashes of JSON inside
// JSON) and across a line wrap (a newline, or its `\n` escape, plus
// indentation, between any two characters).

import { escapeControl } from './sanitize.js';

export const REDACTED = '[REDACTED]';

/** Values shorter than this are redacted where they are known to appear
 * (headers), but not scrubbed from free text, where "1" would mangle it.
 * A signing secret that short (a server should never send one) is still
 * kept out of an exec: destination's output, by whole lines: see stream(). */
const MIN_SCRUB_LENGTH = 6;

/** What stands for a line of an exec: command's output that held a short secret. */
export const WITHHELD_LINE = '[REDACTED: a line of output that held the secret]';

/**
 * A line wrap between two characters: a newline (raw or escaped) with some
 * indentation, or a table cell's wrap (`│` borders, perhaps coloured, and the
 * padding of the columns before it).
 */
const SGR = String.raw`(?:\x1b\[[0-9;]*m)`;
// The borders are written as \u escapes, which the RegExp reads: one character
// beyond ASCII would make the whole bundle a two-byte string (see scripts/build.mjs).
const WRAP = String.raw`(?:(?:[ \t]{0,4}${SGR}*[\u2502\u2503|]${SGR}*)?(?:\r?\n|\r|\\+r\\+n|\\+n|\\+r)(?:[ \t\u2502\u2503|]|${SGR}){0,64})?`;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

const hexDigit = (d: string) => (/[0-9]/.test(d) ? d : `[${d.toLowerCase()}${d.toUpperCase()}]`);

/** JSON's short escapes, for the characters that have one. */
const SHORT_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't' };

/**
 * One UTF-16 unit as it may appear: itself, `\uXXXX` (any case, any number
 * of backslashes), its short escape, or as a message shows a control or
 * invisible character (`\xad`, `\e`: escapeControl).
 */
function unitPattern(unit: string): string {
  const hex = unit.charCodeAt(0).toString(16).padStart(4, '0');
  const alts = [escapeRegExp(unit), String.raw`\\+u` + [...hex].map(hexDigit).join('')];
  const short = SHORT_ESCAPES[unit];
  if (short !== undefined) alts.push(String.raw`\\+` + escapeRegExp(short));
  const shown = escapeControl(unit);
  if (shown !== unit) alts.push(String.raw`\\+` + escapeRegExp(shown.slice(1)));
  return `(?:${alts.join('|')})`;
}

/** Beyond this length a value is found as it is only: a pattern for it would be too big to build. */
const MAX_PATTERN_VALUE = 1024;

/** The pattern that finds `value` in any of the forms above (or, for an absurdly long value, as it is). */
export function valuePattern(value: string): RegExp {
  if (value.length > MAX_PATTERN_VALUE) return new RegExp(escapeRegExp(value), 'g');
  const units = value.split('');
  return new RegExp(units.map(unitPattern).join(WRAP), 'g');
}

/**
 * Each value known, with its pattern once one was needed: most text is
 * searched plainly (see scrub), and building a pattern costs more than a
 * `--from` run's whole item, so it is built on first use.
 */
type Values = Map<string, RegExp | undefined>;

export class Redactor {
  private readonly credentials: Values = new Map();
  private readonly secrets: Values = new Map();
  /** Signing secrets shorter than MIN_SCRUB_LENGTH: kept out of stream() output only. */
  private readonly shortSecrets = new Set<string>();

  /**
   * `announce` is told of each signing secret and the token the first time
   * either is known, before any other output can show it (createIO writes
   * GitHub Actions' `::add-mask::` lines with it).
   */
  constructor(private readonly announce?: (value: string) => void) {}

  private readonly announced = new Set<string>();

  /** Announced only: a value this run prints on purpose (the sandbox's token, `auth token`), so not scrubbed. */
  announceValue(value: string): void {
    this.tell(value);
  }

  private tell(value: string): void {
    if (!this.announce || this.announced.has(value)) return;
    this.announced.add(value);
    this.announce(value);
  }

  addCredential(value: string | undefined): void {
    if (value && value.length >= MIN_SCRUB_LENGTH && !this.credentials.has(value)) this.credentials.set(value, undefined);
  }

  /** The bearer token in effect: a credential, and announced as a secret is. */
  addToken(value: string | undefined): void {
    if (!value) return;
    this.tell(value);
    this.addCredential(value);
  }

  addSecret(value: string | null | undefined): void {
    if (!value) return;
    this.tell(value);
    if (value.length < MIN_SCRUB_LENGTH) this.shortSecrets.add(value);
    else if (!this.secrets.has(value)) this.secrets.set(value, undefined);
  }

  /**
   * A secret whose item of a `--from` run is finished: its patterns are
   * dropped, so thousands of items keep the set small; it is still replaced
   * wherever it appears as it is.
   */
  forgetSecret(value: string): void {
    this.secrets.delete(value);
    this.shortSecrets.delete(value);
    // Still never shown as it is: a later item's exec: command may print an
    // earlier item's secret (a store it reads back). Kept by length, behind a
    // set of first characters, so finding them costs the same however many
    // items finished (secrets often share their first characters, whsec_…).
    if (value.length >= MIN_SCRUB_LENGTH) {
      this.retiredHeads.add(value.slice(0, MIN_SCRUB_LENGTH));
      const same = this.retired.get(value.length);
      if (same) same.add(value);
      else this.retired.set(value.length, new Set([value]));
    }
  }

  /** Forgotten secrets by length, and the first MIN_SCRUB_LENGTH characters of each. */
  private readonly retired = new Map<number, Set<string>>();
  private readonly retiredHeads = new Set<string>();

  /** For stderr, debug traces and logs: credentials and secrets. */
  scrubAll(text: string): string {
    return this.scrubRetired(scrub(scrub(text, this.credentials), this.secrets));
  }

  private scrubRetired(text: string): string {
    if (this.retired.size === 0) return text;
    // A server that echoes a finished item's secret in JSON may escape it
    // (`\/`, `\u0041`): looked for with such escapes of printable ASCII read
    // back, and if one is found the text is shown that way.
    if (text.includes('\\')) {
      const plain = text.replace(/\\(?:\/|u00([2-7][0-9a-fA-F]))/g, (m, hex: string | undefined) => {
        if (hex === undefined) return '/';
        const code = parseInt(hex, 16);
        return code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c ? String.fromCharCode(code) : m;
      });
      if (plain !== text) {
        const found = this.scrubRetiredAsIs(plain);
        if (found !== plain) return found;
      }
    }
    return this.scrubRetiredAsIs(text);
  }

  private scrubRetiredAsIs(text: string): string {
    let out = '';
    let from = 0;
    for (let i = 0; i + MIN_SCRUB_LENGTH <= text.length; ) {
      let found = 0;
      if (this.retiredHeads.has(text.slice(i, i + MIN_SCRUB_LENGTH))) {
        for (const [length, values] of this.retired) if (length > found && values.has(text.slice(i, i + length))) found = length;
      }
      if (found) {
        out += text.slice(from, i) + REDACTED;
        i += found;
        from = i;
      } else i++;
    }
    return from === 0 ? text : out + text.slice(from);
  }

  /** For stdout: credentials only. */
  scrubCredentials(text: string): string {
    return scrub(text, this.credentials);
  }

  /**
   * Whether stdout's scrubbing would alter this value: a signing secret
   * that holds the token or the anti-forgery value cannot reach stdout whole.
   */
  holdsCredential(value: string): boolean {
    return this.scrubCredentials(value) !== value;
  }

  /**
   * For text that arrives in pieces (a sink command's output): scrubs
   * everything, and holds back the tail that could still be the start of a
   * value, until more comes or end() is called.
   *
   * A signing secret shorter than MIN_SCRUB_LENGTH cannot be scrubbed
   * character by character without mangling the text (a secret "e" would
   * take every e with it), yet must not reach stderr. So while one is known,
   * the output goes out in whole lines, and a line that holds it as it is
   * (exact match, any length from 1) is replaced by WITHHELD_LINE; every
   * other line is shown unchanged. (A short secret with a line break in it
   * is looked for in the whole output, held until the end.)
   */
  stream(): { push(chunk: string): string; end(): string } {
    let held = '';
    return {
      push: (chunk) => {
        held = this.scrubAll(held + chunk);
        let cut = cutBeforeForm(held, this.longestForm());
        if (cut === 0) return '';
        if (this.shortSecrets.size > 0) cut = this.shortBreaks() ? 0 : held.lastIndexOf('\n', cut - 1) + 1; // whole lines only
        const out = held.slice(0, cut);
        held = held.slice(cut);
        return this.withholdShort(out);
      },
      end: () => {
        const out = this.scrubAll(held);
        held = '';
        return this.withholdShort(out);
      },
    };
  }

  private shortBreaks(): boolean {
    for (const v of this.shortSecrets) if (/[\r\n]/.test(v)) return true;
    return false;
  }

  /** Each line that holds a short secret replaced by WITHHELD_LINE (its line ending kept). */
  private withholdShort(text: string): string {
    if (this.shortSecrets.size === 0 || text === '') return text;
    const short = [...this.shortSecrets];
    if (short.some((v) => /[\r\n]/.test(v) && text.includes(v))) return WITHHELD_LINE + '\n';
    return text.replace(/[^\n]*(\n|$)/g, (line, end: string) => {
      const body = line.slice(0, line.length - end.length);
      return short.some((v) => body.includes(v)) ? WITHHELD_LINE + end : line;
    });
  }

  /**
   * An upper bound on the weight (see cutBeforeForm) of any form of any
   * value known. Per unit: itself or `u` and four hex digits, and a wrap:
   * up to 4 blanks, a border, a line break, then up to 64 blanks or
   * borders (71 in all); a value too long for a pattern is found as it is.
   */
  private longestForm(): number {
    let longest = 0;
    for (const v of [...this.credentials.keys(), ...this.secrets.keys()]) longest = Math.max(longest, v.length > MAX_PATTERN_VALUE ? v.length : v.length * 96);
    return longest;
  }
}

/**
 * Where a stream may cut what it holds: text before the cut goes out, text
 * after it waits for more. A form can be longer than any fixed bound (a run
 * of backslashes before an escape, an SGR colour code with any number of
 * parameters, any number of codes around a table border), but only through
 * backslashes and the characters of SGR codes (ESC, `[`, digits, `;`, `m`).
 * So those weigh nothing, every other character weighs one, and the cut
 * leaves `keep` of weight after it: a form still incomplete at the end, of
 * less weight than that, starts after the cut. 0: hold everything.
 */
function cutBeforeForm(held: string, keep: number): number {
  if (keep <= 0) return held.length;
  let weight = 0;
  for (let i = held.length - 1; i > 0; i--) {
    const c = held.charCodeAt(i);
    const stretches = c === 0x5c || c === 0x1b || c === 0x5b || c === 0x6d || c === 0x3b || (c >= 0x30 && c <= 0x39);
    if (!stretches && ++weight >= keep) return i;
  }
  return 0;
}

/**
 * Characters without which no escaped or wrapped form can occur: a text
 * free of them (a final newline aside) holds a value only as it is.
 */
// eslint-disable-next-line no-control-regex
const FORM_MARKS = /[\\\r\n\x1b\u2502\u2503|]/;

function scrub(text: string, values: Values): string {
  if (values.size === 0) return text;
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (!FORM_MARKS.test(body)) {
    // The common case (a JSON document, a one-line message): plain search,
    // which costs nothing next to running every value's pattern.
    let out = text;
    for (const value of values.keys()) if (out.includes(value)) out = out.split(value).join(REDACTED);
    return out;
  }
  let out = text;
  let escaped: Set<number> | undefined;
  const escapes = () => (escaped ??= escapedUnits(out));
  for (const [value, known] of values) {
    // A pattern costs 10 to 30 ms to build and run the first time (a
    // multi-line error message of a run that knows the token would pay it
    // for nothing): a value with a unit the text shows in no form is not
    // there, and its pattern is neither built nor run. The check is made of
    // the text as this call has it so far, replacements included.
    if (!mayShow(out, value, escapes)) continue;
    const pattern = known ?? valuePattern(value);
    if (known === undefined) values.set(value, pattern);
    pattern.lastIndex = 0;
    const next = out.replace(pattern, REDACTED);
    if (next !== out) {
      out = next;
      escaped = undefined;
    }
  }
  return out;
}

const HEX4 = /^[0-9a-fA-F]{4}$/;

/** The units written as `\uXXXX` (any case) after a backslash in text. */
function escapedUnits(text: string): Set<number> {
  const units = new Set<number>();
  for (let i = text.indexOf('\\u'); i !== -1; i = text.indexOf('\\u', i + 1)) {
    const hex = text.slice(i + 2, i + 6);
    if (HEX4.test(hex)) units.add(parseInt(hex, 16));
  }
  return units;
}

/**
 * Whether text shows every unit of value in a form unitPattern() accepts:
 * as it is, as its short escape after a backslash (`\\n`), or as `u` and
 * four hex digits after a backslash. Each form ends in a backslash and what
 * follows it, so looking for that pair finds it however long the run of
 * backslashes before it. A superset, which is all it must be: a value with
 * a unit the text does not show cannot match its pattern.
 */
export function mayShow(text: string, value: string, escapes?: () => Set<number>): boolean {
  let own: Set<number> | undefined;
  escapes ??= () => (own ??= escapedUnits(text));
  for (let i = 0; i < value.length; i++) {
    const unit = value[i]!;
    if (text.includes(unit)) continue;
    const letter = SHORT_ESCAPES[unit];
    if (letter !== undefined && text.includes(`\\${letter}`)) continue;
    const shown = escapeControl(unit);
    if (shown !== unit && text.includes(shown)) continue;
    if (escapes().has(value.charCodeAt(i))) continue;
    return false;
  }
  return true;
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
 * A key whose value is a secret: `secret`, or one ending in it
 * (`previousSecret`, `signing_secret`). Keys that merely mention one
 * (`secretAvailable`, `previousSecretExpiresAt`, `secretFile`) are not.
 */
export function isSecretKey(key: string): boolean {
  return /secret$/i.test(key);
}

/**
 * A response body for --debug, with the string under every secret key
 * blanked (an object or array there is blanked whole), however the key is
 * escaped (`"s\u0065cret"`), and every other copy of such a value in the
 * body too, in any escaping (the body is traced before the secret is known
 * to the Redactor). A body cut off inside such a string is blanked to its
 * end. The body is walked token by token, so a string that merely contains
 * `"secret":` is left alone. With it, a scrubber for the rest of the same
 * response (its headers): a header that echoes the secret is traced before
 * the Redactor has been told of it, so it is blanked with the values found here.
 */
export function blankSecretsInBody(body: string): { body: string; scrub: (text: string) => string } {
  const found: string[] = [];
  let out = '';
  let last = 0;
  let i = 0;
  const n = body.length;
  const stringEnd = (start: number): number => {
    // start is the index after the opening quote; returns the index of the closing quote, or n.
    let j = start;
    while (j < n) {
      const c = body.charCodeAt(j);
      if (c === 0x5c) j += 2;
      else if (c === 0x22) return j;
      else j++;
    }
    return n;
  };
  while (i < n) {
    if (body.charCodeAt(i) !== 0x22) {
      i++;
      continue;
    }
    const keyEnd = stringEnd(i + 1);
    if (keyEnd >= n) break;
    let j = keyEnd + 1;
    while (j < n && /\s/.test(body[j]!)) j++;
    if (body[j] !== ':' || !isSecretKey(decodeJsonString(body.slice(i + 1, keyEnd)))) {
      i = keyEnd + 1;
      continue;
    }
    j++;
    while (j < n && /\s/.test(body[j]!)) j++;
    if (body[j] === '{' || body[j] === '[') {
      // A secret wrapped in an object or array ({"secret":{"value":"…"}}):
      // the whole of it is blanked, to its closing bracket (or the end of a
      // body cut off inside it), and every string in it, key or value, is
      // blanked wherever else the body repeats it.
      let depth = 0;
      let k = j;
      for (; k < n; k++) {
        const c = body[k]!;
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') {
          if (--depth === 0) break;
        } else if (c === '"') {
          const end = stringEnd(k + 1);
          found.push(decodeJsonString(body.slice(k + 1, end)));
          k = end;
        }
      }
      out += body.slice(last, j) + `"${REDACTED}"`;
      last = k + 1;
      i = k + 1;
      continue;
    }
    if (body[j] !== '"') {
      // A number there is kept as possibly the secret (an odd answer): blanked too.
      const num = /^-?[0-9][0-9.eE+-]*/.exec(body.slice(j, j + 4096));
      if (num) {
        out += body.slice(last, j) + `"${REDACTED}"`;
        last = i = j + num[0].length;
        continue;
      }
      i = j;
      continue;
    }
    const valueEnd = stringEnd(j + 1);
    found.push(decodeJsonString(body.slice(j + 1, valueEnd)));
    out += body.slice(last, j) + `"${REDACTED}"`;
    last = valueEnd + 1;
    i = valueEnd + 1;
  }
  out += body.slice(Math.min(last, n));
  // Patterns built on first use, as the Redactor's are (most bodies need none).
  const patterns: Values = new Map();
  for (const value of found) if (value.length >= MIN_SCRUB_LENGTH) patterns.set(value, undefined);
  return { body: scrub(out, patterns), scrub: (text) => scrub(text, patterns) };
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
