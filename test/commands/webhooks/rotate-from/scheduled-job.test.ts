// The scheduled job (docs/ci.md, docs/fleet.md "The same command every
// month"): `rotate --from fleet.ndjson --journal J --next-manifest
// fleet.ndjson`, run again after any exit, finishes that month's work or
// changes nothing; --every makes it safe to run daily; the journal stays the
// size of the fleet; the next manifest is one run's at a time. chatctl
// in-process against the in-process sandbox, both on the sandbox's clock.
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLock, systemLockHost } from '../../../../src/system/lock.js';
import { fingerprint } from '../../../../src/secret/facts.js';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { baseEnv, runInProcess, waitFor, type InProcessResult } from '../../../support/run.js';
import { scaled } from '../../../support/slowdown.js';
import { HOUR } from '../../../support/sandbox.js';
import { fleetSandbox } from './support/fleet-sandbox.js';

const DAY = 24 * HOUR;

async function setUp(n: number) {
  const f = await fleetSandbox(n);
  writeFileSync(f.path('store.sh'), STORE);
  writeFileSync(f.path('fleet.ndjson'), f.ids.map((id) => `${JSON.stringify({ endpointId: id, expectedVersion: 1 })}\n`).join(''));
  const rotations = async () => ((await f.s.control('requests')).body.data.requests as { path: string }[]).filter((q) => q.path.endsWith('/secret/rotate')).length;
  const versions = async () => Object.fromEntries(((await f.s.control('endpoints')).body.data.endpoints as { id: string; version: number }[]).map((e) => [e.id, e.version]));
  return { ...f, rotations, versions };
}

/** `job` run again in the next month: exit 0, each of the three endpoints rotated a second time and its new secret stored. */
async function expectSecondMonth({ ids, run, path, rotations, versions }: Awaited<ReturnType<typeof setUp>>, job: string[]) {
  const next = await run(job);
  expect(next.exitCode, show(next)).toBe(0);
  expect(await rotations()).toBe(6);
  expect(Object.values(await versions())).toEqual([3, 3, 3]);
  for (const id of ids) expect(secretIn(path(`secrets/${id}.whsec`))).toMatch(/^whsec_/);
}

