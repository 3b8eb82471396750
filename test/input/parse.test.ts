import { describe, expect, it } from 'vitest';
import { checkEndpointId, checkIdempotencyKey, parseCreate, parseExpectedVersion, parseRotate, splitEvents } from '../../src/input/parse.js';
import { EVENT_TYPES, scopedPath } from '../../src/api/schemas.js';
import { CliError } from '../../src/errors/cli-error.js';

const usage = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    expect((e as CliError).exitCode).toBe(2);
    return (e as CliError).message;
  }
  throw new Error('expected a usage error');
};

const ok = { name: 'n', url: 'https://example.com/h', events: ['chat.message.created.v1'] };

describe('create input', () => {
  it('builds exactly the DTO, in spec order', () => {
    expect(JSON.stringify(parseCreate(ok))).toBe('{"name":"n","destinationUrl":"https://example.com/h","eventTypes":["chat.message.created.v1"]}');
  });
  it('name: 1 to 80 characters, counted as code points', () => {
    expect(parseCreate({ ...ok, name: 'x'.repeat(80) }).name).toHaveLength(80);
    expect(parseCreate({ ...ok, name: '😀'.repeat(80) }).name).toHaveLength(160);
    expect(usage(() => parseCreate({ ...ok, name: 'x'.repeat(81) }))).toContain('--name');
    expect(usage(() => parseCreate({ ...ok, name: '' }))).toContain('--name');
  });
  it('url: absolute http(s), at most 2048', () => {
    const u = (n: number) => 'https://example.com/' + 'a'.repeat(n - 'https://example.com/'.length);
    expect(parseCreate({ ...ok, url: u(2048) }).destinationUrl).toHaveLength(2048);
    expect(usage(() => parseCreate({ ...ok, url: u(2049) }))).toContain('--url');
    for (const bad of ['ftp://x.example', '/relative', 'example.com', 'https://', 'mailto:a@b']) usage(() => parseCreate({ ...ok, url: bad }));
    expect(parseCreate({ ...ok, url: 'http://example.com' }).destinationUrl).toBe('http://example.com');
  });
  it('events: the 14, repeated or comma-separated, duplicates once', () => {
    expect(splitEvents(['chat.message.created.v1,chat.message.updated.v1', ' chat.message.created.v1 '])).toEqual(['chat.message.created.v1', 'chat.message.updated.v1']);
    expect(parseCreate({ ...ok, events: [...EVENT_TYPES] }).eventTypes).toHaveLength(14);
    expect(usage(() => parseCreate({ ...ok, events: ['chat.message.created.v2'] }))).toContain('chat.message.created.v2');
    usage(() => parseCreate({ ...ok, events: ['a,,b'] }));
  });
});

describe('versions and modes', () => {
  it.each(['1', '42', '9007199254740991'])('accepts %s', (v) => expect(parseExpectedVersion(v)).toBe(Number(v)));
  it.each(['0', '-1', '+1', '1.5', '1e3', '01', ' 1', 'abc', '', '9007199254740992', '99999999999999999999'])('refuses %j', (v) => {
    usage(() => parseExpectedVersion(v));
  });
  it('mode is overlap or immediate, exactly', () => {
    expect(parseRotate({ expectedVersion: '3', mode: 'overlap' })).toEqual({ expectedVersion: 3, mode: 'overlap' });
    usage(() => parseRotate({ expectedVersion: '3', mode: 'Immediate' }));
  });
});

describe('ids, keys and paths', () => {
  it('refuses path tricks and empty ids', () => {
    for (const id of ['', '.', '..']) usage(() => checkEndpointId(id));
    expect(checkEndpointId('we 1/..')).toBe('we 1/..');
  });
  it('encodes every segment', () => {
    expect(scopedPath({ organizationId: 'a/b', applicationId: 'x y', environmentKey: 'é' }, 'webhook-endpoints', 'we 1/..', 'reactivate')).toBe(
      '/v1/organizations/a%2Fb/applications/x%20y/environments/%C3%A9/webhook-endpoints/we%201%2F..%2Freactivate'.replace('%2Freactivate', '/reactivate'),
    );
  });
  it('idempotency keys are header-safe', () => {
    expect(checkIdempotencyKey('abc-123')).toBe('abc-123');
    for (const k of ['', 'has space', 'x'.repeat(256), 'new\nline', 'é']) usage(() => checkIdempotencyKey(k));
  });
});
