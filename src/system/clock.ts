/** The clock of a run, passed in so tests run chatctl's waits (backoff, the deadline, the lock) on a virtual clock. */
export interface Clock {
  now(): number;
  /** Rejects once `signal` is aborted. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}
