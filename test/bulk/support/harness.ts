// The runner wired to the simulated server, an in-memory journal and
// in-memory destinations, in virtual time.
import { createHash } from 'node:crypto';
import { foldRecord, type JournalRecord, type Prior } from '../../../src/bulk/journal.js';
import type { ManifestItem } from '../../../src/bulk/manifest.js';
import { runBulk, type ItemResult, type ItemSecretsPort, type RunnerOptions, type RunSummary } from '../../../src/bulk/runner.js';
import type { RateSettings } from '../../../src/bulk/rate.js';
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
}

export function harness(opts: HarnessOptions) {
  const vt = virtualTime();
  const server = simServer(vt, opts);
  const journal: JournalRecord[] = [];
  const delivered = new Map<string, string>();
  const recovered = new Map<string, string>();
  const notices: string[] = [];
  let keys = 0;

  const secrets: ItemSecretsPort = {
    fingerprint: fp,
    targetsFor: (item) => [`file:/secrets/${item.endpointId}`],
    async deliver(item, secret) {
      await vt.sleep(1);
      if (opts.failDelivery?.has(item.endpointId)) return { fingerprint: fp(secret), delivered: [], failures: [{ to: `file:/secrets/${item.endpointId}`, reason: 'ENOSPC' }] };
      delivered.set(item.endpointId, secret);
      return { fingerprint: fp(secret), delivered: [{ to: `file:/secrets/${item.endpointId}`, fingerprint: fp(secret) }], failures: [] };
    },
    holds: (item, f) => delivered.has(item.endpointId) && fp(delivered.get(item.endpointId)!) === f,
    recover(item, secret) {
      recovered.set(item.endpointId, typeof secret === "string" ? secret : secret.toString("latin1"));
      return `/config/recovered/${item.endpointId}.secret`;
    },
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
    extra: { signal?: AbortSignal; priors?: Map<string, Prior>; onResult?: (r: ItemResult) => void; killAfterRecords?: number } = {},
  ): Promise<{ summary: RunSummary; results: ItemResult[]; killed: boolean }> {
    const results: ItemResult[] = [];
    let records = 0;
    let dead = false;
    const never = new Promise<never>(() => {});
    const alive = <T>(f: () => Promise<T>): Promise<T> => (dead ? never : f());
    const controller = new AbortController();
    const runOpts: RunnerOptions = {
      concurrency: opts.concurrency ?? 4,
      maxRetries: opts.maxRetries ?? 4,
      total: list.length,
      signal: extra.signal ?? controller.signal,
      ...(opts.rate ? { rate: opts.rate } : {}),
    };
    const running = runBulk(list, runOpts, {
      clock: vt,
      rotateOne: (req, key) => alive(() => server.rotateOne(req, key)),
      secrets: { ...secrets, deliver: (item, secret) => alive(() => secrets.deliver(item, secret)) },
      journal: {
        append: (r) =>
          alive(async () => {
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
    });
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

  return { vt, server, journal, delivered, recovered, notices, items, run, priors };
}
