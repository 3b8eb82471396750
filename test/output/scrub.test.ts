// The run's scrubber: a known value is blanked in any form it may be shown
// in (escaped, encoded, split, or a mix), text without it is left as it is,
// and a stream gives what the whole text would.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize, canonicalValue, REDACTED, SCRUBBED_LINE, Scrubber } from '../../src/output/scrub.js';
import { escapeInline } from '../../src/output/json.js';

// ---- generators: a secret, and each way a character of it may be shown

/** Characters of generated secrets: base64 and base64url, and a few that escaping treats specially. */
const SECRET_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=/', '+', '"', 'é', '\u00ad', '\u0085', '\u202e', '😀', '漢'];
const secretArb = fc
  .tuple(fc.constantFrom('whsec_', 'tok_', 'k'), fc.array(fc.constantFrom(...SECRET_CHARS), { minLength: 8, maxLength: 40 }), fc.constantFrom(...'AZaz09_'))
  .map(([head, chars, last]) => head + chars.join('') + last);

const hexCase = (s: string, upper: boolean) => (upper ? s.toUpperCase() : s.toLowerCase());
const unitEscape = (unit: number, upper: boolean, slashes: number) => '\\'.repeat(slashes) + 'u' + hexCase(unit.toString(16).padStart(4, '0'), upper);
const urlEncode = (ch: string, upper: boolean) => [...Buffer.from(ch, 'utf8')].map((b) => '%' + hexCase(b.toString(16).padStart(2, '0'), upper)).join('');

/** HTML's names for some characters of secrets (those canonical.ts reads). */
const HTML_NAMES: Record<string, string> = { '+': 'plus', '/': 'sol', '=': 'equals', _: 'lowbar', '"': 'quot', '\u00ad': 'shy', A: 'Aopf', z: 'zscr', Q: 'Qfr' };

/** One code point in one of the forms chatctl or a server may show it in. */
function render(ch: string, form: number, upper: boolean, slashes: number): string {
  const units = [...Array(ch.length).keys()].map((i) => ch.charCodeAt(i));
  const cp = ch.codePointAt(0)!;
  switch (form % 11) {
    case 6: // an HTML decimal reference (the `;` may be left out before what cannot be a digit)
      return `&#${cp};`;
    case 7: // an HTML hex reference, either case
      return `&#${upper ? 'X' : 'x'}${hexCase(cp.toString(16), upper)};`;
    case 8: // a named reference where HTML has one, else the reference escaped again (`&amp;#97;`)
      return HTML_NAMES[ch] ? `&${HTML_NAMES[ch]};` : `&amp;#${cp};`;
    case 9: // fullwidth, for ASCII (read back by NFKC)
      return /[!-~]/.test(ch) ? String.fromCharCode(ch.charCodeAt(0) + 0xfee0) : ch;
    case 10: // mathematical bold, for letters and digits
      return /[A-Z]/.test(ch)
        ? String.fromCodePoint(0x1d400 + ch.charCodeAt(0) - 0x41)
        : /[a-z]/.test(ch)
          ? String.fromCodePoint(0x1d41a + ch.charCodeAt(0) - 0x61)
          : /[0-9]/.test(ch)
            ? String.fromCodePoint(0x1d7ce + ch.charCodeAt(0) - 0x30)
            : ch;
  }
  switch (form % 11) {
    case 0:
      return ch;
    case 1: // JSON's \uXXXX, inside JSON (one backslash) or JSON inside JSON (two)
      return units.map((u) => unitEscape(u, upper, slashes)).join('');
    case 2: // URL encoding, every byte
      return urlEncode(ch, upper);
    case 3: // JSON.stringify as it is (short escapes, `\"`), with `\/` for a slash
      return ch === '/' ? '\\/' : JSON.stringify(ch).slice(1, -1);
    case 4: // encodeURIComponent: what it leaves alone stays as it is
      return ch === '+' ? `%2${upper ? 'B' : 'b'}` : encodeURIComponent(ch);
    default: // escapeControl / escapeInline (`\xad`, `\u202e`)
      return escapeInline(ch);
  }
}