const show = (r: InProcessResult) => `exit ${r.exitCode}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);
const secretIn = (file: string) => readFileSync(file, 'utf8').trim();
// The store: a script that keeps each secret in secrets/ID.whsec, and fails for an endpoint while down-ID exists.
const STORE = '[ -e "down-$CHATCTL_ENDPOINT_ID" ] && { echo "the store is down" >&2; exit 1; }\ncat > "secrets/$CHATCTL_ENDPOINT_ID.whsec"\n';
const JOB = ['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--next-manifest', 'fleet.ndjson', '--secret-to', 'exec:sh store.sh', '--json'];

describe('the same command again, after any exit', () => {
  it("a store down for one item: exit 14; the same command (its manifest replaced) delivers the kept secret and rotates nothing; last month's manifest skips what is done", async () => {
    const { ids, ws, run, path, rotations, versions } = await setUp(3);
    const [a, b, c] = ids as [string, string, string];
    writeFileSync(path(`down-${c}`), '');
    const month = await run(JOB);
    expect(month.exitCode, show(month)).toBe(14);
    const failed = lines(month.stdout).find((l) => l.endpointId === c)!;
    expect(failed).toMatchObject({ ok: false, exitCode: 13 });
    expect(readFileSync(path('fleet.ndjson'), 'utf8')).toContain(`{"endpointId":"${c}","expectedVersion":2}`);
    expect(await rotations()).toBe(3);

    // The store is back; the same command again.
    rmSync(path(`down-${c}`));
    const again = await run(JOB);
    expect(again.exitCode, show(again)).toBe(0);
    expect(await rotations()).toBe(3);
    expect(await versions()).toEqual({ [a]: 2, [b]: 2, [c]: 2 });
    expect(fingerprint(secretIn(path(`secrets/${c}.whsec`)))).toBe(failed.error.details.fingerprint);
    expect(lines(again.stdout).filter((l) => l.endpointId)).toEqual(expect.arrayContaining([expect.objectContaining({ endpointId: c, ok: true })]));
    // Delivered: its record and kept secret are gone with their own delivery.
    expect(readdirSync(join(ws.configDir, 'recovered'))).toEqual([]);

    // Last month's manifest with the journal: every item is done.
    writeFileSync(path('old.ndjson'), ids.map((id) => `${JSON.stringify({ endpointId: id, expectedVersion: 1 })}\n`).join(''));
    const old = await run(['--from', 'old.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--json', '--secret-to', 'exec:sh store.sh']);
    expect(old.exitCode, show(old)).toBe(0);
    for (const l of lines(old.stdout).filter((x) => x.endpointId)) expect(l).toMatchObject({ ok: true, skipped: true });
    expect(await rotations()).toBe(3);
  });

  it("a month after a failed run nobody re-ran, the same command is the next month's rotation (more than a day since that run, no --every)", async () => {
    const fleet = await setUp(3);
    const { s, ids, run, path } = fleet;
    writeFileSync(path(`down-${ids[2]}`), '');
    expect((await run(JOB)).exitCode).toBe(14);
    rmSync(path(`down-${ids[2]}`));
    s.advance(31 * DAY);
    await expectSecondMonth(fleet, JOB);
  });

  it('interrupted after the first item: the same command finishes the rest, each endpoint rotated once', async () => {
    const { run, rotations, versions } = await setUp(3);
    const stop = new AbortController();
    const first = await run([...JOB, '--concurrency', '1'], { signal: stop.signal, onStdout: (t) => t.includes('"ok":true') && stop.abort() });
    expect(first.exitCode, show(first)).toBe(130);
    const done = await rotations();
    expect(done).toBeGreaterThanOrEqual(1);
    expect(done).toBeLessThan(3);
    const again = await run(JOB);
    expect(again.exitCode, show(again)).toBe(0);
    expect(await rotations()).toBe(3);
    expect(Object.values(await versions())).toEqual([2, 2, 2]);
    for (const l of lines(again.stdout).filter((x) => x.endpointId)) expect(l.ok).toBe(true);
    // And once more: that month's work is done, nothing changes.
    const third = await run(JOB.concat('--every', '20d'));
    expect(third.exitCode, show(third)).toBe(0);
    expect(await rotations()).toBe(3);
  });
});

describe('a kept secret that went with its runner: escrow, then recover --journal', () => {
  it('recover delivers the escrowed copy and records the item done in the journal: the next run (a fresh config folder) rotates nothing and exits 0', async () => {
    const { ids, ws, run, path, rotations } = await setUp(2);
    const b = ids[1]!;
    const identity = await generateX25519Identity();
    writeFileSync(path('ops.key'), `${identity}\n`, { mode: 0o600 });
    writeFileSync(path(`down-${b}`), '');
    const month = await run([...JOB, '--escrow', await identityToRecipient(identity), '--escrow-dir', 'escrow']);
    expect(month.exitCode, show(month)).toBe(14);
    // The runner goes, and its recovered/ with it.
    rmSync(join(ws.configDir, 'recovered'), { recursive: true, force: true });
    rmSync(path(`down-${b}`));
    const escrowed = readdirSync(path('escrow')).filter((n) => n.endsWith('.age'));
    expect(escrowed).toHaveLength(1);
    const recovered = await runInProcess(['webhooks', 'recover', `escrow/${escrowed[0]}`, '--identity', 'ops.key', '--secret-to', 'exec:sh store.sh', '--journal', 'fleet.journal'], {
      env: { ...baseEnv(ws), CI: 'true' },
      cwd: ws.cwd,
    });
    expect(recovered.exitCode, show(recovered)).toBe(0);
    expect(secretIn(path(`secrets/${b}.whsec`))).toMatch(/^whsec_/);
    const again = await run(JOB);
    expect(again.exitCode, show(again)).toBe(0);
    expect(await rotations()).toBe(2);
    for (const l of lines(again.stdout).filter((x) => x.endpointId)) expect(l).toMatchObject({ ok: true, skipped: true });
  });
});

describe('without a journal', () => {
  it("an item refused with 7 because an earlier run here applied a rotation whose secret is kept: 13 naming that run's key, not a 7 that would rotate again", async () => {
    const { ids, run, path } = await setUp(1);
    const NO_JOURNAL = ['--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'exec:sh store.sh', '--json'];
    writeFileSync(path(`down-${ids[0]}`), '');
    const first = await run(NO_JOURNAL);
    expect(first.exitCode).toBe(14);
    const key = lines(first.stdout).find((l) => l.endpointId)!.idempotencyKey as string;
    rmSync(path(`down-${ids[0]}`));
    const again = await run(NO_JOURNAL);
    expect(again.exitCode, show(again)).toBe(14);
    const item = lines(again.stdout).find((l) => l.endpointId)!;
    expect(item).toMatchObject({ ok: false, exitCode: 13, idempotencyKey: key });
    expect(item.error.hint).toContain(`--idempotency-key '${key}'`);
  });
});

describe('a journal that lost its last lines', () => {
  it("an item whose 'ok' the journal lost but whose delivery this machine's facts record is done, not a 13", async () => {
    const { run, path, rotations } = await setUp(2);
    expect((await run(JOB)).exitCode).toBe(0);
    // A restored older copy of the journal: each "ok" only an "applied", and no "end".
    const older = readFileSync(path('fleet.journal'), 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.includes('"t":"end"'))
      .map((l) => {
        const r = JSON.parse(l) as { t: string; id: string; key: string; version: number; fp: string };
        return r.t === 'ok' ? JSON.stringify({ t: 'applied', id: r.id, key: r.key, version: r.version, fp: r.fp }) : l;
      });
    expect(older.filter((l) => l.includes('"t":"applied"'))).toHaveLength(2);
    writeFileSync(path('fleet.journal'), `${older.join('\n')}\n`);
    const again = await run(JOB);
    expect(again.exitCode, show(again)).toBe(0);
    expect(await rotations()).toBe(2);
    for (const l of lines(again.stdout).filter((x) => x.endpointId)) expect(l).toMatchObject({ ok: true, skipped: true });
  });
});

describe("one endpoint's deliveries, one at a time across processes", () => {
  it('a kept secret re-delivered while a new rotation of the endpoint is applied: the newer secret is what the destination holds at the end', async () => {
    const { s, ids, run, path } = await setUp(1);
    const id = ids[0]!;
    writeFileSync(path(`down-${id}`), '');
    expect((await run(JOB)).exitCode).toBe(14); // version 2 applied, its secret kept
    rmSync(path(`down-${id}`));
    // The re-delivery's store waits at a gate the test opens; the rotation's store is immediate.
    writeFileSync(path('gate.sh'), ': > delivering; while [ ! -e go ]; do sleep 0.02; done; cat > dest\n');
    const redelivery = run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'fleet.journal', '--secret-to', 'exec:sh gate.sh', '--json']);
    await waitFor(() => existsSync(path('delivering')), scaled(20_000), 'the re-delivery writing its destination');
    const rotation = run([id, '--expected-version', '2', '--mode', 'immediate', '--yes', '--secret-to', 'exec:cat > dest', '--json']);
    const version = async () => ((await s.control('endpoints')).body.data.endpoints as { id: string; version: number }[]).find((e) => e.id === id)!.version;
    await waitFor(async () => (await version()) === 3, scaled(20_000), 'the new rotation applied');
    writeFileSync(path('go'), '');
    const [a, b] = await Promise.all([redelivery, rotation]);
    expect(a.exitCode, show(a)).toBe(0);
    expect(b.exitCode, show(b)).toBe(0);
    const current = ((await s.control('endpoints')).body.data.endpoints as { id: string; validSecrets: string[] }[]).find((e) => e.id === id)!.validSecrets[0];
    expect(readFileSync(path('dest'), 'utf8')).toBe(current);
  });
});

describe('--every DURATION', () => {
  it('twice the same day rotates nothing the second time (due:false, the last rotation named); 26 days later each endpoint once', async () => {
    const fleet = await setUp(3);
    const { s, run, rotations } = fleet;
    const job = [...JOB, '--every', '25d'];
    expect((await run(job)).exitCode).toBe(0);
    expect(await rotations()).toBe(3);
    const rotatedAt = new Date(s.now()).toISOString();
    s.advance(2 * HOUR);
    const again = await run(job);
    expect(again.exitCode, show(again)).toBe(0);
    expect(await rotations()).toBe(3);
    const items = lines(again.stdout).filter((l) => l.endpointId);
    expect(items).toHaveLength(3);
    for (const l of items) expect(l).toMatchObject({ ok: true, skipped: true, due: false, lastRotatedAt: rotatedAt, version: 2 });
    expect(lines(again.stdout).at(-1)).toMatchObject({ summary: { ok: 0, skipped: 3, notDue: 3 } });

    s.advance(26 * DAY);
    await expectSecondMonth(fleet, job);
  });

  it('an invalid duration is exit 2 before anything is sent', async () => {
    const { run, rotations } = await setUp(1);
    const r = await run([...JOB, '--every', '30 days']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('invalid --every \\"30 days\\"');
    expect(await rotations()).toBe(0);
  });
});

describe('the journal stays the size of the fleet', () => {
  it('six months of the same command: the journal holds one run, each endpoint once and its end', async () => {
    const { s, ids, run, path, versions } = await setUp(3);
    const sizes: number[] = [];
    for (let m = 0; m < 6; m++) {
      const r = await run(JOB);
      expect(r.exitCode, show(r)).toBe(0);
      sizes.push(readFileSync(path('fleet.journal'), 'utf8').split('\n').filter(Boolean).length);
      s.advance(31 * DAY);
    }
    expect(Object.values(await versions())).toEqual([7, 7, 7]);
    expect(new Set(sizes)).toEqual(new Set([1 + 2 * ids.length + 1]));
  });
});

describe('the next manifest: one run at a time, never the journal', () => {
  it('a second run naming a next manifest another run holds is refused, exit 2 naming the lock, nothing sent', async () => {
    const { run, path, rotations, ws } = await setUp(2);
    const lockPath = `${realpathSync(ws.cwd)}/fleet.ndjson.lock`;
    const held = await acquireLock(lockPath, {
      host: systemLockHost({ now: Date.now, sleep: async () => {}, random: Math.random }),
      signal: new AbortController().signal,
      waitMs: 0,
      subject: { name: 'test', error: (m) => new Error(m) as never, busy: () => new Error('busy') as never },
    });
    try {
      const r = await run(JOB);
      expect(r.exitCode, show(r)).toBe(2);
      expect(r.stderr).toContain(lockPath);
      expect(await rotations()).toBe(0);
    } finally {
      held.release();
    }
    expect(existsSync(path('fleet.ndjson'))).toBe(true);
  });

  it('the same file by a hard link in another folder, while a run holds it: refused, exit 2, nothing sent', async () => {
    const { run, path, rotations } = await setUp(2);
    mkdirSync(path('other'));
    linkSync(path('fleet.ndjson'), path('other/next.ndjson'));
    writeFileSync(path('gate.sh'), ': > delivering; while [ ! -e go ]; do sleep 0.02; done; cat > /dev/null\n');
    const first = run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'a.journal', '--next-manifest', 'fleet.ndjson', '--secret-to', 'exec:sh gate.sh', '--concurrency', '1']);
    await waitFor(() => existsSync(path('delivering')), scaled(20_000), 'the first run delivering');
    const second = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'b.journal', '--next-manifest', 'other/next.ndjson', '--secret-to', 'exec:sh store.sh']);
    writeFileSync(path('go'), '');
    expect(second.exitCode, show(second)).toBe(2);
    expect(second.stderr).toMatch(/the next manifest is being written by another chatctl run/);
    expect((await first).exitCode).toBe(0);
    expect(await rotations()).toBe(2);
  });

  it('the journal named through a linked folder is still the journal: exit 2, nothing sent', async () => {
    const { run, path, rotations } = await setUp(1);
    mkdirSync(path('real'));
    symlinkSync(path('real'), path('linkdir'));
    writeFileSync(path('real/j'), '');
    const r = await run(['--from', 'fleet.ndjson', '--mode', 'overlap', '--journal', 'linkdir/j', '--next-manifest', 'real/j', '--secret-to', 'env-file:secrets/{id}.env#WEBHOOK_SECRET']);
    expect(r.exitCode, show(r)).toBe(2);
    expect(r.stderr).toContain('that is the journal');
    expect(await rotations()).toBe(0);
    expect(readFileSync(path('real/j'), 'utf8')).toBe('');
  });
});
