// The runner wired to the simulated server (through the real request engine
// and client, over a transport that calls it), an in-memory journal and
// in-memory destinations, in virtual time. Kept copies go to a real
// recovered/ folder in a temporary config folder.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhooksClient } from '../../../../../src/http/api-client.js';
import { findLeft, prepareRecoveryFolder, recordPaths, scopeKey } from '../../../../../src/secret/record.js';
import { writeFileAtomic } from '../../../../../src/system/files.js';
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
  const scope = scopeKey(server.state.scope);
  /** The secret recovered/ holds for an endpoint's request with this key: kept alone, or in the answer its record holds ('' for a record without one). */
  const recovered = (id: string, key: string): string | undefined => {
    const left = findLeft(configDir, { op: 'rotate', scope, endpointId: id, idempotencyKey: key });
    if (!left) return undefined;
    if (left.kind === 'secret') return left.secret.toString('utf8');
    if (left.kind === 'answer') return left.answer.toString('utf8');
    try {
      return (JSON.parse(left.record.answer?.body.toString('utf8') ?? '') as { data: { secret: string } }).data.secret;
    } catch {
      return '';
    }
  };
  const notices: string[] = [];
  /** Endpoints the server rotated while the killed run waited for the answer: their secrets never reached it. */
  const lostInFlight = new Set<string>();
  /** What a run that failed to deliver this request's secret leaves: the secret kept alone. Its path. */
  const keep = (id: string, key: string, secret: string) => {
    prepareRecoveryFolder(configDir);
    const path = recordPaths(configDir, { op: 'rotate', scope, endpointId: id, idempotencyKey: key }).secret;
    writeFileAtomic(path, secret);
    return path;
  };
  const keptPath = (id: string, key: string) => recordPaths(configDir, { op: 'rotate', scope, endpointId: id, idempotencyKey: key }).secret;
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
    extra: {
      signal?: AbortSignal;
      priors?: Map<string, Prior>;
      onResult?: (r: ItemResult) => void;
      killAfterRecords?: number;
      killBefore?: (r: JournalRecord) => boolean;
      /** Records that cannot be written (a full disk): their append fails, as the journal's does. */
      failAppend?: (r: JournalRecord) => boolean;
    } = {},
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
    // As the real transport: the request counts as sent, and the answer's bytes reach the record's tap before it resolves.
    const transport: Transport = (req, o) => {
      const m = /webhook-endpoints\/([^/]+)\/secret\/rotate$/.exec(req.url)!;
      const body = JSON.parse(req.body) as { expectedVersion: number; mode: 'overlap' | 'immediate' };
      o.onSent?.();
      return alive(async () => {
        const id = decodeURIComponent(m[1]!);
        const res = await server.rotateOne({ endpointId: id, ...body }, req.headers['Idempotency-Key']!);
        // The answer came after the kill: its bytes died in the kernel, and no program can keep them.
        if (dead) {
          if (res.status < 300) lostInFlight.add(id);
          return never;
        }
        o.tap?.head(res.status, res.headers);
        o.tap?.chunk(Buffer.from(res.body, 'utf8'));
        return res;
      });
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
        custody: { configDir, now: vt.now, scope, rerun: () => 'a re-run with --journal delivers it' },
        secrets: { ...secrets, deliver: (item, secret, o) => alive(() => secrets.deliver(item, secret, o)) },
        journal: {
          append: (r) =>
            alive(async () => {
              if (extra.killBefore?.(r)) dead = true; // killed as this record is being written: it never reaches the disk
              if (dead) return never;
              if (extra.failAppend?.(r)) throw new Error('cannot write the journal: ENOSPC');
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

  return { vt, server, journal, delivered, recovered, keep, keptPath, configDir, scope, notices, lostInFlight, items, run, priors };
}