/** What may split a value between two of its characters. */
const SPLITS = [
  ...['', '', '', '\n', '\r\n', ' ', '\t', '\n    ', '\\n', '\\r\\n', '\\t', '%0A', '%0d%0A', '%20', '\\u000A', '\\u000a', '+', ' \u2502\n\u2502 ', '\u001b[2m\u2502\u001b[0m\n', '\\\\n'],
  // Unicode's separators and format characters, controls, and their escapes
  ...['\u2028', '\u2029', '\u00a0', '\u200d', '\u200b', '\u00ad', '\ufeff', '\u3000', '\u2060', '\b', '\x7f', '\u0085', '\\u2028', '\\x08', '%E2%80%8B', '%C2%A0', '\u{e0041}'],
  // what Unicode shows as nothing: a variation selector, the combining grapheme joiner, a Hangul filler
  ...['\ufe0f', '\u034f', '\u3164', '\u{e0100}'],
  // terminal escape sequences: CSI (7-bit and 8-bit), OSC ended by BEL or ST, a charset designation
  ...['\u001b[K', '\u001b[38;5;12m', '\u001b[?25l', '\u009b2K', '\u001b]0;title\u0007', '\u001b]8;;https://x.example/\u001b\\', '\u009d2;t\u009c', '\u001b(B', '\\e[K', '\\u001b[K'],
  // HTML references for them, and escaped again
  ...['&nbsp;', '&shy;', '&ZeroWidthSpace;', '&#8203;', '&#x2028;', '&#X200d;', '&amp;nbsp;', '&amp;#x200B;', '&NewLine;'],
  // markup
  ...['<wbr>', '</b><b>', '<span class="x y">', '<!-- -->', '&lt;wbr&gt;'],
];

const renderedArb = (secret: string) =>
  fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.constantFrom(1, 2), fc.constantFrom(...SPLITS)), { minLength: [...secret].length, maxLength: [...secret].length }).map((choices) => {
    const chars = [...secret];
    return chars.map((ch, i) => render(ch, choices[i]![0], choices[i]![1], choices[i]![2]) + (i < chars.length - 1 ? choices[i]![3] : '')).join('');
  });

/** Text around a value, of characters no secret has and no escape begins with. */
const NEUTRAL = [...'{}[]():;,.!?<>#@*~ \n\t', '\u00e0', '\u00fc', '\u4e2d'];
const neutralArb = fc.array(fc.constantFrom(...NEUTRAL), { maxLength: 12 }).map((a) => a.join(''));

const withSecret = fc.tuple(secretArb, neutralArb, neutralArb).chain(([secret, before, after]) => fc.tuple(fc.constant(secret), fc.constant(before), renderedArb(secret), fc.constant(after)));

describe('canonical form', () => {
  it('reads every form of a character back to it, and keeps the span each came from', () => {
    const c = canonicalize('a\\u0042%43\\x44 \\\\u0045\n%c3%a9');
    expect(c.text).toBe('aBCDEé');
    expect([0, 1, 2, 3, 4, 5].map((i) => c.spanStart(i))).toEqual([0, 1, 7, 10, 15, 23]);
    expect([0, 1, 2, 3, 4, 5].map((i) => c.spanEnd(i))).toEqual([1, 7, 10, 14, 22, 29]);
    const plain = canonicalize('ab c\nd');
    expect([plain.text, [0, 1, 2, 3].map((i) => plain.spanStart(i))]).toEqual(['abcd', [0, 1, 3, 5]]);
    expect(c.open).toBe(29);
  });
  it('marks where an escape or encoding is cut off at the end', () => {
    for (const tail of ['\\', '\\\\', '\\u00', '\\x4', '%', '%4', '%c3', '%c3%', '\u001b[0;3', '\u001b']) {
      expect(canonicalize(`abc${tail}`).open, JSON.stringify(tail)).toBe(3);
    }
    expect(canonicalize('abc\\u0041').open).toBe(9);
  });
});

