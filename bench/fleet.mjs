// The `rotate --from` benchmark (issue 14), run by `npm run bench -- --fleet`
// (bench/startup.mjs hands over to this file) or `node bench/fleet.mjs`.
//
// A real `chatctl sandbox --json` child; for each scenario its endpoints are
// created through the API with no limit, then the sandbox is set to
// `--rate-limit 100 --latency 20` (POST /_sandbox/faults) and the real
// bin/chatctl.js rotates them all from a manifest, secrets to file:{id}.
// Reported per scenario: wall time (spawn → exit) against the ideal
// (items / 100 per second), 429s (GET /_sandbox/stats) against requests,
// failed items, and chatctl's peak RSS (/usr/bin/time %M, else
// bench/rss-probe.mjs). Then peak RSS of 5,000 items against 500.
// Scenario 500d runs signed deliveries beside the rotation (8 at a time,
// POST /_sandbox/endpoints/{id}/deliver, to a receiver on loopback that
// answers in 20 ms): they must not slow the sandbox's API.
//
//   node bench/fleet.mjs [--quick] [--only 500,500j,5000j]
//
// Targets (issue 14), reported, not enforced: wall ≤ 1.15x ideal, 429s ≤ 5%
// of requests, no failure, RSS(5,000) ≤ 1.2x RSS(500). Exit 1 only when a
// run itself fails (non-zero exit, wrong line count), since then the
// figures would mean nothing. Figures go to bench/results/fleet.json.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chatctlEnv, startSandboxChild } from './sandbox-child.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'chatctl.js');
const RSS_PROBE = join(ROOT, 'bench', 'rss-probe.mjs');
const RESULTS = join(ROOT, 'bench', 'results', 'fleet.json');
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const RSS_MARK = 'CHATCTL_BENCH_MAXRSS_KB=';
const RATE = 100;
const LATENCY_MS = 20;

class BenchError extends Error {}

const SCENARIOS = [
  { id: '500', items: 500, journal: false, concurrency: undefined, note: 'defaults (concurrency 4), no journal' },
  { id: '500j', items: 500, journal: true, concurrency: undefined, note: 'defaults, --journal' },
  { id: '500c16', items: 500, journal: true, concurrency: 16, note: '--concurrency 16, --journal' },
  { id: '5000j', items: 5000, journal: true, concurrency: undefined, note: 'defaults, --journal (memory)' },
  { id: '500d', items: 500, journal: true, concurrency: undefined, deliveries: 8, note: 'defaults, --journal, 8 signed deliveries at a time beside it' },
];

const DELIVERY_ANSWER_MS = 20;

/** A webhook receiver on loopback that answers every delivery 204 after DELIVERY_ANSWER_MS. */
async function startReceiver() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(204).end(), DELIVERY_ANSWER_MS));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
}

