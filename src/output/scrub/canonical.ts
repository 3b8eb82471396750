// The canonical form of a text, in which a known value is looked for (see
// scrubber.ts). Every way chatctl or a server may show a value is read back to
// the value's own characters, and what may split it is left out:
//
// - escapes, read after a run of backslashes of any length (JSON inside JSON
//   doubles them): `\uXXXX` and `\xXX` (hex of any case: JSON, and
//   escapeControl's `\xad`), `\n` `\r` `\t` `\b` `\f`, `\e` (escapeControl's
//   ESC); after the run any other character stands for itself (`\/`, `\"`);
// - URL encoding: `%XX` of any case, several of them for one UTF-8 character;
// - what is left out: spaces, tabs, line breaks, `+` (a space in a form),
//   table borders (`|`, `\u2502`, `\u2503`), colour codes (ESC `[` ... `m`),
//   and a backslash that escapes nothing.
//
// A decoded backslash or `%` escapes what follows it in turn (a value
// JSON-escaped, then URL-encoded), up to MAX_PASSES levels.
//
// Each canonical character keeps the span of the original text it came from,
// so a value found in the canonical text is blanked in the original whole:
// its escapes and whatever split it included. Values are put in canonical
// form by the same function, which is what makes both sides agree.

export interface Canonical {
  /** The canonical text. */
  text: string;
  /** Where canonical character i starts in the original text. */
  spanStart(i: number): number;
  /** Where canonical character i ends in the original text (exclusive). */
  spanEnd(i: number): number;
  /** The original index from which more text could still change the reading (an escape cut off at the end); the text's length when none. */
  open: number;
}

/** A sequence of characters, each with the span of the original text it stands for. */
interface Units {
  code: Uint16Array;
  start: Int32Array;
  end: Int32Array;
  length: number;
}

const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const ESC = 0x1b;
/** How many times a decoded `\` or `%` is read again as an escape. */
const MAX_PASSES = 4;

/** The characters left out of the canonical text. */
function isSeparator(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x2b || c === 0x7c || c === 0x2502 || c === 0x2503 || c === BACKSLASH;
}

/** One-letter escapes: the letter's code, what it stands for. */
const LETTERS = new Map<number, number>([
  [0x6e, 0x0a], // n
  [0x72, 0x0d], // r
  [0x74, 0x09], // t
  [0x62, 0x08], // b
  [0x66, 0x0c], // f
  [0x65, ESC], // e
]);

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

/** Characters that start an escape, an encoding or a colour code. */
const ESCAPES = /[\\%\x1b]/;
/** The characters isSeparator() leaves out, ESCAPES's aside. */
const SEPARATORS = /[ \t\n\r+|\u2502\u2503]/g;

export function canonicalize(text: string): Canonical {
  // Most text (a JSON line, a message) has no escape: its canonical form is
  // the text without its separators, and where each character came from is
  // worked out only if a value is found in it.
  if (!ESCAPES.test(text)) return withoutSeparators(text);
  let units = rawUnits(text);
  let open = text.length;
  for (let pass = 0; pass < MAX_PASSES && mayDecode(units); pass++) {
    const next = decodeOnce(units);
    open = Math.min(open, next.open);
    if (next.units.length === units.length) break;
    units = next.units;
  }
  return finish(units, open);
}

function withoutSeparators(text: string): Canonical {
  const kept = text.replace(SEPARATORS, '');
  if (kept.length === text.length) return { text, spanStart: (i) => i, spanEnd: (i) => i + 1, open: text.length };
  let at: Int32Array | undefined;
  const origin = (i: number) => {
    if (!at) {
      at = new Int32Array(kept.length);
      for (let k = 0, n = 0; k < text.length; k++) if (!isSeparator(text.charCodeAt(k))) at[n++] = k;
    }
    return at[i]!;
  };
  return { text: kept, spanStart: origin, spanEnd: (i) => origin(i) + 1, open: text.length };
}

function rawUnits(text: string): Units {
  const n = text.length;
  const code = new Uint16Array(n);
  const start = new Int32Array(n);
  const end = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    code[i] = text.charCodeAt(i);
    start[i] = i;
    end[i] = i + 1;
  }
  return { code, start, end, length: n };
}

function mayDecode(u: Units): boolean {
  for (let i = 0; i < u.length; i++) if (u.code[i] === BACKSLASH || u.code[i] === PERCENT) return true;
  return false;
}