describe('canonical form: invisible characters, escape sequences, references, compatibility forms', () => {
  it('leaves out controls, format characters and separators; each kept character keeps its span', () => {
    const c = canonicalize('a\u2028b\u00a0c\u200dd\u200be\u00adf\bg\u0085h\u{e0041}i\ufe0fj\u034fk');
    expect(c.text).toBe('abcdefghijk');
    expect(c.spanStart(8)).toBe(17);
  });
  it('leaves out CSI, OSC and other sequences whole, 7-bit and 8-bit, and reads a sequence cut off at the end as open', () => {
    // What a string sequence holds (a title, a link) follows the text in order, after a U+0000.
    const c = canonicalize('a\u001b[Kb\u001b[38;5;12mc\u009b2Kd\u001b]0;t\u0007e\u001b]8;;u\u001b\\f\u009d2;t\u009cg\u001b(Bh');
    expect([c.text.slice(0, c.inOrder), c.text.slice(c.inOrder)]).toEqual(['abcdefgh', '\u00000;t\u00008;;u\u00002;t']);
    // An ESC before a letter or digit is left out alone; a sequence that does not end is no sequence.
    expect(canonicalize('a\u001bbc\u001b[\u00e9d').text).toBe('abc[\u00e9d');
    expect(canonicalize('a\u001b]no end b').text).toBe('a]noendb');
    for (const tail of ['\u001b]0;t', '\u009b1', '\u001b(', '\u001b]0;t\u001b', '\ud835']) expect(canonicalize(`abc${tail}`).open, JSON.stringify(tail)).toBe(3);
  });
  it('leaves out HTML tags and comments in order, reading what a tag holds after the text; a < that starts none is text', () => {
    const c = canonicalize('t<wbr>o</b>k<!-- x -->_<span class="q">a</span> 1 < 2 > 0 <3');
    expect([c.text.slice(0, c.inOrder), c.text.slice(c.inOrder)]).toEqual(['tok_a1<2>0<3', '\u0000wbr\u0000/b\u0000!--x--\u0000spanclass="q"\u0000/span']);
    for (const tail of ['<', '<b', '</', '<span class="', '<!-- x']) expect(canonicalize(`abc${tail}`).open, tail).toBe(3);
    expect(canonicalize(`abc<${'x'.repeat(300)}`).open).toBe(304);
  });

  it('decodes HTML references: decimal, hex, named, and escaped again; an unknown name or a cut-off one stands for itself', () => {
    const c = canonicalize('&#97;&#X62;&#x63&lowbar;&amp;#100;&Eopf;');
    expect(c.text).toBe('abc_dE');
    expect([0, 1, 2, 3, 4, 5].map((i) => [c.spanStart(i), c.spanEnd(i)])).toEqual([
      [0, 5],
      [5, 11],
      [11, 16],
      [16, 24],
      [24, 34],
      [34, 40],
    ]);
    expect(canonicalize('&unknown; a&b=1 &#; &#0;').text).toBe('&unknown;a&b=1&#;&#0;');
    for (const tail of ['&', '&#', '&#x6', '&#12', '&lowba']) expect(canonicalize(`abc${tail}`).open, tail).toBe(3);
    expect(canonicalize('abc&b=1').open).toBe(7);
  });
  it('reads fullwidth and mathematical letters as NFKC does, each character alone', () => {
    const c = canonicalize('\uff34\uff4f\uff4b_\u{1d41a}\ufb01');
    expect(c.text).toBe('Tok_afi');
    expect([4, 5, 6].map((i) => [c.spanStart(i), c.spanEnd(i)])).toEqual([
      [4, 6],
      [6, 7],
      [6, 7],
    ]);
    expect(canonicalize('e\u0301 \u00e9').text).toBe('e\u0301\u00e9');
  });
});

