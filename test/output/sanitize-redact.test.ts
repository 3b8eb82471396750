import { describe, expect, it } from 'vitest';
import { escapeControl, escapeInline, shellQuote, stringifyJson } from '../../src/output/json.js';
import { redactHeaders, redactSecretFields, redactSecretsInBody } from '../../src/output/scrub.js';

/** How many RegExp objects `fn` builds with the constructor (literals are not counted). */
function _countRegExps(fn: () => void): number {
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

/** The traced body alone. */
const redactSecretInBody = (body: string) => redactSecretsInBody(body).body;

describe('redactHeaders / redactSecretsInBody', () => {
  it('hides Authorization and the anti-forgery value', () => {
    expect(redactHeaders({ Authorization: 'Bearer x', 'x-service-csrf': '1', Origin: 'https://a' })).toEqual({
      Authorization: 'Bearer [REDACTED]',
      'x-service-csrf': '[REDACTED]',
      Origin: 'https://a',
    });
  });
  it('blanks the secret in a body, escaped quotes included', () => {
    expect(redactSecretsInBody('{"data":{"secret":"wh\\"sec","x":1}}').body).toBe('{"data":{"secret":"[REDACTED]","x":1}}');
    expect(redactSecretsInBody('{"secret":null}').body).toBe('{"secret":null}');
  });
  // A hostile review found {"secret":{"value":"whsec_…"}} traced in clear by
  // --debug, then keys and numbers inside such an object.
  it('blanks an object or array under a secret key whole; each string in it, key or value, wherever else it appears', () => {
    expect(redactSecretsInBody('{"data":{"secret":{"value":"whsec_nested_1","alg":"hmac"},"v":"ok"}}').body).toBe('{"data":{"secret":"[REDACTED]","v":"ok"}}');
    expect(redactSecretsInBody('{"secret":["whsec_a1b2c3", {"k":"whsec_d4e5f6"}], "x":"kept"}').body).toBe('{"secret":"[REDACTED]", "x":"kept"}');
    expect(redactSecretsInBody('{"secret":{"whsec_KEYSECRET_1234567890":true,"n":12345678901234567890},"y":"kept"}').body).toBe('{"secret":"[REDACTED]","y":"kept"}');
    expect(redactSecretsInBody('{"secret":{"value":"a}b]\\"c","n":1},"y":"kept"}').body).toBe('{"secret":"[REDACTED]","y":"kept"}');
    expect(redactSecretsInBody('{"secret":{"value":"whsec_cut_off').body).toBe('{"secret":"[REDACTED]"');
    expect(redactSecretInBody('{"secret":' + '['.repeat(20000) + '"whsec_deep_inside"' + ']'.repeat(20000) + ',"z":1}')).toBe('{"secret":"[REDACTED]","z":1}');
    expect(redactSecretsInBody('{"secret":{"value":"whsec_copied_twice","whsec_key_copy_1":1},"note":"was whsec_copied_twice","k":{"whsec_key_copy_1":1}}').body).toBe(
      '{"secret":"[REDACTED]","note":"was [REDACTED]","k":{"[REDACTED]":1}}',
    );
  });
});

describe('secret-named fields', () => {
  it('blanks every secret-named string, including one cut off before its closing quote', () => {
    expect(redactSecretsInBody('{"previousSecret":"whsec_old","secretAvailable":true}').body).toBe('{"previousSecret":"[REDACTED]","secretAvailable":true}');
    expect(redactSecretsInBody('{"data":{"secret":"whsec_cut_off_here').body).toBe('{"data":{"secret":"[REDACTED]"');
    expect(redactSecretsInBody('{"data":{"secret":"whsec_ends_in_escape\\').body).toBe('{"data":{"secret":"[REDACTED]"');
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
import { reportError } from '../../src/errors/explain.js';
import { CliError } from '../../src/errors/cli-error.js';
import { execFileSync } from 'node:child_process';
import { fakeIO } from '../support/fakes.js';

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
    expect(redactSecretsInBody('{"SECRET" : "a", "\\u0053ecret":"b"}').body).toBe('{"SECRET" : "[REDACTED]", "\\u0053ecret":"[REDACTED]"}');
  });
  it('other copies of a value found under a secret key are blanked too, in any escaping (it is not yet known to the Scrubber)', () => {
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

describe('an absurdly long secret under a secret key', () => {
  it('is redacted, and its copies scrubbed', () => {
    const long = 'whsec_' + 'A1b2'.repeat(200_000);
    expect(redactSecretInBody(`{"secret":"${long}","n":"${long}"}`)).toBe('{"secret":"[REDACTED]","n":"[REDACTED]"}');
  });
});
