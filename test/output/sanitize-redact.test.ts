import { describe, expect, it } from 'vitest';
import { escapeControl, escapeInline } from '../../src/output/sanitize.js';
import { REDACTED, WITHHELD_LINE, Redactor, redactHeaders, redactSecretFields, blankSecretsInBody, mayShow, valuePattern } from '../../src/output/redact.js';

/** How many RegExp objects `fn` builds with the constructor (literals are not counted). */
function countRegExps(fn: () => void): number {
  const Original = globalThis.RegExp;
  let built = 0;
  globalThis.RegExp = new Proxy(Original, {
    construct(target, args, newTarget) {
      built++;
      return Reflect.construct(target, args, newTarget === globalThis.RegExp ? target : newTarget);
    },
    apply(target, self, args) {
      built++;
      return Reflect.apply(target, self, args);
    },
  });
  try {
    fn();
  } finally {
    globalThis.RegExp = Original;
  }
  return built;
}

describe('escapeControl', () => {
  it('makes ESC, other C0, DEL and C1 visible and keeps text', () => {
    expect(escapeControl('\u001b[31mred\u001b[0m')).toBe('\\e[31mred\\e[0m');
    expect(escapeControl('a\u0007b\u0000c\u007fd\u009be\rf')).toBe('a\\x07b\\x00c\\x7fd\\x9be\\rf');
    expect(escapeControl('tab\tand\nnewline, é, 漢字')).toBe('tab\tand\nnewline, é, 漢字');
  });
  it('escapeInline also flattens newlines and tabs', () => {
    expect(escapeInline('a\nb\tc')).toBe('a\\nb\\tc');
  });
  it('leaves no control byte in anything it returns', () => {
    let all = '';
    for (let c = 0; c < 0x2030; c++) all += String.fromCharCode(c);
    // eslint-disable-next-line no-control-regex
    expect(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(escapeControl(all))).toBe(false);
  });
});

describe('Redactor', () => {
  it('scrubs credentials everywhere and secrets only where asked', () => {
    const r = new Redactor();
    r.addCredential('tok_ABCDEFG');
    r.addSecret('whsec_123456');
    const text = 'token tok_ABCDEFG and secret whsec_123456';
    expect(r.scrubAll(text)).toBe('token [REDACTED] and secret [REDACTED]');
    expect(r.scrubCredentials(text)).toBe('token [REDACTED] and secret whsec_123456');
  });
  it('does not scrub values too short to be secrets', () => {
    const r = new Redactor();
    r.addCredential('1');
    expect(r.scrubAll('version 1')).toBe('version 1');
  });

  // A secret under 6 characters is not scrubbed from free text, but an
  // exec: command's output (stream()) never shows it: a line holding it is
  // replaced whole, the other lines are left readable.
  it('stream(): a short secret (1 to 5 characters) is kept out by whole lines, split across pieces or not', () => {
    for (const secret of ['e', 'ab', 'k3y!5']) {
      const r = new Redactor();
      r.addSecret(secret);
      expect(r.scrubAll(`x ${secret} y`)).toBe(`x ${secret} y`); // free text elsewhere: unchanged, as before
      const s = r.stream();
      const half = Math.ceil(secret.length / 2);
      const text = [`stored: ${secret.slice(0, half)}`, `${secret.slice(half)} (ok)\nQQQ 0\n`, `last ${secret}`].map((p) => s.push(p)).join('') + s.end();
      expect(text).toBe(`${WITHHELD_LINE}\nQQQ 0\n${WITHHELD_LINE}`);
    }
    const r = new Redactor();
    r.addSecret('a\nb');
    const s = r.stream();
    expect(s.push('x a\n') + s.push('b y\n') + s.end()).toBe(`${WITHHELD_LINE}\n`);
    r.forgetSecret('a\nb');
    const s2 = r.stream();
    expect(s2.push('x a\n') + s2.push('b y\n') + s2.end()).toBe('x a\nb y\n');
  });
});