/** The value of `digits` hex units from i, -1 if one is not hex, -2 if the units end first. */
function hexAt(u: Units, i: number, digits: number): number {
  let v = 0;
  for (let k = 0; k < digits; k++) {
    if (i + k >= u.length) return -2;
    const d = hexValue(u.code[i + k]!);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/** What one escape or encoding reads as: its characters, and the index after it; open when more units could change it. */
interface Read {
  chars: number[];
  next: number;
  open?: boolean;
}

/** The escape after the run of backslashes that ends before j (j < length). */
function readEscape(u: Units, j: number): Read {
  const c = u.code[j]!;
  const digits = c === 0x75 ? 4 : c === 0x78 ? 2 : 0; // u, x
  if (digits > 0) {
    const v = hexAt(u, j + 1, digits);
    if (v >= 0) return { chars: [v], next: j + 1 + digits };
    return { chars: [c], next: j + 1, open: v === -2 };
  }
  return { chars: [LETTERS.get(c) ?? c], next: j + 1 };
}

/** `%XX` at i, and the `%XX` after it that complete a UTF-8 character; a `%` that starts none stands for itself. */
function readPercent(u: Units, i: number): Read {
  const first = hexAt(u, i + 1, 2);
  if (first < 0) return { chars: [PERCENT], next: i + 1, open: first === -2 };
  if (first < 0x80) return { chars: [first], next: i + 3 };
  const more = first >= 0xf0 ? 3 : first >= 0xe0 ? 2 : first >= 0xc0 ? 1 : -1;
  if (more < 0) return { chars: [PERCENT], next: i + 1 };
  let cp = first & (0x3f >> more);
  let k = i + 3;
  for (let m = 0; m < more; m++, k += 3) {
    if (k >= u.length) return { chars: [PERCENT], next: i + 1, open: true };
    const b = u.code[k] === PERCENT ? hexAt(u, k + 1, 2) : -1;
    if (b === -2) return { chars: [PERCENT], next: i + 1, open: true };
    if (b < 0x80 || b >= 0xc0) return { chars: [PERCENT], next: i + 1 };
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp > 0x10ffff) return { chars: [PERCENT], next: i + 1 };
  const chars = cp > 0xffff ? [0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff)] : [cp];
  return { chars, next: k };
}

/** One reading of every escape and encoding in u (a run of backslashes, then what it escapes, is one). */
function decodeOnce(u: Units): { units: Units; open: number } {
  const out: Units = { code: new Uint16Array(u.length), start: new Int32Array(u.length), end: new Int32Array(u.length), length: 0 };
  let open = Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < u.length; ) {
    const c = u.code[i]!;
    if (c !== BACKSLASH && c !== PERCENT) {
      out.code[out.length] = c;
      out.start[out.length] = u.start[i]!;
      out.end[out.length++] = u.end[i++]!;
      continue;
    }
    let read: Read;
    if (c === BACKSLASH) {
      let j = i;
      while (j < u.length && u.code[j] === BACKSLASH) j++;
      // A run at the very end escapes what is still to come.
      read = j < u.length ? readEscape(u, j) : { chars: [], next: j, open: true };
    } else read = readPercent(u, i);
    if (read.open) open = Math.min(open, u.start[i]!);
    for (const ch of read.chars) {
      out.code[out.length] = ch;
      out.start[out.length] = u.start[i]!;
      out.end[out.length] = u.end[read.next - 1]!;
      out.length++;
    }
    i = read.next;
  }
  return { units: out, open };
}

/** The canonical text of decoded units: separators and colour codes left out. */
function finish(u: Units, openFrom: number): Canonical {
  const code = new Uint16Array(u.length);
  const start = new Int32Array(u.length);
  const end = new Int32Array(u.length);
  let n = 0;
  let open = openFrom;
  for (let i = 0; i < u.length; i++) {
    const c = u.code[i]!;
    if (c === ESC && i + 1 === u.length) open = Math.min(open, u.start[i]!);
    if (c === ESC && u.code[i + 1] === 0x5b) {
      let j = i + 2;
      while (j < u.length && ((u.code[j]! >= 0x30 && u.code[j]! <= 0x39) || u.code[j] === 0x3b)) j++;
      if (j >= u.length) open = Math.min(open, u.start[i]!);
      if (j >= u.length || u.code[j] === 0x6d) {
        i = j;
        continue;
      }
    }
    if (isSeparator(c)) continue;
    code[n] = c;
    start[n] = u.start[i]!;
    end[n] = u.end[i]!;
    n++;
  }
  return { text: fromCodes(code, n), spanStart: (i) => start[i]!, spanEnd: (i) => end[i]!, open };
}

function fromCodes(code: Uint16Array, n: number): string {
  let s = '';
  for (let i = 0; i < n; i += 4096) s += String.fromCharCode.apply(null, code.subarray(i, Math.min(n, i + 4096)) as unknown as number[]);
  return s;
}
