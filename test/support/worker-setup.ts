// Runs in every test worker before each file (vitest.config.ts, setupFiles).
//
// One: the tests' own fetch() (test/support/sandbox.ts's helpers, and the files
// that ask a sandbox or a receiver directly) sends one request per
// connection. With keep-alive, a connection the client still counts as idle
// may already be closed by the server (Node's servers close an idle one
// after 5 s): on a loaded machine a worker busy past that reuses it, and the
// request fails with "SocketError: other side closed" although the server
// never saw it. A connection per request cannot be stale; on loopback it
// costs a connect. chatctl's own requests go through its transport
// (src/http/), not fetch, and are not changed by this.
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { vi } from 'vitest';
import { QUIET_TEST_TIMEOUT_MS, scaled } from './slowdown.js';

const ONE_REQUEST_PER_CONNECTION = Symbol.for('chatctl.test.oneRequestPerConnection');
const current = getGlobalDispatcher() as { [ONE_REQUEST_PER_CONNECTION]?: true };
if (!current[ONE_REQUEST_PER_CONNECTION]) {
  // pipelining 0: undici sends `connection: close` and opens a connection for each request.
  const agent = Object.assign(new Agent({ pipelining: 0 }), { [ONE_REQUEST_PER_CONNECTION]: true as const });
  setGlobalDispatcher(agent);
}

// Two: vitest's per-test and per-hook limit for this file: the quiet machine's,
// as much longer as the machine's load makes every wait now
// (test/support/slowdown.ts). A test or hook that names its own limit scales
// it with scaled().
vi.setConfig({ testTimeout: scaled(QUIET_TEST_TIMEOUT_MS), hookTimeout: scaled(QUIET_TEST_TIMEOUT_MS) });
