// Counts of the API requests a sandbox answered, by status, and of those the
// rate limiter refused (GET /_sandbox/stats): a benchmark or test reads how
// many 429s a run caused without keeping every request.
export interface StatsSnapshot {
  requests: number;
  /** Answers by HTTP status ("dropped" for connections closed unanswered). */
  statuses: Record<string, number>;
  /** 429s from the rate limiter (injected 429s are not counted here). */
  rateLimited: number;
}

export class Stats {
  private requests = 0;
  private statuses = new Map<string, number>();
  private rateLimited = 0;

  answered(status: number | null): void {
    this.requests += 1;
    const key = status === null ? 'dropped' : String(status);
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
  }

  limited(): void {
    this.rateLimited += 1;
  }

  snapshot(): StatsSnapshot {
    return { requests: this.requests, statuses: Object.fromEntries(this.statuses), rateLimited: this.rateLimited };
  }

  clear(): void {
    this.requests = 0;
    this.statuses.clear();
    this.rateLimited = 0;
  }
}
