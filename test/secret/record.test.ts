// The record (src/secret/record.ts): written before the request, the answer
// appended as it arrives, found by the whole identity, kept or retired.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findLeft, markSuperseded, pruneSuperseded, readRecord, recordPaths, removeLeft, SUPERSEDED_KEPT_MS, WriteAheadRecord, type RecordedRequest } from '../../src/secret/record.js';
import { EndpointFacts } from '../../src/secret/facts.js';

let cfg: string;
beforeEach(() => {
  cfg = mkdtempSync(join(tmpdir(), 'chatctl-record-'));
});
afterEach(() => rmSync(cfg, { recursive: true, force: true }));

const req = (key: string, over: Partial<RecordedRequest> = {}): RecordedRequest => ({
  op: 'rotate',
  scope: 'org_1/app_1/env_1',
  endpointId: 'we_1',
  idempotencyKey: key,
  mode: 'overlap',
  expectedVersion: 3,
  ...over,
});
const ANSWER = JSON.stringify({ data: { endpoint: { id: 'we_1', version: 4 }, secret: 'whsec_abc', secretAvailable: true }, meta: { requestId: 'r' } });

describe('identity', () => {
  it('keys that differ only in a character a file name cannot hold, or after their first 64 characters, never share a record', () => {
    const names = new Set(['job:42', 'job_42', 'job/42', `${'k'.repeat(64)}-a`, `${'k'.repeat(64)}-b`].map((k) => recordPaths(cfg, req(k)).record));
    expect(names.size).toBe(5);
  });

  it('the same key on another endpoint, in another scope, or for a create is another record', () => {
    const paths = [req('k'), req('k', { endpointId: 'we_2' }), req('k', { scope: 'org_2/app_1/env_1' }), req('k', { op: 'create', endpointId: null })].map((r) => recordPaths(cfg, r).record);
    expect(new Set(paths).size).toBe(4);
  });

  it('a name is readable (the endpoint first) and safe, whatever the id holds', () => {
    const p = recordPaths(cfg, req('k', { endpointId: '../../we 1' })).record;
    expect(p.startsWith(join(cfg, 'recovered') + '/')).toBe(true);
    expect(p.slice(join(cfg, 'recovered').length + 1)).toMatch(/^\.\._\.\._we_1-[0-9a-f]{16}-[0-9a-f]{32}\.record$/);
  });
});

