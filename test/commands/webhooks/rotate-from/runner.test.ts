// The runner against the sandbox's own request handling, in virtual time
// (support/sim.ts): throughput and 429s against a token-bucket limit, the
// pause every worker shares, retries, failures, the journal it writes, and
// what a re-run does with that journal.
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Prior } from '../../../../src/commands/webhooks/rotate-from/journal.js';
import { runBulk, type ItemResult, type RunnerDeps, type RunSummary } from '../../../../src/commands/webhooks/rotate-from/runner.js';
import { fp, harness } from './support/harness.js';

const okLines = (rs: ItemResult[]) => rs.filter((r): r is Extract<ItemResult, { ok: true }> => r.ok);
const failLines = (rs: ItemResult[]) => rs.filter((r): r is Extract<ItemResult, { ok: false }> => !r.ok);

describe('runBulk: the happy path', () => {
  it("rotates every endpoint once, delivers the server's secret, and journals send → applied → ok for each", async () => {
    const h = harness({ endpoints: 40 });
    const { summary, results } = await h.run(h.items());
    expect(summary).toMatchObject({ ok: 40, failed: 0, skipped: 0, notStarted: 0, interrupted: false, stopped: null, requests: 40 });
    for (const id of h.server.ids) {
      const { version, secret } = h.server.endpoint(id);
      expect(version).toBe(2);
      expect(h.delivered.get(id)).toBe(secret);
      const records = h.journal.filter((r) => 'id' in r && r.id === id).map((r) => r.t);
      expect(records).toEqual(['send', 'applied', 'ok']);
    }
    // Result lines: the fields docs/fleet.md lists, in its order.
    const line = okLines(results)[0]!;
    expect(Object.keys(line)).toEqual(['endpointId', 'ok', 'version', 'fingerprint', 'delivery', 'requestId']);
    expect(line.fingerprint).toBe(fp(h.server.endpoint(line.endpointId).secret));
    expect(line.delivery).toEqual([{ to: `file:/secrets/${line.endpointId}`, fingerprint: line.fingerprint }]);
    expect(line.requestId).toMatch(/^req_/);
  });

  it('never has more than --concurrency requests in flight', async () => {
    const h = harness({ endpoints: 60, concurrency: 3, latencyMs: 10 });
    await h.run(h.items());
    expect(h.server.stats().maxInFlight).toBe(3);
  });

  it('writes "send" to the journal before the request, and "ok" before the result line', async () => {
    const h = harness({ endpoints: 10, fsyncMs: 5 });
    const order: string[] = [];
    const journalLen = () => h.journal.length;
    await h.run(h.items(), {
      onResult: (r) => {
        const ok = h.journal.some((x) => x.t === 'ok' && x.id === r.endpointId);
        order.push(`${r.endpointId}:${ok}:${journalLen()}`);
      },
    });
    expect(order.every((o) => o.includes(':true:'))).toBe(true);
    // The server saw exactly the keys the journal announced.
    const sent = h.journal.filter((r) => r.t === 'send').map((r) => (r as { key: string }).key);
    expect(new Set(sent).size).toBe(10);
  });
});

