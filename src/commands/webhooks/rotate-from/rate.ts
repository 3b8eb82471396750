// The rate control every worker of a `--from` run shares (docs/fleet.md,
// Rate). Workers ask `acquire()` before each request; it holds them while the
// run is paused and spaces requests at the allowed rate.
//
// - At first there is no rate: requests go as fast as the workers can send
//   them (the server's limit is not known, and most runs never meet it).
// - A 429 or 503 pauses every worker for the server's wait (Retry-After-Ms
//   when the server sends it, else Retry-After, else backoff with full
//   jitter), and sets the rate to `decrease` times what the server was
//   actually answering just before: a multiplicative decrease.
// - Then, every `stepMs` and `stepSuccesses` successes without another
//   refusal, the rate climbs by a step of `increase` times that new rate: an
//   additive increase, so a run settles just under the server's limit
//   instead of hammering it.
// - Several requests in flight when the server starts refusing all come back
//   429; only the first of them (those sent after the last decrease) lowers
//   the rate again, the others only extend the pause.
import { BACKOFF_BASE_MS, BACKOFF_CAP_MS } from '../../../http/client.js';
import type { Clock } from '../../../system/clock.js';

export interface RateClock extends Clock {
  random(): number;
}

export interface RateSettings {
  /** Multiplicative decrease on a refusal (0..1). */
  decrease: number;
  /** Additive increase per step, as a fraction of the rate set at the last decrease. */
  increase: number;
  /** Time between increases... */
  stepMs: number;
  /** ...and successes between them, so a slow server is probed as gently, per request, as a fast one. */
  stepSuccesses: number;
  /** Never slower than this (requests per second). */
  minRate: number;
}

export const DEFAULT_RATE_SETTINGS: RateSettings = { decrease: 0.8, increase: 0.05, stepMs: 250, stepSuccesses: 25, minRate: 0.5 };

/**
 * Successes are counted in SLOTS slots of SLOT_MS each: the count over the
 * last second is the rate the server was answering at. A count, not a
 * quotient over a shorter span, so the burst a server allows at the start
 * of a run is not mistaken for its rate.
 */
const SLOT_MS = 100;
const SLOTS = 10;

export interface RateSnapshot {
  /** Requests per second allowed now; null before the first refusal (unpaced). */
  rate: number | null;
  pausedUntil: number;
  throttles: number;
}

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
  /** Whether a worker is taking its turn in acquire() (waiting for its slot or the pause's end). */
  private turnTaken = false;
  /** Workers waiting for the turn, first come first served. */
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly clock: RateClock,
    private readonly settings: RateSettings = DEFAULT_RATE_SETTINGS,
  ) {}

  /**
   * Resolves when this worker may send: after any pause, and at least
   * 1/rate after the previous request. Rejects when `signal` aborts.
   *
   * Workers take turns, first come first served: only the one whose turn it
   * is waits on the clock, for the next slot, and hands the turn on when it
   * has it. (All of them waiting on the clock for the same slot would wake
   * together for every slot, one to go and the rest to sleep again: work
   * growing with --concurrency for every request.)
   */
  async acquire(signal: AbortSignal): Promise<number> {
    if (signal.aborted) throw signal.reason ?? new Error('aborted');
    if (this.turnTaken) await this.awaitTurn(signal);
    else this.turnTaken = true;
    try {
      return await this.acquireInTurn(signal);
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.turnTaken = false;
    }
  }

  /** Resolves when the turn is handed to this worker; rejects (and leaves the line) when `signal` aborts. */
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

  private async acquireInTurn(signal: AbortSignal): Promise<number> {
    for (;;) {
      if (signal.aborted) throw signal.reason ?? new Error('aborted');
      const now = this.clock.now();
      const at = Math.max(now, this.pausedUntil, this.nextAt);
      if (at <= now) {
        // The next slot follows this one's scheduled time, not the moment the
        // timer fired (timers run late; that lateness must not add up), but
        // time spent idle is no credit for a burst.
        const interval = this.interval();
        this.nextAt = Math.max(this.nextAt, now - interval) + interval;
        return now;
      }
      await this.clock.sleep(at - now, signal);
    }
  }

  /** A request succeeded (or failed for a reason that is not the rate). */
  succeeded(): void {
    const now = this.clock.now();
    this.consecutive = 0;
    this.record(now);
    this.sinceStep += 1;
    if (Number.isFinite(this.rate) && now >= this.pausedUntil && now - this.lastStepAt >= this.settings.stepMs && this.sinceStep >= this.settings.stepSuccesses) {
      this.rate += this.stepSize;
      this.lastStepAt = now;
      this.sinceStep = 0;
    }
  }

  /**
   * The server refused a request sent at `sentAt` with 429 or 503, asking to
   * wait `waitMs` (undefined: it did not say). Returns the pause applied.
   */
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
    const wait = waitMs ?? backoff(this.consecutive, this.clock.random);
    this.consecutive += 1;
    this.pausedUntil = Math.max(this.pausedUntil, now + wait);
    this.lastStepAt = Math.max(this.lastStepAt, this.pausedUntil);
    // Spread the restart: the first request goes when the pause ends, the next ones at the new rate.
    this.nextAt = Math.max(this.nextAt, this.pausedUntil);
    return this.pausedUntil - now;
  }

  snapshot(): RateSnapshot {
    return { rate: Number.isFinite(this.rate) ? this.rate : null, pausedUntil: this.pausedUntil, throttles: this.throttles };
  }

  private interval(): number {
    return Number.isFinite(this.rate) ? 1000 / this.rate : 0;
  }

  /** Moves the slot ring to `now`, emptying the slots that fell out of the last second. */
  private advance(now: number): void {
    const index = Math.floor(now / SLOT_MS);
    const gap = index - this.slotIndex;
    if (gap <= 0) return;
    for (let i = 1; i <= Math.min(gap, SLOTS); i++) this.slots[(this.slotIndex + i) % SLOTS] = 0;
    this.slotIndex = index;
  }

  private record(now: number): void {
    this.advance(now);
    this.slots[this.slotIndex % SLOTS]! += 1;
  }

  /** Successes over the last second, or undefined with too few to tell. */
  private measured(now: number): number | undefined {
    this.advance(now);
    const count = this.slots.reduce((a, b) => a + b, 0);
    return count >= 2 ? (count * 1000) / (SLOT_MS * SLOTS) : undefined;
  }
}

/** Full jitter, as for single requests (docs/secrets.md, what is retried). */
function backoff(retryIndex: number, random: () => number): number {
  return Math.floor(random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** retryIndex));
}