describe('write-ahead', () => {
  it('exists (0600 in a 0700 folder) with its request before anything is sent; the answer is appended as it arrives', () => {
    const rec = WriteAheadRecord.open(cfg, req('k-1'), new Date(0));
    expect(statSync(rec.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(cfg, 'recovered')).mode & 0o777).toBe(0o700);
    expect(readRecord(rec.path)).toMatchObject({
      header: { record: 1, op: 'rotate', endpointId: 'we_1', idempotencyKey: 'k-1', mode: 'overlap', expectedVersion: 3, startedAt: '1970-01-01T00:00:00.000Z' },
      answer: undefined,
    });
    rec.tap.head(200, { 'content-length': String(ANSWER.length) });
    rec.tap.chunk(Buffer.from(ANSWER.slice(0, 10)));
    // A kill now leaves what arrived: the status and the first bytes.
    expect(readRecord(rec.path)!.answer).toMatchObject({ status: 200, contentLength: ANSWER.length });
    expect(readRecord(rec.path)!.answer!.body.toString()).toBe(ANSWER.slice(0, 10));
    rec.tap.chunk(Buffer.from(ANSWER.slice(10)));
    expect(readRecord(rec.path)!.answer!.body.toString()).toBe(ANSWER);
    expect(readFileSync(rec.path, 'utf8')).toContain('whsec_abc');
  });

  it("an attempt's answer replaces the one before it (a 503 is no part of the 200 after it)", () => {
    const rec = WriteAheadRecord.open(cfg, req('k-1'), new Date(0));
    rec.tap.head(503, {});
    rec.tap.chunk(Buffer.from('{"error":{"code":"service_unavailable"}} and more bytes than the next answer'));
    rec.tap.head(200, { 'content-encoding': 'gzip' });
    rec.tap.chunk(Buffer.from('xy'));
    expect(readRecord(rec.path)!.answer).toMatchObject({ status: 200, contentEncoding: 'gzip', contentLength: null });
    expect(readRecord(rec.path)!.answer!.body.toString()).toBe('xy');
  });

  it('raw: the answer as the socket delivered it is on disk at once, read back as HTTP; a new attempt (at 0) replaces a longer earlier one', () => {
    const rec = WriteAheadRecord.open(cfg, req('k-raw'), new Date(0));
    const wire = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${ANSWER.length}\r\n\r\n${ANSWER}`);
    rec.tap.raw!(Buffer.from('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 400\r\n\r\n' + 'x'.repeat(400)), 0);
    rec.tap.raw!(wire.subarray(0, 20), 0);
    expect(readRecord(rec.path)!.answer).toMatchObject({ status: 200, whole: false });
    rec.tap.raw!(wire.subarray(20), 20);
    const got = readRecord(rec.path)!.answer!;
    expect(got).toMatchObject({ status: 200, contentLength: ANSWER.length, whole: true });
    expect(got.body.toString()).toBe(ANSWER);
    expect(readFileSync(rec.path).subarray(readRecord(rec.path)!.headerBytes).equals(wire)).toBe(true);
    rec.close();
  });

  it('re-opened for the same request (a re-sent key), it keeps what it holds; another request under its name is refused', () => {
    const first = WriteAheadRecord.open(cfg, req('k-1'), new Date(0));
    first.tap.head(200, {});
    first.close();
    const again = WriteAheadRecord.open(cfg, req('k-1'), new Date(5000));
    expect(again.path).toBe(first.path);
    expect(again.answer()).toMatchObject({ status: 200 });
    expect(again.header.startedAt).toBe('1970-01-01T00:00:00.000Z');
    again.close();
    writeFileSync(first.path, `${JSON.stringify({ record: 1, ...req('other') })}\n`);
    expect(() => WriteAheadRecord.open(cfg, req('k-1'), new Date(0))).toThrow(/not a record of this request/);
  });

  it('retire removes it; keep leaves the secret alone (0600, durable) in its place', () => {
    const a = WriteAheadRecord.open(cfg, req('k-1'), new Date(0));
    a.retire();
    expect(existsSync(a.path)).toBe(false);
    const b = WriteAheadRecord.open(cfg, req('k-2'), new Date(0));
    b.tap.head(200, {});
    b.tap.chunk(Buffer.from(ANSWER));
    const kept = b.keep('whsec_abc');
    expect(kept).toEqual({ path: recordPaths(cfg, req('k-2')).secret });
    expect(readFileSync((kept as { path: string }).path, 'utf8')).toBe('whsec_abc');
    expect(statSync((kept as { path: string }).path).mode & 0o777).toBe(0o600);
    expect(existsSync(b.path)).toBe(false);
    expect(findLeft(cfg, req('k-2'))).toMatchObject({ kind: 'secret' });
    removeLeft(cfg, req('k-2'));
    expect(readdirSync(join(cfg, 'recovered'))).toEqual([]);
  });

  it('when the secret cannot be kept alone, the record that holds the whole answer is where it stays', () => {
    const b = WriteAheadRecord.open(cfg, req('k-3'), new Date(0));
    b.tap.head(200, {});
    b.tap.chunk(Buffer.from(ANSWER));
    chmodSync(join(cfg, 'recovered'), 0o500);
    try {
      const kept = b.keep('whsec_abc');
      // Root writes anyway: then the secret was kept alone.
      if (process.geteuid?.() === 0) expect(kept).toEqual({ path: recordPaths(cfg, req('k-3')).secret });
      else expect(kept).toEqual({ path: b.path });
    } finally {
      chmodSync(join(cfg, 'recovered'), 0o700);
    }
  });
});

describe('supersession, from the facts ordered by version', () => {
  const SCOPE = 'org_1/app_1/env_1';
  const applied = (facts: EndpointFacts, key: string, version: number, at = 'T') => facts.add({ f: 'applied', at, key, op: 'rotate', version });

  it('a later rotation of the endpoint with another key supersedes a change of a lower version; its own key never does', () => {
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    expect(facts.supersedes('k-old', 4)).toBeUndefined();
    applied(facts, 'k-new', 5, '2026-11-27T00:00:00.000Z');
    expect(EndpointFacts.read(cfg, SCOPE, 'we_1').supersedes('k-old', 4)).toMatchObject({ version: 5, key: 'k-new' });
    expect(EndpointFacts.read(cfg, SCOPE, 'we_1').supersedes('k-old', 5)).toBeUndefined();
    expect(EndpointFacts.read(cfg, SCOPE, 'we_1').supersedes('k-new', 4)).toBeUndefined();
    // Another endpoint, or another scope, is not touched by it.
    expect(EndpointFacts.read(cfg, SCOPE, 'we_2').lastApplied()).toBeUndefined();
    expect(EndpointFacts.read(cfg, 'org_2/app_1/env_1', 'we_1').lastApplied()).toBeUndefined();
  });

  it('a replay of an older request (a lower version) appended later never lowers the last applied version', () => {
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    applied(facts, 'k-new', 3);
    applied(facts, 'k-old', 2);
    const read = EndpointFacts.read(cfg, SCOPE, 'we_1');
    expect(read.lastApplied()).toMatchObject({ version: 3, key: 'k-new' });
    // The newer kept secret stays deliverable: its own version (from its fact) is the highest.
    expect(read.supersedes('k-new', null)).toBeUndefined();
    expect(read.supersedes('k-old', null)).toMatchObject({ version: 3 });
  });

  it('a restored older log file (any mtime) decides by the versions it holds, never by when it was written', () => {
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    applied(facts, 'k-2', 2);
    const old = readFileSync(facts.path);
    applied(facts, 'k-3', 3);
    // What `cp` without -p of a backup does: older content, a newer mtime.
    writeFileSync(facts.path, old);
    const read = EndpointFacts.read(cfg, SCOPE, 'we_1');
    expect(read.supersedes('k-3', 3)).toBeUndefined();
  });

  it('a change whose version is not known is superseded by nothing: its key is re-sent and the replay decides', () => {
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    applied(facts, 'k-new', 5);
    expect(EndpointFacts.read(cfg, SCOPE, 'we_1').supersedes('k-unknown', null)).toBeUndefined();
  });

  it("marking: only the superseded request's own files are renamed; the newer request and other endpoints stay, and age removes marked files", () => {
    WriteAheadRecord.open(cfg, req('k-old'), new Date(0)).keep('whsec_old');
    WriteAheadRecord.open(cfg, req('k-x', { endpointId: 'we_2' }), new Date(0)).close();
    const newer = WriteAheadRecord.open(cfg, req('k-new'), new Date(0));
    const marked = markSuperseded(cfg, req('k-old'));
    expect(marked).toEqual([`${recordPaths(cfg, req('k-old')).secret}.superseded`]);
    expect(findLeft(cfg, req('k-old'))).toBeUndefined();
    expect(existsSync(newer.path)).toBe(true);
    expect(findLeft(cfg, req('k-x', { endpointId: 'we_2' }))).toBeDefined();
    const mtime = statSync(marked[0]!).mtimeMs;
    pruneSuperseded(cfg, mtime + SUPERSEDED_KEPT_MS - 3_600_000);
    expect(existsSync(marked[0]!)).toBe(true);
    pruneSuperseded(cfg, mtime + SUPERSEDED_KEPT_MS + 3_600_000);
    expect(existsSync(marked[0]!)).toBe(false);
    expect(existsSync(newer.path)).toBe(true);
  });
});

describe('marking keeps a superseded copy its 30 days', () => {
  it('counted from the marking, not from when the copy was written: one kept 40 days ago is not removed by the next run', () => {
    WriteAheadRecord.open(cfg, req('k-old'), new Date(0)).keep('whsec_old');
    const kept = recordPaths(cfg, req('k-old')).secret;
    const longAgo = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    utimesSync(kept, longAgo, longAgo);
    const [marked] = markSuperseded(cfg, req('k-old'));
    pruneSuperseded(cfg, Date.now());
    expect(existsSync(marked!)).toBe(true);
  });
});

describe('a record without a readable header', () => {
  it('(a kill between creating it and writing its header) is "sent, outcome unknown": opened again with its header, never refused', () => {
    const paths = recordPaths(cfg, req('k-cut'));
    WriteAheadRecord.open(cfg, req('k-other'), new Date(0)).close(); // makes recovered/
    writeFileSync(paths.record, '', { mode: 0o600 });
    const again = WriteAheadRecord.open(cfg, req('k-cut'), new Date(0));
    again.close();
    expect(readRecord(paths.record)?.header).toMatchObject({ idempotencyKey: 'k-cut', endpointId: 'we_1' });
    writeFileSync(paths.record, '{"record":1,"idempo');
    WriteAheadRecord.open(cfg, req('k-cut'), new Date(0)).close();
    expect(readRecord(paths.record)?.header).toMatchObject({ idempotencyKey: 'k-cut' });
  });
});
