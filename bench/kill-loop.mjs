// The random-kill loop (issue 29): does the one-time secret survive a
// chatctl killed at any instant? Run by `npm run kill-loop` or
// `npm run bench -- --kill-loop` (bench/startup.mjs hands over to this file).
// Not part of `npm test`: it runs for minutes and spawns hundreds of
// processes.
//
// A real `chatctl sandbox --json` child on 127.0.0.1. Two modes:
//
// random  ROUNDS rounds of ENDPOINTS endpoints each. Every round creates its
//         endpoints, writes a manifest, and runs the real bin/chatctl.js
//           webhooks rotate --from MANIFEST --mode immediate --journal J
//             --concurrency 4 --secret-to file:files/{id}.whsec
//             --secret-to 'exec:cat > execs/$CHATCTL_ENDPOINT_ID.exec'
//         SIGKILLed KILLS times at random instants (each followed by a
//         resume with the same journal), then a last resume that runs to its
//         end. Then every endpoint is compared with the server's current
//         secret (GET /_sandbox/endpoints).
// bytes   a TCP proxy in front of the sandbox SIGKILLs chatctl 2 ms and 5 ms
//         after it handed chatctl the last byte of a rotate answer that
//         carries a secret; then the same command is run again. For a single
//         `webhooks rotate ID --idempotency-key K` and for `--from` (killed
//         after a random item's answer).
//
// Counted, per endpoint, after the last resume:
//   lost          the server rotated it, no destination holds its current
//                 secret, and nothing under recovered/ holds it either
//   in kernel     lost, but at every kill chatctl's record of that request
//                 held no answer bytes: the answer was still in the kernel
//                 when the process died ("bytes still in the kernel die with
//                 the process"; a server that replays without the secret
//                 cannot give it again)
//   stale         one destination holds the current secret and another not
//   kept          not at its destinations but kept under recovered/ (exit 13)
//   double        rotated more than once (version above expected + 1)
//   not rotated   still at its first version after the last resume
//   leftover      files left under <config>/recovered/ after the last resume
//
//   node bench/kill-loop.mjs [--rounds 20] [--endpoints 30] [--kills 3]
//     [--mode random|bytes|both] [--trials 5] [--seed N] [--keep]
//     [--after-last-byte MS[,MS…]]
//
// --after-last-byte: the bytes mode for a single `webhooks rotate` only, with
// `file:` and `exec:` destinations, SIGKILLed MS after the proxy handed
// chatctl the answer's last byte, --trials times per MS (20 unless given).
// At each kill the kernel's receive queue of chatctl's socket is read
// (/proc/net/tcp, the rx_queue of the connection to the proxy): 0 means
// chatctl had read() the whole answer (1: only the server's FIN is unread;
// no socket left: chatctl had read it and closed it). Reported: secrets lost among answers
// chatctl read (the figure that must be 0), and answers still unread in the
// kernel.
//
// It exits 1 when a figure that must be 0 is not (lost outside the kernel
// case, double, leftover, stale), so a run can gate a change; figures go to
// bench/results/kill-loop.json.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandboxChild } from './sandbox-child.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'chatctl.js');
const RESULTS = join(ROOT, 'bench', 'results', 'kill-loop.json');
/** A run that does not end by itself in this long is a failure of the loop, not a figure. */
const RUN_LIMIT_MS = 120_000;

class LoopError extends Error {}