describe('Scrubber: a known value in any form (property)', () => {
  it('is blanked whole, split and encoded in any mix, and nothing around it is touched', () => {
    fc.assert(
      fc.property(withSecret, ([secret, before, rendered, after]) => {
        const r = new Scrubber();
        r.addSecret(secret);
        expect(r.scrub(before + rendered + after)).toBe(before + REDACTED + after);
        const t = new Scrubber();
        t.addToken(secret);
        expect(t.scrubCredentials(before + rendered + after)).toBe(before + REDACTED + after);
      }),
      { numRuns: 1500 },
    );
  });

  it('a stream cut anywhere gives what the whole text gives', () => {
    fc.assert(
      fc.property(withSecret, fc.array(fc.nat(), { maxLength: 6 }), ([secret, before, rendered, after], cuts) => {
        const r = new Scrubber();
        r.addSecret(secret);
        const text = before + rendered + after;
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((from, i) => text.slice(from, [...at, text.length][i]));
        const s = r.stream();
        expect(pieces.map((p) => s.push(p)).join('') + s.end()).toBe(before + REDACTED + after);
      }),
      { numRuns: 500 },
    );
  });

  it('whole-value encodings of a secret with backslashes, quotes and percent signs: JSON, JSON in JSON, URL, URL of JSON', () => {
    // Not a raw ESC before a backslash (raw, that backslash is ST's: `ESC \\`; escaped, it escapes what follows), nor an HTML
    // reference of the value's own (`&#5\\5` reads `&#5` then `5`, and escaped again `&#55`): values hold neither.
    const awkward = fc
      .array(fc.constantFrom(...SECRET_CHARS, '\\', '%', '%4', 'u00', '\\n', '"', '&', '&amp;', '\u001b['), { minLength: 6, maxLength: 30 })
      .map((a) => 'whsec_' + a.join('') + '\u6f22z'); // (漢 ends any escape sequence: no value's end is one)
    const encodings = [
      (s: string) => JSON.stringify(s).slice(1, -1),
      (s: string) => JSON.stringify(JSON.stringify(s)).slice(3, -3),
      (s: string) => encodeURIComponent(s),
      (s: string) => encodeURIComponent(JSON.stringify(s).slice(1, -1)),
      (s: string) => JSON.stringify(encodeURIComponent(s)).slice(1, -1),
      (s: string) => escapeInline(s),
      (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;'), // HTML-escaped
      (s: string) => [...s].map((c) => `&#${c.codePointAt(0)};`).join(''),
    ];
    fc.assert(
      fc.property(awkward, fc.nat(encodings.length - 1), neutralArb, neutralArb, (secret, e, before, after) => {
        const r = new Scrubber();
        r.addSecret(secret);
        expect(r.scrub(before + encodings[e]!(secret) + after)).toBe(before + REDACTED + after);
      }),
      { numRuns: 800 },
    );
  });

  it('text without the value is left exactly as it is: near misses in any form, and any text at all', () => {
    const nearMiss = secretArb.chain((secret) => {
      const chars = [...secret];
      return fc.tuple(fc.constant(secret), fc.nat(chars.length - 1), fc.constantFrom('Q', '7', '%', '\u00e0')).chain(([s, at, other]) => {
        const changed = [...chars];
        changed[at] = changed[at] === other ? 'Z' : other;
        return fc.tuple(fc.constant(s), renderedArb(changed.join('')));
      });
    });
    fc.assert(
      fc.property(nearMiss, neutralArb, ([secret, rendered], before) => {
        const r = new Scrubber();
        r.addSecret(secret);
        r.addToken('tok_unrelated_token');
        expect(r.scrub(before + rendered)).toBe(before + rendered);
      }),
      { numRuns: 800 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), secretArb, (text, secret) => {
        const r = new Scrubber();
        r.addSecret(secret);
        if (!canonicalize(text).text.includes(canonicalValue(secret))) expect(r.scrub(text)).toBe(text);
      }),
      { numRuns: 800 },
    );
  });
});

// ---- the scrubber's own rules

