// The journal of `rotate --from` under a race and a full disk, with real
// processes against a loopback server.
//
// One run at a time per journal: six runs started at once on a journal whose
// lock was left by a killed run. Exactly one takes the lock over and sends;
// the five others exit 2 naming the lock and the run that holds it. The
// server holds the one rotation it gets until the five have exited, so the
// winner holds the lock all that time (a late starter cannot find the lock
// free after the winner released it).
//
// A full disk: the run's file size limit (ulimit -f) makes a journal write
// fail part-way (EFBIG, as ENOSPC would): no request goes out without its
// record whole on disk, and the journal is left with whole records only.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execa } from 'execa';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, NODE, SECRET, scopeEnv, secretBody } from '../../../support/fixtures.js';
import { parseErrorLine, stackTrace } from '../../../support/json.js';
import { buildEnv, cleanupTempDirs, deadPid, shellQuote, spawnCli, waitFor, workspace } from '../../../support/run.js';
import { RecordingServer, json } from '../../../support/server.js';
import { parseRecord, procStartTime, systemLockHost } from '../../../../src/system/lock.js';
import { scaled } from '../../../support/slowdown.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});

const host = systemLockHost({ now: Date.now, sleep: async () => {}, random: Math.random });

const ownRecord = (pid: number, start: string | undefined, nonce: string) => JSON.stringify({ pid, start, boot: host.bootId(), ns: host.pidNamespace(), host: host.hostname, nonce }) + '\n';

const staleLocks: [string, () => string][] = [
  // As the lock writes it (this machine, boot and pid namespace), its owner killed.
  ['a lock record of a killed run', () => ownRecord(deadPid(), '12345', 'killed00run')],
  // The pid lives on in another process: the start time tells them apart.
  ['a lock record whose pid now belongs to another process', () => ownRecord(process.pid, '1', 'reused00pid')],
];

function rotateArgs(): string[] {
  return ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--journal', 'j', '--secret-to', 'file:{id}.whsec', '--json'];
}

async function race(leave: () => string) {
  const ws = workspace();
  writeFileSync(join(ws.cwd, 'm.ndjson'), JSON.stringify({ endpointId: 'we_1', expectedVersion: 2 }) + '\n');
  const lockPath = join(ws.cwd, 'j.lock');
  writeFileSync(lockPath, leave(), { mode: 0o600 });
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  server.reset((_req, res) => void held.then(() => json(res, 200, secretBody())));
  const runs = Array.from({ length: 6 }, () => spawnCli(rotateArgs(), { ws, env: scopeEnv(server.url), timeoutMs: 60_000 }).child);
  let exited = 0;
  for (const r of runs) void r.then(() => (exited += 1));
  // The losers end on their own; the winner waits for its answer.
  await waitFor(() => exited >= 5 || server.hits >= 2, 45_000, 'five runs to end, or a second request');
  release();
  const results = await Promise.all(runs);
  return { ws, lockPath, results, pids: runs.map((r) => r.pid) };
}

describe('six runs started at once on a stale journal lock', () => {
  test.each(staleLocks)(
    '%s: exactly one proceeds, the others exit 2 naming the lock and its new owner',
    async (_label, leave) => {
      const { ws, lockPath, results, pids } = await race(leave);
      const codes = results.map((r) => r.exitCode);
      expect(
        codes.filter((c) => c === 0),
        results.map((r) => r.stderr).join('\n'),
      ).toHaveLength(1);
      expect(codes.filter((c) => c === 2)).toHaveLength(5);
      expect(server.requestsTo('/secret/rotate')).toHaveLength(1);
      const winner = pids[codes.indexOf(0)];
      for (const r of results) expect(stackTrace(String(r.stderr))).toBeUndefined();
      for (const r of results.filter((x) => x.exitCode === 2)) {
        const line = parseErrorLine(String(r.stderr));
        expect(line.error.message).toBe(`the journal is in use by another chatctl run (pid ${winner}; lock file ${lockPath})`);
        expect(String(r.stdout)).toBe('');
      }
      // The winner's run: one run record, the item done, the secret delivered; its lock released, nothing left.
      const records = readFileSync(join(ws.cwd, 'j'), 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { t: string });
      // Compacted at the run's end: the done rotation's "ok" stands for its "applied".
      expect(records.map((r) => r.t)).toEqual(['run', 'send', 'ok', 'end']);
      expect(readFileSync(join(ws.cwd, 'we_1.whsec'), 'utf8')).toBe(SECRET);
      expect(existsSync(lockPath)).toBe(false);
      expect(readdirSync(ws.cwd).sort()).toEqual(['j', 'm.ndjson', 'we_1.whsec']);
    },
    90_000,
  );

  test('a live run holds it: all six refused at once (exit 2 naming it), nothing sent, the lock untouched', { timeout: scaled(90_000) }, async () => {
    const start = procStartTime(readFileSync(`/proc/${process.pid}/stat`, 'utf8'));
    const live = ownRecord(process.pid, start, 'live00holder');
    const { lockPath, results } = await race(() => live);
    for (const r of results) {
      expect(r.exitCode, String(r.stderr)).toBe(2);
      expect(parseErrorLine(String(r.stderr)).error.message).toBe(`the journal is in use by another chatctl run (pid ${process.pid}; lock file ${lockPath})`);
    }
    expect(server.hits).toBe(0);
    expect(readFileSync(lockPath, 'utf8')).toBe(live);
    expect(parseRecord(live)).toMatchObject({ pid: process.pid });
  });
});

describe('a full disk under the journal', () => {
  test('a journal write cut short stops the run: every request sent has its "send" record whole on disk, and no torn record is left', { timeout: scaled(90_000) }, async () => {
    const ws = workspace();
    const ids = Array.from({ length: 60 }, (_, i) => `we_${i + 1}`);
    writeFileSync(join(ws.cwd, 'm.ndjson'), ids.map((id) => JSON.stringify({ endpointId: id, expectedVersion: 2 })).join('\n') + '\n');
    server.reset((req, res) => json(res, 200, secretBody(SECRET, true, /webhook-endpoints\/([^/]+)\//.exec(req.url ?? '')![1])));
    // 4 blocks of 512 bytes: the journal of 60 items needs ten times that.
    const command = ['ulimit -f 4; exec', ...[NODE, BIN, ...rotateArgs(), '--concurrency', '2'].map(shellQuote)].join(' ');
    const r = await execa('/bin/sh', ['-c', command], { cwd: ws.cwd, env: buildEnv(ws, scopeEnv(server.url)), extendEnv: false, reject: false, timeout: 60_000 });
    expect(r.exitCode, r.stderr).not.toBe(0);
    expect(stackTrace(r.stderr)).toBeUndefined();
    expect(r.stderr).toContain(`cannot write the journal ${join(ws.cwd, 'j')}: EFBIG`);
    const text = readFileSync(join(ws.cwd, 'j'), 'utf8');
    expect(text.length).toBeLessThanOrEqual(2048);
    expect(text.endsWith('\n')).toBe(true);
    const records = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { t: string; key?: string });
    const recorded = new Set(records.filter((x) => x.t === 'send').map((x) => x.key));
    const sent = server.requestsTo('/secret/rotate').map((q) => q.headers['idempotency-key']);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.length).toBeLessThan(ids.length);
    for (const key of sent) expect(recorded.has(key as string), `request with key ${key} sent without its record`).toBe(true);
  });
});