describe('runBulk: shared rate control against a limit of 100 per second', () => {
  // The targets: time at most 1.15x the ideal (500 / 100 = 5 s, on
  // the harness's virtual clock), 429s at most 5% of requests, no failures. The sandbox's bucket also
  // allows a burst of 100, so a run can beat the ideal.
  for (const [concurrency, retryAfterMs] of [
    [4, true],
    [16, true],
    [16, false],
    [32, true],
  ] as const) {
    it(`500 items, --concurrency ${concurrency}, ${retryAfterMs ? 'Retry-After-Ms' : 'whole-second Retry-After only'}: within 1.15x of 5 s, at most 5% 429s`, async () => {
      const h = harness({ endpoints: 500, rateLimit: 100, latencyMs: 20, concurrency, retryAfterMs, fsyncMs: 5 });
      const { summary } = await h.run(h.items());
      expect(summary.ok).toBe(500);
      expect(summary.failed).toBe(0);
      expect(summary.elapsedMs).toBeLessThanOrEqual(5000 * 1.15);
      expect(h.server.stats().limited).toBeLessThanOrEqual(0.05 * summary.requests);
      for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(2);
    });
  }

  // Long enough for the pace to settle (20 s of virtual time, twenty times
  // the bucket's burst), small enough to run in a few seconds of CPU on a
  // loaded machine; 5,000 real items are measured by `npm run bench -- --fleet`.
  it('2,000 items at a limit of 100: about 20 s, under 1% 429s', async () => {
    const h = harness({ endpoints: 2000, rateLimit: 100, latencyMs: 20, concurrency: 16, fsyncMs: 5 });
    const { summary } = await h.run(h.items());
    expect(summary.ok).toBe(2000);
    expect(summary.elapsedMs).toBeLessThanOrEqual(20_000 * 1.15);
    expect(h.server.stats().limited).toBeLessThanOrEqual(0.01 * summary.requests);
  });

  it('a slow limit (10 per second) is met as closely, with as few 429s', async () => {
    const h = harness({ endpoints: 200, rateLimit: 10, latencyMs: 20, concurrency: 8 });
    const { summary } = await h.run(h.items());
    expect(summary.ok).toBe(200);
    expect(summary.elapsedMs).toBeLessThanOrEqual(20_000 * 1.15);
    expect(h.server.stats().limited).toBeLessThanOrEqual(0.05 * summary.requests);
  });

  it('a 503 with Retry-After pauses every worker: no request reaches the server during the wait', async () => {
    const h = harness({ endpoints: 30, concurrency: 4, latencyMs: 10 });
    // Every request's arrival; the 6th gets a 503 asking for 3 s.
    const arrivals: number[] = [];
    const rotate = h.server.rotateOne;
    h.server.rotateOne = async (req, key) => {
      arrivals.push(h.vt.now());
      if (arrivals.length !== 6) return rotate(req, key);
      await h.vt.sleep(5);
      return { status: 503, headers: { 'retry-after': '3' }, body: JSON.stringify({ error: { code: 'service_unavailable', message: 'busy', requestId: 'r', details: {} } }) };
    };
    const { summary } = await h.run(h.items());
    expect(summary.ok).toBe(30);
    const refusedAt = arrivals[5]! + 5;
    // Requests already on the wire may arrive; none is sent in the 3 s after the 503 came back.
    const during = arrivals.filter((t) => t > refusedAt + 2 && t < refusedAt + 3000);
    expect(during).toEqual([]);
    expect(arrivals.some((t) => t >= refusedAt + 3000)).toBe(true);
  });
});

