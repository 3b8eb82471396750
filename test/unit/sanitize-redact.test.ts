import { describe, expect, it } from 'vitest';
import { escapeControl, escapeInline } from '../../src/output/sanitize.js';
import { Redactor, redactHeaders, redactSecretFields, redactSecretInBody } from '../../src/output/redact.js';

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
});

describe('redactHeaders / redactSecretInBody', () => {
  it('hides Authorization and the anti-forgery value', () => {
    expect(redactHeaders({ Authorization: 'Bearer x', 'x-service-csrf': '1', Origin: 'https://a' })).toEqual({
      Authorization: 'Bearer [REDACTED]',
      'x-service-csrf': '[REDACTED]',
      Origin: 'https://a',
    });
  });
  it('blanks the secret in a body, escaped quotes included', () => {
    expect(redactSecretInBody('{"data":{"secret":"wh\\"sec","x":1}}')).toBe('{"data":{"secret":"[REDACTED]","x":1}}');
    expect(redactSecretInBody('{"secret":null}')).toBe('{"secret":null}');
  });
});

describe('secret-named fields', () => {
  it('blanks every secret-named string, including one cut off before its closing quote', () => {
    expect(redactSecretInBody('{"previousSecret":"whsec_old","secretAvailable":true}')).toBe('{"previousSecret":"[REDACTED]","secretAvailable":true}');
    expect(redactSecretInBody('{"data":{"secret":"whsec_cut_off_here')).toBe('{"data":{"secret":"[REDACTED]"');
    expect(redactSecretInBody('{"data":{"secret":"whsec_ends_in_escape\\')).toBe('{"data":{"secret":"[REDACTED]"');
  });
  it('redactSecretFields walks objects and arrays', () => {
    expect(redactSecretFields({ previous: { secret: 'whsec_x', version: 2 }, list: [{ signingSecret: 'y' }], secretAvailable: true })).toEqual({
      previous: { secret: '[REDACTED]', version: 2 },
      list: [{ signingSecret: '[REDACTED]' }],
      secretAvailable: true,
    });
  });
});
