// The canonical form of a text, in which a known value is looked for (see
// scrubber.ts). Every way chatctl or a server may show a value is read back to
// the value's own characters, and what may split it is left out:
//
// - escapes, read after a run of backslashes of any length (JSON inside JSON
//   doubles them): `\uXXXX` and `\xXX` (hex of any case: JSON, and
//   escapeControl's `\xad`), `\n` `\r` `\t` `\b` `\f`, `\e` (escapeControl's
//   ESC); after the run any other character stands for itself (`\/`, `\"`);
// - URL encoding: `%XX` of any case, several of them for one UTF-8 character;
// - HTML character references: `&#97;`, `&#x61;` (either case, the `;`
//   optional before what cannot be a digit, as browsers read them) and the
//   named ones listed below (`&amp;`, `&lowbar;`, `&nbsp;`), with their
//   `;`; an unknown name stands for itself;
// - terminal escape sequences, left out whole (ECMA-48): CSI (`ESC [`, or
//   the 8-bit 0x9b, parameters, then a final byte: colours, `ESC[K`), OSC and
//   the other strings (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`, or 0x9d,
//   0x90, 0x98, 0x9e, 0x9f, up to BEL, ST or the next ESC), and `ESC`
//   followed by intermediates and a final byte (`ESC ( B`, `ESC =`). An ESC
//   before a letter or digit is left out alone: that character may be the
//   value's own. A sequence cut off by the end of the text is not one: a
//   value after an unterminated `ESC ]` is still found;
// - HTML tags and comments (`<wbr>`, `</b>`, `<span class="x">`,
//   `<!-- -->`), left out whole; a `<` with no `>` within LONGEST_TAG is
//   text. What a string sequence or a tag holds (a window title, a link, an
//   attribute) is still read, after the rest: see finish();
// - compatibility forms, read as Unicode's NFKC of each character alone:
//   fullwidth `ＡＢ` as `AB`, `𝐀` as `A`, `ﬁ` as `fi`, `²` as `2`. Each
//   character alone, so a canonical character still has one span of the
//   original; an accent written apart from its letter stays apart;
// - what is left out: control characters (a backspace, a C1 control),
//   Unicode's format characters and separators (categories Cf, Zs, Zl, Zp:
//   U+2028, NBSP, ZWJ, ZWSP, a soft hyphen, bidi controls), the other
//   characters Unicode says to show as nothing (Default_Ignorable_Code_Point:
//   variation selectors, the combining grapheme joiner, fillers), spaces, tabs,
//   line breaks, `+` (a space in a form), table borders (`|`, `\u2502`,
//   `\u2503`), and a backslash that escapes nothing.
//
// A decoded backslash, `%` or `&` is read again in turn (a value
// JSON-escaped, then URL-encoded; `&amp;#x61;`, a reference escaped again),
// up to MAX_PASSES levels. Escape sequences and compatibility forms are read
// after the last pass: a fullwidth `％` is a percent sign, not an encoding.
//
// Each canonical character keeps the span of the original text it came from,
// so a value found in the canonical text is blanked in the original whole:
// its escapes and whatever split it included. Values are put in canonical
// form by the same function, which is what makes both sides agree.

