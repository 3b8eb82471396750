// The clock of a run: the time and a wait that an abort ends. Passed in, so
// tests run chatctl's waits (retry backoff, Retry-After, the deadline, the
// config lock, the fleet's pace) on a virtual clock instead of sleeping.

export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Resolves after `ms`; rejects once `signal` is aborted. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}
