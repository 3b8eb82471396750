// Scrubbing finds a known value in any form text may show it (docs/secrets.md) by reading text and values alike into a
// canonical form whose characters keep their span of the original, which is blanked whole. Redacting (at the end) goes by name.

export interface Canonical {
  text: string;
  /** How many characters of `text` read the text in order; after them, what sequences and tags held, each after a U+0000. */
  inOrder: number;
  /** Where canonical character i starts and ends (exclusive) in the original text. */
  spanStart(i: number): number;
  spanEnd(i: number): number;
  /** The original index from which more text could still change the reading (an escape cut off at the end); else the text's length. */
  open: number;
}

type Units = { code: Uint16Array; start: Int32Array; end: Int32Array; length: number };

const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const AMPERSAND = 0x26;
const ESC = 0x1b;
const LESS_THAN = 0x3c;
const MAX_PASSES = 4;

/** What is left out of the canonical text; the ASCII and plain variants are faster for text that has nothing else. */
const LEFT_OUT_CLASS = '[\\\\ +|\\u2502\\u2503\\p{Cc}\\p{Cf}\\p{Zs}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}]';
const LEFT_OUT = new RegExp(LEFT_OUT_CLASS, 'gu');
const LEFT_OUT_ONE = new RegExp(LEFT_OUT_CLASS, 'u');
const LEFT_OUT_ASCII = /[\\ +|\x00-\x1f\x7f]/g;
const LEFT_OUT_PLAIN = /[ \t\n\r+|]/g;

/** One-letter escapes (`\n` … `\e`): the letter's code, what it stands for. */
const LETTERS = new Map([...'nrtbfe'].map((l, k): [number, number] => [l.charCodeAt(0), [0x0a, 0x0d, 0x09, 0x08, 0x0c, ESC][k]!]));

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
/** An 8-bit string introducer (DCS, SOS, OSC, PM, APC), or the character after ESC that makes a 7-bit one (`P X ] ^ _`). */
const isC1String = (c: number) => c === 0x90 || c === 0x98 || (c >= 0x9d && c <= 0x9f);
const isStringIntro = (c: number | undefined) => c === 0x5d || c === 0x50 || c === 0x58 || c === 0x5e || c === 0x5f;

/** What starts an escape, an encoding, a sequence, a reference (not a query string's `&`) or a tag. */
const SLOW = /[\\%\x1b\x90\x98\x9b\x9d-\x9f]/;
const REFERENCE = /&(?:#|[A-Za-z0-9]{0,24}(?:;|$))/;
const TAG = /<(?:[A-Za-z/!]|$)/;
/** Text without any of these (most lines) needs no closer look. */
const NOT_PLAIN = /[\x00-\x08\x0b\x0c\x0e-\x1f\\%&<\x7f-\uffff]/;
const UNUSUAL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\uffff]/;

export function canonicalize(text: string): Canonical {
  // Most text has nothing to decode: the text without what is left out, its spans worked out only if a value is found.
  if (!NOT_PLAIN.test(text)) return withoutLeftOut(text, LEFT_OUT_PLAIN);
  if (!SLOW.test(text) && !(text.includes('&') && REFERENCE.test(text)) && !(text.includes('<') && TAG.test(text))) {
    const kind = UNUSUAL.test(text) ? charactersOf(text) : KEEP;
    if (kind !== MAPPED) return withoutLeftOut(text, kind === DROP ? LEFT_OUT : kind === CONTROL ? LEFT_OUT_ASCII : LEFT_OUT_PLAIN);
  }
  let units = rawUnits(text);
  let open = text.length;
  // (A pass goes on while the units hold a `\`, `%` or `&`: the text's own, or what the last pass read.)
  for (let pass = 0, again = /[\\%&]/.test(text); pass < MAX_PASSES && again; pass++) {
    const next = decodeOnce(units);
    open = Math.min(open, next.open);
    if (next.units.length === units.length) break;
    ({ units, again } = next);
  }
  return finish(units, open);
}

/** MAPPED when a character has a compatibility form (or is half a pair), DROP when one beyond ASCII is left out, CONTROL for an ASCII control, else KEEP. */
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

const newUnits = (n: number): Units => ({ code: new Uint16Array(n), start: new Int32Array(n), end: new Int32Array(n), length: 0 });

/** 0, 1, 2 …: a raw unit's span is (i, i + 1), read from one array shared by texts shorter than it (nothing writes raw units). */
let counting: Int32Array | undefined;
const countTo = (n: number) => new Int32Array(n).map((_, i) => i);

