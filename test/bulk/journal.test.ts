import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { foldRecord, JournalWriter, loadJournal, lockJournal, sameScope, type JournalRecord, type Prior } from '../../src/bulk/journal.js';
import { isCliError } from '../../src/errors/cli-error.js';

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

describe('what a re-run makes of the records', () => {
  it.each<[string, JournalRecord[], Partial<Prior> | undefined]>([
    ['nothing: a fresh item', [], undefined],
    ['send only: outcome unknown, re-send with that key', [send('a', 'k1')], { state: 'sent', key: 'k1', ev: 1, mode: 'overlap' }],
    ['send, applied: rotated, delivery not confirmed', [send('a', 'k1'), { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' }], { state: 'applied', version: 2, fp: 'sha256:f' }],
    [
      'send, applied, ok: done',
      [send('a', 'k1'), { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' }, { t: 'ok', id: 'a', key: 'k1', version: 2, fp: 'sha256:f', delivery: [{ to: 'file:/x', fingerprint: 'sha256:f' }], requestId: 'r' }],
      { state: 'ok', requestId: 'r', delivery: [{ to: 'file:/x', fingerprint: 'sha256:f' }] },
    ],
    ['refused by the server: try afresh', [send('a', 'k1'), { t: 'fail', id: 'a', key: 'k1', applied: false, exitCode: 7, code: 'webhook_endpoint_version_conflict' }], { state: 'refused' }],
    ['unknown outcome (timeout): re-send with that key', [send('a', 'k1'), { t: 'fail', id: 'a', key: 'k1', applied: null, exitCode: 12, code: 'timeout' }], { state: 'sent', key: 'k1' }],
    [
      'applied, not delivered, kept in recovered/',
      [send('a', 'k1'), { t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' }, { t: 'fail', id: 'a', key: 'k1', applied: true, exitCode: 13, code: 'secret_not_delivered', recovered: '/r/a.secret' }],
      { state: 'applied', recovered: '/r/a.secret', fp: 'sha256:f' },
    ],
    [
      'a later run tried afresh after a refusal: its key wins',
      [send('a', 'k1'), { t: 'fail', id: 'a', key: 'k1', applied: false, exitCode: 7, code: 'x' }, send('a', 'k2', 3), { t: 'ok', id: 'a', key: 'k1', version: 9, fp: 'sha256:stale', delivery: [], requestId: 'r' }],
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
    const w = await JournalWriter.open(path, lockJournal(path));
    expect(existsSync(`${path}.lock`)).toBe(true);
    // Appends made together share a flush and keep their order.
    await Promise.all([send('a', 'k1'), send('b', 'k2'), send('c', 'k3')].map((r) => w.append(r)));
    await w.append({ t: 'applied', id: 'a', key: 'k1', version: 2, fp: 'sha256:f' });
    await w.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.lock`)).toBe(false);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => `${l.t}:${l.id}`)).toEqual(['send:a', 'send:b', 'send:c', 'applied:a']);
    expect(loadJournal(path).priors.get('a')).toMatchObject({ state: 'applied', key: 'k1' });
  });

  it('after a crash mid-line, the torn line is skipped (and counted) and later records still read', async () => {
    const path = fresh();
    writeFileSync(path, JSON.stringify(send('a', 'k1')) + '\n' + '{"t":"applied","id":"a","ke', { mode: 0o600 });
    const w = await JournalWriter.open(path, lockJournal(path));
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

  it('a missing journal is an empty one; a folder is refused', () => {
    expect(loadJournal(join(dir, 'none.ndjson')).priors.size).toBe(0);
    let caught: unknown;
    try {
      lockJournal(dir);
    } catch (err) {
      caught = err;
    }
    expect(isCliError(caught) && caught.exitCode === 2 && caught.message.includes('not a regular file')).toBe(true);
  });
});

describe('the journal lock', () => {
  it('refuses a second run while the first holds it, and takes over one left by a dead process', () => {
    const path = fresh();
    const release = lockJournal(path, () => true);
    let caught: unknown;
    try {
      lockJournal(path, () => true);
    } catch (err) {
      caught = err;
    }
    expect(isCliError(caught) && caught.exitCode === 2 && /in use by another chatctl run \(pid \d+/.test(caught.message)).toBe(true);
    // The holder was killed (SIGKILL): its pid is gone, the lock is stale.
    const again = lockJournal(path, () => false);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    again();
    release();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });
});