const SECRET = 'whsec_Ab/+c"d\\e=é';
const jsonEscapes = (s: string) => [
  JSON.stringify(s).slice(1, -1),
  JSON.stringify(s).slice(1, -1).replace(/\//g, '\\/'),
  [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`).join(''),
  JSON.stringify(JSON.stringify(s)).slice(3, -3), // JSON inside JSON
  [...s].map((c, i) => (i % 2 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c === '"' || c === '\\' ? `\\${c}` : c)).join(''),
];

describe('Scrubber', () => {
  it('scrubs credentials everywhere and secrets only where asked', () => {
    const r = new Scrubber();
    r.addCredential('tok_ABCDEFG');
    r.addSecret('whsec_123456');
    const text = 'token tok_ABCDEFG and secret whsec_123456';
    expect(r.scrub(text)).toBe('token [REDACTED] and secret [REDACTED]');
    expect(r.scrubCredentials(text)).toBe('token [REDACTED] and secret whsec_123456');
    expect(r.holdsCredential('whsec_tok_ABC DEFG')).toBe(true);
    expect(r.holdsCredential('whsec_123456')).toBe(false);
  });

  it('finds a value in a text shorter than it whose compatibility forms are longer (ligatures)', () => {
    const r = new Scrubber();
    r.addSecret('ffiffi');
    expect(r.scrub('\ufb03\ufb03')).toBe(REDACTED);
  });

  it('does not scrub values too short to be secrets', () => {
    const r = new Scrubber();
    r.addCredential('1');
    r.addCredential('a b c'); // five characters, three once split
    expect(r.scrub('version 1, abc')).toBe('version 1, abc');
  });

  it.each(jsonEscapes(SECRET).map((e) => [e]))('scrubs the secret written as %s', (form) => {
    const r = new Scrubber();
    r.addSecret(SECRET);
    expect(r.scrub(`before ${form} after`)).toBe(`before ${REDACTED} after`);
  });

  it('scrubs a value split by a line wrap, spaces or tabs (raw, escaped or URL-encoded)', () => {
    const r = new Scrubber();
    r.addCredential('tok_ABCDEFGHIJ');
    for (const wrap of ['\n', '\r\n', '\n    ', '\\n', '\\r\\n', '\n\t', ' ', '\t', '%0A', '\\u000A', '\\u000a', ' \\n ']) {
      expect(r.scrub(`x tok_ABCDE${wrap}FGHIJ y`), JSON.stringify(wrap)).toBe(`x ${REDACTED} y`);
    }
    expect(r.scrubCredentials('tok_ABC\nDEFGHIJ')).toBe(REDACTED);
  });

  it('scrubs a token that an HTTP header can carry but a message shows escaped (a soft hyphen, a C1 control), as escapeInline shows it', () => {
    const r = new Scrubber();
    const token = 'tok_\u00adABCDEF\u0085GHIJ';
    r.addToken(token);
    for (const text of [escapeInline(`the server says: ${token} is bad`), JSON.stringify(escapeInline(token)), encodeURIComponent(token)]) expect(r.scrub(text)).not.toContain('ABCDEF');
  });

  // Each form a server was seen to echo the token or a secret in (docs/secrets.md).
  const TOKEN = 'tok_live_Qm9vYmF6LXNlY3JldA';
  const WHSEC = 'whsec_c2lnbmluZy1zZWNyZXQ/dmFs+dWU=';
  const between = (v: string, junk: string) => [...v].join(junk);
  const fullwidth = (v: string) => [...v].map((ch) => String.fromCharCode(ch.charCodeAt(0) + 0xfee0)).join('');
  const FORMS: [string, (v: string) => string][] = [
    ['U+2028', (v) => between(v, '\u2028')],
    ['NBSP', (v) => between(v, '\u00a0')],
    ['ZWJ', (v) => between(v, '\u200d')],
    ['ZWSP', (v) => between(v, '\u200b')],
    ['soft hyphens', (v) => between(v, '\u00ad')],
    ['backspaces', (v) => between(v, '\b')],
    ['ESC[K', (v) => between(v, '\u001b[K')],
    ['an OSC 8 link ended by ST', (v) => between(v, '\u001b]8;;https://x.example/\u001b\\')],
    ['8-bit CSI and OSC', (v) => between(v, '\u009b0K\u009d0;t\u0007')],
    ['fullwidth letters', fullwidth],
    ['decimal references', (v) => [...v].map((ch) => `&#${ch.charCodeAt(0)};`).join('')],
    ['hex references', (v) => [...v].map((ch) => `&#x${ch.charCodeAt(0).toString(16)};`).join('')],
    ['references escaped again', (v) => [...v].map((ch) => `&amp;#x${ch.charCodeAt(0).toString(16)};`).join('')],
    ['named references', (v) => between(v, '&shy;').replace(/_/g, '&lowbar;').replace(/\//g, '&sol;').replace(/\+/g, '&plus;').replace(/=/g, '&equals;')],
  ];
  it.each(FORMS)('the token and a whsec_ secret split or written by %s: blanked whole, as it is, JSON-escaped or as escapeInline shows it', (_name, form) => {
    const r = new Scrubber();
    r.addToken(TOKEN);
    r.addSecret(WHSEC);
    for (const value of [TOKEN, WHSEC]) {
      const text = form(value);
      expect(r.scrub(`x: ${text} y`)).toBe(`x: ${REDACTED} y`);
      expect(r.scrub(JSON.stringify({ m: `x: ${text}` }))).toBe(`{"m":"x: ${REDACTED}"}`);
      expect(r.scrub(escapeInline(`x: ${text} y`))).toBe(`x: ${REDACTED} y`);
    }
    expect(r.scrubCredentials(`x: ${form(TOKEN)} ${form(WHSEC)}`)).toBe(`x: ${REDACTED} ${form(WHSEC)}`);
  });

  it('a value inside a window title, a link or a tag is found there, and blanked there only', () => {
    const r = new Scrubber();
    r.addToken(TOKEN);
    r.addSecret(WHSEC);
    expect(r.scrub(`a \u001b]0;${TOKEN}\u0007 b`)).toBe(`a \u001b]0;${REDACTED}\u0007 b`);
    expect(r.scrub(`a \u001b]8;;https://x.example/?k=${WHSEC}\u001b\\link\u001b]8;;\u001b\\ b`)).toBe(`a \u001b]8;;https://x.example/?k=${REDACTED}\u001b\\link\u001b]8;;\u001b\\ b`);
    expect(r.scrub(`<a title="${TOKEN}">x</a>`)).toBe(`<a title="${REDACTED}">x</a>`);
    // Split inside the tag by a sequence, escaped as chatctl shows it.
    expect(r.scrub(escapeInline(`<a title="${between(TOKEN, '\u001b[K')}">`))).toBe(`<a title="${REDACTED}">`);
    // Tags between its characters, as a browser shows it: whole.
    expect(r.scrub(`x ${between(WHSEC, '<wbr>')} y ${between(TOKEN, '<b></b>')}`)).toBe(`x ${REDACTED} y ${REDACTED}`);
  });

  it('leaves other text alone', () => {
    const r = new Scrubber();
    r.addSecret(SECRET);
    r.addCredential('tok_ABCDEFGHIJ');
    expect(r.scrub('tok_ABCDEFGHIK and whsec_Ab')).toBe('tok_ABCDEFGHIK and whsec_Ab');
  });

  it('fuzz: no JSON rendering of a text holding the secret keeps it readable', () => {
    const r = new Scrubber();
    r.addSecret(SECRET);
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.boolean(), (a, b, escapeSlash) => {
        let json = JSON.stringify(`${a}${SECRET}${b}`);
        if (escapeSlash) json = json.replace(/\//g, '\\/');
        const out = r.scrub(json);
        expect(out).not.toContain(SECRET);
        expect(canonicalize(out).text).not.toContain(canonicalValue(SECRET));
      }),
      { numRuns: 300 },
    );
  });

  it('is found across a table cell wrap, plain or coloured', async () => {
    const { renderEndpoint } = await import('../../src/output/render.js');
    const value = 'whsec_' + 'Q'.repeat(30) + 'Z'.repeat(30);
    const r = new Scrubber();
    r.addSecret(value);
    for (const color of [false, true]) {
      const table = renderEndpoint({ id: 'we_1', note: value }, { color, tty: true }, 40);
      expect(table).not.toContain(value); // it was wrapped
      expect(r.scrub(table)).not.toMatch(/QQQ|ZZZ/);
      expect(r.scrub(table)).toContain('we_1');
    }
  });

  it('an absurdly long secret is scrubbed, whole or across pieces', () => {
    const r = new Scrubber();
    const long = 'whsec_' + 'A1b2'.repeat(200_000);
    r.addSecret(long);
    expect(r.scrub(`x ${long} y`)).toBe('x [REDACTED] y');
    const s = r.stream();
    expect(s.push(`x ${long.slice(0, 500_000)}`) + s.push(`${long.slice(500_000)} y`) + s.end()).toBe('x [REDACTED] y');
  });
});

describe('Scrubber.stream()', () => {
  // A secret under 6 characters is not scrubbed from free text, but an
  // exec: command's output (stream()) never shows it: a line holding it is
  // replaced whole, the other lines are left readable.
  it('a short secret (1 to 5 characters) is kept out by whole lines, split across pieces or not', () => {
    for (const secret of ['e', 'ab', 'k3y!5']) {
      const r = new Scrubber();
      r.addSecret(secret);
      expect(r.scrub(`x ${secret} y`)).toBe(`x ${secret} y`); // free text elsewhere: unchanged
      const s = r.stream();
      const half = Math.ceil(secret.length / 2);
      const text = [`stored: ${secret.slice(0, half)}`, `${secret.slice(half)} (ok)\nQQQ 0\n`, `last ${secret}`].map((p) => s.push(p)).join('') + s.end();
      expect(text).toBe(`${SCRUBBED_LINE}\nQQQ 0\n${SCRUBBED_LINE}`);
    }
    const r = new Scrubber();
    r.addSecret('a\nb');
    const s = r.stream();
    expect(s.push('x a\n') + s.push('b y\n') + s.end()).toBe(`${SCRUBBED_LINE}\n`);
    r.retireSecret('a\nb');
    const s2 = r.stream();
    expect(s2.push('x a\n') + s2.push('b y\n') + s2.end()).toBe('x a\nb y\n');
  });

  it('a value split by a wrap longer than any fixed bound (SGR parameters, backslashes) is found across pieces', () => {
    const value = 'tok_Zq8xW2pL0vN4';
    const r = new Scrubber();
    r.addCredential(value);
    for (const wrap of [`\n\u001b[${'0;'.repeat(1000)}m`, `${'\\'.repeat(2000)}n`, ` ${'\u001b[2m'.repeat(300)}\u2502\n`]) {
      const text = `x tok_Zq8x${wrap}W2pL0vN4 y`;
      expect(r.scrub(text)).toBe('x [REDACTED] y');
      // Split right after the wrap, and at every 97th character.
      const at = text.indexOf('W2pL');
      for (const pieces of [[text.slice(0, at), text.slice(at)], text.match(/[\s\S]{1,97}/g)!]) {
        const s = r.stream();
        expect(pieces.map((p) => s.push(p)).join('') + s.end(), JSON.stringify(wrap.slice(0, 12))).toBe('x [REDACTED] y');
      }
    }
  });

  it('a value split across pieces is still found; everything is eventually written', () => {
    const r = new Scrubber();
    r.addSecret(SECRET);
    r.addCredential('tok_ABCDEFGHIJ');
    const s = r.stream();
    const pieces = ['out: tok_A', 'BCDE', 'FGHIJ and \\u0077hsec_Ab', '\\/+c\\"d\\\\e=é end'];
    expect(pieces.map((p) => s.push(p)).join('') + s.end()).toBe('out: [REDACTED] and [REDACTED] end');
    const big = 'y'.repeat(100_000);
    const s2 = r.stream();
    expect((s2.push(big) + s2.end()).length).toBe(100_000);
  });

  it('goes out as it comes when nothing could begin a value', () => {
    const r = new Scrubber();
    r.addCredential('tok_ABCDEFGHIJ');
    const s = r.stream();
    expect(s.push('line one\n' + 'x'.repeat(40) + '\n')).toBe('line one\n' + 'x'.repeat(27));
  });
});

describe('Scrubber: a retired secret (a finished --from item)', () => {
  it('is still replaced in any form, however many there are; others and look-alikes are left', () => {
    const r = new Scrubber();
    const secrets = Array.from({ length: 3000 }, (_, i) => `whsec_${String(i).padStart(6, '0')}_tail`);
    for (const v of secrets) {
      r.addSecret(v);
      r.retireSecret(v);
    }
    expect(r.scrub(`a ${secrets[0]} b ${secrets[2999]}\nc ${secrets[1500]}x`)).toBe(`a ${REDACTED} b ${REDACTED}\nc ${REDACTED}x`);
    expect(r.scrub('whsec_000001_tai whsec_ plain')).toBe('whsec_000001_tai whsec_ plain');
    // Split, escaped, URL-encoded.
    expect(r.scrub(`{"m":"whsec_0000\\n12_t\\u0061il"} q=whsec_000013%5ftail`)).toBe(`{"m":"${REDACTED}"} q=${REDACTED}`);
    // Of two retired secrets where one begins the other, the longer is replaced whole.
    r.retireSecret('whsec_000001_tail_longer');
    expect(r.scrub('x whsec_000001_tail_longer y')).toBe(`x ${REDACTED} y`);
    const s = r.stream();
    expect(s.push(`stored ${secrets[7]}\n`) + s.end()).toBe(`stored ${REDACTED}\n`);
  });
});