function rawUnits(text: string): Units {
  const n = text.length;
  const code = new Uint16Array(n);
  for (let i = 0; i < n; i++) code[i] = text.charCodeAt(i);
  const spans = n < 0xffff ? (counting ??= countTo(0x10000)) : countTo(n + 1);
  return { code, start: spans.subarray(0, n), end: spans.subarray(1, n + 1), length: n };
}

function put(out: Units, c: number, start: number, end: number): void {
  out.code[out.length] = c;
  out.start[out.length] = start;
  out.end[out.length++] = end;
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

type Read = { chars: number[]; next: number; open?: boolean };

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

/** `%XX` at i, with the `%XX` after it that complete a UTF-8 character; a `%` that starts none stands for itself. */
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

/** A code point as UTF-16 units; undefined past U+10FFFF, for a surrogate or U+0000. */
function codePoint(cp: number, next: number): Read | undefined {
  if (cp <= 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { chars: cp > 0xffff ? [0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff)] : [cp], next };
}

/** An HTML character reference at i; the `;` of a numeric one may be left out, as browsers allow. */
function readReference(u: Units, i: number): Read {
  const itself: Read = { chars: [AMPERSAND], next: i + 1 };
  let k = i + 1;
  if (k >= u.length) return { ...itself, open: true };
  if (u.code[k] === 0x23) {
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
  if (k >= u.length) return { ...itself, open: true };
  if (k === i + 1 || u.code[k] !== 0x3b) return itself;
  const named = namedReference(fromCodes(u.code.subarray(i + 1, k), k - i - 1));
  return named === undefined ? itself : { chars: Array.from({ length: named.length }, (_, n) => named.charCodeAt(n)), next: k + 1 };
}

/** Where decoding stands in terminal escape sequences: after an ESC, inside a string, at the ESC that ended one (whose `\` is ST's). */
const OUTSIDE = 0;
const AFTER_ESC = 1;
const IN_STRING = 2;
const STRING_ESC = 3;

function track(state: number, c: number): number {
  if (state === IN_STRING) return c === ESC ? STRING_ESC : c === 0x07 || c === 0x9c ? OUTSIDE : IN_STRING;
  if (c === ESC) return AFTER_ESC;
  if (state === AFTER_ESC && isStringIntro(c)) return IN_STRING;
  return isC1String(c) ? IN_STRING : OUTSIDE;
}

/** One reading of every escape, encoding and reference; a `\` after the ESC that ends a string (`\e]8;;url\e\`) is ST's, not an escape. */
function decodeOnce(u: Units): { units: Units; open: number; again: boolean } {
  const out = newUnits(u.length);
  let open = Number.MAX_SAFE_INTEGER;
  let again = false;
  let state = OUTSIDE;
  for (let i = 0; i < u.length; ) {
    const c = u.code[i]!;
    const afterRawEsc = c === BACKSLASH && i > 0 && u.code[i - 1] === ESC;
    if (afterRawEsc || (c === BACKSLASH && state === STRING_ESC)) {
      let j = i + 1;
      if (!afterRawEsc) while (j < u.length && u.code[j] === BACKSLASH) j++;
      state = OUTSIDE;
      again = true;
      put(out, BACKSLASH, u.start[i]!, u.end[j - 1]!);
      i = j;
      continue;
    }
    if (c !== BACKSLASH && c !== PERCENT && c !== AMPERSAND) {
      if (state !== OUTSIDE || c === ESC || (c >= 0x90 && c <= 0x9f)) state = track(state, c);
      put(out, c, u.start[i]!, u.end[i++]!);
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
      again ||= ch === BACKSLASH || ch === PERCENT || ch === AMPERSAND;
      put(out, ch, u.start[i]!, u.end[read.next - 1]!);
    }
    i = read.next;
  }
  return { units: out, open, again };
}

// HTML's named references read: every one for an ASCII character, a space or
// an invisible character, and a few common ones; any other stands for itself.
const NAMED = new Map(
  [
    'Tab=\t NewLine=\n excl=! quot=" QUOT=" num=# dollar=$ percnt=% amp=& AMP=& apos=\' lpar=( rpar=) ast=* midast=* plus=+ comma=, period=. sol=/ colon=: semi=;',
    'lt=< LT=< equals== gt=> GT=> quest=? commat=@ lsqb=[ lbrack=[ bsol=\\ rsqb=] rbrack=] Hat=^ lowbar=_ UnderBar=_ grave=` DiacriticalGrave=` lcub={ lbrace={',
    'verbar=| vert=| VerticalLine=| rcub=} rbrace=} nbsp=\u00a0 NonBreakingSpace=\u00a0 shy=\u00ad ensp=\u2002 emsp=\u2003 emsp13=\u2004 emsp14=\u2005 numsp=\u2007',
    'puncsp=\u2008 thinsp=\u2009 ThinSpace=\u2009 hairsp=\u200a VeryThinSpace=\u200a ZeroWidthSpace=\u200b NegativeVeryThinSpace=\u200b NegativeThinSpace=\u200b',
    'NegativeMediumSpace=\u200b NegativeThickSpace=\u200b zwnj=\u200c zwj=\u200d lrm=\u200e rlm=\u200f MediumSpace=\u205f ThickSpace=\u205f\u200a NoBreak=\u2060',
    'af=\u2061 ApplyFunction=\u2061 it=\u2062 InvisibleTimes=\u2062 ic=\u2063 InvisibleComma=\u2063 hyphen=\u2010 dash=\u2010 ndash=\u2013 mdash=\u2014 minus=\u2212',
    'lsquo=\u2018 rsquo=\u2019 ldquo=\u201c rdquo=\u201d laquo=\u00ab raquo=\u00bb hellip=\u2026 middot=\u00b7 bull=\u2022 copy=\u00a9 reg=\u00ae trade=\u2122 deg=\u00b0',
    'times=\u00d7 divide=\u00f7 euro=\u20ac',
  ]
    .join(' ')
    .split(' ')
    .map((entry): [string, string] => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
);

/** The longest name looked up (longer runs of letters are not a reference). */
const LONGEST_NAME = 24;

/** What `&name;` stands for; the mathematical letters (`&Aopf;`, `&afr;`, `&Ascr;`) read as the letter, as NFKC reads them. */
function namedReference(name: string): string | undefined {
  return NAMED.get(name) ?? /^([A-Za-z])(?:opf|fr|scr)$/.exec(name)?.[1];
}

const CUT_OFF = -1;

/** Where the sequence at i ends (exclusive); i when none starts there; CUT_OFF when the text ends inside one (`noEnd`: a string without one). */
function sequenceEnd(u: Units, i: number, noEnd: { from: number }): number {
  const c = u.code[i]!;
  if (c === 0x9b) return csiEnd(u, i, i + 1);
  if (isC1String(c)) return stringEnd(u, i + 1, noEnd);
  if (c !== ESC) return i;
  if (i + 1 >= u.length) return CUT_OFF;
  const next = u.code[i + 1]!;
  if (next === 0x5b) return csiEnd(u, i, i + 2); // [
  if (isStringIntro(next)) return stringEnd(u, i + 2, noEnd);
  if (next >= 0x20 && next <= 0x2f) {
    let j = i + 1;
    while (j < u.length && u.code[j]! >= 0x20 && u.code[j]! <= 0x2f) j++;
    if (j >= u.length) return CUT_OFF;
    return u.code[j]! >= 0x30 && u.code[j]! <= 0x7e ? j + 1 : i;
  }
  return next >= 0x30 && next <= 0x7e && !isAlnum(next) ? i + 2 : i;
}

function csiEnd(u: Units, i: number, from: number): number {
  let j = from;
  while (j < u.length && u.code[j]! >= 0x30 && u.code[j]! <= 0x3f) j++;
  while (j < u.length && u.code[j]! >= 0x20 && u.code[j]! <= 0x2f) j++;
  if (j >= u.length) return CUT_OFF;
  return u.code[j]! >= 0x40 && u.code[j]! <= 0x7e ? j + 1 : i;
}

/** A string runs to BEL or ST (0x9c), or an ESC (`ESC \` is ST, any other ends it too). */
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

/** The longest tag or comment left out: a `<` with no `>` within it is text. */
const LONGEST_TAG = 256;

/** Where the HTML tag or comment at i ends (exclusive); i when none starts there; CUT_OFF when the text ends inside one. */
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

// Each character's class: kept, left out (what LEFT_OUT finds), read as its NFKC form; CONTROL is charactersOf's only.
const KEEP = 1;
const DROP = 2;
const MAPPED = 3;
const CONTROL = 4;

const ASCII_CLASS = new Uint8Array(0x80).map((_, c) => (LEFT_OUT_ONE.test(String.fromCharCode(c)) ? DROP : KEEP));
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
  // A form that is all left out is MAPPED to nothing, not DROP: the fast path relies on DROP being what LEFT_OUT finds.
  mappedForm.set(cp, form.replace(LEFT_OUT, ''));
  return MAPPED;
}

/** Makes room in `out` for `size` units (a compatibility form may be longer than its character). */
function makeRoom(out: Units, size: number): void {
  if (size <= out.code.length) return;
  const grown = newUnits(Math.max(size, out.code.length * 2));
  grown.code.set(out.code);
  grown.start.set(out.start);
  grown.end.set(out.end);
  Object.assign(out, { code: grown.code, start: grown.start, end: grown.end });
}

function readCharacter(u: Units, i: number, out: Units): number {
  const c = u.code[i]!;
  let cp = c;
  let last = i;
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < u.length && u.code[i + 1]! >= 0xdc00 && u.code[i + 1]! <= 0xdfff) cp = 0x10000 + ((c - 0xd800) << 10) + (u.code[++last]! - 0xdc00);
  const kind = classOf(cp);
  if (kind === DROP) return last;
  const form = kind === KEEP ? undefined : mappedForm.get(cp)!;
  const length = form === undefined ? last - i + 1 : form.length;
  // (Room for one unit per unit left too: readInOrder writes those unchecked.)
  makeRoom(out, out.length + length + (u.length - last - 1));
  for (let k = 0; k < length; k++) put(out, form === undefined ? u.code[i + k]! : form.charCodeAt(k), u.start[i]!, u.end[last]!);
  return last;
}

const slice = (u: Units, from: number, to: number): Units => ({ code: u.code.subarray(from, to), start: u.start.subarray(from, to), end: u.end.subarray(from, to), length: Math.max(0, to - from) });

function heldBy(u: Units, i: number, end: number): Units {
  if (u.code[i] === LESS_THAN) return slice(u, i + 1, end - 1);
  const from = u.code[i] === ESC ? i + 2 : i + 1;
  const last = u.code[end - 1];
  const to = last === 0x07 || last === 0x9c ? end - 1 : last === BACKSLASH && end - 2 >= from && u.code[end - 2] === ESC ? end - 2 : end;
  return slice(u, from, to);
}

/** One reading: what strings and tags held goes to `hidden`; where the text may still change, to `open` (the whole text's reading only). */
type Reading = { out: Units; hidden: Units[]; open: { at: number } | undefined };

function readInOrder(u: Units, r: Reading): void {
  const { out, hidden, open } = r;
  const n = u.length;
  const noEnd = { from: Number.MAX_SAFE_INTEGER };
  for (let i = 0; i < n; i++) {
    const c = u.code[i]!;
    if (c < 0x80 && c !== ESC && c !== LESS_THAN) {
      if (ASCII_CLASS[c] === KEEP) put(out, c, u.start[i]!, u.end[i]!);
      continue;
    }
    if (c === LESS_THAN || c === ESC || (c >= 0x90 && c <= 0x9f)) {
      const end = c === LESS_THAN ? tagEnd(u, i) : sequenceEnd(u, i, noEnd);
      if (end === CUT_OFF) {
        if (open) open.at = Math.min(open.at, u.start[i]!);
      } else if (end > i) {
        if (c === LESS_THAN || (c === ESC ? isStringIntro(u.code[i + 1]) : isC1String(c))) hidden.push(heldBy(u, i, end));
        i = end - 1;
        continue;
      }
    }
    // A pair cut off at the end may still become a character read otherwise.
    if (open && c >= 0xd800 && c <= 0xdbff && i + 1 >= n) open.at = Math.min(open.at, u.start[i]!);
    i = readCharacter(u, i, out);
  }
}

/** The canonical text: what a string sequence or a tag holds splits a value in order, and is read after the rest, each after a U+0000. */
function finish(u: Units, openFrom: number): Canonical {
  const r: Reading = { out: newUnits(u.length), hidden: [], open: { at: openFrom } };
  readInOrder(u, r);
  const inOrder = r.out.length;
  const held: Reading = { ...r, open: undefined };
  // (hidden grows as it is read: a tag may hold a string sequence.)
  for (let h = 0; h < r.hidden.length; h++) {
    const part = r.hidden[h]!;
    makeRoom(r.out, r.out.length + part.length + 1);
    const at = part.length > 0 ? part.start[0]! : 0;
    put(r.out, 0, at, at);
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

export const REDACTED = '[REDACTED]';

/** Values whose canonical form is shorter are not looked for in free text, where "1" would mangle it. */
const MIN_SCRUB_LENGTH = 6;

export const canonicalValue = (value: string): string => {
  const c = canonicalize(value);
  return c.text.slice(0, c.inOrder);
};

/** Values to find: those in use with indexOf; retired ones (maybe thousands) by their first characters, at a cost that does not grow with them. */
class KnownValues {
  private readonly active = new Map<string, string>();
  private readonly retired = new Map<number, Set<string>>();
  private readonly retiredHeads = new Set<string>();
  /** The first characters of retired forms, by code: most positions are passed over on one look. */
  private retiredFirst: Uint8Array | undefined;
  longest = 0;
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

  find(text: string, found: [number, number][]): void {
    for (const form of this.active.values()) {
      for (let i = text.indexOf(form); i !== -1; i = text.indexOf(form, i + 1)) found.push([i, i + form.length]);
    }
    if (this.retired.size === 0) return;
    const first = this.retiredFirst!;
    for (let i = 0; i + MIN_SCRUB_LENGTH <= text.length; i++) {
      if (first[text.charCodeAt(i)] === 0 || !this.retiredHeads.has(text.slice(i, i + MIN_SCRUB_LENGTH))) continue;
      for (const [length, forms] of this.retired) if (forms.has(text.slice(i, i + length))) found.push([i, i + length]);
    }
  }
}

function scrubText(text: string, sets: readonly KnownValues[]): string {
  let shortest = Number.MAX_SAFE_INTEGER;
  for (const s of sets) if (s.size > 0) shortest = Math.min(shortest, s.shortest);
  // ASCII text's canonical form is never longer than it (`ﬃ` reads as `ffi`).
  if (text.length < shortest && !/[^\x00-\x7f]/.test(text)) return text;
  return blankFound(text, canonicalize(text), sets);
}

function blankFound(text: string, c: Canonical, sets: readonly KnownValues[]): string {
  const found: [number, number][] = [];
  for (const s of sets) if (s.size > 0) s.find(c.text, found);
  if (found.length === 0) return text;
  // (A match in what a sequence or a tag held lies inside one in order, or between two.)
  const spans = found.map(([from, to]): [number, number] => [c.spanStart(from), c.spanEnd(to - 1)]).sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let from = 0;
  for (let k = 0; k < spans.length; ) {
    const first = spans[k]![0];
    let last = spans[k]![1];
    for (k++; k < spans.length && spans[k]![0] < last; k++) last = Math.max(last, spans[k]![1]);
    out += text.slice(from, first) + REDACTED;
    from = last;
  }
  return out + text.slice(from);
}

/** What stands for a line of an exec: command's output that held a short secret. */
export const SCRUBBED_LINE = '[REDACTED: a line of output that held the secret]';

/** The run's scrubber, the last line of defence: it knows the credentials and every secret of the run (stdout: the credentials only). */
export class Scrubber {
  private readonly credentials = new KnownValues();
  private readonly secrets = new KnownValues();
  /** Secrets too short to look for in free text: kept out of stream() output by whole lines. */
  private readonly shortSecrets = new Set<string>();
  private readonly announced = new Set<string>();

  /** `announce` is told of each secret and the token when first known, before any output can show it (`::add-mask::`). */
  constructor(private readonly announce?: (value: string) => void) {}

  /** Announced only: a value this run prints on purpose (the sandbox's token, `auth token`). */
  announceValue(value: string): void {
    if (!this.announce || this.announced.has(value)) return;
    this.announced.add(value);
    this.announce(value);
  }

  /** A credential (the anti-forgery value): scrubbed from stdout too. */
  addCredential(value: string | undefined): void {
    if (value) this.credentials.add(value);
  }

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

  /** A finished `--from` item's secret: still scrubbed everywhere, at a cost that does not grow with the number of items. */
  retireSecret(value: string): void {
    this.shortSecrets.delete(value);
    this.secrets.retire(value);
  }

  scrub(text: string): string {
    return scrubText(text, [this.credentials, this.secrets]);
  }

  scrubCredentials(text: string): string {
    return scrubText(text, [this.credentials]);
  }

  /** Whether stdout's scrubbing would alter this value (a secret that holds a credential). */
  holdsCredential(value: string): boolean {
    return this.scrubCredentials(value) !== value;
  }

  /** For text in pieces: holds back what could still begin a value; while a secret too short to look for is known, whole lines, each holding it replaced. */
  stream(): { push(chunk: string): string; end(): string } {
    let held = '';
    return {
      push: (chunk) => {
        const text = held + chunk;
        const c = canonicalize(text);
        held = blankFound(text, c, [this.credentials, this.secrets]);
        let cut = this.safeCut(held, held === text ? c : canonicalize(held));
        if (cut === 0) return '';
        if (this.shortSecrets.size > 0) cut = [...this.shortSecrets].some((v) => /[\r\n]/.test(v)) ? 0 : held.lastIndexOf('\n', cut - 1) + 1;
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

  /** Where scrubbed held text may be cut: before what could begin a value still to come, and before an escape cut off at its end. */
  private safeCut(held: string, c: Canonical): number {
    const longest = Math.max(this.credentials.longest, this.secrets.longest);
    if (longest === 0) return held.length;
    // Only characters before an escape cut off at the end are final (what sequences held, after c.inOrder, lies before it).
    let final = c.inOrder;
    while (final > 0 && c.spanStart(final - 1) >= c.open) final--;
    const first = final - (longest - 1);
    const beforeValue = first < 0 ? (final > 0 ? c.spanStart(0) : held.length) : c.spanStart(first);
    return Math.min(beforeValue, c.open);
  }

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

/** A key whose value is a secret: `secret`, `previousSecret`, `signing_secret`; not `secretAvailable`, `secretFile`. */
const isSecretKey = (key: string): boolean => /secret$/i.test(key);

/** A --debug body with the value of every secret key (however escaped) redacted and its copies scrubbed; and a scrubber of them for its headers. */
export function redactSecretsInBody(body: string): { body: string; scrub: (text: string) => string } {
  const found: string[] = [];
  let out = '';
  let last = 0;
  const n = body.length;
  for (let i = body.indexOf('"'); i >= 0; i = body.indexOf('"', i)) {
    const keyEnd = jsonStringEnd(body, i + 1);
    if (keyEnd >= n) break;
    const j = valueStart(body, keyEnd + 1);
    const end = j >= 0 && isSecretKey(decodeJsonString(body.slice(i + 1, keyEnd))) ? secretValueEnd(body, j, found) : -1;
    if (end < 0) i = keyEnd + 1;
    else {
      out += body.slice(last, j) + `"${REDACTED}"`;
      last = i = end;
    }
  }
  out += body.slice(Math.min(last, n));
  const values = new KnownValues();
  for (const value of found) values.add(value);
  return { body: scrubText(out, [values]), scrub: (text) => scrubText(text, [values]) };
}

function jsonStringEnd(body: string, start: number): number {
  for (let j = start; j < body.length; ) {
    const c = body.charCodeAt(j);
    if (c === 0x5c) j += 2;
    else if (c === 0x22) return j;
    else j++;
  }
  return body.length;
}

const COLON = /\s*:\s*/y;
/** After a key's closing quote: where its value starts, or -1 when no `:` follows (not a key). */
function valueStart(body: string, from: number): number {
  COLON.lastIndex = from;
  return COLON.test(body) ? COLON.lastIndex : -1;
}

/** The end (exclusive) of the secret value at j, its strings added to `found`; -1 for null, true, false. */
function secretValueEnd(body: string, j: number, found: string[]): number {
  const c = body[j];
  if (c === '{' || c === '[') {
    // Redacted whole to its closing bracket; every string in it, key or value, scrubbed wherever else the body repeats it.
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
    // A number is kept as possibly the secret (an odd answer): redacted too.
    const num = /^-?[0-9][0-9.eE+-]*/.exec(body.slice(j, j + 4096));
    return num ? j + num[0].length : -1;
  }
  const end = jsonStringEnd(body, j + 1);
  found.push(decodeJsonString(body.slice(j + 1, end)));
  return end + 1;
}

function decodeJsonString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw.replace(/\\u([0-9a-fA-F]{4})|\\(.)/g, (_m, hex: string | undefined, ch: string | undefined) => (hex ? String.fromCharCode(parseInt(hex, 16)) : (ch ?? '')));
  }
}

/** A copy of a server's JSON (error details) with the strings under secret keys blanked, at any depth, without recursion. */
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
    // defineProperty: a key named __proto__ stays an ordinary key; defined now, in order, filled in on its turn.
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