describe('runBulk: failures', () => {
  it('an item refused by the server fails with its own exit code; the others go on; nothing is retried', async () => {
    const h = harness({ endpoints: 5 });
    const items = h.items();
    items[2] = { ...items[2]!, expectedVersion: 7 };
    const { summary, results } = await h.run(items);
    expect(summary).toMatchObject({ ok: 4, failed: 1, requests: 5 });
    const [bad] = failLines(results);
    expect(bad).toMatchObject({ endpointId: items[2]!.endpointId, ok: false, exitCode: 7, error: { code: 'webhook_endpoint_version_conflict', status: 409 } });
    expect(Object.keys(bad!)).toEqual(['endpointId', 'ok', 'error', 'exitCode']);
    expect(h.journal.filter((r) => r.t === 'fail')).toEqual([expect.objectContaining({ id: items[2]!.endpointId, applied: false, exitCode: 7 })]);
  });

  it('429s past --max-retries fail the item with exit 11, naming the attempts', async () => {
    const h = harness({ endpoints: 3, maxRetries: 2, concurrency: 1 });
    h.server.state.faults.update({ failNext: 3, status: 429, retryAfter: 1 });
    const { summary, results } = await h.run(h.items());
    expect(summary).toMatchObject({ ok: 2, failed: 1, requests: 5 });
    expect(failLines(results)[0]).toMatchObject({ exitCode: 11, error: { code: 'rate_limit_exceeded' } });
    expect(failLines(results)[0]!.error.message).toContain('gave up after 3 attempts');
  });

  it('a Retry-After beyond 60 s fails that item and starts no further item', async () => {
    const h = harness({ endpoints: 10, concurrency: 2 });
    h.server.state.faults.update({ failNext: 1, status: 429, retryAfter: 120 });
    const { summary } = await h.run(h.items());
    expect(summary.stopped?.message).toContain('retry after 120 s');
    expect(summary.failed).toBe(1);
    expect(summary.ok).toBe(1); // the other worker's item, in flight, finished
    expect(summary.notStarted).toBe(8);
  });

  it('a failure to connect is retried by that item with backoff, with the same key', async () => {
    const h = harness({ endpoints: 2, concurrency: 1 });
    h.server.setDown(true);
    h.vt.after(1200, () => h.server.setDown(false));
    const { summary } = await h.run(h.items());
    expect(summary.ok).toBe(2);
    expect(summary.requests).toBeGreaterThan(2);
    expect(h.journal.filter((r) => r.t === 'send')).toHaveLength(2);
  });

  it('a destination that fails: the secret goes to recovered/, the item fails 13, the journal says applied', async () => {
    const failing = new Set<string>();
    const hx = harness({ endpoints: 3, failDelivery: failing });
    const bad = hx.server.ids[1]!;
    failing.add(bad);
    const { summary, results } = await hx.run(hx.items());
    expect(summary).toMatchObject({ ok: 2, failed: 1 });
    const line = failLines(results)[0]!;
    expect(line).toMatchObject({ endpointId: bad, exitCode: 13, error: { code: 'secret_not_delivered' } });
    expect(line.idempotencyKey).toMatch(/^key-/);
    const kept = hx.keptPath(bad, line.idempotencyKey!);
    expect(line.error.message).toContain(kept);
    expect(line.error.details).toMatchObject({ endpointId: bad, version: 2, recoveredPath: kept, fingerprint: fp(hx.server.endpoint(bad).secret) });
    expect(hx.recovered(bad, line.idempotencyKey!)).toBe(hx.server.endpoint(bad).secret);
    expect(hx.journal.filter((r) => r.t === 'fail')).toEqual([expect.objectContaining({ id: bad, applied: true, recovered: kept })]);
    expect(hx.notices.join('\n')).toContain(bad);
  });
});

describe('runBulk: a journal that cannot be written', () => {
  it('an item whose "ok" record did not reach the disk prints no "ok": true line; its record stays, and a re-run with the journal delivers it again', async () => {
    const h = harness({ endpoints: 3, concurrency: 1 });
    const [, b] = h.server.ids;
    const first = await h.run(h.items(), { failAppend: (r) => r.t === 'ok' && r.id === b });
    const lineOfB = first.results.find((r) => r.endpointId === b)!;
    expect(lineOfB).toMatchObject({ ok: false, exitCode: 1, error: { code: 'internal_error' } });
    expect(lineOfB.ok === false && lineOfB.error.message).toContain('the journal could not record it');
    for (const r of okLines(first.results)) expect(h.journal).toContainEqual(expect.objectContaining({ t: 'ok', id: r.endpointId }));
    expect(first.summary.stopped?.message).toContain('ENOSPC');
    const secretOfB = h.server.endpoint(b!).secret;
    expect(h.recovered(b!, 'key-2')).toBe(secretOfB);
    const again = await h.run(h.items(), { priors: h.priors() });
    expect(again.summary.failed).toBe(0);
    expect(h.delivered.get(b!)).toBe(secretOfB);
    for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(2);
    expect(readdirSync(join(h.configDir, 'recovered'))).toEqual([]);
  });
});

