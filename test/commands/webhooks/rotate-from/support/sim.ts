// Virtual time and a server in it, for the runner and the rate control.
//
// virtualTime(): sleep() registers a timer; run(promise) lets every pending
// promise settle, then moves the clock to the earliest timer and fires it,
// until the promise settles. Nothing really waits, and a run is exactly
// repeatable.
//
// simServer(): the sandbox's own request handling (src/sandbox/api.ts, with
// its token bucket, idempotency store and endpoint store) on the virtual
// clock, with a network delay each way and a service latency: the fake
// server is the real one, minus HTTP.
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { scopedPath } from '../../../../../src/api/schemas.js';
import type { WireResponse } from '../../../../../src/http/transport.js';
import { handleApiRequest } from '../../../../../src/sandbox/api.js';
import { toAnswer } from '../../../../../src/sandbox/protocol.js';
import { NO_FAULTS } from '../../../../../src/sandbox/faults.js';
import { SandboxState } from '../../../../../src/sandbox/state.js';
import type { ItemRequest as RotateRequest } from '../../../../../src/commands/webhooks/rotate-from/runner.js';

export function virtualTime(start = 1_000_000) {
  let now = start;
  let seq = 0;
  const timers: Array<{ at: number; seq: number; fire: () => void }> = [];

  const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
      const timer = {
        at: now + Math.max(0, ms),
        seq: seq++,
        fire: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = timers.indexOf(timer);
        if (i >= 0) timers.splice(i, 1);
        reject(signal!.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      timers.push(timer);
    });

  /** Calls fn when the clock reaches `at` (ms from now). */
  const after = (ms: number, fn: () => void) => void sleep(ms).then(fn);

  async function run<T>(promise: Promise<T>): Promise<T> {
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      // Every promise chain that can move without time moves first.
      await new Promise((r) => setImmediate(r));
      if (settled) return promise;
      if (timers.length === 0) throw new Error(`virtual time: nothing scheduled at ${now} and the run has not finished`);
      timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const t = timers.shift()!;
      now = Math.max(now, t.at);
      t.fire();
    }
  }

  return { now: () => now, sleep, after, run, random: () => 0.5 };
}

export type VirtualTime = ReturnType<typeof virtualTime>;

export interface SimOptions {
  endpoints: number;
  rateLimit?: number;
  /** Service time before the answer leaves the server. */
  latencyMs?: number;
  /** One-way network time. */
  networkMs?: number;
  /** Send Retry-After-Ms with 429s (the sandbox does); false keeps only whole-second Retry-After. */
  retryAfterMs?: boolean;
}

const TOKEN = 'tok_sim_0123456789';

// Real random bytes, drawn 64 KiB at a time: one call to the system source per
// secret costs more than the rest of a simulated rotation.
let pool = Buffer.alloc(0);
let pooled = 0;
function randomFromPool(n: number): Buffer {
  if (pooled + n > pool.length) {
    pool = cryptoRandomBytes(Math.max(65536, n));
    pooled = 0;
  }
  const out = Buffer.from(pool.subarray(pooled, pooled + n));
  pooled += n;
  return out;
}

export function simServer(vt: VirtualTime, opts: SimOptions) {
  let counter = 0;
  const state = new SandboxState({
    token: TOKEN,
    endpointLimit: opts.endpoints + 10,
    faults: { ...NO_FAULTS, rateLimit: opts.rateLimit ?? 0 },
    now: vt.now,
    // Deterministic ids, real random secrets.
    randomBytes: (n) => (n === 20 ? Buffer.from(String(++counter).padStart(20, '0')) : randomFromPool(n)),
  });
  const ids: string[] = [];
  for (let i = 0; i < opts.endpoints; i++) {
    const { endpoint } = state.endpoints.create({ name: `hook ${i}`, destinationUrl: `https://hooks.example.com/${i}`, eventTypes: ['chat.message.created.v1'] });
    ids.push(endpoint.id);
  }
  let requests = 0;
  let limited = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let down = false;
  // What inspect() answered, by id, and the clock reading it was taken at: a
  // test reads endpoints one by one (hundreds of them), and inspect() builds
  // every record. Nothing in the simulation changes the store but
  // handleApiRequest (which drops the snapshot); the clock moving does (an
  // overlap ends), so a snapshot taken at another time is not used.
  let snapshot: { at: number; byId: Map<string, { version: number; validSecrets: string[] }> } | null = null;

  async function rotateOne(req: RotateRequest, key: string): Promise<WireResponse> {
    requests += 1;
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await vt.sleep(opts.networkMs ?? 1);
      if (down) {
        const err = new Error('connect ECONNREFUSED') as Error & { failure: string };
        err.name = 'TransportError';
        err.failure = 'connect';
        throw err;
      }
      const outcome = handleApiRequest(state, {
        method: 'POST',
        pathname: scopedPath(state.scope, 'webhook-endpoints', req.endpointId, 'secret', 'rotate'),
        headers: {
          authorization: `Bearer ${TOKEN}`,
          origin: 'https://sim.example',
          'x-service-csrf': '1',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: { contentType: 'application/json', bytes: Buffer.from(JSON.stringify({ expectedVersion: req.expectedVersion, mode: req.mode })), tooLarge: false },
        remoteAddress: '127.0.0.1',
      });
      snapshot = null;
      if (outcome === 'drop') throw new Error('dropped');
      const requestId = `req_${requests}`;
      const answer = toAnswer(outcome, requestId);
      if (answer.status === 429) limited += 1;
      await vt.sleep((opts.latencyMs ?? 0) + (opts.networkMs ?? 1));
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(answer.headers)) headers[k.toLowerCase()] = v;
      if (opts.retryAfterMs === false) delete headers['retry-after-ms'];
      return { status: answer.status, headers, body: JSON.stringify(answer.body) };
    } finally {
      inFlight -= 1;
    }
  }

  return {
    state,
    ids,
    rotateOne,
    /** The endpoint's version and current secret, as the sandbox holds them. */
    endpoint(id: string) {
      if (snapshot === null || snapshot.at !== vt.now()) snapshot = { at: vt.now(), byId: new Map(state.endpoints.inspect().map((x) => [x.id, x])) };
      const e = snapshot.byId.get(id)!;
      return { version: e.version, secret: e.validSecrets[0]! };
    },
    setDown: (v: boolean) => void (down = v),
    stats: () => ({ requests, limited, maxInFlight }),
  };
}