function parseArgs(argv) {
  const o = { rounds: 20, endpoints: 30, kills: 3, mode: 'both', trials: undefined, seed: Date.now() % 2 ** 31, keep: false, afterLastByte: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = () => {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0) throw new LoopError(`${a} takes a whole number`);
      return n;
    };
    if (a === '--kill-loop') continue;
    else if (a === '--rounds') o.rounds = num();
    else if (a === '--endpoints') o.endpoints = num();
    else if (a === '--kills') o.kills = num();
    else if (a === '--trials') o.trials = num();
    else if (a === '--seed') o.seed = num();
    else if (a === '--keep') o.keep = true;
    else if (a === '--after-last-byte') {
      o.afterLastByte = String(argv[++i] ?? '')
        .split(',')
        .map(Number);
      if (o.afterLastByte.some((n) => !Number.isInteger(n) || n < 0)) throw new LoopError('--after-last-byte takes whole milliseconds, e.g. 1,2');
    } else if (a === '--mode') {
      o.mode = argv[++i];
      if (!['random', 'bytes', 'both'].includes(o.mode)) throw new LoopError('--mode is random, bytes or both');
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/kill-loop.mjs [--rounds N] [--endpoints M] [--kills K] [--mode random|bytes|both] [--trials T] [--seed S] [--keep] [--after-last-byte MS[,MS]]\n');
      process.exit(0);
    } else throw new LoopError(`unknown argument ${a}`);
  }
  o.trials ??= o.afterLastByte ? 20 : 5;
  return o;
}

/** mulberry32: the kill instants come from --seed, so a run can be repeated. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- the sandbox

async function startSandbox(home, limit) {
  const { info, call, stop } = await startSandboxChild(BIN, home, ['--port', '0', '--host', '127.0.0.1', '--endpoint-limit', String(limit)], (m) => new LoopError(m));
  const base = `/v1/organizations/${info.organizationId}/applications/${info.applicationId}/environments/${info.environmentKey}/webhook-endpoints`;
  let made = 0;
  return {
    info,
    call,
    /** n new endpoints (version 1): their ids. */
    async create(n) {
      const ids = [];
      for (let i = 0; i < n; i++) {
        const k = made++;
        const r = await call('POST', base, { key: `kill-loop-${k}`, json: { name: `kill ${k}`, destinationUrl: `https://hooks.example.com/kill/${k}`, eventTypes: ['chat.message.created.v1'] } });
        if (r.status !== 201) throw new LoopError(`creating endpoint ${k} answered ${r.status}: ${JSON.stringify(r.body)}`);
        ids.push(r.body.data.endpoint.id);
      }
      return ids;
    },
    /** id → { version, current secret } as the server holds them now. */
    async state() {
      const r = await call('GET', '/_sandbox/endpoints');
      return new Map(r.body.data.endpoints.map((e) => [e.id, { version: e.version, current: e.validSecrets[0] }]));
    },
    stop,
  };
}

// ---------------------------------------------------------------- chatctl

function chatctlEnv(sbInfo, baseUrl, configDir, home) {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    CHATCTL_CONFIG_DIR: configDir,
    CHATCTL_BASE_URL: baseUrl,
    CHATCTL_TOKEN: sbInfo.token,
    CHATCTL_ORG: sbInfo.organizationId,
    CHATCTL_APP: sbInfo.applicationId,
    CHATCTL_ENV: sbInfo.environmentKey,
    NO_COLOR: '1',
  };
}