export interface Canonical {
  /** The canonical text. */
  text: string;
  /**
   * How many characters of `text` read the text in order; after them come
   * what escape sequences and tags held, each after a U+0000 (see finish()).
   */
  inOrder: number;
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
const AMPERSAND = 0x26;
const ESC = 0x1b;
/** How many times a decoded `\`, `%` or `&` is read again. */
const MAX_PASSES = 4;

/** What is left out of the canonical text (one character; `g` for the fast path). */
const LEFT_OUT = /[\\ +|\u2502\u2503\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;
const LEFT_OUT_ONE = /[\\ +|\u2502\u2503\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
/** The same where only ASCII characters are left out, found faster. */
const LEFT_OUT_ASCII = /[\\ +|\x00-\x1f\x7f]/g;
/** The same in text without other controls than tab and line breaks, faster still. */
const LEFT_OUT_PLAIN = /[ \t\n\r+|]/g;

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

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);

/**
 * What starts an escape, an encoding, an escape sequence (7-bit or 8-bit),
 * and a reference (`&#`, `&name;`, or `&name` that a `;` may still follow):
 * an `&` in a query string (`?a=1&b=2`) is none.
 */
const SLOW = /[\\%\x1b\x90\x98\x9b\x9d-\x9f]/;
const REFERENCE = /&(?:#|[A-Za-z0-9]{0,24}(?:;|$))/;
/** An HTML tag or comment, or what may still become one. */
const TAG = /<(?:[A-Za-z/!]|$)/;
/** Text without any of these (most lines) needs no closer look: one scan of a character class, the fastest a regular expression does. */
const NOT_PLAIN = /[\x00-\x08\x0b\x0c\x0e-\x1f\\%&<\x7f-\uffff]/;
/** Characters charactersOf() looks at: an `&` alone (a query string) needs no look at each character. */
const UNUSUAL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\uffff]/;

export function canonicalize(text: string): Canonical {
  // Most text (a JSON line, a message) has nothing to decode: its canonical
  // form is the text without what is left out, and where each character came
  // from is worked out only if a value is found in it.
  if (!NOT_PLAIN.test(text)) return withoutLeftOut(text, LEFT_OUT_PLAIN);
  if (!SLOW.test(text) && !(text.includes('&') && REFERENCE.test(text)) && !(text.includes('<') && TAG.test(text))) {
    const kind = UNUSUAL.test(text) ? charactersOf(text) : KEEP;
    if (kind !== MAPPED) return withoutLeftOut(text, kind === DROP ? LEFT_OUT : kind === CONTROL ? LEFT_OUT_ASCII : LEFT_OUT_PLAIN);
  }
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

/**
 * What the text's characters need, the first that applies: MAPPED when one
 * has a compatibility form (or is half a pair the next text may complete),
 * DROP when one beyond ASCII is left out, CONTROL when an ASCII control
 * other than a tab or a line break is there, KEEP otherwise.
 */
function charactersOf(text: string): number {
  let kind = KEEP;
  for (let i = 0; i < text.length; i++) {
    let cp = text.charCodeAt(i);
    if (cp < 0x80) {
      if ((cp < 0x20 && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d) || cp === 0x7f) kind = kind === DROP ? DROP : CONTROL;
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (i + 1 >= text.length) return MAPPED;
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    const k = classOf(cp);
    if (k === MAPPED) return MAPPED;
    if (k === DROP) kind = DROP;
  }
  return kind;
}

function withoutLeftOut(text: string, leftOut: RegExp): Canonical {
  const kept = text.replace(leftOut, '');
  if (kept.length === text.length) return { text, inOrder: text.length, spanStart: (i) => i, spanEnd: (i) => i + 1, open: text.length };
  let at: Int32Array | undefined;
  const origin = (i: number) => {
    if (!at) {
      at = new Int32Array(kept.length);
      let n = 0;
      let k = 0;
      leftOut.lastIndex = 0;
      for (let m = leftOut.exec(text); m; m = leftOut.exec(text)) {
        while (k < m.index) at[n++] = k++;
        k = m.index + m[0].length;
      }
      while (k < text.length) at[n++] = k++;
    }
    return at[i]!;
  };
  return { text: kept, inOrder: kept.length, spanStart: origin, spanEnd: (i) => origin(i) + 1, open: text.length };
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
  for (let i = 0; i < u.length; i++) {
    const c = u.code[i];
    if (c === BACKSLASH || c === PERCENT || c === AMPERSAND) return true;
  }
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

/** What one escape, encoding or reference reads as: its characters, and the index after it; open when more units could change it. */
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
  return codePoint(cp, k) ?? { chars: [PERCENT], next: i + 1 };
}

/** A code point as UTF-16 units, undefined when it is none (past U+10FFFF, a surrogate, U+0000). */
function codePoint(cp: number, next: number): Read | undefined {
  if (cp <= 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { chars: cp > 0xffff ? [0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff)] : [cp], next };
}

/**
 * An HTML character reference at i (`&#97;`, `&#x61;`, `&amp;`); an `&`
 * that starts none stands for itself. The `;` of a numeric one may be left
 * out, as browsers allow: its digits end at the first other character.
 */
function readReference(u: Units, i: number): Read {
  const itself: Read = { chars: [AMPERSAND], next: i + 1 };
  let k = i + 1;
  if (k >= u.length) return { ...itself, open: true };
  if (u.code[k] === 0x23) {
    // #
    k++;
    const hex = k < u.length && (u.code[k]! | 0x20) === 0x78; // x
    if (hex) k++;
    const digitsFrom = k;
    let v = 0;
    for (; k < u.length; k++) {
      const c = u.code[k]!;
      const d = hex ? hexValue(c) : c >= 0x30 && c <= 0x39 ? c - 0x30 : -1;
      if (d < 0) break;
      v = Math.min(v * (hex ? 16 : 10) + d, 0x110000);
    }
    // More digits or the `;` may still come: cut off, it stands for itself, as a cut-off escape does.
    if (k >= u.length) return { ...itself, open: true };
    if (k === digitsFrom) return itself;
    if (u.code[k] === 0x3b) k++;
    return codePoint(v, k) ?? itself;
  }
  while (k < u.length && k - i <= LONGEST_NAME && isAlnum(u.code[k]!)) k++;
  // The name or its `;` may still come.
  if (k >= u.length) return { ...itself, open: true };
  if (k === i + 1 || u.code[k] !== 0x3b) return itself;
  const named = namedReference(fromCodes(u.code.subarray(i + 1, k), k - i - 1));
  return named === undefined ? itself : { chars: Array.from({ length: named.length }, (_, n) => named.charCodeAt(n)), next: k + 1 };
}

/** Where the units read so far stand in terminal escape sequences (decodeOnce: what a `\` after an ESC is). */
const OUTSIDE = 0;
/** The last unit is an ESC outside a string: a `]` `P` `X` `^` `_` starts one. */
const AFTER_ESC = 1;
/** In an OSC or another string: BEL, ST or an ESC ends it. */
const IN_STRING = 2;
/** The last unit is the ESC that ended a string: a `\` after it is ST's own (`ESC \`). */
const STRING_ESC = 3;

function track(state: number, c: number): number {
  if (state === IN_STRING) return c === ESC ? STRING_ESC : c === 0x07 || c === 0x9c ? OUTSIDE : IN_STRING;
  if (c === ESC) return AFTER_ESC;
  if (state === AFTER_ESC && (c === 0x5d || c === 0x50 || c === 0x58 || c === 0x5e || c === 0x5f)) return IN_STRING;
  return c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f ? IN_STRING : OUTSIDE;
}

/**
 * One reading of every escape, encoding and reference in u (a run of
 * backslashes, then what it escapes, is one). A backslash after a raw ESC,
 * or a run of them after the ESC that ends an OSC (`\e]8;;url\e\` as
 * escapeControl shows a link, `\u001b\\` as JSON does), is ST's, not an
 * escape: read as one, it would take the character after it (`\b`, `\e`),
 * which may be a value's.
 */
function decodeOnce(u: Units): { units: Units; open: number } {
  const out: Units = { code: new Uint16Array(u.length), start: new Int32Array(u.length), end: new Int32Array(u.length), length: 0 };
  let open = Number.MAX_SAFE_INTEGER;
  let state = OUTSIDE;
  for (let i = 0; i < u.length; ) {
    const c = u.code[i]!;
    const afterRawEsc = c === BACKSLASH && i > 0 && u.code[i - 1] === ESC;
    if (afterRawEsc || (c === BACKSLASH && state === STRING_ESC)) {
      // ST's backslash: after a raw ESC, that one; after an escaped ESC, the whole run (`\\` in JSON).
      let j = i + 1;
      if (!afterRawEsc) while (j < u.length && u.code[j] === BACKSLASH) j++;
      state = OUTSIDE;
      out.code[out.length] = BACKSLASH;
      out.start[out.length] = u.start[i]!;
      out.end[out.length++] = u.end[j - 1]!;
      i = j;
      continue;
    }
    if (c !== BACKSLASH && c !== PERCENT && c !== AMPERSAND) {
      if (state !== OUTSIDE || c === ESC || (c >= 0x90 && c <= 0x9f)) state = track(state, c);
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
    } else read = c === PERCENT ? readPercent(u, i) : readReference(u, i);
    if (read.open) open = Math.min(open, u.start[i]!);
    for (const ch of read.chars) {
      state = track(state, ch);
      out.code[out.length] = ch;
      out.start[out.length] = u.start[i]!;
      out.end[out.length] = u.end[read.next - 1]!;
      out.length++;
    }
    i = read.next;
  }
  return { units: out, open };
}

// ---- HTML's named character references read: every one that stands for an
// ASCII character, every space and invisible character, and a few common
// ones. The other two thousand (mostly mathematical symbols, which no token
// or secret holds) stand for themselves, as an unknown name does in HTML.
// Names are case-sensitive, as in HTML, and are read only with their `;`.

const NAMED = new Map<string, string>([
  // ASCII
  ['Tab', '\t'],
  ['NewLine', '\n'],
  ['excl', '!'],
  ['quot', '"'],
  ['QUOT', '"'],
  ['num', '#'],
  ['dollar', '$'],
  ['percnt', '%'],
  ['amp', '&'],
  ['AMP', '&'],
  ['apos', "'"],
  ['lpar', '('],
  ['rpar', ')'],
  ['ast', '*'],
  ['midast', '*'],
  ['plus', '+'],
  ['comma', ','],
  ['period', '.'],
  ['sol', '/'],
  ['colon', ':'],
  ['semi', ';'],
  ['lt', '<'],
  ['LT', '<'],
  ['equals', '='],
  ['gt', '>'],
  ['GT', '>'],
  ['quest', '?'],
  ['commat', '@'],
  ['lsqb', '['],
  ['lbrack', '['],
  ['bsol', '\\'],
  ['rsqb', ']'],
  ['rbrack', ']'],
  ['Hat', '^'],
  ['lowbar', '_'],
  ['UnderBar', '_'],
  ['grave', '`'],
  ['DiacriticalGrave', '`'],
  ['lcub', '{'],
  ['lbrace', '{'],
  ['verbar', '|'],
  ['vert', '|'],
  ['VerticalLine', '|'],
  ['rcub', '}'],
  ['rbrace', '}'],
  // Spaces and invisible characters
  ['nbsp', '\u00a0'],
  ['NonBreakingSpace', '\u00a0'],
  ['shy', '\u00ad'],
  ['ensp', '\u2002'],
  ['emsp', '\u2003'],
  ['emsp13', '\u2004'],
  ['emsp14', '\u2005'],
  ['numsp', '\u2007'],
  ['puncsp', '\u2008'],
  ['thinsp', '\u2009'],
  ['ThinSpace', '\u2009'],
  ['hairsp', '\u200a'],
  ['VeryThinSpace', '\u200a'],
  ['ZeroWidthSpace', '\u200b'],
  ['NegativeVeryThinSpace', '\u200b'],
  ['NegativeThinSpace', '\u200b'],
  ['NegativeMediumSpace', '\u200b'],
  ['NegativeThickSpace', '\u200b'],
  ['zwnj', '\u200c'],
  ['zwj', '\u200d'],
  ['lrm', '\u200e'],
  ['rlm', '\u200f'],
  ['MediumSpace', '\u205f'],
  ['ThickSpace', '\u205f\u200a'],
  ['NoBreak', '\u2060'],
  ['af', '\u2061'],
  ['ApplyFunction', '\u2061'],
  ['it', '\u2062'],
  ['InvisibleTimes', '\u2062'],
  ['ic', '\u2063'],
  ['InvisibleComma', '\u2063'],
  // Common in text
  ['hyphen', '\u2010'],
  ['dash', '\u2010'],
  ['ndash', '\u2013'],
  ['mdash', '\u2014'],
  ['minus', '\u2212'],
  ['lsquo', '\u2018'],
  ['rsquo', '\u2019'],
  ['ldquo', '\u201c'],
  ['rdquo', '\u201d'],
  ['laquo', '\u00ab'],
  ['raquo', '\u00bb'],
  ['hellip', '\u2026'],
  ['middot', '\u00b7'],
  ['bull', '\u2022'],
  ['copy', '\u00a9'],
  ['reg', '\u00ae'],
  ['trade', '\u2122'],
  ['deg', '\u00b0'],
  ['times', '\u00d7'],
  ['divide', '\u00f7'],
  ['euro', '\u20ac'],
]);

/** The longest name looked up (longer runs of letters are not a reference). */
const LONGEST_NAME = 24;

/**
 * What `&name;` stands for, undefined for a name not read. Letters of the
 * mathematical alphabets (`&Aopf;` 𝔸, `&afr;` 𝔞, `&Ascr;` 𝒜) read as the
 * letter, as NFKC reads them.
 */
function namedReference(name: string): string | undefined {
  const known = NAMED.get(name);
  if (known !== undefined) return known;
  const letter = /^([A-Za-z])(?:opf|fr|scr)$/.exec(name);
  return letter ? letter[1] : undefined;
}

// ---- escape sequences

/** Cut off by the end of the text: more could make it a sequence. */
const CUT_OFF = -1;

/**
 * Where the escape sequence that starts at i ends (exclusive); i when none
 * starts there (the control is left out alone); CUT_OFF when the text ends
 * inside one. `noEnd` is where a string was found to have no end, so that
 * no other string after it is searched for one again.
 */
function sequenceEnd(u: Units, i: number, noEnd: { from: number }): number {
  const c = u.code[i]!;
  if (c === 0x9b) return csiEnd(u, i, i + 1);
  if (c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f) return stringEnd(u, i + 1, noEnd);
  if (c !== ESC) return i;
  if (i + 1 >= u.length) return CUT_OFF;
  const next = u.code[i + 1]!;
  if (next === 0x5b) return csiEnd(u, i, i + 2); // [
  if (next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f) return stringEnd(u, i + 2, noEnd); // ] P X ^ _
  if (next >= 0x20 && next <= 0x2f) {
    let j = i + 1;
    while (j < u.length && u.code[j]! >= 0x20 && u.code[j]! <= 0x2f) j++;
    if (j >= u.length) return CUT_OFF;
    return u.code[j]! >= 0x30 && u.code[j]! <= 0x7e ? j + 1 : i;
  }
  return next >= 0x30 && next <= 0x7e && !isAlnum(next) ? i + 2 : i;
}

/** A CSI: parameter bytes, intermediate bytes, a final byte. */
function csiEnd(u: Units, i: number, from: number): number {
  let j = from;
  while (j < u.length && u.code[j]! >= 0x30 && u.code[j]! <= 0x3f) j++;
  while (j < u.length && u.code[j]! >= 0x20 && u.code[j]! <= 0x2f) j++;
  if (j >= u.length) return CUT_OFF;
  return u.code[j]! >= 0x40 && u.code[j]! <= 0x7e ? j + 1 : i;
}

/** An OSC or another string: up to BEL or ST (0x9c), or an ESC (`ESC \` is ST, any other ends it too). */
function stringEnd(u: Units, from: number, noEnd: { from: number }): number {
  if (from >= noEnd.from) return CUT_OFF;
  for (let j = from; j < u.length; j++) {
    const c = u.code[j];
    if (c === 0x07 || c === 0x9c) return j + 1;
    if (c === ESC) return j + 1 < u.length && u.code[j + 1] === BACKSLASH ? j + 2 : j + 1 < u.length ? j : CUT_OFF;
  }
  noEnd.from = from;
  return CUT_OFF;
}

// ---- markup

const LESS_THAN = 0x3c;
/** The longest tag or comment left out: a `<` with no `>` within it is text (and holds a stream back no longer). */
const LONGEST_TAG = 256;

/**
 * Where the HTML tag (`<wbr>`, `<span class="x">`, `</b>`) or comment
 * (`<!-- … -->`) that starts at i ends (exclusive); i when none starts
 * there; CUT_OFF when the text ends inside one. Markup between a value's
 * characters splits it as invisibly as a zero-width space does.
 */
function tagEnd(u: Units, i: number): number {
  const limit = Math.min(u.length, i + LONGEST_TAG);
  if (i + 1 >= u.length) return CUT_OFF;
  const first = u.code[i + 1]!;
  if (first === 0x21) {
    // <!-- … --> (or <!DOCTYPE …>)
    const comment = i + 3 < u.length && u.code[i + 2] === 0x2d && u.code[i + 3] === 0x2d;
    for (let j = i + 2; j < limit; j++) {
      if (!comment && u.code[j] === LESS_THAN) return i;
      if (u.code[j] !== 0x3e) continue;
      if (!comment || (j >= i + 6 && u.code[j - 1] === 0x2d && u.code[j - 2] === 0x2d)) return j + 1;
    }
    return limit === u.length ? CUT_OFF : i;
  }
  const name = first === 0x2f ? i + 2 : i + 1; // </b>
  if (name >= u.length) return CUT_OFF;
  const l = u.code[name]! | 0x20;
  if (l < 0x61 || l > 0x7a) return i;
  for (let j = name + 1; j < limit; j++) {
    const c = u.code[j];
    if (c === 0x3e) return j + 1;
    if (c === LESS_THAN) return i;
  }
  return limit === u.length ? CUT_OFF : i;
}

// ---- each character: left out, kept, or read as its compatibility form

/** As it is. */
const KEEP = 1;
/** Left out: what LEFT_OUT finds. */
const DROP = 2;
/** Read as its NFKC form (mappedForm). */
const MAPPED = 3;
/** (charactersOf: an ASCII control is there.) */
const CONTROL = 4;

const ASCII_CLASS = new Uint8Array(0x80).map((_, c) => (LEFT_OUT_ONE.test(String.fromCharCode(c)) ? DROP : KEEP));
/** The class of each BMP character met so far (0: not yet met), and of the others. */
let bmpClass: Uint8Array | undefined;
const astralClass = new Map<number, number>();
/** What a MAPPED character reads as: its NFKC form, without what is left out. */
const mappedForm = new Map<number, string>();

function classOf(cp: number): number {
  if (cp < 0x80) return ASCII_CLASS[cp]!;
  if (cp < 0x10000) {
    bmpClass ??= new Uint8Array(0x10000);
    return (bmpClass[cp] ||= classify(cp));
  }
  let k = astralClass.get(cp);
  if (k === undefined) astralClass.set(cp, (k = classify(cp)));
  return k;
}

function classify(cp: number): number {
  const ch = String.fromCodePoint(cp);
  if (LEFT_OUT_ONE.test(ch)) return DROP;
  const form = ch.normalize('NFKC');
  if (form === ch) return KEEP;
  // One whose form is all left out is MAPPED to nothing, not DROP: DROP is
  // what LEFT_OUT finds, which the fast path relies on.
  mappedForm.set(cp, form.replace(LEFT_OUT, ''));
  return MAPPED;
}

/** Makes room in `out` for `size` units (a compatibility form may be longer than its character). */
function makeRoom(out: Units, size: number): void {
  if (size <= out.code.length) return;
  const room = Math.max(size, out.code.length * 2);
  const code = new Uint16Array(room);
  const start = new Int32Array(room);
  const end = new Int32Array(room);
  code.set(out.code);
  start.set(out.start);
  end.set(out.end);
  Object.assign(out, { code, start, end });
}

/** The character at i (a pair when it is one) read into `out` by its class; the index of its last unit. */
function readCharacter(u: Units, i: number, out: Units): number {
  const c = u.code[i]!;
  let cp = c;
  let last = i;
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < u.length && u.code[i + 1]! >= 0xdc00 && u.code[i + 1]! <= 0xdfff) cp = 0x10000 + ((c - 0xd800) << 10) + (u.code[++last]! - 0xdc00);
  const kind = classOf(cp);
  if (kind === DROP) return last;
  const form = kind === KEEP ? undefined : mappedForm.get(cp)!;
  const length = form === undefined ? last - i + 1 : form.length;
  // (Room for one unit per unit left too: finish() writes those unchecked.)
  makeRoom(out, out.length + length + (u.length - last - 1));
  for (let k = 0; k < length; k++) {
    out.code[out.length] = form === undefined ? u.code[i + k]! : form.charCodeAt(k);
    out.start[out.length] = u.start[i]!;
    out.end[out.length++] = u.end[last]!;
  }
  return last;
}

/** Whether the sequence at i is a string (OSC, DCS, SOS, PM, APC), whose text a terminal shows elsewhere (a title, a link). */
function isString(u: Units, i: number): boolean {
  const c = u.code[i]!;
  if (c !== ESC) return c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f;
  const next = u.code[i + 1];
  return next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f;
}

/** Units from..to of u, the same spans (a view, not a copy). */
const slice = (u: Units, from: number, to: number): Units => ({ code: u.code.subarray(from, to), start: u.start.subarray(from, to), end: u.end.subarray(from, to), length: Math.max(0, to - from) });

/** What a string sequence or a tag from i to end holds: between its introducer and its terminator. */
function heldBy(u: Units, i: number, end: number): Units {
  if (u.code[i] === LESS_THAN) return slice(u, i + 1, end - 1);
  const from = u.code[i] === ESC ? i + 2 : i + 1;
  const last = u.code[end - 1];
  const to = last === 0x07 || last === 0x9c ? end - 1 : last === BACKSLASH && end - 2 >= from && u.code[end - 2] === ESC ? end - 2 : end;
  return slice(u, from, to);
}

/** One reading into `out`: what strings and tags held goes to `hidden`; where the text may still change, to `open` (the whole text's reading only). */
interface Reading {
  out: Units;
  hidden: Units[];
  open: { at: number } | undefined;
}

/** The units of u read in order into r.out: escape sequences, tags and what is left out taken away, compatibility forms read. */
function readInOrder(u: Units, r: Reading): void {
  const { out, hidden, open } = r;
  const n = u.length;
  const noEnd = { from: Number.MAX_SAFE_INTEGER };
  for (let i = 0; i < n; i++) {
    const c = u.code[i]!;
    // Most characters: ASCII, kept or left out. (Room: each unit left gives at most one.)
    if (c < 0x80 && c !== ESC && c !== LESS_THAN) {
      if (ASCII_CLASS[c] === KEEP) {
        out.code[out.length] = c;
        out.start[out.length] = u.start[i]!;
        out.end[out.length++] = u.end[i]!;
      }
      continue;
    }
    if (c === LESS_THAN || c === ESC || (c >= 0x90 && c <= 0x9f)) {
      const end = c === LESS_THAN ? tagEnd(u, i) : sequenceEnd(u, i, noEnd);
      if (end === CUT_OFF) {
        if (open) open.at = Math.min(open.at, u.start[i]!);
      } else if (end > i) {
        if (c === LESS_THAN || isString(u, i)) hidden.push(heldBy(u, i, end));
        i = end - 1;
        continue;
      }
    }
    // A pair cut off at the end may still become a character read otherwise.
    if (open && c >= 0xd800 && c <= 0xdbff && i + 1 >= n) open.at = Math.min(open.at, u.start[i]!);
    i = readCharacter(u, i, out);
  }
}

/**
 * The canonical text of decoded units. What a string sequence or a tag
 * holds is left out of the text in order (it splits a value there) but not
 * unread: it follows, each after a U+0000 (no value holds one), read the
 * same way, so a value in a window title, a link or a tag's attribute is
 * found too.
 */
function finish(u: Units, openFrom: number): Canonical {
  const r: Reading = { out: { code: new Uint16Array(u.length), start: new Int32Array(u.length), end: new Int32Array(u.length), length: 0 }, hidden: [], open: { at: openFrom } };
  readInOrder(u, r);
  const inOrder = r.out.length;
  const held: Reading = { ...r, open: undefined };
  // (What a tag holds may hold a string sequence in turn: hidden grows as it is read.)
  for (let h = 0; h < r.hidden.length; h++) {
    const part = r.hidden[h]!;
    makeRoom(r.out, r.out.length + part.length + 1);
    r.out.code[r.out.length] = 0;
    r.out.start[r.out.length] = part.length > 0 ? part.start[0]! : 0;
    r.out.end[r.out.length] = r.out.start[r.out.length]!;
    r.out.length++;
    readInOrder(part, held);
  }
  const { code, start, end } = r.out;
  return { text: fromCodes(code, r.out.length), inOrder, spanStart: (i) => start[i]!, spanEnd: (i) => end[i]!, open: r.open!.at };
}

function fromCodes(code: Uint16Array, n: number): string {
  let s = '';
  for (let i = 0; i < n; i += 4096) s += String.fromCharCode.apply(null, code.subarray(i, Math.min(n, i + 4096)) as unknown as number[]);
  return s;
}

// Finding known values in text and blanking them: each value is kept in
// canonical form (canonical.ts), the text is put in canonical form once, the
// values are found there, and the original span of each match is replaced by
// REDACTED. One matcher for every way a value may be shown, not a list of
// variants.

export const REDACTED = '[REDACTED]';

/**
 * Values whose canonical form is shorter than this are not looked for in
 * free text, where "1" would mangle it (the run's scrubber keeps a short
 * secret out of a command's output by whole lines instead).
 */
export const MIN_SCRUB_LENGTH = 6;

/** The canonical form of a value: the same reading as the text's, so the two agree (in order: a value is looked for as it reads). */
export const canonicalValue = (value: string): string => {
  const c = canonicalize(value);
  return c.text.slice(0, c.inOrder);
};

/**
 * A set of values to find. Values in use are found with indexOf (a run has a
 * few). Retired ones (the secrets of a `--from` run's finished items, which
 * can be thousands) are found through their first MIN_SCRUB_LENGTH
 * characters and their lengths, so finding them costs the same however many
 * there are (secrets often share their first characters: whsec_…).
 */
export class KnownValues {
  private readonly active = new Map<string, string>();
  private readonly retired = new Map<number, Set<string>>();
  private readonly retiredHeads = new Set<string>();
  /** The first characters of retired forms, as a table by code: most positions of a text are passed over on one look. */
  private retiredFirst: Uint8Array | undefined;
  /** The length of the longest canonical form held, retired ones included. */
  longest = 0;
  /** The length of the shortest canonical form held. */
  shortest = Number.MAX_SAFE_INTEGER;

  get size(): number {
    return this.active.size + this.retired.size;
  }

  /** Adds a value; false (and nothing added) when its canonical form is too short to look for. */
  add(value: string): boolean {
    if (this.active.has(value)) return true;
    const form = canonicalValue(value);
    if (form.length < MIN_SCRUB_LENGTH) return false;
    this.active.set(value, form);
    this.measure(form);
    return true;
  }

  /** Moves a value to the retired ones: still found, at a cost that does not grow with their number. */
  retire(value: string): void {
    const form = this.active.get(value) ?? canonicalValue(value);
    this.active.delete(value);
    if (form.length < MIN_SCRUB_LENGTH) return;
    this.retiredHeads.add(form.slice(0, MIN_SCRUB_LENGTH));
    (this.retiredFirst ??= new Uint8Array(0x10000))[form.charCodeAt(0)] = 1;
    const same = this.retired.get(form.length);
    if (same) same.add(form);
    else this.retired.set(form.length, new Set([form]));
    this.measure(form);
  }

  private measure(form: string): void {
    this.longest = Math.max(this.longest, form.length);
    this.shortest = Math.min(this.shortest, form.length);
  }

  /** Adds each match in canonical text to `found`, as [from, to) of canonical indexes. */
  find(text: string, found: [number, number][]): void {
    for (const form of this.active.values()) {
      for (let i = text.indexOf(form); i !== -1; i = text.indexOf(form, i + 1)) found.push([i, i + form.length]);
    }
    if (this.retired.size > 0) this.findRetired(text, found);
  }

  private findRetired(text: string, found: [number, number][]): void {
    const first = this.retiredFirst!;
    for (let i = 0; i + MIN_SCRUB_LENGTH <= text.length; i++) {
      if (first[text.charCodeAt(i)] === 0 || !this.retiredHeads.has(text.slice(i, i + MIN_SCRUB_LENGTH))) continue;
      for (const [length, forms] of this.retired) if (forms.has(text.slice(i, i + length))) found.push([i, i + length]);
    }
  }
}

/** Text with every value of `sets` blanked wherever it is found, in any form (canonical.ts). */
export function scrubText(text: string, sets: readonly KnownValues[]): string {
  let shortest = Number.MAX_SAFE_INTEGER;
  for (const s of sets) if (s.size > 0) shortest = Math.min(shortest, s.shortest);
  // The canonical form of ASCII text is never longer than it (a compatibility
  // form beyond ASCII may be: `ﬃ` reads as `ffi`).
  if (text.length < shortest && !/[^\x00-\x7f]/.test(text)) return text;
  return blankFound(text, canonicalize(text), sets);
}

/** Text with the matches of `sets` in its canonical form `c` blanked. */
export function blankFound(text: string, c: Canonical, sets: readonly KnownValues[]): string {
  const found: [number, number][] = [];
  for (const s of sets) if (s.size > 0) s.find(c.text, found);
  if (found.length === 0) return text;
  // As spans of the original: a match in what a sequence or a tag held
  // (after c.inOrder) lies inside one in order, or between two.
  const spans = found.map(([from, to]): [number, number] => [c.spanStart(from), c.spanEnd(to - 1)]).sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let from = 0;
  for (let k = 0; k < spans.length; ) {
    const first = spans[k]![0];
    let last = spans[k]![1];
    // Overlapping matches are blanked as one.
    for (k++; k < spans.length && spans[k]![0] < last; k++) last = Math.max(last, spans[k]![1]);
    out += text.slice(from, first) + REDACTED;
    from = last;
  }
  return out + text.slice(from);
}

// The run's scrubber: the last line of defence. It knows the token, the
// anti-forgery value and every signing secret seen in this run, and blanks
// them in every byte chatctl writes to stderr, in debug traces and in what a
// `--from` run prints and keeps, so even a server message that echoes one
// cannot leak it. Stdout is scrubbed of the credentials but not of the
// secret, which belongs there in the cases docs/secrets.md lists.
//
// "Scrub" is this module's one verb: find a known value, by what it is, in
// text, and blank it (known.ts), in any form it may be shown in: escaped,
// encoded, split by line breaks or spaces (canonical.ts). Blanking fields by
// their name (headers, JSON keys) is redact.ts's.

/** What stands for a line of an exec: command's output that held a short secret. */
export const SCRUBBED_LINE = '[REDACTED: a line of output that held the secret]';

export interface ScrubStream {
  /** The part of what has arrived so far that can go out, scrubbed. */
  push(chunk: string): string;
  /** The rest, scrubbed. */
  end(): string;
}

export class Scrubber {
  private readonly credentials = new KnownValues();
  private readonly secrets = new KnownValues();
  /** Signing secrets too short to look for in free text: kept out of stream() output only, by whole lines. */
  private readonly shortSecrets = new Set<string>();
  private readonly announced = new Set<string>();

  /**
   * `announce` is told of each signing secret and the token the first time
   * either is known, before any other output can show it (createIO writes
   * GitHub Actions' `::add-mask::` lines with it).
   */
  constructor(private readonly announce?: (value: string) => void) {}

  /** Announced only: a value this run prints on purpose (the sandbox's token, `auth token`), so not scrubbed. */
  announceValue(value: string): void {
    if (!this.announce || this.announced.has(value)) return;
    this.announced.add(value);
    this.announce(value);
  }

  /** A credential (the anti-forgery value): scrubbed from stdout too. */
  addCredential(value: string | undefined): void {
    if (value) this.credentials.add(value);
  }

  /** The bearer token in effect: a credential, and announced as a secret is. */
  addToken(value: string | undefined): void {
    if (!value) return;
    this.announceValue(value);
    this.addCredential(value);
  }

  /** A signing secret: scrubbed from everything but stdout. */
  addSecret(value: string | null | undefined): void {
    if (!value) return;
    this.announceValue(value);
    if (!this.secrets.add(value)) this.shortSecrets.add(value);
  }

  /**
   * A secret whose item of a `--from` run is finished: still scrubbed
   * everywhere (a later item's exec: command may print an earlier item's
   * secret, a store it reads back), at a cost that does not grow with the
   * number of items.
   */
  retireSecret(value: string): void {
    this.shortSecrets.delete(value);
    this.secrets.retire(value);
  }

  /** For stderr, debug traces, logs and what a `--from` run keeps: credentials and secrets. */
  scrub(text: string): string {
    return scrubText(text, [this.credentials, this.secrets]);
  }

  /** For stdout: credentials only. */
  scrubCredentials(text: string): string {
    return scrubText(text, [this.credentials]);
  }

  /**
   * Whether stdout's scrubbing would alter this value: a signing secret
   * that holds the token or the anti-forgery value cannot reach stdout whole.
   */
  holdsCredential(value: string): boolean {
    return this.scrubCredentials(value) !== value;
  }

  /**
   * For text that arrives in pieces (a destination command's output):
   * scrubs everything, and holds back the tail that could still be the start
   * of a value, until more comes or end() is called.
   *
   * A signing secret too short to look for cannot be scrubbed character by
   * character without mangling the text (a secret "e" would take every e
   * with it), yet must not reach stderr. So while one is known, the output
   * goes out in whole lines, and a line that holds it as it is is replaced
   * by SCRUBBED_LINE; every other line is shown unchanged. (A short secret
   * with a line break in it is looked for in the whole output, held until
   * the end.)
   */
  stream(): ScrubStream {
    let held = '';
    return {
      push: (chunk) => {
        const text = held + chunk;
        const c = canonicalize(text);
        held = blankFound(text, c, [this.credentials, this.secrets]);
        let cut = this.safeCut(held, held === text ? c : canonicalize(held));
        if (cut === 0) return '';
        if (this.shortSecrets.size > 0) cut = this.shortBreaks() ? 0 : held.lastIndexOf('\n', cut - 1) + 1; // whole lines only
        const out = held.slice(0, cut);
        held = held.slice(cut);
        return this.scrubShort(out);
      },
      end: () => {
        const out = this.scrub(held);
        held = '';
        return this.scrubShort(out);
      },
    };
  }

  /**
   * Where held (already scrubbed) text may be cut: before the last
   * characters that could begin a value still to be completed, and before
   * an escape, an encoding or a colour code cut off at its end.
   */
  private safeCut(held: string, c: Canonical): number {
    const longest = Math.max(this.credentials.longest, this.secrets.longest);
    if (longest === 0) return held.length;
    // Characters read from an escape cut off at the end are not final: only those before it count.
    // (What sequences and tags held, after c.inOrder, lies before the end in order.)
    let final = c.inOrder;
    while (final > 0 && c.spanStart(final - 1) >= c.open) final--;
    const first = final - (longest - 1);
    const beforeValue = first < 0 ? (final > 0 ? c.spanStart(0) : held.length) : c.spanStart(first);
    return Math.min(beforeValue, c.open);
  }

  private shortBreaks(): boolean {
    for (const v of this.shortSecrets) if (/[\r\n]/.test(v)) return true;
    return false;
  }

  /** Each line that holds a short secret replaced by SCRUBBED_LINE (its line ending kept). */
  private scrubShort(text: string): string {
    if (this.shortSecrets.size === 0 || text === '') return text;
    const short = [...this.shortSecrets];
    if (short.some((v) => /[\r\n]/.test(v) && text.includes(v))) return SCRUBBED_LINE + '\n';
    return text.replace(/[^\n]*(\n|$)/g, (line, end: string) => {
      const body = line.slice(0, line.length - end.length);
      return short.some((v) => body.includes(v)) ? SCRUBBED_LINE + end : line;
    });
  }
}

// Redacting: blanking a field by its name, whatever its value: the headers
// that carry credentials, and the JSON fields that hold a secret (`secret`,
// `previousSecret`…) in a traced body or a server's error details. "Redact"
// is this module's one verb; finding a known value by what it is, in any
// text, is the scrubber's (scrub/scrubber.ts).

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
    const keyEnd = jsonStringEnd(body, i + 1);
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
function jsonStringEnd(body: string, start: number): number {
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
        const end = jsonStringEnd(body, k + 1);
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
  const end = jsonStringEnd(body, j + 1);
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
