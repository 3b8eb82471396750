// What `webhooks listen` takes from a sender before it gives up on it. A
// rehearsal receiver still faces whatever reaches its port: a body without
// end, a sender that never finishes its headers, a flood of connections.
// docs/signing.md ("Limits") states these figures; keep the two in step.

export interface ListenLimits {
  /** A body beyond this is answered 413 and the connection closed. */
  maxBodyBytes: number;
  /** All headers of a request must arrive within this (else 408). */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this (else 408). */
  requestTimeoutMs: number;
  /** How often the server looks for requests past those limits. */
  checkIntervalMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** The headers of one request, in bytes (else 431). */
  maxHeaderBytes: number;
  /** Headers counted per request; the rest are not read. */
  maxHeaderCount: number;
  /** Connections at once; a new one beyond it is closed at once. */
  maxConnections: number;
  /** How long the --forward-to target has to answer (else 502). */
  forwardTimeoutMs: number;
  /** The target's answer passed back, at most (a longer one is 502). */
  maxForwardAnswerBytes: number;
}

export const LISTEN_LIMITS: ListenLimits = {
  maxBodyBytes: 1024 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  checkIntervalMs: 1_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 16 * 1024,
  maxHeaderCount: 100,
  maxConnections: 64,
  forwardTimeoutMs: 10_000,
  maxForwardAnswerBytes: 1024 * 1024,
};
