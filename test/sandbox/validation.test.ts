import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, LIMITS } from '../../src/api/schemas.js';
import { checkCreateBody, checkExpectedVersionBody, checkIdempotencyKey, checkRotateBody, parseJsonBody, type Checked } from '../../src/sandbox/protocol.js';

const good = { name: 'n', destinationUrl: 'https://example.com/h', eventTypes: ['chat.message.created.v1'] };
const fields = (c: Checked<unknown>) => (c.ok ? [] : c.problems.map((p) => p.field));

describe('checkCreateBody', () => {
  it('accepts a valid body', () => expect(checkCreateBody(good)).toEqual({ ok: true, value: good }));

  it('counts name length in code points', () => {
    expect(checkCreateBody({ ...good, name: '😀'.repeat(LIMITS.nameMax) }).ok).toBe(true);
    expect(fields(checkCreateBody({ ...good, name: '😀'.repeat(LIMITS.nameMax + 1) }))).toEqual(['name']);
    expect(fields(checkCreateBody({ ...good, name: '' }))).toEqual(['name']);
  });

  it('limits destinationUrl and requires an absolute URL', () => {
    const long = 'https://example.com/' + 'a'.repeat(LIMITS.destinationUrlMax - 20);
    expect(checkCreateBody({ ...good, destinationUrl: long }).ok).toBe(true);
    expect(fields(checkCreateBody({ ...good, destinationUrl: long + 'a' }))).toEqual(['destinationUrl']);
    expect(fields(checkCreateBody({ ...good, destinationUrl: '/relative' }))).toEqual(['destinationUrl']);
    expect(fields(checkCreateBody({ ...good, destinationUrl: 42 }))).toEqual(['destinationUrl']);
    // Not https is a destination rule (422), not a validation error.
    expect(checkCreateBody({ ...good, destinationUrl: 'http://example.com' }).ok).toBe(true);
  });

  it('wants a non-empty list of distinct known event types', () => {
    expect(checkCreateBody({ ...good, eventTypes: [...EVENT_TYPES] }).ok).toBe(true);
    for (const eventTypes of [[], ['chat.nope.v1'], ['chat.message.created.v1', 'chat.message.created.v1'], 'chat.message.created.v1', [1]])
      expect(fields(checkCreateBody({ ...good, eventTypes }))).toEqual(['eventTypes']);
  });

  it('names every bad, missing and unknown field', () => {
    const c = checkCreateBody({ name: 5, extra: true, __proto__x: 1 });
    expect(c.ok).toBe(false);
    if (!c.ok)
      expect(c.problems).toEqual([
        { field: 'name', location: 'body', problem: 'must be a string' },
        { field: 'destinationUrl', location: 'body', problem: 'is required' },
        { field: 'eventTypes', location: 'body', problem: 'is required' },
        { field: 'extra', location: 'body', problem: 'is not an allowed field' },
        { field: '__proto__x', location: 'body', problem: 'is not an allowed field' },
      ]);
  });

  it('refuses a "__proto__" key from JSON', () => {
    expect(fields(checkCreateBody(JSON.parse('{"__proto__":{},"name":"n","destinationUrl":"https://a.b","eventTypes":["chat.message.created.v1"]}')))).toEqual(['__proto__']);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', 'x'],
    ['a number', 3],
  ])('wants an object, not %s', (_what, body) => expect(fields(checkCreateBody(body))).toEqual(['body']));
});

describe('checkRotateBody and checkExpectedVersionBody', () => {
  it.each([1, LIMITS.versionMax, 1.0])('accept expectedVersion %s', (v) => {
    expect(checkRotateBody({ expectedVersion: v, mode: 'overlap' }).ok).toBe(true);
    expect(checkExpectedVersionBody({ expectedVersion: v }).ok).toBe(true);
  });
  it.each([0, -1, 1.5, '1', null, LIMITS.versionMax + 1, 1e300])('refuse expectedVersion %j', (v) => {
    expect(fields(checkRotateBody({ expectedVersion: v, mode: 'immediate' }))).toEqual(['expectedVersion']);
    expect(fields(checkExpectedVersionBody({ expectedVersion: v }))).toEqual(['expectedVersion']);
  });
  it('wants mode overlap or immediate, and nothing else in the body', () => {
    expect(fields(checkRotateBody({ expectedVersion: 1, mode: 'later' }))).toEqual(['mode']);
    expect(fields(checkRotateBody({ expectedVersion: 1 }))).toEqual(['mode']);
    expect(fields(checkExpectedVersionBody({ expectedVersion: 1, mode: 'overlap' }))).toEqual(['mode']);
  });
});

describe('checkIdempotencyKey', () => {
  it('requires 1 to 255 visible ASCII characters', () => {
    expect(checkIdempotencyKey('3f2a-uuid')).toBeNull();
    expect(checkIdempotencyKey('k'.repeat(255))).toBeNull();
    expect(checkIdempotencyKey(undefined)?.problem).toBe('is required');
    expect(checkIdempotencyKey('')?.problem).toBe('is required');
    expect(checkIdempotencyKey('k'.repeat(256))?.field).toBe('Idempotency-Key');
    expect(checkIdempotencyKey('a b')?.location).toBe('header');
  });
});

describe('parseJsonBody', () => {
  const raw = (contentType: string | undefined, text: string, tooLarge = false) => ({
    contentType,
    bytes: Buffer.from(text),
    tooLarge,
  });
  it('accepts application/json with parameters', () => {
    expect(parseJsonBody(raw('application/json', '{"a":1}'))).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonBody(raw('Application/JSON; charset=utf-8', '[1]'))).toEqual({ ok: true, value: [1] });
  });
  it.each([
    ['none', undefined],
    ['text/plain', 'text/plain'],
    ['application/jsonx', 'application/jsonx'],
    ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
  ])('refuses content type %s', (_what, ct) => expect(fields(parseJsonBody(raw(ct, '{}')))).toEqual(['Content-Type']));
  it('refuses oversized, empty, non-UTF-8 and unparseable bodies', () => {
    expect(fields(parseJsonBody(raw('application/json', '{}', true)))).toEqual(['body']);
    expect(fields(parseJsonBody(raw('application/json', 'x'.repeat(64 * 1024 + 1))))).toEqual(['body']);
    expect(fields(parseJsonBody(raw('application/json', '')))).toEqual(['body']);
    expect(fields(parseJsonBody(raw('application/json', '{"a":')))).toEqual(['body']);
    expect(fields(parseJsonBody({ contentType: 'application/json', bytes: Buffer.from([0x22, 0xff, 0x22]), tooLarge: false }))).toEqual(['body']);
  });
});
