// `rotate --from FILE --next-manifest OUT` and stale lines (docs/fleet.md,
// "The same command every month" and "Stale lines"): chatctl in-process
// against the in-process sandbox, whose clock the test moves (an overlap
// rotation ends after 24 hours).
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { versionAfter } from '../../../../src/commands/webhooks/rotate-from/next-manifest.js';
import type { InProcessResult } from '../../../support/run.js';
import { fleetSandbox } from './support/fleet-sandbox.js';
import { HOUR, type sandbox } from '../../../support/sandbox.js';

type Sbx = Awaited<ReturnType<typeof sandbox>>;

const setUp = (n: number) => fleetSandbox(n);

const DEST = ['--secret-to', 'env-file:secrets/{id}.env#WEBHOOK_SECRET'];
const show = (r: InProcessResult) => `exit ${r.exitCode}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function versions(s: Sbx): Promise<Record<string, number>> {
  const r = await s.control('endpoints');
  return Object.fromEntries((r.body.data.endpoints as { id: string; version: number }[]).map((e) => [e.id, e.version]));
}

async function rotateRequests(s: Sbx): Promise<number> {
  const r = await s.control('requests');
  return (r.body.data.requests as { path: string }[]).filter((q) => q.path.endsWith('/secret/rotate')).length;
}

describe('--next-manifest: the manifest of the next rotation', () => {
  it("one line per item in order, each at its version after the run (new, the 7's current one, else the old one), mode only where the line gave one; OUT the manifest itself; exit 14 still writes it", async () => {
    const { s, ids, run, path } = await setUp(3);
    const [a, b, c] = ids as [string, string, string];
    // b is moved on behind the manifest's back: its line now asks for a version that is gone (7).
    expect((await s.rotate(b, { expectedVersion: 1, mode: 'immediate' })).status).toBe(200);
    const manifest = [
      '# the fleet',
      JSON.stringify({ endpointId: a, expectedVersion: 1 }),
      '',
      JSON.stringify({ endpointId: b, expectedVersion: 1, mode: 'overlap' }),
      JSON.stringify({ endpointId: 'we_gone', expectedVersion: 3 }),
      JSON.stringify({ endpointId: c, expectedVersion: 1, mode: 'immediate' }),
    ].join('\n');
    writeFileSync(path('fleet.ndjson'), manifest + '\n', { mode: 0o644 });
    const r = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--yes', '--next-manifest', 'fleet.ndjson', '--json', ...DEST]);
    expect(r.exitCode, show(r)).toBe(14);
    const byId = Object.fromEntries(lines(r.stdout).map((l) => [l.endpointId, l]));
    expect(byId[b]).toMatchObject({ ok: false, exitCode: 7, error: { details: { currentVersion: 2 } } });
    expect(byId.we_gone).toMatchObject({ ok: false, exitCode: 6 });
    expect(readFileSync(path('fleet.ndjson'), 'utf8')).toBe(
      [
        { endpointId: a, expectedVersion: 2 },
        { endpointId: b, expectedVersion: 2, mode: 'overlap' },
        { endpointId: 'we_gone', expectedVersion: 3 },
        { endpointId: c, expectedVersion: 2, mode: 'immediate' },
      ]
        .map((l) => JSON.stringify(l) + '\n')
        .join(''),
    );
    // Replaced whole, keeping the manifest's own permissions.
    expect(statSync(path('fleet.ndjson')).mode & 0o777).toBe(0o644);
    expect(await versions(s)).toEqual({ [a]: 2, [b]: 2, [c]: 2 });

    // Next month, the same command on what it wrote: b's line is right now, and rotates.
    s.advance(31 * 24 * HOUR);
    const again = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--yes', '--next-manifest', 'fleet.ndjson', '--json', ...DEST]);
    expect(again.exitCode, show(again)).toBe(14); // we_gone is still gone (6)
    expect(await versions(s)).toEqual({ [a]: 3, [b]: 3, [c]: 3 });
    expect(lines(readFileSync(path('fleet.ndjson'), 'utf8')).map((l) => l.expectedVersion)).toEqual([3, 3, 3, 3]);
  });

  it('130 (Ctrl-C): written, items not started keep their version; exit 2 (a bad line): not written', async () => {
    const { s, ids, run, path } = await setUp(6);
    writeFileSync(path('fleet.ndjson'), ids.map((id) => JSON.stringify({ endpointId: id, expectedVersion: 1 }) + '\n').join(''));
    const ctrlC = new AbortController();
    const r = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--concurrency', '1', '--next-manifest', 'next.ndjson', '--json', ...DEST], {
      signal: ctrlC.signal,
      onStdout: (text) => {
        if (!ctrlC.signal.aborted && text.includes('\n')) setImmediate(() => ctrlC.abort('SIGINT'));
      },
    });
    expect(r.exitCode, show(r)).toBe(130);
    const now = await versions(s);
    const rotated = ids.filter((id) => now[id] === 2);
    expect(rotated.length).toBeGreaterThanOrEqual(1);
    expect(rotated.length).toBeLessThan(ids.length);
    expect(lines(readFileSync(path('next.ndjson'), 'utf8'))).toEqual(ids.map((id) => ({ endpointId: id, expectedVersion: now[id] })));

    writeFileSync(path('bad.ndjson'), `${JSON.stringify({ endpointId: ids[0], expectedVersion: 2 })}\n{"endpointId":\n`);
    const bad = await run(['--from', 'bad.ndjson', '--mode', 'overlap', '--next-manifest', 'bad-next.ndjson', ...DEST]);
    expect(bad.exitCode, show(bad)).toBe(2);
    expect(existsSync(path('bad-next.ndjson'))).toBe(false);
  });

  it('refused before anything is sent (exit 2): OUT a folder, OUT the journal, OUT in a folder that does not exist; without --from', async () => {
    const { s, ids, run, path } = await setUp(1);
    writeFileSync(path('fleet.ndjson'), JSON.stringify({ endpointId: ids[0], expectedVersion: 1 }) + '\n');
    mkdirSync(path('a-folder'));
    for (const [out, says] of [
      ['a-folder', 'is a folder'],
      ['fleet.journal', 'that is the journal'],
      ['missing/next.ndjson', 'does not exist'],
    ] as const) {
      const r = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--next-manifest', out, ...DEST]);
      expect(r.exitCode, show(r)).toBe(2);
      expect(r.stderr).toContain(`--next-manifest ${path(out)}`);
      expect(r.stderr).toContain(says);
    }
    const single = await run([ids[0]!, '--expected-version', '1', '--mode', 'overlap', '--next-manifest', 'x.ndjson', ...DEST]);
    expect(single.exitCode).toBe(2);
    expect(single.stderr).toContain('--next-manifest goes with --from');
    expect(await rotateRequests(s)).toBe(0);
  });
});

describe('stale lines: never a silent success', () => {
  it("a line done by an earlier run is skipped naming the endpoint and that run's time (human and --json), and the next manifest takes the version it recorded", async () => {
    const { ids, run, path } = await setUp(2);
    const [a, b] = ids as [string, string];
    writeFileSync(path('fleet.ndjson'), [a, b].map((id) => JSON.stringify({ endpointId: id, expectedVersion: 1 }) + '\n').join(''));
    const first = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', ...DEST]);
    expect(first.exitCode, show(first)).toBe(0);
    const runAt = (JSON.parse(readFileSync(path('fleet.journal'), 'utf8').split('\n')[0]!) as { at: string }).at;

    // The same manifest again (a line left at last month's version): skipped, and said so.
    const human = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--next-manifest', 'next.ndjson', ...DEST]);
    expect(human.exitCode, show(human)).toBe(0);
    expect(human.stdout).toContain('0 failed, 2 skipped (done by an earlier run).');
    expect(human.stdout).toContain(`  ${a}  version 2, rotated by the run of ${runAt}\n`);
    expect(human.stdout).toContain(`  ${b}  version 2, rotated by the run of ${runAt}\n`);
    expect(lines(readFileSync(path('next.ndjson'), 'utf8'))).toEqual([
      { endpointId: a, expectedVersion: 2 },
      { endpointId: b, expectedVersion: 2 },
    ]);
    const json = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--json', ...DEST]);
    expect(json.exitCode, show(json)).toBe(0);
    for (const l of lines(json.stdout).slice(0, 2)) expect(l).toMatchObject({ ok: true, skipped: true, version: 2, doneAt: runAt });
  });

  it('a line below the version the journal shows the endpoint rotated to since: exit 2 naming the line, the endpoint and its version now; nothing sent', async () => {
    const { s, ids, run, path } = await setUp(2);
    const [a, b] = ids as [string, string];
    const manifest = (v: number) => [a, b].map((id) => JSON.stringify({ endpointId: id, expectedVersion: v }) + '\n').join('');
    writeFileSync(path('month1.ndjson'), manifest(1));
    expect((await run(['--from', 'month1.ndjson', '--mode', 'overlap', '--journal', 'j', '--next-manifest', 'month2.ndjson', ...DEST])).exitCode).toBe(0);
    s.advance(31 * 24 * HOUR);
    expect((await run(['--from', 'month2.ndjson', '--mode', 'overlap', '--journal', 'j', ...DEST])).exitCode).toBe(0);
    const sent = await rotateRequests(s);

    // Month one's manifest again, with a comment first: its lines ask for version 1 of endpoints now at 3.
    writeFileSync(path('month1.ndjson'), '# january\n' + manifest(1));
    const r = await run(['--from', 'month1.ndjson', '--mode', 'overlap', '--journal', 'j', '--next-manifest', 'out.ndjson', ...DEST]);
    expect(r.exitCode, show(r)).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(`manifest line 2: endpoint ${a} is at version 3 now \\(the journal shows it rotated from version 2 to 3 by the run of \\d{4}-\\d\\d-\\d\\dT[^)]+\\), but the line expects version 1`),
    );
    expect(await rotateRequests(s)).toBe(sent);
    expect(existsSync(path('out.ndjson'))).toBe(false);
  });
});

describe('versionAfter', () => {
  const failure = (exitCode: number, details: unknown) => ({
    endpointId: 'we_1',
    ok: false as const,
    error: { code: 'x', message: 'm', requestId: null, status: null, details },
    exitCode,
  });
  it('the new version, the current one of a 7, the applied one of a 13; nothing from other failures', () => {
    expect(versionAfter({ endpointId: 'we_1', ok: true, version: 5, fingerprint: 'f', delivery: [], requestId: null })).toBe(5);
    expect(versionAfter({ endpointId: 'we_1', ok: true, fingerprint: 'f', delivery: [], requestId: null })).toBeUndefined();
    expect(versionAfter(failure(7, { currentVersion: 9 }))).toBe(9);
    expect(versionAfter(failure(7, { hint: 'h' }))).toBeUndefined();
    expect(versionAfter(failure(13, { endpointId: 'we_1', version: 4, fingerprint: 'f', recoveredPath: null }))).toBe(4);
    expect(versionAfter(failure(9, { version: 4 }))).toBeUndefined();
    expect(versionAfter(failure(12, { currentVersion: 4 }))).toBeUndefined();
  });
});