describe('runBulk: Ctrl-C', () => {
  it('starts nothing new, lets the requests in flight finish and deliver, and counts the rest as not started', async () => {
    const h = harness({ endpoints: 100, concurrency: 4, latencyMs: 20 });
    const ctl = new AbortController();
    let seen = 0;
    const { summary, results } = await h.run(h.items(), {
      signal: ctl.signal,
      onResult: () => {
        if (++seen === 10) ctl.abort();
      },
    });
    expect(summary.interrupted).toBe(true);
    // The 3 others in flight when Ctrl-C came finished too.
    expect(summary.ok).toBe(13);
    expect(summary.notStarted).toBe(87);
    expect(results).toHaveLength(13);
    for (const r of okLines(results)) expect(h.delivered.get(r.endpointId)).toBe(h.server.endpoint(r.endpointId).secret);
    expect(h.server.stats().requests).toBe(13);
  });
});

describe('runBulk: resuming from a journal', () => {
  const prior = (p: Partial<Prior> & Pick<Prior, 'state' | 'key'>): Prior => ({
    ev: 1,
    mode: 'immediate',
    version: null,
    fp: null,
    delivery: null,
    requestId: null,
    recovered: null,
    whole: false,
    ...p,
  });

  it('skips items that succeeded, sending nothing for them', async () => {
    const h = harness({ endpoints: 4 });
    const [a, b] = h.server.ids;
    const priors = new Map([
      [a!, prior({ state: 'ok', key: 'k-a', version: 2, fp: 'sha256:aaaa', delivery: [{ to: 'file:/x', fingerprint: 'sha256:aaaa' }], requestId: 'req_old' })],
      [b!, prior({ state: 'ok', key: 'k-b', version: 2, fp: 'sha256:bbbb', delivery: [], requestId: 'req_old_b' })],
    ]);
    const { summary, results } = await h.run(h.items(), { priors });
    expect(summary).toMatchObject({ ok: 2, skipped: 2, failed: 0, requests: 2 });
    expect(results.find((r) => r.endpointId === a)).toEqual({
      endpointId: a,
      ok: true,
      skipped: true,
      version: 2,
      fingerprint: 'sha256:aaaa',
      delivery: [{ to: 'file:/x', fingerprint: 'sha256:aaaa' }],
      requestId: 'req_old',
    });
    expect(h.server.endpoint(a!).version).toBe(1);
  });

  it('re-sends an in-flight item with its recorded key and body: applied now if the first never arrived', async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    const items = h.items();
    const { summary, results } = await h.run(items, { priors: new Map([[a!, prior({ state: 'sent', key: 'k-recorded' })]]) });
    expect(summary.ok).toBe(1);
    expect(h.journal.find((r) => r.t === 'send')).toMatchObject({ key: 'k-recorded', ev: 1 });
    expect(okLines(results)[0]!.fingerprint).toBe(fp(h.server.endpoint(a!).secret));
  });

  it('re-sends an in-flight item the server had applied: the server replays without the secret, the item fails 13, the endpoint is not rotated again', async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    // The killed run's request did arrive and was applied.
    await h.vt.run(h.server.rotateOne({ endpointId: a!, expectedVersion: 1, mode: 'immediate' }, 'k-recorded'));
    expect(h.server.endpoint(a!).version).toBe(2);
    const { summary, results } = await h.run(h.items(), { priors: new Map([[a!, prior({ state: 'sent', key: 'k-recorded' })]]) });
    expect(summary).toMatchObject({ ok: 0, failed: 1 });
    expect(h.server.endpoint(a!).version).toBe(2);
    const line = failLines(results)[0]!;
    expect(line).toMatchObject({ exitCode: 13, idempotencyKey: 'k-recorded', error: { code: 'secret_not_delivered' } });
    expect(line.error.message).toContain('earlier run');
    expect(h.journal.at(-1)).toMatchObject({ t: 'fail', applied: true });
  });

  it('re-sends an in-flight item the server had applied and whose secret the killed run had kept: delivered from the copy named after the key', async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    const res = await h.vt.run(h.server.rotateOne({ endpointId: a!, expectedVersion: 1, mode: 'immediate' }, 'k-recorded'));
    const secret = (JSON.parse(res.body) as { data: { secret: string } }).data.secret;
    h.keep(a!, 'k-recorded', secret);
    const { summary, results } = await h.run(h.items(), { priors: new Map([[a!, prior({ state: 'sent', key: 'k-recorded' })]]) });
    expect(summary).toMatchObject({ ok: 1, failed: 0 });
    expect(h.delivered.get(a!)).toBe(secret);
    expect(okLines(results)[0]!.fingerprint).toBe(fp(secret));
    expect(h.recovered(a!, 'k-recorded')).toBeUndefined();
  });

  it('killed after every destination took the secret but before its "ok" record was on disk: the copy is still kept, the re-run delivers it again (exit 0), nothing rotated twice', async () => {
    // exec:-like destinations: a re-run cannot read them back, only the kept copy can finish the item.
    const h = harness({ endpoints: 3, unreadable: true, fsyncMs: 2 });
    const [, b] = h.server.ids;
    const first = await h.run(h.items(), { killBefore: (r) => r.t === 'ok' && r.id === b });
    expect(first.killed).toBe(true);
    const secretOfB = h.delivered.get(b!)!;
    expect(secretOfB).toBe(h.server.endpoint(b!).secret);
    const again = await h.run(h.items(), { priors: h.priors() });
    expect(failLines(again.results)).toEqual([]);
    expect(again.summary.failed).toBe(0);
    for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(2);
    expect(h.delivered.get(b!)).toBe(secretOfB);
  });

  it('killed while an item\'s "send" record was on its way to the disk: nothing was sent with that key, and no record of it is left in recovered/ once the re-run is done', async () => {
    for (const after of ['ok', 'none'] as const) {
      const h = harness({ endpoints: 3, fsyncMs: 2 });
      const [, b] = h.server.ids;
      const first = await h.run(h.items(), { killBefore: (r) => r.t === 'send' && r.id === b });
      expect(first.killed).toBe(true);
      // The re-run's "ok" of b reaches the disk, then it dies before tidying up: a third run skips b as done.
      const second = await h.run(h.items(), { priors: h.priors(), ...(after === 'ok' ? { killAfterRecords: h.journal.length + 6 } : {}) });
      if (after === 'ok') await h.run(h.items(), { priors: h.priors() });
      expect(second.killed).toBe(after === 'ok');
      for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(2);
      for (const id of h.server.ids) expect(h.delivered.get(id)).toBe(h.server.endpoint(id).secret);
      expect(readdirSync(join(h.configDir, 'recovered'))).toEqual([]);
    }
  });

  it("a done item leaves what another key's request left of its endpoint in place: a record is removed only by its own delivery", async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    expect((await h.run(h.items())).summary.ok).toBe(1);
    // Left by a request of another key (a run beside this one, or an older one): only its own key's run decides about it.
    const other = h.keep(a!, 'k-other', 'whsec_other');
    utimesSync(other, new Date(0), new Date(0));
    const again = await h.run(h.items(), { priors: h.priors() });
    expect(again.summary).toMatchObject({ skipped: 1, requests: 0 });
    expect(readdirSync(join(h.configDir, 'recovered'))).toEqual([basename(other)]);
  });

  it('a journal reused with the next manifest (expected version + 1): every item is a new rotation, none skipped as done', async () => {
    const h = harness({ endpoints: 3 });
    const first = await h.run(h.items());
    expect(first.summary).toMatchObject({ ok: 3, skipped: 0 });
    const second = await h.run(h.items(undefined, 2), { priors: h.priors() });
    expect(second.summary).toMatchObject({ ok: 3, skipped: 0, failed: 0, requests: 3 });
    for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(3);
    // And the same manifest again is done.
    const third = await h.run(h.items(undefined, 2), { priors: h.priors() });
    expect(third.summary).toMatchObject({ ok: 0, skipped: 3, requests: 0 });
  });

  it('an earlier rotation of the endpoint whose outcome is unknown refuses the item (exit 2) naming the endpoint, its expected version and key', async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    const { summary, results } = await h.run(h.items(undefined, 5), { priors: new Map([[a!, prior({ state: 'sent', key: 'k-1', ev: 1, mode: 'immediate' })]]) });
    expect(summary).toMatchObject({ ok: 0, failed: 1, requests: 0 });
    const line = failLines(results)[0]!;
    expect(line.exitCode).toBe(2);
    expect(line.error.message).toContain(a!);
    expect(line.error.message).toContain('expected version 1');
    expect(line.error.message).toContain('k-1');
  });

  it("a re-sent request the server refuses (the endpoint moved on meanwhile) settles the journal: next month's manifest is not blocked", async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    // Someone else rotated it meanwhile, with another key: version 2.
    await h.vt.run(h.server.rotateOne({ endpointId: a!, expectedVersion: 1, mode: 'immediate' }, 'k-other'));
    const first = await h.run(h.items(), { priors: new Map([[a!, prior({ state: 'sent', key: 'k-1', ev: 1, mode: 'immediate' })]]) });
    expect(failLines(first.results)[0]).toMatchObject({ exitCode: 7 });
    expect(h.journal.at(-1)).toMatchObject({ t: 'fail', key: 'k-1', applied: false });
    const next = await h.run(h.items(undefined, 2), { priors: h.priors() });
    expect(next.summary).toMatchObject({ ok: 1, failed: 0 });
    expect(h.server.endpoint(a!).version).toBe(3);
  });

  it('a pending item that the manifest now asks in another mode is refused, never re-sent as the other mode', async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    const { results } = await h.run(h.items(), { priors: new Map([[a!, prior({ state: 'sent', key: 'k-1', ev: 1, mode: 'overlap' })]]) });
    expect(failLines(results)[0]).toMatchObject({ exitCode: 2 });
    expect(failLines(results)[0]!.error.message).toContain('mode overlap');
    expect(h.server.stats().requests).toBe(0);
  });

  it('an item applied whose delivery was not confirmed is delivered again from its kept copy; one whose destinations all hold it is done, its copy removed', async () => {
    const h = harness({ endpoints: 2 });
    const [a, b] = h.server.ids;
    h.keep(a!, 'k-a', 'whsec_kept_for_a');
    h.keep(b!, 'k-b', 'whsec_kept_for_b');
    h.delivered.set(b!, 'whsec_kept_for_b');
    const priors = new Map([
      [a!, prior({ state: 'applied', key: 'k-a', version: 2, fp: fp('whsec_kept_for_a') })],
      [b!, prior({ state: 'applied', key: 'k-b', version: 2, fp: fp('whsec_kept_for_b') })],
    ]);
    const { summary, results } = await h.run(h.items(), { priors });
    expect(summary).toMatchObject({ ok: 1, skipped: 1, failed: 0, requests: 0 });
    expect(h.delivered.get(a!)).toBe('whsec_kept_for_a');
    expect(results.find((r) => r.endpointId === b)).toMatchObject({ ok: true, skipped: true });
    expect(results.find((r) => r.endpointId === a)).toMatchObject({ ok: true, version: 2, fingerprint: fp('whsec_kept_for_a') });
    expect(h.recovered(a!, 'k-a')).toBeUndefined();
    expect(h.recovered(b!, 'k-b')).toBeUndefined();
    expect(
      h.journal
        .filter((r) => r.t === 'ok')
        .map((r) => 'id' in r && r.id)
        .sort(),
    ).toEqual([a, b].sort());
  });

  it('a done item whose copy a run killed just after its "ok" record left behind: skipped, and that copy (its fingerprint) removed; another secret under its name is left alone', async () => {
    const h = harness({ endpoints: 2 });
    const [a, b] = h.server.ids;
    h.keep(a!, 'k-a', 'whsec_done_a');
    h.keep(b!, 'k-b', 'whsec_not_the_one');
    const priors = new Map([
      [a!, prior({ state: 'ok', key: 'k-a', version: 2, fp: fp('whsec_done_a'), delivery: [] })],
      [b!, prior({ state: 'ok', key: 'k-b', version: 2, fp: fp('whsec_done_b'), delivery: [] })],
    ]);
    const { summary } = await h.run(h.items(), { priors });
    expect(summary).toMatchObject({ ok: 0, skipped: 2, failed: 0, requests: 0 });
    expect(h.recovered(a!, 'k-a')).toBeUndefined();
    expect(h.recovered(b!, 'k-b')).toBe('whsec_not_the_one');
  });

  it('an item applied whose delivery was not confirmed and whose copy is gone: skipped if every destination holds its fingerprint, else 13 "delivery not confirmed", never sent', async () => {
    const h = harness({ endpoints: 2 });
    const [a, b] = h.server.ids;
    h.delivered.set(a!, 'whsec_delivered_before_the_crash');
    const priors = new Map([
      [a!, prior({ state: 'applied', key: 'k-a', version: 2, fp: fp('whsec_delivered_before_the_crash') })],
      [b!, prior({ state: 'applied', key: 'k-b', version: 2, fp: 'sha256:0000000000000000' })],
    ]);
    const { summary, results } = await h.run(h.items(), { priors });
    expect(summary).toMatchObject({ ok: 0, skipped: 1, failed: 1, requests: 0 });
    expect(results.find((r) => r.endpointId === a)).toMatchObject({ ok: true, skipped: true, version: 2 });
    expect(results.find((r) => r.endpointId === b)).toMatchObject({ ok: false, exitCode: 13, idempotencyKey: 'k-b' });
    expect(failLines(results)[0]!.error.message).toContain('delivery not confirmed');
    expect(failLines(results)[0]!.error.details).toMatchObject({ fingerprint: 'sha256:0000000000000000' });
    expect(h.journal).toEqual([expect.objectContaining({ t: 'ok', id: a })]);
  });

  it("an item the server refused last time is tried afresh, with a new key and the manifest's values", async () => {
    const h = harness({ endpoints: 1 });
    const [a] = h.server.ids;
    const { summary } = await h.run(h.items(), { priors: new Map([[a!, prior({ state: 'refused', key: 'k-old', ev: 9 })]]) });
    expect(summary.ok).toBe(1);
    expect(h.journal[0]).toMatchObject({ t: 'send', key: 'key-1', ev: 1 });
  });

  it('killed at any point and re-run with its journal: every endpoint rotated exactly once, each secret delivered or reported', async () => {
    for (const cut of [1, 2, 3, 7, 23, 40, 101, 150, 179]) {
      const h = harness({ endpoints: 60, concurrency: 4, latencyMs: 10, fsyncMs: 3 });
      const first = await h.run(h.items(), { killAfterRecords: cut });
      expect(first.killed).toBe(true);
      expect(h.journal).toHaveLength(cut);
      const second = await h.run(h.items(), { priors: h.priors() });
      expect(second.killed).toBe(false);
      for (const id of h.server.ids) expect(h.server.endpoint(id).version).toBe(2);
      const { summary, results } = second;
      expect(summary.ok + summary.skipped + summary.failed).toBe(60);
      // Every item done, now or by the killed run: a secret whose answer
      // reached the killed run is delivered from its record; only an answer
      // the server sent after the kill (still in the kernel) is reported
      // lost, exit 13, naming its key.
      for (const f of failLines(results)) {
        expect(h.lostInFlight.has(f.endpointId), f.error.message).toBe(true);
        expect(f).toMatchObject({ exitCode: 13, error: { code: 'secret_not_delivered' } });
        expect(f.idempotencyKey).toMatch(/^key-/);
      }
      for (const r of okLines(results)) {
        // The destination holds the server's secret.
        expect(h.delivered.get(r.endpointId)).toBe(h.server.endpoint(r.endpointId).secret);
        expect(r.fingerprint).toBe(fp(h.server.endpoint(r.endpointId).secret));
      }
      // What the killed run finished and journalled is skipped, not redone.
      const done = first.results.filter((r) => r.ok).length;
      expect(summary.skipped).toBeGreaterThanOrEqual(done);
    }
  });
});

