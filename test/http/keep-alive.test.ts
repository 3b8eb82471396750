// A server whose keep-alive timeout is shorter than the gaps between a
// run's requests (issue: chatctl's half of the keep-alive race). A request
// written to a kept-alive connection the server has just closed fails before
// any byte of an answer: chatctl sends it again at once on a new connection,
// with the same Idempotency-Key, as no counted retry (so --max-retries 0
// still loses nothing); a connection closed while idle is simply not reused.
// A real node:http server on 127.0.0.1 closes connections on command, not by
// a timer: no sleeps.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { scopeEnv, secretBody } from '../support/fixtures.js';
import { runCli, workspace } from '../support/run.js';
import { json, startServer, type RecordingServer } from '../support/server.js';
import { virtualClock } from '../support/fakes.js';

// No Keep-Alive hint in its answers (keepAliveTimeout 0): Node's client
// would not reuse a connection a hint of 1 s announces, but many servers and
// load balancers announce nothing, or more than they keep.
let server: RecordingServer;
beforeAll(async () => {
  server = await startServer({ keepAliveTimeoutMs: 0 });
});
afterAll(() => server.close());
beforeEach(() => server.reset());
const IDS = ['we_1', 'we_2', 'we_3', 'we_4'];
const secretOf = (id: string) => `whsec_${Buffer.from(`secret-of-${id}`).toString('base64')}`;

/** Which endpoint a rotate path names. */
const endpointOf = (url: string) => /webhook-endpoints\/([^/]+)\/secret\/rotate/.exec(url)?.[1] ?? '?';

async function fleetRun(extra: string[] = []) {
  const ws = workspace();
  writeFileSync(join(ws.cwd, 'm.ndjson'), IDS.map((endpointId) => JSON.stringify({ endpointId, expectedVersion: 1 })).join('\n') + '\n');
  const argv = ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--concurrency', '1', '--secret-to', 'file:{id}.whsec', '--journal', 'j', '--json', '--max-retries', '0', ...extra];
  const clock = virtualClock();
  const r = await runCli(argv, { ws, env: scopeEnv(server.url), inject: clock });
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { endpointId?: string; ok?: boolean; summary?: Record<string, number> });
  return { r, ws, lines, waits: clock.waits };
}

function expectEveryItemDone({ r, ws, lines }: Awaited<ReturnType<typeof fleetRun>>) {
  expect(r.exitCode, r.stderr).toBe(0);
  expect(lines.filter((l) => l.endpointId).map((l) => [l.endpointId, l.ok])).toEqual(IDS.map((id) => [id, true]));
  expect(lines.at(-1)!.summary).toMatchObject({ ok: IDS.length, failed: 0 });
  for (const id of IDS) expect(readFileSync(join(ws.cwd, `${id}.whsec`), 'utf8')).toBe(secretOf(id));
}

describe('a server with a short keep-alive timeout', () => {
  for (const how of ['end', 'reset'] as const) {
    test(`a request that reaches a kept-alive connection as the server closes it (${how === 'end' ? 'FIN' : 'RST'}) is sent again at once on a new one, same key; no item fails, nothing is waited`, async () => {
      // A connection's second request finds it closed: what a keep-alive timeout that fires as the request arrives does.
      const served = new WeakMap<net.Socket, number>();
      const dropped: string[] = [];
      server.setRawHandler((req, res, rec) => {
        const n = (served.get(req.socket) ?? 0) + 1;
        served.set(req.socket, n);
        if (n > 1) {
          dropped.push(rec.headers['idempotency-key'] as string);
          if (how === 'reset') req.socket.resetAndDestroy();
          else req.socket.destroy();
          return;
        }
        const id = endpointOf(rec.url);
        json(res, 200, secretBody(secretOf(id), true, id));
      });
      const run = await fleetRun();
      expectEveryItemDone(run);
      expect(run.waits).toEqual([]);
      // Every item after the first went out on the kept connection first.
      expect(dropped).toHaveLength(IDS.length - 1);
      const keys = server.requests.map((q) => [endpointOf(q.url), q.headers['idempotency-key']]);
      expect(keys).toHaveLength(IDS.length + dropped.length);
      for (const key of dropped) {
        const sent = keys.filter(([, k]) => k === key);
        // The dropped request and its re-send: one endpoint, one key.
        expect(sent).toHaveLength(2);
        expect(sent[0]![0]).toBe(sent[1]![0]);
      }
      expect(readFileSync(join(run.ws.cwd, 'j'), 'utf8')).not.toMatch(/"applied":null/);
    });
  }

  test('a connection the server closed while idle (its keep-alive timeout between two items) is not used again: every item done', async () => {
    let closes = 0;
    server.setRawHandler((req, res, rec) => {
      const id = endpointOf(rec.url);
      // Once the answer is out, the server closes its idle connections, as its timer would before the next item.
      res.once('finish', () =>
        setImmediate(() => {
          closes++;
          req.socket.end();
        }),
      );
      json(res, 200, secretBody(secretOf(id), true, id));
    });
    const run = await fleetRun();
    expectEveryItemDone(run);
    expect(closes).toBe(IDS.length);
    // Each item sent once or, if it met the closing connection, twice with one key.
    const byKey = new Map<string, number>();
    for (const q of server.requests) byKey.set(q.headers['idempotency-key'] as string, (byKey.get(q.headers['idempotency-key'] as string) ?? 0) + 1);
    expect(byKey.size).toBe(IDS.length);
  });
});
