// The runner wired to the simulated server (through the real request engine
// and client, over a transport that calls it), an in-memory journal and
// in-memory destinations, in virtual time. Kept copies go to a real
// recovered/ folder in a temporary config folder.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhooksClient } from '../../../../../src/http/api-client.js';
import { keptCopyPath, readKeptCopy } from '../../../../../src/secret/deliver.js';
import { readRegularFile } from '../../../../../src/fs/read.js';
import type { Transport } from '../../../../../src/http/transport.js';
import { foldRecord, type JournalRecord, type Prior } from '../../../../../src/commands/webhooks/rotate-from/journal.js';
import type { ManifestItem } from '../../../../../src/commands/webhooks/rotate-from/manifest.js';
import { runBulk, type ItemResult, type ItemSecretsPort, type RunnerOptions, type RunSummary } from '../../../../../src/commands/webhooks/rotate-from/runner.js';
import type { RateSettings } from '../../../../../src/commands/webhooks/rotate-from/rate.js';
import { simServer, virtualTime, type SimOptions } from './sim.js';

export const fp = (secret: string) => `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;

export interface HarnessOptions extends SimOptions {
  concurrency?: number;
  maxRetries?: number;
  /** Milliseconds each journal append takes to reach the disk. */
  fsyncMs?: number;
  /** Endpoint ids whose delivery fails. */
  failDelivery?: Set<string>;
  rate?: RateSettings;
  /** --deadline, in ms from the start of the run. */
  deadlineMs?: number;
  /** Destinations that cannot be read back (as exec: ones): holds() is always false. */
  unreadable?: boolean;
}

export function harness(opts: HarnessOptions) {
  const vt = virtualTime();
  const server = simServer(vt, opts);
  const journal: JournalRecord[] = [];
  const delivered = new Map<string, string>();
  const configDir = mkdtempSync(join(tmpdir(), 'chatctl-runner-'));
  /** What recovered/ holds for an endpoint's request with this key. */
  const recovered = (id: string, key: string) => readRegularFile(keptCopyPath(configDir, id, key))?.toString('utf8');
  const notices: string[] = [];
  let keys = 0;

  const holds = (id: string, f: string) => delivered.has(id) && fp(delivered.get(id)!) === f;
  const secrets: ItemSecretsPort = {
    targetsFor: (item) => [`file:/secrets/${item.endpointId}`],
    async deliver(item, secret, o) {
      await vt.sleep(1);
      const to = `file:/secrets/${item.endpointId}`;
      if (o?.skipHeld && holds(item.endpointId, fp(secret))) return { delivered: [{ to, fingerprint: fp(secret) }], failures: [] };
      if (opts.failDelivery?.has(item.endpointId)) return { delivered: [], failures: [{ to, reason: 'ENOSPC' }] };
      delivered.set(item.endpointId, secret);
      return { delivered: [{ to, fingerprint: fp(secret) }], failures: [] };
    },
    holds: (item, f) => !opts.unreadable && holds(item.endpointId, f),
    readKept: (item, key, journaled) => readKeptCopy(configDir, item.endpointId, key, journaled),
  };

  const items = (ids = server.ids, ev = 1): ManifestItem[] => ids.map((endpointId, i) => ({ line: i + 1, endpointId, expectedVersion: ev, mode: 'immediate' }));

  /**
   * Runs the list. With `killAfterRecords`, the process "dies" once that many
   * journal records are on disk: from then on nothing it does has an effect
   * (no record, request, delivery or line), though requests already on the
   * wire still reach the server; run() then resolves with killed: true.
   */
  async function run(
    list: ManifestItem[],
    extra: { signal?: AbortSignal; priors?: Map<string, Prior>; onResult?: (r: ItemResult) => void; killAfterRecords?: number; killBefore?: (r: JournalRecord) => boolean } = {},
  ): Promise<{ summary: RunSummary; results: ItemResult[]; killed: boolean }> {
    const results: ItemResult[] = [];
    let records = 0;
    let dead = false;
    const never = new Promise<never>(() => {});
    const alive = <T>(f: () => Promise<T>): Promise<T> => (dead ? never : f());
    const controller = new AbortController();
    const runOpts: RunnerOptions = {
      concurrency: opts.concurrency ?? 4,
      total: list.length,
      signal: extra.signal ?? controller.signal,
      ...(opts.rate ? { rate: opts.rate } : {}),
    };
    let requestIds = 0;
    const transport: Transport = (req) => {
      const m = /webhook-endpoints\/([^/]+)\/secret\/rotate$/.exec(req.url)!;
      const body = JSON.parse(req.body) as { expectedVersion: number; mode: 'overlap' | 'immediate' };
      return alive(() => server.rotateOne({ endpointId: decodeURIComponent(m[1]!), ...body }, req.headers['Idempotency-Key']!));
    };
    const client = createWebhooksClient({
      baseUrl: 'https://sim.example',
      scope: server.state.scope,
      token: 'sim-token',
      origin: 'https://sim.example',
      csrfToken: '1',
      userAgent: 'chatctl-test',
      settings: { maxRetries: opts.maxRetries ?? 4, timeoutMs: 30_000, deadline: opts.deadlineMs !== undefined ? { at: vt.now() + opts.deadlineMs, ms: opts.deadlineMs } : undefined },
      deps: { transport, now: vt.now, sleep: vt.sleep, random: vt.random, randomUUID: () => `rid-${++requestIds}`, signal: runOpts.signal, requestSignal: new AbortController().signal },
      rerun: () => 'a re-run with --journal re-sends it',
    });
    const running = runBulk(
      list,
      { ...runOpts, ...(opts.deadlineMs !== undefined ? { deadlineAt: vt.now() + opts.deadlineMs } : {}) },
      {
        clock: vt,
        rotate: (req, key, hooks) => client.rotate(req.endpointId, { expectedVersion: req.expectedVersion, mode: req.mode }, key, hooks),
        custody: { configDir, now: vt.now },
        secrets: { ...secrets, deliver: (item, secret, o) => alive(() => secrets.deliver(item, secret, o)) },
        journal: {
          append: (r) =>
            alive(async () => {
              if (extra.killBefore?.(r)) dead = true; // killed as this record is being written: it never reaches the disk
              if (dead) return never;
              if (opts.fsyncMs) await vt.sleep(opts.fsyncMs);
              if (dead) return never;
              journal.push(r);
              if (++records === extra.killAfterRecords) dead = true;
            }),
        },
        priors: extra.priors ?? new Map(),
        newKey: () => `key-${++keys}`,
        emit: (r) => {
          if (dead) return;
          results.push(r);
          extra.onResult?.(r);
        },
        notice: (t) => notices.push(t),
      },
    );
    try {
      const summary = await vt.run(running);
      return { summary, results, killed: false };
    } catch (err) {
      if (!dead) throw err;
      return { summary: undefined as unknown as RunSummary, results, killed: true };
    }
  }

  /** What a re-run would read from the journal so far. */
  const priors = () => {
    const map = new Map<string, Prior>();
    for (const r of journal) foldRecord(map, r);
    return map;
  };

  return { vt, server, journal, delivered, recovered, configDir, notices, items, run, priors };
}
