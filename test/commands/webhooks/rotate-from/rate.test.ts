import { describe, expect, it } from 'vitest';
import { DEFAULT_RATE_SETTINGS, RateController } from '../../../../src/commands/webhooks/rotate-from/rate.js';
import { virtualTime } from './support/sim.js';

const live = () => new AbortController().signal;

/** n acquires by one caller, in virtual time; returns the moments each was granted. */
async function grants(vt: ReturnType<typeof virtualTime>, rc: RateController, n: number): Promise<number[]> {
  const at: number[] = [];
  await vt.run(
    (async () => {
      for (let i = 0; i < n; i++) at.push(await rc.acquire(live()));
    })(),
  );
  return at;
}

/** k successes spread evenly over `ms`, from now. */
async function succeedOver(vt: ReturnType<typeof virtualTime>, rc: RateController, k: number, ms: number) {
  await vt.run(
    (async () => {
      for (let i = 0; i < k; i++) {
        await vt.sleep(ms / k);
        rc.succeeded();
      }
    })(),
  );
}

describe('RateController', () => {
  it('does not pace at all before the server has refused anything', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    const t0 = vt.now();
    expect(await grants(vt, rc, 50)).toEqual(Array(50).fill(t0));
    expect(rc.snapshot().rate).toBeNull();
  });

  it("a refusal pauses every waiting worker for the server's wait", async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    const t0 = vt.now();
    expect(rc.refused(t0, 1500)).toBe(1500);
    const granted: number[] = [];
    await vt.run(Promise.all([1, 2, 3].map(async () => granted.push(await rc.acquire(live())))));
    expect(Math.min(...granted)).toBe(t0 + 1500);
  });

  it('with no wait from the server, pauses for the backoff with full jitter, growing while refusals continue', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt); // vt.random() is 0.5
    const t0 = vt.now();
    expect(rc.refused(t0, undefined)).toBe(250); // 0.5 * 500
    expect(rc.refused(t0, undefined)).toBe(500); // 0.5 * 1000, from t0
    rc.succeeded();
    await vt.run(vt.sleep(1000));
    expect(rc.refused(vt.now(), undefined)).toBe(250); // a success reset the exponent
  });

  it('sets the rate from the successes of the last second, times the decrease, then spaces requests by it', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    await succeedOver(vt, rc, 150, 1000); // 150 answered in the last second
    rc.refused(vt.now() - 10, 0);
    expect(rc.snapshot().rate).toBeCloseTo(150 * DEFAULT_RATE_SETTINGS.decrease); // 120 per second
    const at = await grants(vt, rc, 5);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    for (const g of gaps) expect(g).toBeCloseTo(1000 / 120, 5);
  });

  it('takes the burst a server allows at the start for what it is: a count per second, not a rate over a shorter span', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    // 100 answered in the first 100 ms (a burst), then refused.
    await succeedOver(vt, rc, 100, 100);
    rc.refused(vt.now(), 10);
    expect(rc.snapshot().rate).toBeCloseTo(80); // not 1000 * 0.8
  });

  it('lowers the rate once for the requests that were already in flight when it was lowered', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    await succeedOver(vt, rc, 100, 1000);
    const sentBefore = vt.now() - 5;
    rc.refused(sentBefore, 10);
    const after = rc.snapshot().rate;
    rc.refused(sentBefore, 10);
    rc.refused(sentBefore, 10);
    expect(rc.snapshot().rate).toBe(after);
    // A request sent after the decrease that is refused again lowers it again.
    await vt.run(vt.sleep(20));
    rc.refused(vt.now(), 10);
    expect(rc.snapshot().rate).toBeLessThan(after!);
    expect(rc.snapshot().throttles).toBe(4);
  });

  it('climbs back by steps of the increase, one per stepMs and stepSuccesses, never during a pause', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt, { ...DEFAULT_RATE_SETTINGS, stepMs: 100, stepSuccesses: 5 });
    await succeedOver(vt, rc, 100, 1000);
    rc.refused(vt.now(), 200);
    const low = rc.snapshot().rate!; // 80
    const step = low * DEFAULT_RATE_SETTINGS.increase; // 4
    // During the pause: successes of requests in flight do not raise it.
    for (let i = 0; i < 10; i++) rc.succeeded();
    expect(rc.snapshot().rate).toBe(low);
    await vt.run(vt.sleep(300));
    // 10 successes over 100 ms: one step (both conditions met once).
    await succeedOver(vt, rc, 10, 100);
    expect(rc.snapshot().rate).toBeCloseTo(low + step);
    await succeedOver(vt, rc, 20, 400);
    expect(rc.snapshot().rate).toBeCloseTo(low + 5 * step, 0);
  });

  it("after a pause, does not mistake the quiet second for the server's rate", async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    await succeedOver(vt, rc, 100, 1000);
    rc.refused(vt.now(), 900);
    const first = rc.snapshot().rate!;
    await vt.run(vt.sleep(950));
    rc.succeeded();
    rc.succeeded();
    // Refused again just after the pause: 2 successes in the last second say nothing.
    rc.refused(vt.now(), 10);
    expect(rc.snapshot().rate).toBeCloseTo(first * DEFAULT_RATE_SETTINGS.decrease);
  });

  it('refused before anything succeeded: only the pause, no made-up rate', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    rc.refused(vt.now(), 100);
    expect(rc.snapshot().rate).toBeNull();
  });

  it('never goes below minRate', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    await succeedOver(vt, rc, 3, 1000);
    rc.refused(vt.now(), 0);
    expect(rc.snapshot().rate).toBeCloseTo(2.4);
    for (let i = 0; i < 30; i++) {
      await vt.run(vt.sleep(2000));
      rc.refused(vt.now(), 0);
    }
    expect(rc.snapshot().rate).toBe(DEFAULT_RATE_SETTINGS.minRate);
  });

  it('acquire gives up when its signal aborts, also while paused', async () => {
    const vt = virtualTime();
    const rc = new RateController(vt);
    rc.refused(vt.now(), 10_000);
    const ctl = new AbortController();
    const pending = rc.acquire(ctl.signal);
    vt.after(100, () => ctl.abort(new Error('stop')));
    await expect(vt.run(pending)).rejects.toThrow('stop');
    expect(vt.now()).toBeLessThan(10_000 + 1_000_000);
  });
});
