import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { foldRecord, JournalWriter, loadJournal, lockJournal, sameScope, type JournalRecord, type Prior } from '../../../../src/commands/webhooks/rotate-from/journal.js';
import { isCliError } from '../../../../src/errors/cli-error.js';
import { parseRecord, systemLockHost } from '../../../../src/system/lock.js';
import { deadPid } from '../../../support/run.js';

const dir = mkdtempSync(join(tmpdir(), 'chatctl-journal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `j${++n}.ndjson`);

const fold = (records: JournalRecord[]) => {
  const m = new Map<string, Prior>();
  for (const r of records) foldRecord(m, r);
  return m;
};

const send = (id: string, key: string, ev = 1): JournalRecord => ({ t: 'send', id, key, ev, mode: 'overlap' });

/** The lock's clock: real time, a sleep that only counts. */
const slept: number[] = [];
const ctx = { now: () => Date.now(), sleep: async (ms: number) => void slept.push(ms), random: () => 0.5, signal: new AbortController().signal };
const lock = (path: string) => lockJournal(path, ctx);
const host = systemLockHost(ctx);

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('what a re-run makes of the records', () => {
  it.each<[string, JournalRecord[], Partial<Prior> | undefined]>([
    ['nothing: a fresh item', [], undefined],
    ['send only: outcome unknown, re-send with that key', [send('a', 'k1')], { state: 'sent', key: 'k1', ev: 1, mode: 'overlap' }],
    ['send, applied: rotated, delivery not confirmed', [send('a', 'k1'), { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' }], { state: 'applied', version: 2, fp: 'sha256:f' }],
    [
      'send, applied, ok: done',
      [
        send('a', 'k1'),
        { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' },
        { t: 'ok', id: 'a', key: 'k1', version: 2, fp: 'sha256:f', delivery: [{ to: 'file:/x', fingerprint: 'sha256:f' }], requestId: 'r' },
      ],
      { state: 'ok', requestId: 'r', delivery: [{ to: 'file:/x', fingerprint: 'sha256:f' }] },
    ],
    ['refused by the server: try afresh', [send('a', 'k1'), { t: 'fail', id: 'a', key: 'k1', applied: false, exitCode: 7, code: 'webhook_endpoint_version_conflict' }], { state: 'refused' }],
    ['unknown outcome (timeout): re-send with that key', [send('a', 'k1'), { t: 'fail', id: 'a', key: 'k1', applied: null, exitCode: 12, code: 'timeout' }], { state: 'sent', key: 'k1' }],
    [
      'applied, not delivered, kept in recovered/',
      [
        send('a', 'k1'),
        { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' },
        { t: 'fail', id: 'a', key: 'k1', applied: true, exitCode: 13, code: 'secret_not_delivered', recovered: '/r/a.secret' },
      ],
      { state: 'applied', recovered: '/r/a.secret', fp: 'sha256:f' },
    ],
    [
      'a later run tried afresh after a refusal: its key wins',
      [
        send('a', 'k1'),
        { t: 'fail', id: 'a', key: 'k1', applied: false, exitCode: 7, code: 'x' },
        send('a', 'k2', 3),
        { t: 'ok', id: 'a', key: 'k1', version: 9, fp: 'sha256:stale', delivery: [], requestId: 'r' },
      ],
      { state: 'sent', key: 'k2', ev: 3 },
    ],
  ])('%s', (_, records, expected) => {
    const prior = fold(records).get('a');
    if (expected === undefined) expect(prior).toBeUndefined();
    else expect(prior).toMatchObject(expected);
  });
});

describe('JournalWriter', () => {
  it('creates the file 0600 and appends one JSON line per record, each on disk when append resolves', async () => {
    const path = fresh();
    const w = await JournalWriter.open(path, await lock(path));
    expect(existsSync(`${path}.lock`)).toBe(true);
    // Appends made together share a flush and keep their order.
    await Promise.all([send('a', 'k1'), send('b', 'k2'), send('c', 'k3')].map((r) => w.append(r)));
    await w.append({ t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' });
    await w.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.lock`)).toBe(false);
    const lines = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => `${l.t}:${l.id}`)).toEqual(['send:a', 'send:b', 'send:c', 'applied:a']);
    expect(loadJournal(path).priors.get('a')).toMatchObject({ state: 'applied', key: 'k1' });
  });

  it('after a crash mid-line, the torn line is skipped (and counted) and later records still read', async () => {
    const path = fresh();
    writeFileSync(path, JSON.stringify(send('a', 'k1')) + '\n' + '{"t":"applied","id":"a","ke', { mode: 0o600 });
    const w = await JournalWriter.open(path, await lock(path));
    await w.append(send('b', 'k2'));
    await w.close();
    const loaded = loadJournal(path);
    expect(loaded.unreadable).toBe(1);
    expect(loaded.priors.get('a')).toMatchObject({ state: 'sent' });
    expect(loaded.priors.get('b')).toMatchObject({ state: 'sent', key: 'k2' });
  });

  it('keeps the scope of the first run record, to refuse a journal of another environment', () => {
    const path = fresh();
    const scope = { baseUrl: 'https://a.example', organizationId: 'o', applicationId: 'p', environmentKey: 'e' };
    appendFileSync(path, JSON.stringify({ t: 'run', v: 1, at: 'x', scope }) + '\n');
    appendFileSync(path, JSON.stringify({ t: 'run', v: 1, at: 'y', scope: { ...scope, environmentKey: 'other' } }) + '\n');
    const loaded = loadJournal(path);
    expect(loaded.scope).toEqual(scope);
    expect(sameScope(loaded.scope!, { ...scope })).toBe(true);
    expect(sameScope(loaded.scope!, { ...scope, environmentKey: 'prod' })).toBe(false);
  });

  it('a missing journal is an empty one; a folder is refused', async () => {
    expect(loadJournal(join(dir, 'none.ndjson')).priors.size).toBe(0);
    const caught = await failure(lock(dir));
    expect(isCliError(caught) && caught.exitCode === 2 && caught.message.includes('not a regular file')).toBe(true);
  });
});

describe('a record is on disk whole, or its append fails and the writer stops', () => {
  afterEach(() => vi.restoreAllMocks());

  /** FileHandle.write, whose class node:fs/promises does not export. */
  async function handleWrite() {
    const { open } = await import('node:fs/promises');
    const h = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(h) as { write: (...a: unknown[]) => Promise<{ bytesWritten: number }> };
    await h.close();
    return { proto, real: proto.write };
  }

  it('a short write is continued: the record lands whole', async () => {
    const path = fresh();
    const { proto, real } = await handleWrite();
    const w = await JournalWriter.open(path, await lock(path));
    let calls = 0;
    vi.spyOn(proto, 'write').mockImplementation(function (this: unknown, buf: unknown, offset: unknown, length: unknown) {
      calls += 1;
      // The first write takes 5 bytes only, as a nearly full disk or a signal can.
      return real.call(this, buf, offset, calls === 1 ? 5 : length);
    });
    await w.append(send('a', 'k1'));
    await w.close();
    expect(calls).toBeGreaterThan(1);
    expect(readFileSync(path, 'utf8')).toBe(JSON.stringify(send('a', 'k1')) + '\n');
  });

  it('a full disk mid-record (ENOSPC after a part): append rejects, the torn part is cut off, later appends reject too', async () => {
    const path = fresh();
    const { proto, real } = await handleWrite();
    const w = await JournalWriter.open(path, await lock(path));
    await w.append(send('a', 'k1'));
    let calls = 0;
    vi.spyOn(proto, 'write').mockImplementation(function (this: unknown, buf: unknown, offset: unknown) {
      if (++calls === 1) return real.call(this, buf, offset, 7);
      return Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    });
    const e = await failure(w.append(send('b', 'k2')));
    expect(isCliError(e) && e.exitCode === 1 && e.message === `cannot write the journal ${path}: ENOSPC`).toBe(true);
    vi.restoreAllMocks();
    expect(await failure(w.append(send('c', 'k3')))).toBe(e); // the writer stays broken: nothing more is recorded
    await w.close();
    // Only the whole record is there; the next run reads it and nothing torn.
    expect(readFileSync(path, 'utf8')).toBe(JSON.stringify(send('a', 'k1')) + '\n');
    expect(loadJournal(path)).toMatchObject({ unreadable: 0 });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('a flush that fails (EIO) fails the append too', async () => {
    const path = fresh();
    const w = await JournalWriter.open(path, await lock(path));
    const { open } = await import('node:fs/promises');
    const h = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(h) as { datasync: () => Promise<void> };
    await h.close();
    vi.spyOn(proto, 'datasync').mockRejectedValue(Object.assign(new Error('EIO'), { code: 'EIO' }));
    const e = await failure(w.append(send('a', 'k1')));
    expect(isCliError(e) && e.message.endsWith(': EIO')).toBe(true);
    vi.restoreAllMocks();
    await w.close();
    expect(readFileSync(path, 'utf8')).toBe('');
  });
});

describe('the journal lock (fs/lock.ts)', () => {
  it('refuses a second run at once while the first holds it (exit 2 naming the lock and the pid), without waiting', async () => {
    const path = fresh();
    const release = await lock(path);
    expect(parseRecord(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    slept.length = 0;
    const caught = await failure(lock(path));
    expect(isCliError(caught) && caught.exitCode === 2).toBe(true);
    expect((caught as Error).message).toBe(`the journal is in use by another chatctl run (pid ${process.pid}; lock file ${path}.lock)`);
    expect(slept).toEqual([]);
    release();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it.each([
    // As the lock writes it (this machine, this boot, this namespace), but its pid is gone.
    ['a lock record of a dead run', (pid: number) => JSON.stringify({ pid, start: '1', boot: host.bootId(), ns: host.pidNamespace(), host: host.hostname, nonce: 'deadrun01' }) + '\n'],
  ])('takes over %s, leaving nothing behind', async (_label, text) => {
    const path = fresh();
    writeFileSync(`${path}.lock`, text(deadPid()));
    const release = await lock(path);
    expect(parseRecord(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    release();
    expect(readdirSync(dir).filter((n) => n.includes(path.split('/').pop()!))).toEqual([]);
  });
});
