// The rate every worker of a `--from` run shares (docs/fleet.md, Rate):
// unpaced until a 429 or 503 pauses every worker and cuts the rate to
// `decrease` times what the server was answering; then it climbs in steps.
import { backoffDelay } from '../../../http/client.js';
import type { Clock } from '../../../system/clock.js';

export type RateClock = Clock & { random(): number };

/**
 * increase: a step as a fraction of the rate set at the last decrease, taken
 * every stepMs and stepSuccesses (so a slow server is probed as gently, per
 * request, as a fast one); minRate: requests per second at the least.
 */
export type RateSettings = { decrease: number; increase: number; stepMs: number; stepSuccesses: number; minRate: number };

export const DEFAULT_RATE_SETTINGS: RateSettings = { decrease: 0.8, increase: 0.05, stepMs: 250, stepSuccesses: 25, minRate: 0.5 };

// Successes over the last second in SLOTS slots: a count, not a quotient over
// a shorter span, so a server's burst at a run's start is not taken for its rate.
const SLOT_MS = 100;
const SLOTS = 10;

export class RateController {
  private rate = Number.POSITIVE_INFINITY;
  private nextAt = Number.NEGATIVE_INFINITY;
  private pausedUntil = Number.NEGATIVE_INFINITY;
  private lastDecreaseAt = Number.NEGATIVE_INFINITY;
  private lastStepAt = Number.NEGATIVE_INFINITY;
  private stepSize = 0;
  private sinceStep = 0;
  /** Refusals in a row with no success between: the backoff exponent. */
  private consecutive = 0;
  private throttles = 0;
  private readonly slots = new Array<number>(SLOTS).fill(0);
  private slotIndex = Number.NEGATIVE_INFINITY;
  /** A worker is taking its turn in acquire(); the others wait for it, first come first served. */
  private turnTaken = false;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly clock: RateClock,
    private readonly settings: RateSettings = DEFAULT_RATE_SETTINGS,
  ) {}

  /**
   * Resolves when this worker may send: after any pause, 1/rate after the
   * previous request. Workers take turns, so that only one waits on the clock
   * (all waking for every slot would cost work growing with --concurrency).
   */
  async acquire(signal: AbortSignal): Promise<number> {
    if (signal.aborted) throw signal.reason ?? new Error('aborted');
    if (this.turnTaken) await this.awaitTurn(signal);
    else this.turnTaken = true;
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
        const now = this.clock.now();
        const at = Math.max(now, this.pausedUntil, this.nextAt);
        if (at <= now) {
          // The next slot follows this one's scheduled time (a late timer's lateness
          // must not add up), but time spent idle is no credit for a burst.
          const interval = Number.isFinite(this.rate) ? 1000 / this.rate : 0;
          this.nextAt = Math.max(this.nextAt, now - interval) + interval;
          return now;
        }
        await this.clock.sleep(at - now, signal);
      }
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.turnTaken = false;
    }
  }

  private awaitTurn(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(take);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason ?? new Error('aborted'));
      };
      const take = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(take);
    });
  }

  /** A request succeeded (or failed for a reason that is not the rate). */
  succeeded(): void {
    const now = this.clock.now();
    this.consecutive = 0;
    this.advance(now);
    this.slots[this.slotIndex % SLOTS]! += 1;
    this.sinceStep += 1;
    if (Number.isFinite(this.rate) && now >= this.pausedUntil && now - this.lastStepAt >= this.settings.stepMs && this.sinceStep >= this.settings.stepSuccesses) {
      this.rate += this.stepSize;
      this.lastStepAt = now;
      this.sinceStep = 0;
    }
  }

  /** A 429 or 503 to a request sent at `sentAt`, asking to wait `waitMs` (if it said). Returns the pause applied. */
  refused(sentAt: number, waitMs: number | undefined): number {
    const now = this.clock.now();
    this.throttles += 1;
    if (sentAt >= this.lastDecreaseAt) {
      // The count of the last second says what the server answered at, unless
      // a pause fell in that second (then it says less than the server can do).
      const measured = now - this.pausedUntil >= SLOT_MS * SLOTS || !Number.isFinite(this.rate) ? this.measured(now) : undefined;
      const base = Math.min(this.rate, measured ?? this.rate);
      // With nothing to go on (refused before two successes), only the pause applies.
      if (Number.isFinite(base)) {
        this.rate = Math.max(this.settings.minRate, base * this.settings.decrease);
        this.stepSize = Math.max(this.settings.minRate, this.rate * this.settings.increase);
      }
      this.lastDecreaseAt = now;
      this.sinceStep = 0;
    }
    // Full jitter, as for single requests (docs/secrets.md, what is retried).
    const wait = waitMs ?? backoffDelay(this.consecutive, () => this.clock.random());
    this.consecutive += 1;
    this.pausedUntil = Math.max(this.pausedUntil, now + wait);
    this.lastStepAt = Math.max(this.lastStepAt, this.pausedUntil);
    // Spread the restart: the first request goes when the pause ends, the next ones at the new rate.
    this.nextAt = Math.max(this.nextAt, this.pausedUntil);
    return this.pausedUntil - now;
  }

  snapshot(): { rate: number | null; pausedUntil: number; throttles: number } {
    return { rate: Number.isFinite(this.rate) ? this.rate : null, pausedUntil: this.pausedUntil, throttles: this.throttles };
  }

  /** Moves the slot ring to `now`, emptying the slots that fell out of the last second. */
  private advance(now: number): void {
    const index = Math.floor(now / SLOT_MS);
    const gap = index - this.slotIndex;
    if (gap <= 0) return;
    for (let i = 1; i <= Math.min(gap, SLOTS); i++) this.slots[(this.slotIndex + i) % SLOTS] = 0;
    this.slotIndex = index;
  }

  private measured(now: number): number | undefined {
    this.advance(now);
    const count = this.slots.reduce((a, b) => a + b, 0);
    return count >= 2 ? (count * 1000) / (SLOT_MS * SLOTS) : undefined;
  }
}