describe('Redactor: a forgotten secret (a finished --from item)', () => {
  it('is still replaced wherever it appears as it is, however many there are; others and look-alikes are left', () => {
    const r = new Redactor();
    const secrets = Array.from({ length: 3000 }, (_, i) => `whsec_${String(i).padStart(6, '0')}_tail`);
    for (const v of secrets) {
      r.addSecret(v);
      r.forgetSecret(v);
    }
    expect(r.scrubAll(`a ${secrets[0]} b ${secrets[2999]}\nc ${secrets[1500]}x`)).toBe(`a ${REDACTED} b ${REDACTED}\nc ${REDACTED}x`);
    expect(r.scrubAll('whsec_000001_tai whsec_ plain')).toBe('whsec_000001_tai whsec_ plain');
    // Of two retired secrets where one begins the other, the longer is replaced whole.
    r.forgetSecret('whsec_000001_tail_longer');
    expect(r.scrubAll('x whsec_000001_tail_longer y')).toBe(`x ${REDACTED} y`);
    const s = r.stream();
    expect(s.push(`stored ${secrets[7]}\n`) + s.end()).toBe(`stored ${REDACTED}\n`);
  });
});

/** The traced body alone. */
const redactSecretInBody = (body: string) => blankSecretsInBody(body).body;

describe('redactHeaders / blankSecretsInBody', () => {
  it('hides Authorization and the anti-forgery value', () => {
    expect(redactHeaders({ Authorization: 'Bearer x', 'x-service-csrf': '1', Origin: 'https://a' })).toEqual({
      Authorization: 'Bearer [REDACTED]',
      'x-service-csrf': '[REDACTED]',
      Origin: 'https://a',
    });
  });
  it('blanks the secret in a body, escaped quotes included', () => {
    expect(blankSecretsInBody('{"data":{"secret":"wh\\"sec","x":1}}').body).toBe('{"data":{"secret":"[REDACTED]","x":1}}');
    expect(blankSecretsInBody('{"secret":null}').body).toBe('{"secret":null}');
  });
  // A hostile review found {"secret":{"value":"whsec_…"}} traced in clear by
  // --debug, then keys and numbers inside such an object.
  it('blanks an object or array under a secret key whole; each string in it, key or value, wherever else it appears', () => {
    expect(blankSecretsInBody('{"data":{"secret":{"value":"whsec_nested_1","alg":"hmac"},"v":"ok"}}').body).toBe('{"data":{"secret":"[REDACTED]","v":"ok"}}');
    expect(blankSecretsInBody('{"secret":["whsec_a1b2c3", {"k":"whsec_d4e5f6"}], "x":"kept"}').body).toBe('{"secret":"[REDACTED]", "x":"kept"}');
    expect(blankSecretsInBody('{"secret":{"whsec_KEYSECRET_1234567890":true,"n":12345678901234567890},"y":"kept"}').body).toBe('{"secret":"[REDACTED]","y":"kept"}');
    expect(blankSecretsInBody('{"secret":{"value":"a}b]\\"c","n":1},"y":"kept"}').body).toBe('{"secret":"[REDACTED]","y":"kept"}');
    expect(blankSecretsInBody('{"secret":{"value":"whsec_cut_off').body).toBe('{"secret":"[REDACTED]"');
    expect(redactSecretInBody('{"secret":' + '['.repeat(20000) + '"whsec_deep_inside"' + ']'.repeat(20000) + ',"z":1}')).toBe('{"secret":"[REDACTED]","z":1}');
    expect(blankSecretsInBody('{"secret":{"value":"whsec_copied_twice","whsec_key_copy_1":1},"note":"was whsec_copied_twice","k":{"whsec_key_copy_1":1}}').body).toBe(
      '{"secret":"[REDACTED]","note":"was [REDACTED]","k":{"[REDACTED]":1}}',
    );
  });
});

describe('secret-named fields', () => {
  it('blanks every secret-named string, including one cut off before its closing quote', () => {
    expect(blankSecretsInBody('{"previousSecret":"whsec_old","secretAvailable":true}').body).toBe('{"previousSecret":"[REDACTED]","secretAvailable":true}');
    expect(blankSecretsInBody('{"data":{"secret":"whsec_cut_off_here').body).toBe('{"data":{"secret":"[REDACTED]"');
    expect(blankSecretsInBody('{"data":{"secret":"whsec_ends_in_escape\\').body).toBe('{"data":{"secret":"[REDACTED]"');
  });
  it('redactSecretFields walks objects and arrays', () => {
    expect(redactSecretFields({ previous: { secret: 'whsec_x', version: 2 }, list: [{ signingSecret: 'y' }], secretAvailable: true })).toEqual({
      previous: { secret: '[REDACTED]', version: 2 },
      list: [{ signingSecret: '[REDACTED]' }],
      secretAvailable: true,
    });
  });
});