/**
 * One item through runBulk with the given answer and journal, real records in
 * a temporary config folder (its recovered/ read by `check`), no clock or
 * destination to speak of.
 */
async function oneItem(
  answer: { secret: string; requestId: string },
  journal: RunnerDeps['journal'],
  check: (out: { summary: RunSummary; lines: ItemResult[]; configDir: string }) => void,
): Promise<void> {
  const configDir = mkdtempSync(join(tmpdir(), 'chatctl-runner-one-'));
  const lines: ItemResult[] = [];
  try {
    const summary = await runBulk(
      [{ line: 1, endpointId: 'we_1', expectedVersion: 1, mode: 'overlap' }],
      { concurrency: 1, total: 1, signal: new AbortController().signal },
      {
        clock: { now: () => 0, sleep: async () => {}, random: () => 0.5 },
        // As the transport does: the answer's bytes reach the record before anything parses them.
        rotate: async (_req, _key, hooks) => {
          const body = JSON.stringify({ data: { endpoint: { id: 'we_1', version: 2 }, secret: answer.secret, secretAvailable: true }, meta: { requestId: answer.requestId } });
          hooks.tap?.head(200, {});
          hooks.tap?.chunk(Buffer.from(body));
          return { ok: true, body: JSON.parse(body) } as never;
        },
        secrets: {
          deliver: async (_item, s) => ({ delivered: [{ to: 'file:/x', fingerprint: fp(s) }], failures: [] }),
          holds: () => false,
          targetsFor: () => ['file:/x'],
        },
        custody: { configDir, now: () => 0, scope: 'o/a/e', rerun: () => 're-run' },
        journal,
        priors: new Map(),
        newKey: () => 'k-1',
        emit: (r) => lines.push(r),
      },
    );
    check({ summary, lines, configDir });
  } finally {
    rmSync(configDir, { recursive: true, force: true });
  }
}