/** `workers` loops of deliveries to random endpoints until `done` settles; counts them. */
async function deliverUntil(sb, ids, workers, done) {
  let finished = false;
  done.finally(() => (finished = true));
  const counts = { delivered: 0, failed: 0 };
  const worker = async () => {
    while (!finished) {
      const id = ids[Math.floor(Math.random() * ids.length)];
      const r = await sb.call('POST', `/_sandbox/endpoints/${id}/deliver`, { eventType: 'chat.message.created.v1' });
      if (r.status === 200 && r.body.data.delivery.receiver.ok) counts.delivered++;
      else counts.failed++;
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return counts;
}

function parseArgs(argv) {
  const o = { only: undefined, quick: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--fleet') continue;
    if (a === '--quick') o.quick = true;
    else if (a === '--only') o.only = new Set((argv[++i] ?? '').split(','));
    else if (a === '--help' || a === '-h') {
      process.stdout.write(`usage: node bench/fleet.mjs [--quick (500-item scenarios only)] [--only ${SCENARIOS.map((s) => s.id).join(',')}]\n`);
      process.exit(0);
    } else {
      process.stderr.write(`bench: unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  return o;
}

// ---------------------------------------------------------------- the sandbox

const startSandbox = (home) => startSandboxChild(BIN, home, ['--endpoint-limit', '1000000'], (m) => new BenchError(m));

async function createEndpoints(sb, n, destination = 'https://hooks.example.com') {
  const { organizationId, applicationId, environmentKey } = sb.info;
  const path = `/v1/organizations/${organizationId}/applications/${applicationId}/environments/${environmentKey}/webhook-endpoints`;
  const lines = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const r = await sb.call('POST', path, {
        key: `bench-${i}`,
        json: { name: `bench ${i}`, destinationUrl: `${destination}/bench/${i}`, eventTypes: ['chat.message.created.v1'] },
      });
      if (r.status !== 201) throw new BenchError(`creating endpoint ${i} answered ${r.status}`);
      lines[i] = JSON.stringify({ endpointId: r.body.data.endpoint.id, expectedVersion: r.body.data.endpoint.version });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------- one chatctl run

function runChatctl(args, env, cwd) {
  return new Promise((resolve, reject) => {
    const cmd = TIME ?? process.execPath;
    const argv = TIME ? ['-f', `${RSS_MARK}%M`, process.execPath, BIN, ...args] : ['--import', RSS_PROBE, BIN, ...args];
    const stdio = TIME ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', 'pipe'];
    let lines = 0;
    let last = '';
    let tail = '';
    const err = [];
    const fd3 = [];
    const t0 = process.hrtime.bigint();
    let ms;
    const child = spawn(cmd, argv, { env, cwd, stdio });
    // Lines are counted, not kept: the bench itself stays small.
    child.stdout.on('data', (c) => {
      const text = tail + c.toString('utf8');
      const parts = text.split('\n');
      tail = parts.pop();
      lines += parts.length;
      if (parts.length) last = parts[parts.length - 1];
    });
    child.stderr.on('data', (c) => err.push(c));
    child.stdio[3]?.on('data', (c) => fd3.push(c));
    child.on('error', reject);
    child.on('exit', () => (ms = Number(process.hrtime.bigint() - t0) / 1e6));
    child.on('close', (code) => {
      let stderr = Buffer.concat(err).toString('utf8');
      let rssKb;
      if (TIME) {
        const at = stderr.lastIndexOf(RSS_MARK);
        if (at >= 0) {
          rssKb = Number.parseInt(stderr.slice(at + RSS_MARK.length), 10);
          stderr = stderr.slice(0, at).replace(/^Command exited with non-zero status \d+\n?$/m, '');
        }
      } else rssKb = Number.parseInt(Buffer.concat(fd3).toString('utf8'), 10);
      const exit = TIME ? Number(/non-zero status (\d+)/.exec(Buffer.concat(err).toString('utf8'))?.[1] ?? code) : code;
      resolve({ ms, exit, lines, last, stderr, rssKb });
    });
  });
}

async function scenario(sb, s, work) {
  await sb.call('POST', '/_sandbox/reset', {});
  await sb.call('POST', '/_sandbox/faults', { rateLimit: 0, delayMs: 0 });
  const receiver = s.deliveries ? await startReceiver() : undefined;
  const manifest = await createEndpoints(sb, s.items, receiver?.url);
  const dir = join(work, s.id);
  mkdirSync(join(dir, 'secrets'), { recursive: true });
  writeFileSync(join(dir, 'fleet.ndjson'), manifest);
  await sb.call('POST', '/_sandbox/faults', { rateLimit: RATE, delayMs: LATENCY_MS });
  await sb.call('DELETE', '/_sandbox/stats');

  const args = ['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--json', '--secret-to', 'file:secrets/{id}.whsec'];
  if (s.journal) args.push('--journal', 'fleet.journal');
  if (s.concurrency) args.push('--concurrency', String(s.concurrency));
  const running = runChatctl(args, chatctlEnv(dir, sb.info), dir);
  const deliveries = receiver
    ? await deliverUntil(
        sb,
        manifest
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l).endpointId),
        s.deliveries,
        running,
      )
    : undefined;
  const r = await running;
  await receiver?.close();
  const stats = (await sb.call('GET', '/_sandbox/stats')).body.data.stats;
  if (r.exit !== 0 && r.exit !== 14) throw new BenchError(`${s.id}: chatctl exited ${r.exit}:\n${r.stderr}`);
  if (r.lines !== s.items + 1) throw new BenchError(`${s.id}: ${r.lines} lines on stdout, expected ${s.items + 1}`);
  const summary = JSON.parse(r.last).summary;
  const ideal = (s.items / RATE) * 1000;
  return {
    id: s.id,
    note: s.note,
    items: s.items,
    wallMs: Math.round(r.ms),
    idealMs: ideal,
    ratio: r.ms / ideal,
    requests: stats.requests,
    rateLimited: stats.rateLimited,
    rateLimitedShare: stats.rateLimited / stats.requests,
    failed: summary.failed,
    ok: summary.ok,
    peakRssKb: r.rssKb,
    ...(deliveries ? { deliveries } : {}),
  };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;

function table(rows) {
  const head = ['scenario', 'items', 'wall', 'ideal', 'ratio', '429s', 'requests', '429 share', 'failed', 'peak RSS'];
  const body = rows.map((r) => [
    `${r.id} (${r.note})`,
    String(r.items),
    `${(r.wallMs / 1000).toFixed(2)} s`,
    `${(r.idealMs / 1000).toFixed(1)} s`,
    `${r.ratio.toFixed(2)}x`,
    String(r.rateLimited),
    String(r.requests),
    pct(r.rateLimitedShare),
    String(r.failed),
    r.peakRssKb ? `${(r.peakRssKb / 1024).toFixed(1)} MiB` : '?',
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (row) => '| ' + row.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
  return [line(head), '|' + w.map((n, i) => (i === 0 ? '-'.repeat(n + 2) : '-'.repeat(n + 1) + ':')).join('|') + '|', ...body.map(line)].join('\n');
}

export async function main(argv = process.argv.slice(2)) {
  const opts = parseArgs(argv);
  if (!existsSync(join(ROOT, 'dist', 'lazy', 'bulk.cjs'))) throw new BenchError('dist/ has no rotate --from bundle: run npm run build first');
  const work = mkdtempSync(join(tmpdir(), 'chatctl-bench-fleet-'));
  const sb = await startSandbox(work);
  const rows = [];
  try {
    const chosen = SCENARIOS.filter((s) => (opts.only ? opts.only.has(s.id) : !opts.quick || s.items <= 500));
    for (const s of chosen) {
      process.stderr.write(`bench: ${s.id}: ${s.items} endpoints at ${RATE}/s, latency ${LATENCY_MS} ms (${s.note}) …\n`);
      rows.push(await scenario(sb, s, work));
    }
  } finally {
    await sb.stop();
    rmSync(work, { recursive: true, force: true });
  }
  process.stdout.write(`\nrotate --from against chatctl sandbox --rate-limit ${RATE} --latency ${LATENCY_MS} (node ${process.version}, ${process.platform}/${process.arch})\n\n${table(rows)}\n\n`);
  const targets = [];
  for (const r of rows) {
    const beside = r.deliveries ? `; beside it ${r.deliveries.delivered} signed deliveries (${r.deliveries.failed} failed)` : '';
    targets.push(
      `${r.id}: wall ${r.ratio.toFixed(2)}x ideal (target ≤ 1.15x) ${r.ratio <= 1.15 ? 'met' : 'MISSED'}; 429s ${pct(r.rateLimitedShare)} (≤ 5%) ${r.rateLimitedShare <= 0.05 ? 'met' : 'MISSED'}; failures ${r.failed} (0) ${r.failed === 0 ? 'met' : 'MISSED'}${beside}`,
    );
  }
  const small = rows.find((r) => r.id === '500j');
  const big = rows.find((r) => r.id === '5000j');
  if (small?.peakRssKb && big?.peakRssKb) {
    const m = big.peakRssKb / small.peakRssKb;
    targets.push(`memory: peak RSS 5,000 items / 500 items = ${m.toFixed(2)}x (target ≤ 1.2x) ${m <= 1.2 ? 'met' : 'MISSED'}`);
  }
  process.stdout.write(targets.join('\n') + '\n');
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(RESULTS, JSON.stringify({ at: new Date().toISOString(), node: process.version, rate: RATE, latencyMs: LATENCY_MS, rows, targets }, null, 2) + '\n');
  process.stdout.write(`figures written to ${RESULTS.slice(ROOT.length)}\n`);
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench: a run failed, so there are no figures:\n${e instanceof BenchError ? e.message : (e?.stack ?? e)}\n`);
    process.exit(1);
  },
);
