// The API requests the sandbox received, newest last, for tests to inspect
// (GET /_sandbox/requests). Bounded so a long-running sandbox stays small.
import type { IncomingHttpHeaders } from 'node:http';

const MAX_ENTRIES = 1000;

export interface RecordedRequest {
  at: string;
  requestId: string;
  method: string;
  /** The request target as received, query included. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as UTF-8 text (the first 64 KiB). */
  body: string;
  /** The status answered, or null when the connection was dropped. */
  status: number | null;
}

export class RequestLog {
  private entries: RecordedRequest[] = [];

  add(entry: RecordedRequest): void {
    this.entries.push(entry);
    if (this.entries.length > MAX_ENTRIES) this.entries.shift();
  }

  list(): RecordedRequest[] {
    return [...this.entries];
  }

  clear(): number {
    const n = this.entries.length;
    this.entries = [];
    return n;
  }
}