describe('runBulk: what the journal holds', () => {
  it('an "ok" record that cannot reach the journal (a full disk): no ok line; the item says so, and its record stays for the re-run', async () => {
    const secret = 'whsec_DeliveredButNotJournaled0123456789';
    const full = async (r: { t: string }) => {
      if (r.t === 'ok') throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    };
    await oneItem({ secret, requestId: 'r' }, { append: full }, ({ summary, lines, configDir }) => {
      expect(summary.ok).toBe(0);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ endpointId: 'we_1', ok: false, exitCode: 1, idempotencyKey: 'k-1', error: { code: 'internal_error' } });
      // The record, with the answer that carries the secret, is still there for the re-run.
      const left = readdirSync(join(configDir, 'recovered'));
      expect(left).toHaveLength(1);
      expect(readFileSync(join(configDir, 'recovered', left[0]!), 'utf8')).toContain(secret);
    });
  });

  it('never the secret, even when the server echoes it as its request id', async () => {
    const secret = 'whsec_EchoedAsRequestId0123456789abcdef';
    const records: unknown[] = [];
    await oneItem({ secret, requestId: `req ${secret}` }, { append: async (r) => void records.push(r) }, ({ summary }) => {
      expect(summary.ok).toBe(1);
      expect(records.map((r) => (r as { t: string }).t)).toContain('ok');
      expect(JSON.stringify(records)).not.toContain(secret);
    });
  });
});