/** Starts chatctl; `done` settles with its exit (code, signal), output and wall time. */
function startChatctl(args, env, cwd) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = [];
  const err = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  const limit = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      resolve({ code, signal, ms: performance.now() - t0, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
  return { child, done };
}

// ---------------------------------------------------------------- what is left in recovered/

const recoveredDir = (configDir) => join(configDir, 'recovered');

function recoveredFiles(configDir) {
  try {
    return readdirSync(recoveredDir(configDir)).filter((n) => /\.(record|secret|answer)$/.test(n));
  } catch {
    return [];
  }
}

/**
 * What recovered/ holds of this endpoint: 'none', 'header' (a record with no
 * answer bytes: sent, nothing read yet), 'status' (the answer's status line
 * and headers, no body yet), 'answer' (a record holding body bytes), 'kept'
 * (a kept secret or answer). Files are named after the
 * endpoint id (a readable label), then hashes.
 */
function recoveredState(configDir, id) {
  const mine = recoveredFiles(configDir).filter((n) => n.startsWith(`${id}-`));
  if (mine.length === 0) return 'none';
  if (mine.some((n) => !n.endsWith('.record'))) return 'kept';
  for (const n of mine) {
    const text = readFileSync(join(recoveredDir(configDir), n), 'utf8');
    // The answer as the socket delivered it (raw HTTP after the header line).
    const rest = text.slice(text.indexOf('\n') + 1);
    if (rest.startsWith('H')) {
      const headEnd = rest.indexOf('\r\n\r\n');
      return headEnd >= 0 && rest.length > headEnd + 4 ? 'answer' : 'status';
    }
    const lines = text.split('\n');
    if (lines.length > 2 && lines.slice(2).join('\n') !== '') return 'answer';
    if (lines.length > 2) return 'status';
  }
  return 'header';
}

/** Whether any file under recovered/ for this endpoint holds this secret. */
function recoveredHolds(configDir, id, secret) {
  return recoveredFiles(configDir)
    .filter((n) => n.startsWith(`${id}-`))
    .some((n) => readFileSync(join(recoveredDir(configDir), n), 'utf8').includes(secret));
}

const readOr = (path) => (existsSync(path) ? readFileSync(path, 'utf8').replace(/\n$/, '') : undefined);

/**
 * Every endpoint against the server. `history`: id → the recovered/ states
 * seen right after each kill (for the kernel case).
 */
function compare(ids, server, dirs, history, configDir, firstVersion) {
  const c = { endpoints: ids.length, ok: 0, lost: 0, inKernel: 0, stale: 0, kept: 0, double: 0, notRotated: 0, lostIds: [] };
  for (const id of ids) {
    const s = server.get(id);
    if (s.version > firstVersion + 1) c.double++;
    if (s.version === firstVersion) {
      c.notRotated++;
      continue;
    }
    const held = dirs.map((d) => readOr(join(d.dir, `${id}${d.ext}`)) === s.current);
    if (held.every(Boolean)) c.ok++;
    else if (held.some(Boolean)) c.stale++;
    else if (recoveredHolds(configDir, id, s.current)) c.kept++;
    else {
      const seen = history.get(id) ?? [];
      // The contract's case: at no kill did chatctl hold any byte of an answer for it.
      if (seen.length > 0 && seen.every((st) => st === 'header' || st === 'none') && seen.includes('header')) c.inKernel++;
      else c.lost++;
      c.lostIds.push({ id, version: s.version, seen });
    }
  }
  return c;
}

const add = (a, b) => {
  for (const [k, v] of Object.entries(b)) a[k] = Array.isArray(v) ? [...(a[k] ?? []), ...v] : (a[k] ?? 0) + v;
  return a;
};

// ---------------------------------------------------------------- random kills

function fromArgs() {
  return [
    'webhooks',
    'rotate',
    '--from',
    'manifest.ndjson',
    '--mode',
    'immediate',
    '--yes',
    '--journal',
    'fleet.journal',
    '--concurrency',
    '4',
    '--json',
    '--secret-to',
    'file:files/{id}.whsec',
    '--secret-to',
    'exec:cat > execs/$CHATCTL_ENDPOINT_ID.exec',
  ];
}

function newRoundDir(work, name, ids) {
  const dir = join(work, name);
  mkdirSync(join(dir, 'files'), { recursive: true });
  mkdirSync(join(dir, 'execs'), { recursive: true });
  writeFileSync(join(dir, 'manifest.ndjson'), ids.map((id) => JSON.stringify({ endpointId: id, expectedVersion: 1 })).join('\n') + '\n');
  return dir;
}

const destinations = (dir) => [
  { dir: join(dir, 'files'), ext: '.whsec' },
  { dir: join(dir, 'execs'), ext: '.exec' },
];

/** How many items a journal does not show settled (ok or fail). */
function notDone(journal, n) {
  if (!existsSync(journal)) return n;
  const settled = new Set();
  for (const line of readFileSync(journal, 'utf8').split('\n')) {
    try {
      const r = JSON.parse(line);
      if (r.t === 'ok' || r.t === 'fail') settled.add(r.id);
    } catch {
      /* a line cut by the kill */
    }
  }
  return n - settled.size;
}

/** One round: kills at random instants, each followed by a resume; a last resume to the end. */
async function randomRound(sb, work, configDir, o, rnd, round, fullMs) {
  const ids = await sb.create(o.endpoints);
  const dir = newRoundDir(work, `round-${round}`, ids);
  const env = chatctlEnv(sb.info, sb.info.baseUrl, configDir, dir);
  const history = new Map();
  const kills = [];
  for (let k = 0; k < o.kills; k++) {
    // Within the time this run needs: a resume has only what is not done yet to do (and start-up, about a quarter).
    const delay = Math.round(rnd() * fullMs * Math.max(0.25, notDone(join(dir, 'fleet.journal'), ids.length) / ids.length));
    const run = startChatctl(fromArgs(), env, dir);
    await sleep(delay);
    const landed = run.child.exitCode === null && run.child.signalCode === null;
    run.child.kill('SIGKILL');
    const r = await run.done;
    kills.push({ delay, landed: landed && r.signal === 'SIGKILL', code: r.code });
    if (r.code !== null && r.code !== 0) kills[kills.length - 1].stderr = r.stderr.slice(0, 2000);
    for (const id of ids) {
      const list = history.get(id) ?? [];
      list.push(recoveredState(configDir, id));
      history.set(id, list);
    }
  }
  const last = await startChatctl(fromArgs(), env, dir).done;
  const server = await sb.state();
  const figures = compare(ids, server, destinations(dir), history, configDir, 1);
  const leftover = recoveredFiles(configDir).filter((n) => ids.some((id) => n.startsWith(`${id}-`))).length;
  return { round, kills, lastExit: last.code, lastStderr: last.code === 0 ? '' : last.stderr.slice(0, 4000), leftover, ...figures };
}

async function randomMode(sb, work, o, rnd) {
  const configDir = join(work, 'config-random');
  // The time of one whole run, uninterrupted: the kills land uniformly within it.
  const calib = await sb.create(o.endpoints);
  const cdir = newRoundDir(work, 'calibration', calib);
  const c = await startChatctl(fromArgs(), chatctlEnv(sb.info, sb.info.baseUrl, join(work, 'config-calibration'), cdir), cdir).done;
  if (c.code !== 0) throw new LoopError(`the calibration run exited ${c.code}:\n${c.stderr}`);
  const fullMs = Math.round(c.ms * 1.1);
  process.stdout.write(`random: ${o.rounds} rounds × ${o.endpoints} endpoints, ${o.kills} SIGKILLs each within 0–${fullMs} ms (one whole run took ${Math.round(c.ms)} ms)\n`);
  const total = {};
  const rounds = [];
  for (let round = 1; round <= o.rounds; round++) {
    const r = await randomRound(sb, work, configDir, o, rnd, round, fullMs);
    rounds.push(r);
    const landed = r.kills.filter((k) => k.landed).length;
    add(total, {
      endpoints: r.endpoints,
      ok: r.ok,
      lost: r.lost,
      inKernel: r.inKernel,
      stale: r.stale,
      kept: r.kept,
      double: r.double,
      notRotated: r.notRotated,
      leftover: r.leftover,
      killsLanded: landed,
      lastNonZero: r.lastExit === 0 ? 0 : 1,
      lostIds: r.lostIds,
    });
    process.stdout.write(
      `  round ${String(round).padStart(2)}: kills at ${r.kills.map((k) => `${k.delay}${k.landed ? '' : '(after exit)'}`).join(', ')} ms; last resume exit ${r.lastExit}; ok ${r.ok}, lost ${r.lost}, in kernel ${r.inKernel}, stale ${r.stale}, kept ${r.kept}, double ${r.double}, not rotated ${r.notRotated}, leftover ${r.leftover}\n`,
    );
    if (r.lastExit !== 0) process.stdout.write(`    last resume stderr: ${r.lastStderr.split('\n').slice(0, 6).join('\n    ')}\n`);
  }
  return { fullMs, total, rounds };
}

// ---------------------------------------------------------------- kills timed to the answer's last byte

/**
 * A TCP proxy to the sandbox that reads each HTTP answer (Content-Length
 * framed) and, once it handed chatctl the last byte of the `nth` answer
 * carrying a secret, calls `onLast` after `delayMs`.
 */
async function startProxy(target) {
  let armed;
  /** Endpoint id → when the last byte of an answer carrying its secret was handed to chatctl's socket. */
  const answered = new Map();
  let lastClientPort;
  const server = net.createServer((client) => {
    lastClientPort = client.remotePort;
    const upstream = net.connect(target.port, target.host);
    client.on('data', (c) => upstream.write(c));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    let buf = Buffer.alloc(0);
    upstream.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      // Forward byte runs up to each answer's end, so the last byte of an answer goes out on its own write.
      for (;;) {
        const headEnd = buf.indexOf('\r\n\r\n');
        if (headEnd < 0) break;
        const head = buf.subarray(0, headEnd).toString('latin1');
        const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        const total = headEnd + 4 + len;
        if (buf.length < total) break;
        const answer = buf.subarray(0, total);
        buf = buf.subarray(total);
        const text = answer.subarray(headEnd + 4).toString('utf8');
        const carries = /"secret":"whsec_/.test(text);
        const id = /"id":"(we_[^"]+)"/.exec(text)?.[1];
        const a = armed;
        const handed = () => {
          if (carries && id) answered.set(id, performance.now());
        };
        if (carries && a && --a.left === 0) {
          armed = undefined;
          client.write(answer, () => (handed(), setTimeout(a.onLast, a.delayMs)));
        } else client.write(answer, handed);
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    port: server.address().port,
    /** chatctl's end of the newest connection: its local port. */
    clientPort: () => lastClientPort,
    answered,
    arm(nth, delayMs, onLast) {
      armed = { left: nth, delayMs, onLast };
    },
    disarm() {
      armed = undefined;
    },
    close: () => new Promise((r) => (server.close(r), server.unref())),
  };
}

/** Runs chatctl through the proxy, SIGKILLed `delayMs` after the nth secret-bearing answer's last byte. Whether the kill landed. */
async function killAfterAnswer(proxy, args, env, cwd, nth, delayMs) {
  const run = startChatctl(args, env, cwd);
  let landed = false;
  let killedAt;
  proxy.answered.clear();
  let rxQueue;
  proxy.arm(nth, delayMs, () => {
    killedAt = performance.now();
    landed = run.child.exitCode === null && run.child.signalCode === null;
    rxQueue = receiveQueue(proxy.clientPort(), proxy.port);
    run.child.kill('SIGKILL');
  });
  const r = await run.done;
  proxy.disarm();
  // How long before the kill each answer's last byte reached chatctl's socket.
  const before = new Map([...proxy.answered].filter(([, at]) => killedAt !== undefined && at <= killedAt).map(([id, at]) => [id, Math.round((killedAt - at) * 10) / 10]));
  return { landed: landed && r.signal === 'SIGKILL', code: r.code, stderr: r.stderr, before, rxQueue };
}

/**
 * The bytes waiting in the kernel for the socket at 127.0.0.1:localPort
 * connected to remotePort (/proc/net/tcp's rx_queue): what its process has
 * not read() yet. undefined where /proc/net/tcp cannot say.
 */
function receiveQueue(localPort, remotePort) {
  if (localPort === undefined) return undefined;
  try {
    const hex = (n) => n.toString(16).toUpperCase().padStart(4, '0');
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      if (f[1].endsWith(`:${hex(localPort)}`) && f[2].endsWith(`:${hex(remotePort)}`)) return Number.parseInt(f[4].split(':')[1], 16);
    }
  } catch {
    /* not Linux */
  }
  return undefined;
}