// ---- issue 10: redaction by value, terminal safety, shell quoting, any-depth JSON

import fc from 'fast-check';
import { shellQuote } from '../../src/output/sanitize.js';
import { stringifyJson } from '../../src/output/json.js';
import { reportError } from '../../src/errors/report.js';
import { CliError } from '../../src/errors/cli-error.js';
import { execFileSync } from 'node:child_process';
import { fakeIO } from '../support/fakes.js';

const SECRET = 'whsec_Ab/+c"d\\e=é';
const jsonEscapes = (s: string) => [
  JSON.stringify(s).slice(1, -1),
  JSON.stringify(s).slice(1, -1).replace(/\//g, '\\/'),
  [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`).join(''),
  JSON.stringify(JSON.stringify(s)).slice(3, -3), // JSON inside JSON
  [...s].map((c, i) => (i % 2 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c === '"' || c === '\\' ? `\\${c}` : c)).join(''),
];

describe('Redactor: by value, in any escaping, across wraps', () => {
  const r = new Redactor();
  r.addSecret(SECRET);
  r.addCredential('tok_ABCDEFGHIJ');

  it.each(jsonEscapes(SECRET).map((e) => [e]))('scrubs the secret written as %s', (form) => {
    expect(r.scrubAll(`before ${form} after`)).toBe(`before [REDACTED] after`);
  });

  it('scrubs a value split by a line wrap (raw or escaped newline, with indentation)', () => {
    for (const wrap of ['\n', '\r\n', '\n    ', '\\n', '\\r\\n', '\n\t']) {
      expect(r.scrubAll(`x tok_ABCDE${wrap}FGHIJ y`), JSON.stringify(wrap)).toBe('x [REDACTED] y');
    }
    expect(r.scrubCredentials('tok_ABC\nDEFGHIJ')).toBe('[REDACTED]');
  });

  it('scrubs a token that an HTTP header can carry but a message shows escaped (a soft hyphen, a C1 control), as escapeInline shows it', () => {
    const r2 = new Redactor();
    const token = 'tok_\u00adABCDEF\u0085GHIJ';
    r2.addToken(token);
    for (const text of [escapeInline(`the server says: ${token} is bad`), JSON.stringify(escapeInline(token))]) expect(r2.scrubAll(text)).not.toContain('ABCDEF');
  });

  it('leaves other text alone', () => {
    expect(r.scrubAll('tok_ABCDEFGHIK and whsec_Ab')).toBe('tok_ABCDEFGHIK and whsec_Ab');
  });

  it('stream(): a value split by a wrap longer than any fixed bound (SGR parameters, backslashes) is found across pieces', () => {
    const value = 'tok_Zq8xW2pL0vN4';
    const r2 = new Redactor();
    r2.addCredential(value);
    for (const wrap of [`\n\u001b[${'0;'.repeat(1000)}m`, `${'\\'.repeat(2000)}n`, ` ${'\u001b[2m'.repeat(300)}│\n`]) {
      const text = `x tok_Zq8x${wrap}W2pL0vN4 y`;
      expect(r2.scrubAll(text)).toBe('x [REDACTED] y');
      // Split right after the wrap, and at every 97th character.
      const at = text.indexOf('W2pL');
      for (const pieces of [[text.slice(0, at), text.slice(at)], text.match(/[\s\S]{1,97}/g)!]) {
        const s = r2.stream();
        expect(pieces.map((p) => s.push(p)).join('') + s.end(), JSON.stringify(wrap.slice(0, 12))).toBe('x [REDACTED] y');
      }
    }
  });

  it('stream(): a value split across pieces is still found; everything is eventually written', () => {
    const s = r.stream();
    const pieces = ['out: tok_A', 'BCDE', 'FGHIJ and \\u0077hsec_Ab', '\\/+c\\"d\\\\e=é end'];
    const text = pieces.map((p) => s.push(p)).join('') + s.end();
    expect(text).toBe('out: [REDACTED] and [REDACTED] end');
    const big = 'y'.repeat(100_000);
    const s2 = r.stream();
    expect((s2.push(big) + s2.end()).length).toBe(100_000);
  });

  it('fuzz: no JSON rendering of a text holding the secret keeps it readable', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.boolean(), (a, b, escapeSlash) => {
        let json = JSON.stringify(`${a}${SECRET}${b}`);
        if (escapeSlash) json = json.replace(/\//g, '\\/');
        const out = r.scrubAll(json);
        expect(out).not.toContain(SECRET);
        expect(JSON.parse(out.replace(/\\\//g, '/'))).not.toContain(SECRET);
      }),
      { numRuns: 300 },
    );
  });
});

describe('redactSecretInBody / redactSecretFields: the key `secret`, not keys that mention it', () => {
  it('blanks `secret` however its key is escaped, keeps secretAvailable, previousSecretExpiresAt, secretFile, fingerprints', () => {
    const body =
      '{"data":{"endpoint":{"previousSecretExpiresAt":"2030-01-01T00:00:00Z"},"s\\u0065cret":"whsec_1","secretAvailable":true,"secretFile":"/x","secretDelivery":[{"fingerprint":"sha256:0011"}]}}';
    const out = redactSecretInBody(body);
    expect(out).not.toContain('whsec_1');
    expect(JSON.parse(out).data).toEqual({
      endpoint: { previousSecretExpiresAt: '2030-01-01T00:00:00Z' },
      secret: '[REDACTED]',
      secretAvailable: true,
      secretFile: '/x',
      secretDelivery: [{ fingerprint: 'sha256:0011' }],
    });
    expect(blankSecretsInBody('{"SECRET" : "a", "\\u0053ecret":"b"}').body).toBe('{"SECRET" : "[REDACTED]", "\\u0053ecret":"[REDACTED]"}');
  });
  it('other copies of a value found under a secret key are blanked too, in any escaping (it is not yet known to the Redactor)', () => {
    const v = 'whsec_copy/+1';
    const body = `{"secret":"${v.replace('/', '\\/')}","note":"was ${[...v].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}","n":"${v}"}`;
    expect(JSON.parse(redactSecretInBody(body))).toEqual({ secret: '[REDACTED]', note: 'was [REDACTED]', n: '[REDACTED]' });
  });
  it('a string that merely contains "secret": is not a key', () => {
    const body = '{"note":"say \\"secret\\":\\"no\\"","secret":"whsec_2"}';
    expect(JSON.parse(redactSecretInBody(body))).toEqual({ note: 'say "secret":"no"', secret: '[REDACTED]' });
  });
  it('redactSecretFields keeps mentions, survives 10 000 levels, keeps __proto__ an ordinary key', () => {
    expect(redactSecretFields({ previousSecretExpiresAt: 't', secretAvailable: false, secret: 's', x: { newSecret: 'n' } })).toEqual({
      previousSecretExpiresAt: 't',
      secretAvailable: false,
      secret: '[REDACTED]',
      x: { newSecret: '[REDACTED]' },
    });
    const deep = JSON.parse('{"a":'.repeat(10_000) + '{"secret":"whsec_deep"}' + '}'.repeat(10_000));
    expect(stringifyJson(redactSecretFields(deep))).not.toContain('whsec_deep');
    const proto = redactSecretFields(JSON.parse('{"__proto__":{"secret":"s"},"k":1}')) as Record<string, unknown>;
    expect(Object.keys(proto)).toEqual(['__proto__', 'k']);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });
});

describe('terminal safety', () => {
  it('escapes bidi controls, zero-width characters and separators, keeps ordinary text', () => {
    const evil = 'a\u202eb\u2066c\u2069d\u200ee\u200ff\u061cg\u200bh\u200ci\u200dj\ufeffk\u2060l\u2028m';
    const out = escapeControl(evil);
    expect(out).toBe('a\\u202eb\\u2066c\\u2069d\\u200ee\\u200ff\\u061cg\\u200bh\\u200ci\\u200dj\\ufeffk\\u2060l\\u2028m');
    expect(escapeInline('line1\r\nline2')).toBe('line1\\r\\nline2');
    expect(escapeControl('café, 漢字, emoji 😀')).toBe('café, 漢字, emoji 😀');
  });

  it('shellQuote: POSIX single quotes that sh reads back as the same word', () => {
    for (const word of ['we_1', "it's", '$(touch /tmp/x)', 'a b\nc', "'", '', '`id`;rm -rf ~']) {
      const echoed = execFileSync('/bin/sh', ['-c', `printf %s ${shellQuote(word)}`], { encoding: 'utf8' });
      expect(echoed).toBe(word);
    }
    expect(shellQuote('we_1')).toBe("'we_1'");
  });
});

describe('stringifyJson', () => {
  it('equals JSON.stringify on parsed JSON, indented or not, except for characters a terminal obeys', () => {
    const unsafe = /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 2), (v, indent) => {
        const ours = stringifyJson(v, indent);
        expect(ours).toBe(JSON.stringify(v, null, indent).replace(unsafe, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
        expect(JSON.parse(ours)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 500 },
    );
  });
  it('escapes C1 controls, which JSON.stringify leaves raw', () => {
    expect(JSON.stringify('a\u009bb')).toBe('"a\u009bb"');
    expect(stringifyJson('a\u009bb\u0085')).toBe('"a\\u009bb\\u0085"');
  });
  it('does not overflow on 100 000 levels', () => {
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(stringifyJson(deep)).toBe('['.repeat(99_999) + '[]' + ']'.repeat(99_999));
  });
});

describe('reportError survives details of any shape', () => {
  const deep = JSON.parse('{"d":'.repeat(10_000) + '"\u009b[31m"' + '}'.repeat(10_000));
  const shapes: unknown[] = [
    deep,
    { fields: deep },
    { fields: [deep, null, 1, 'x', [deep]] },
    { errors: [{ field: { x: deep }, problem: ['p'] }, ...new Array(100_000).fill({ field: 'f', problem: 'p' })] },
    'str',
    42,
    null,
  ];

  it.each(shapes.map((d, i) => [i, d]))('shape %i: one JSON line with C1 escaped, or readable text, never a throw', (_i, details) => {
    const e = new CliError('validation_failed', 'bad\u009b[2J\nnext\u202eline', 9, { details, hint: 'h\r\nx' });
    const jio = fakeIO();
    expect(reportError(e, jio, true, false)).toBe(9);
    const line = jio.err();
    expect(line.endsWith('\n') && !line.slice(0, -1).includes('\n')).toBe(true);
    expect(/[\u0080-\u009f\u202e]/.test(line)).toBe(false);
    expect((JSON.parse(line) as { error: { message: string } }).error.message).toBe('bad\u009b[2J\nnext\u202eline');
    const hio = fakeIO();
    expect(reportError(e, hio, false, false)).toBe(9);
    // eslint-disable-next-line no-control-regex
    expect(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/.test(hio.err())).toBe(false);
    expect(hio.err()).toContain('bad\\x9b[2J\\nnext\\u202eline');
    expect(hio.err().split('\n').length).toBeLessThan(30);
  });
});

describe('a value wrapped in a table cell', () => {
  it('is found across the cell borders, plain or coloured', async () => {
    const { renderEndpoint } = await import('../../src/output/render.js');
    const value = 'whsec_' + 'Q'.repeat(30) + 'Z'.repeat(30);
    const r = new Redactor();
    r.addSecret(value);
    for (const color of [false, true]) {
      const table = renderEndpoint({ id: 'we_1', note: value }, { color, tty: true }, 40);
      expect(table).not.toContain(value); // it was wrapped
      expect(r.scrubAll(table)).not.toMatch(/QQQ|ZZZ/);
      expect(r.scrubAll(table)).toContain('we_1');
    }
  });
});

describe('an absurdly long secret', () => {
  it('is registered and scrubbed as it is, without building a huge pattern', () => {
    const r = new Redactor();
    const long = 'whsec_' + 'A1b2'.repeat(200_000);
    r.addSecret(long);
    expect(r.scrubAll(`x ${long} y`)).toBe('x [REDACTED] y');
    const s = r.stream();
    expect(s.push(`x ${long.slice(0, 500_000)}`) + s.push(`${long.slice(500_000)} y`) + s.end()).toBe('x [REDACTED] y');
    expect(redactSecretInBody(`{"secret":"${long}","n":"${long}"}`)).toBe('{"secret":"[REDACTED]","n":"[REDACTED]"}');
  });
});

describe('Redactor: the plain-search shortcut', () => {
  it('finds exactly what the full patterns find in text with no escape, wrap or border', () => {
    const value = 'tok_Zq8xW2pL0vN4';
    const r = new Redactor();
    r.addCredential(value);
    // Pieces that may sit around and inside copies of the value, none of them an escape or a wrap.
    const piece = fc.constantFrom(value, value.slice(0, 7), value.slice(5), ' ', '{"a":', '"', '}', 'x', 'tok_', '", "b": 1');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.boolean(), (parts, finalNewline) => {
        const text = parts.join('') + (finalNewline ? '\n' : '');
        const full = text.replace(valuePattern(value), REDACTED);
        expect(r.scrubCredentials(text)).toBe(full);
        expect(r.scrubAll(text)).toBe(full);
      }),
      { numRuns: 300 },
    );
  });

  it('still finds escaped and wrapped copies (the shortcut is not taken)', () => {
    const value = 'tok_Zq8xW2pL0vN4';
    const r = new Redactor();
    r.addCredential(value);
    expect(r.scrubCredentials('{"t":"tok_Zq8x\\u00572pL0vN4"}\n')).toBe(`{"t":"${REDACTED}"}\n`);
    expect(r.scrubCredentials('a tok_Zq8xW2p\n   L0vN4 b')).toBe(`a ${REDACTED} b`);
  });
});

describe('Redactor: a value is looked for only where the text shows each of its units in some form', () => {
  const unitEscape = (c: string, upper: boolean) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')[upper ? 'toUpperCase' : 'toLowerCase']()}`;

  it('mayShow: a unit counts as shown raw, as its short escape or as \\uXXXX, after however many backslashes', () => {
    expect(mayShow('a\\\\n', 'a\n')).toBe(true); // a, then a backslash run ending in n
    expect(mayShow('\\\\u0057 \\"', 'W"')).toBe(true);
    expect(mayShow('\\U0057', 'W')).toBe(false); // \U is no escape
    expect(mayShow('\\u005', 'P')).toBe(false); // three hex digits
    expect(mayShow('tok_ABC\\nDEF', 'tok_ABCDEF')).toBe(true);
    expect(mayShow('tok_ABC\\nDEF', 'tok_ABCDEG')).toBe(false);
  });

  it('finds exactly what the full pattern finds, in any escaping and across wraps (fuzz)', () => {
    // One value with a unit of each short escape, one of letters and digits only.
    for (const value of ['tok_Zq8xW2pL0vN4', 'a/b"c\\d\ne_f\tg']) {
      const r = new Redactor();
      r.addCredential(value);
      const units = value.split('');
      const piece = fc.oneof(
        fc.constantFrom(value, value.slice(0, 5), value.slice(4), JSON.stringify(value).slice(1, -1), JSON.stringify(JSON.stringify(value)).slice(3, -3)),
        fc.tuple(fc.constantFrom(...units), fc.boolean()).map(([c, upper]) => unitEscape(c, upper)),
        fc.constantFrom(...units),
        fc.constantFrom('\n', '\\n', '\\\\n', '\r\n', '\n    ', ' │\n│ ', '\\', '\\\\', 'u', '005', 'x', ' ', '"', '{"a":"', '"}'),
      );
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 14 }), (parts) => {
          const text = parts.join('');
          const full = text.replace(valuePattern(value), REDACTED);
          expect(r.scrubCredentials(text)).toBe(full);
          expect(r.scrubAll(text)).toBe(full);
        }),
        { numRuns: 400 },
      );
    }
  });

  it('a multi-line message that cannot hold a known value is returned as it is, without building a pattern', () => {
    // Each run has a Redactor of its own, so each pays for the patterns it builds.
    const runs = Array.from({ length: 20 }, (_, run) => {
      const r = new Redactor();
      // Three values, each with a unit the message never shows (an uppercase Q).
      for (let i = 0; i < 3; i++) r.addCredential(`tok_Q${run}_${i}${'x'.repeat(30)}`);
      return r;
    });
    const message = 'chatctl: error: the server refused the version\n  hint: re-read it with chatctl webhooks get\n';
    // Building and first running a pattern takes 10 to 30 ms: 60 of them, 600 ms
    // or more. Looking at the text first costs a few microseconds each. Counted,
    // not timed: no RegExp is built.
    const built = countRegExps(() => {
      for (const r of runs) expect(r.scrubAll(message)).toBe(message);
    });
    expect(built).toBe(0);
    // The control: the same message holding one of the values builds its pattern.
    const holding = `${message}  value: tok_Q0_0${'x'.repeat(30)}\n`;
    expect(countRegExps(() => expect(runs[0]!.scrubAll(holding)).not.toContain('tok_Q0_0'))).toBeGreaterThan(0);
  });
});
