// Stale manifest lines (docs/fleet.md, "Stale lines"): the pure rules over
// what the journal holds, and the time a skipped item's line names.
import { afterAll, describe, expect, it } from 'vitest';
import { foldRecord, loadJournal, refuseStale, type JournalRecord, type Prior } from '../../../../src/commands/webhooks/rotate-from/journal.js';
import { withDoneAt } from '../../../../src/commands/webhooks/rotate-from/output.js';
import type { ItemResult } from '../../../../src/commands/webhooks/rotate-from/runner.js';
import { isCliError } from '../../../../src/errors/cli-error.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const prior = (p: Partial<Prior>): Prior => ({
  state: 'ok',
  key: 'k',
  ev: 3,
  mode: 'overlap',
  version: 4,
  fp: 'sha256:f',
  delivery: [],
  requestId: 'r',
  recovered: null,
  whole: false,
  ...p,
});
const line = (expectedVersion: number) => ({ line: 7, endpointId: 'we_1', expectedVersion });

function refusal(f: () => void) {
  try {
    f();
  } catch (err) {
    if (isCliError(err)) return err;
    throw err;
  }
  return undefined;
}

describe('refuseStale: a line below the version the journal shows', () => {
  it('refused (exit 2) naming the line, the endpoint, its version now and the run that rotated it', () => {
    const e = refusal(() => refuseStale(prior({ at: '2030-01-01T04:00:00.000Z' }), line(2)));
    expect(e?.exitCode).toBe(2);
    expect(e?.message).toBe(
      'manifest line 7: endpoint we_1 is at version 4 now (the journal shows it rotated from version 3 to 4 by the run of 2030-01-01T04:00:00.000Z), but the line expects version 2',
    );
    expect(e?.hint).toContain('"expectedVersion":4');
    // Also a line at the version the rotation started from (its other mode: a new rotation of a version that is gone).
    expect(refusal(() => refuseStale(prior({}), line(3)))?.message).toContain('by an earlier run), but the line expects version 3');
    // Applied but not delivered: the server moved it all the same.
    expect(refusal(() => refuseStale(prior({ state: 'applied' }), line(3)))?.exitCode).toBe(2);
  });

  it('not refused: the version now or later, nothing in the journal, or nothing known of the version', () => {
    expect(refusal(() => refuseStale(prior({}), line(4)))).toBeUndefined();
    expect(refusal(() => refuseStale(prior({}), line(9)))).toBeUndefined();
    expect(refusal(() => refuseStale(undefined, line(1)))).toBeUndefined();
    expect(refusal(() => refuseStale(prior({ state: 'refused', version: null }), line(1)))).toBeUndefined();
    expect(refusal(() => refuseStale(prior({ state: 'sent', version: null }), line(1)))).toBeUndefined();
    expect(refusal(() => refuseStale(prior({ version: null }), line(1)))).toBeUndefined();
  });
});

describe('withDoneAt: a skipped item names the run that did it', () => {
  const skipped: ItemResult = { endpointId: 'we_1', ok: true, skipped: true, version: 4, fingerprint: 'sha256:f', delivery: [], requestId: 'r' };
  it('adds doneAt to skipped lines only, when the journal knows the time', () => {
    const priors = new Map([['we_1', prior({ at: '2030-01-01T04:00:00.000Z' })]]);
    expect(withDoneAt(skipped, priors)).toEqual({ ...skipped, doneAt: '2030-01-01T04:00:00.000Z' });
    const { skipped: _s, ...rotated } = skipped;
    expect(withDoneAt(rotated, priors)).toEqual(rotated);
    expect(withDoneAt(skipped, new Map([['we_1', prior({})]]))).toEqual(skipped);
  });
});

describe('the journal: when each record was written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'chatctl-stale-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const scope = { baseUrl: 'http://127.0.0.1:1', organizationId: 'o', applicationId: 'a', environmentKey: 'e' };
  it("an endpoint's records carry the start of the run that wrote the latest of them", () => {
    const records: JournalRecord[] = [
      { t: 'run', v: 1, at: '2030-01-01T00:00:00.000Z', scope },
      { t: 'send', id: 'a', key: 'k1', ev: 1, mode: 'overlap' },
      { t: 'send', id: 'b', key: 'k2', ev: 1, mode: 'overlap' },
      { t: 'applied', id: 'b', key: 'k2', version: 2, fp: 'sha256:b' },
      { t: 'run', v: 1, at: '2030-02-01T00:00:00.000Z', scope },
      { t: 'ok', id: 'b', key: 'k2', version: 2, fp: 'sha256:b', delivery: [], requestId: 'r' },
    ];
    const path = join(dir, 'j');
    writeFileSync(path, records.map((r) => JSON.stringify(r) + '\n').join(''));
    const { priors } = loadJournal(path);
    expect(priors.get('a')?.at).toBe('2030-01-01T00:00:00.000Z');
    expect(priors.get('b')).toMatchObject({ state: 'ok', at: '2030-02-01T00:00:00.000Z' });
    // Folded without a time (as a test harness does): none is made up.
    const m = new Map<string, Prior>();
    for (const r of records) foldRecord(m, r);
    expect(m.get('b')?.at).toBeUndefined();
  });
});