async function bytesSingle(sb, proxy, work, delayMs, trial) {
  const configDir = join(work, `config-bytes-single-${delayMs}-${trial}`);
  const [id] = await sb.create(1);
  const dir = join(work, `bytes-single-${delayMs}-${trial}`);
  mkdirSync(dir, { recursive: true });
  const key = `kill-loop-single-${delayMs}-${trial}`;
  const args = ['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'immediate', '--yes', '--idempotency-key', key, '--secret-to', `file:${join(dir, '{id}.whsec')}`, '--json'];
  const kill = await killAfterAnswer(proxy, args, chatctlEnv(sb.info, proxy.url, configDir, dir), dir, 1, delayMs);
  const history = new Map([[id, [recoveredState(configDir, id)]]]);
  // Through the proxy again (disarmed): the same command, against the same base URL.
  const resume = await startChatctl(args, chatctlEnv(sb.info, proxy.url, configDir, dir), dir).done;
  const figures = compare([id], await sb.state(), [{ dir, ext: '.whsec' }], history, configDir, 1);
  return {
    kind: 'single',
    delayMs,
    landed: kill.landed,
    atKill: history.get(id)[0],
    resumeExit: resume.code,
    resumeStderr: resume.code === 0 ? '' : resume.stderr.slice(0, 1500),
    leftover: recoveredFiles(configDir).length,
    ...figures,
  };
}

async function bytesFrom(sb, proxy, work, delayMs, trial, n, rnd) {
  const configDir = join(work, `config-bytes-from-${delayMs}-${trial}`);
  const ids = await sb.create(n);
  const dir = newRoundDir(work, `bytes-from-${delayMs}-${trial}`, ids);
  const nth = 1 + Math.floor(rnd() * n);
  const kill = await killAfterAnswer(proxy, fromArgs(), chatctlEnv(sb.info, proxy.url, configDir, dir), dir, nth, delayMs);
  const history = new Map(ids.map((id) => [id, [recoveredState(configDir, id)]]));
  // Through the proxy again (disarmed): a journal is bound to the base URL it was written against.
  const resume = await startChatctl(fromArgs(), chatctlEnv(sb.info, proxy.url, configDir, dir), dir).done;
  const figures = compare(ids, await sb.state(), destinations(dir), history, configDir, 1);
  // For each answer lost this way: how long it had been on chatctl's socket when the kill came.
  const unread = figures.lostIds.map((l) => ({ id: l.id, msOnSocket: kill.before.get(l.id) ?? null }));
  return {
    kind: 'from',
    delayMs,
    nth,
    unread,
    landed: kill.landed,
    resumeExit: resume.code,
    resumeStderr: resume.code === 0 ? '' : resume.stderr.slice(0, 1500),
    leftover: recoveredFiles(configDir).length,
    ...figures,
  };
}

async function bytesMode(sb, work, o, rnd) {
  const u = new URL(sb.info.baseUrl);
  const proxy = await startProxy({ host: u.hostname, port: Number(u.port) });
  const trials = [];
  try {
    for (const delayMs of [2, 5]) {
      for (let t = 0; t < o.trials; t++) trials.push(await bytesSingle(sb, proxy, work, delayMs, t));
      for (let t = 0; t < o.trials; t++) trials.push(await bytesFrom(sb, proxy, work, delayMs, t, Math.min(o.endpoints, 10), rnd));
    }
  } finally {
    await proxy.close();
  }
  process.stdout.write(`bytes: SIGKILL 2 and 5 ms after the last byte of a rotate answer, then the same command again (${o.trials} trials each)\n`);
  const groups = {};
  for (const t of trials) {
    const g = (groups[`${t.kind} +${t.delayMs} ms`] ??= {});
    add(g, {
      trials: 1,
      landed: t.landed ? 1 : 0,
      endpoints: t.endpoints,
      ok: t.ok,
      lost: t.lost,
      inKernel: t.inKernel,
      stale: t.stale,
      kept: t.kept,
      double: t.double,
      notRotated: t.notRotated,
      leftover: t.leftover,
      resumeNonZero: t.resumeExit === 0 ? 0 : 1,
    });
    if (t.kind === 'single') add(g, { [`atKill_${t.atKill}`]: 1 });
  }
  for (const [name, g] of Object.entries(groups))
    process.stdout.write(
      `  ${name.padEnd(13)} ${Object.entries(g)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}\n`,
    );
  for (const t of trials.filter((x) => x.resumeExit !== 0)) process.stdout.write(`  ${t.kind} +${t.delayMs} ms resume exit ${t.resumeExit}: ${t.resumeStderr.split('\n')[0]}\n`);
  for (const t of trials.filter((x) => x.unread?.length))
    process.stdout.write(
      `  from +${t.delayMs} ms (killed after answer ${t.nth}): answers unread at the kill, ms on chatctl's socket: ${t.unread.map((u) => u.msOnSocket ?? 'not yet sent').join(', ')}\n`,
    );
  return { groups, trials };
}

/** One single rotate with file: and exec: destinations, killed `delayMs` after its answer's last byte, then run again. */
async function lastByteSingle(sb, proxy, work, delayMs, trial) {
  const configDir = join(work, `config-last-byte-${delayMs}-${trial}`);
  const [id] = await sb.create(1);
  const dir = join(work, `last-byte-${delayMs}-${trial}`);
  mkdirSync(dir, { recursive: true });
  const key = `kill-loop-last-byte-${delayMs}-${trial}`;
  const args = [
    'webhooks',
    'rotate',
    id,
    '--expected-version',
    '1',
    '--mode',
    'immediate',
    '--yes',
    '--idempotency-key',
    key,
    '--secret-to',
    `file:${join(dir, '{id}.whsec')}`,
    '--secret-to',
    `exec:cat > "${dir}/$CHATCTL_ENDPOINT_ID.exec"`,
    '--json',
  ];
  const env = chatctlEnv(sb.info, proxy.url, configDir, dir);
  const kill = await killAfterAnswer(proxy, args, env, dir, 1, delayMs);
  const atKill = recoveredState(configDir, id);
  const resume = await startChatctl(args, env, dir).done;
  const figures = compare(
    [id],
    await sb.state(),
    [
      { dir, ext: '.whsec' },
      { dir, ext: '.exec' },
    ],
    new Map([[id, [atKill]]]),
    configDir,
    1,
  );
  const lost = figures.lost + figures.inKernel;
  // A receive queue of 1 is the peer's FIN alone (it takes a sequence number); no socket: chatctl had read and closed it.
  const read = kill.rxQueue === undefined || kill.rxQueue <= 1;
  return {
    delayMs,
    landed: kill.landed,
    rxQueue: kill.rxQueue ?? null,
    atKill,
    lost,
    read,
    resumeExit: resume.code,
    resumeStderr: resume.code === 0 ? '' : resume.stderr.slice(0, 800),
    leftover: recoveredFiles(configDir).length,
    double: figures.double,
    stale: figures.stale,
    ok: figures.ok,
  };
}

async function lastByteMode(sb, work, o) {
  const u = new URL(sb.info.baseUrl);
  const proxy = await startProxy({ host: u.hostname, port: Number(u.port) });
  const trials = [];
  try {
    for (const delayMs of o.afterLastByte) for (let t = 0; t < o.trials; t++) trials.push(await lastByteSingle(sb, proxy, work, delayMs, t));
  } finally {
    await proxy.close();
  }
  process.stdout.write(`after the last byte: a single rotate (file: + exec:) SIGKILLed MS after the proxy handed chatctl its answer's last byte, then run again (${o.trials} trials each)\n`);
  const groups = {};
  for (const t of trials) {
    const g = (groups[`+${t.delayMs} ms`] ??= {
      trials: 0,
      landed: 0,
      readAtKill: 0,
      unreadInKernel: 0,
      socketClosed: 0,
      lostAmongRead: 0,
      lostUnread: 0,
      double: 0,
      stale: 0,
      leftover: 0,
      resumeNonZero: 0,
    });
    g.trials++;
    if (!t.landed) continue;
    g.landed++;
    if (t.rxQueue === null) g.socketClosed++;
    if (t.read) g.readAtKill++;
    else g.unreadInKernel++;
    if (t.lost) {
      if (t.read) g.lostAmongRead++;
      else g.lostUnread++;
    }
    g.double += t.double;
    g.stale += t.stale;
    g.leftover += t.leftover;
    if (t.resumeExit !== 0) g.resumeNonZero++;
    g[`atKill_${t.atKill}`] = (g[`atKill_${t.atKill}`] ?? 0) + 1;
  }
  for (const [name, g] of Object.entries(groups))
    process.stdout.write(
      `  ${name.padEnd(7)} ${Object.entries(g)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}\n`,
    );
  return { groups, trials };
}

// ---------------------------------------------------------------- main

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!existsSync(join(ROOT, 'dist', 'main.cjs'))) throw new LoopError('dist/ is missing: run npm run build first');
  const rnd = prng(o.seed);
  const work = mkdtempSync(join(tmpdir(), 'chatctl-kill-loop-'));
  process.stdout.write(`kill-loop: seed ${o.seed}, work folder ${work}\n`);
  const sb = await startSandbox(work, (o.rounds + 1) * o.endpoints + 4 * o.trials * (o.endpoints + 1) + 100);
  const report = { seed: o.seed, rounds: o.rounds, endpoints: o.endpoints, kills: o.kills, at: new Date().toISOString() };
  try {
    if (o.afterLastByte) report.afterLastByte = await lastByteMode(sb, work, o);
    else {
      if (o.mode !== 'bytes') report.random = await randomMode(sb, work, o, rnd);
      if (o.mode !== 'random') report.bytes = await bytesMode(sb, work, o, rnd);
    }
  } finally {
    await sb.stop();
    if (!o.keep) rmSync(work, { recursive: true, force: true });
  }
  const t = report.random?.total;
  if (t) {
    process.stdout.write(
      `random total: ${t.endpoints} rotations; lost ${t.lost} (plus ${t.inKernel} whose answer was still in the kernel), stale ${t.stale}, kept ${t.kept}, double rotations ${t.double}, not rotated ${t.notRotated}, leftover in recovered/ ${t.leftover}; kills that landed ${t.killsLanded} of ${o.rounds * o.kills}; last resumes not exiting 0: ${t.lastNonZero}\n`,
    );
    for (const l of t.lostIds ?? []) process.stdout.write(`  lost ${l.id} (version ${l.version}), recovered/ after each kill: ${l.seen.join(', ')}\n`);
  }
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(RESULTS, JSON.stringify(report, null, 2) + '\n');
  process.stdout.write(`figures written to ${RESULTS.slice(ROOT.length)}\n`);
  const bad = (g) => g.lost + g.stale + g.double + g.leftover + (g.notRotated ?? 0);
  const failed =
    (t && bad(t) > 0) ||
    Object.values(report.bytes?.groups ?? {}).some((g) => bad(g) > 0) ||
    Object.values(report.afterLastByte?.groups ?? {}).some((g) => g.lostAmongRead + g.double + g.stale + g.leftover > 0);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`kill-loop: ${e instanceof LoopError ? e.message : (e?.stack ?? e)}\n`);
    process.exit(2);
  },
);
