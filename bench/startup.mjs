// chatctl's start-up benchmark (issue 6): each scenario is a pair, A =
// chatctl and B = the floor Node itself sets, run as child processes,
// interleaved (A, B, A, B …) after a warm-up. Reports per scenario the median
// of the pairwise wall-time ratios A/B, the medians of A and B, and the median
// pairwise peak-RSS ratio; prints a table and writes everything to
// bench/results/latest.json.
//
//   node bench/startup.mjs [--runs N] [--warmup N] [--quick] [--only 1,4]
//
// Scenario 6 compares chatctl with chatctl too: a rotate whose token is in
// the system keyring (gnome-keyring in a D-Bus session of the bench's own)
// against the same rotate given CHATCTL_TOKEN; not run without
// dbus-run-session and gnome-keyring-daemon.
//
// Scenario 10 is the single executable (`npm run package`; built first when
// its inputs changed) against the npm package: `--version` from each.
// Scenarios 11-13 are the single executable's `--version`, `webhooks rotate
// --help` and a completion against `node -e 0` (target: at or below it).
//
// Scenario 7 is what writing config.json costs: `profile set` loads conf
// (dist/lazy/conf.cjs) and the lock, reads, and writes the file; against
// `node -e 0`. Reported for the README's dependency table.
//
// Scenarios 8 and 9 measure what the launcher's V8 code cache buys: the
// same rotate as scenario 4, with the cache (A) against without it
// (CHATCTL_COMPILE_CACHE=0, B), and against Node's own compile cache
// (bench/node-compile-cache.cjs: module.enableCompileCache, then the program
// required as is; B). Scenario 9 is not run on a Node without it (before 22.1).
//
// Scenario 5 compares chatctl with chatctl: the same rotate through a proxy
// (HTTPS_PROXY, a CONNECT tunnel) and direct. chatctl never proxies loopback,
// so both go to an HTTPS front on 127.0.0.1 (a self-signed certificate made
// with openssl, trusted through NODE_EXTRA_CA_CERTS) that forwards to the
// sandbox: A names it https://sandbox.chatctl.test:PORT, a reserved name that
// only the bench's proxy resolves (to 127.0.0.1), and B names it
// https://127.0.0.1:PORT. Both pay the same TLS; the ratio is the proxy's
// cost (undici's bundle, the tunnel). Each side's check proves which path it
// took (the proxy's tunnel count).
//
// It is not a test: the targets are reported, never enforced. It exits 1 only
// when a run itself fails (a non-zero exit, or output that shows the command
// did not do its job), because then the figures would mean nothing.
//
// Wall time: process.hrtime.bigint() from just before spawn() to the child's
// 'exit' event. Peak RSS: each child runs under `/usr/bin/time -f %M` when that
// exists (its fork/exec adds the same ~1 ms to A and B); otherwise each child
// gets `--import bench/rss-probe.mjs`, which writes
// process.resourceUsage().maxRSS to fd 3 at exit.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, arch, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'chatctl.js');
const BARE_POST = join(ROOT, 'bench', 'bare-post.mjs');
const NODE_COMPILE_CACHE = join(ROOT, 'bench', 'node-compile-cache.cjs');
/** module.enableCompileCache: Node 22.1 and later. */
const NODE_HAS_COMPILE_CACHE = typeof (await import('node:module')).enableCompileCache === 'function';
const RSS_PROBE = join(ROOT, 'bench', 'rss-probe.mjs');
const RESULTS = join(ROOT, 'bench', 'results', 'latest.json');
const DIST = join(ROOT, 'dist');
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const RSS_MARK = 'CHATCTL_BENCH_MAXRSS_KB=';
const RSS_TARGET = 1.3;
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;

class BenchError extends Error {}

// ---------------------------------------------------------------- options

function parseArgs(argv) {
  const o = { runs: 30, warmup: 5, only: undefined };
  let runsGiven = false;
  let warmupGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    const count = (v, min) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < min) usage(`${a} needs an integer ≥ ${min}`);
      return n;
    };
    if (a === '--quick') {
      if (!runsGiven) o.runs = 5;
      if (!warmupGiven) o.warmup = 1;
    } else if (a === '--runs') {
      o.runs = count(value(), 1);
      runsGiven = true;
    } else if (a === '--warmup') {
      o.warmup = count(value(), 0);
      warmupGiven = true;
    } else if (a === '--only') {
      o.only = new Set(
        value()
          .split(',')
          .map((s) => count(s, 1)),
      );
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/startup.mjs [--runs N (30)] [--warmup N (5)] [--quick (runs 5, warm-up 1)] [--only 1,2,3,4,5,6,7,8,9,10]\n');
      process.exit(0);
    } else usage(`unknown argument ${a}`);
  }
  return o;
}

function usage(msg) {
  process.stderr.write(`bench: ${msg}\n`);
  process.exit(2);
}

// ---------------------------------------------------------------- running one child

/** Runs `node ...args` (or `exe ...args`: the single executable); resolves with wall ms (spawn → exit), exit code, output and peak RSS in KiB. */
function runNode(args, env, exe) {
  return new Promise((resolve, reject) => {
    let cmd = exe ?? process.execPath;
    let argv = args;
    const stdio = ['ignore', 'pipe', 'pipe'];
    if (TIME) {
      cmd = TIME;
      argv = ['-f', `${RSS_MARK}%M`, exe ?? process.execPath, ...args];
    } else if (exe) {
      // The executable passes its whole argv to chatctl; Node's options reach it through NODE_OPTIONS.
      env = { ...env, NODE_OPTIONS: `--import=${RSS_PROBE}` };
      stdio.push('pipe');
    } else {
      argv = ['--import', RSS_PROBE, ...args];
      stdio.push('pipe');
    }
    const out = [];
    const err = [];
    const fd3 = [];
    let ms;
    let code;
    let signal;
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, argv, { env, stdio, cwd: ROOT });
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.stdio[3]?.on('data', (c) => fd3.push(c));
    child.on('error', reject);
    child.on('exit', (c, s) => {
      ms = Number(process.hrtime.bigint() - t0) / 1e6;
      code = c;
      signal = s;
    });
    child.on('close', () => {
      let stderr = Buffer.concat(err).toString('utf8');
      let rssKb;
      if (TIME) {
        const at = stderr.lastIndexOf(RSS_MARK);
        if (at >= 0) {
          rssKb = Number.parseInt(stderr.slice(at + RSS_MARK.length), 10);
          // drop time's own lines ("Command exited with non-zero status N" …)
          stderr = stderr.slice(0, at).replace(/^Command (exited with non-zero status|terminated by signal) \d+\n?$/m, '');
        }
      } else {
        rssKb = Number.parseInt(Buffer.concat(fd3).toString('utf8'), 10);
      }
      resolve({ ms, code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr, rssKb: Number.isFinite(rssKb) ? rssKb : undefined });
    });
  });
}

function describe(args, exe) {
  return [exe ?? 'node', ...args.map((a) => (a.startsWith(ROOT) ? a.slice(ROOT.length) : a))].map((a) => (/^[\w./:=@-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

/** Runs one side of a pair; throws a BenchError when it failed. */
async function runSide(label, side) {
  const r = await runNode(side.args, side.env, side.exe);
  let problem;
  if (r.code !== 0) {
    problem = r.signal ? `was killed by ${r.signal}` : `exited ${r.code}`;
  } else {
    try {
      problem = side.check?.(r.stdout);
    } catch (e) {
      problem = `printed unexpected output (${e.message})`;
    }
  }
  if (problem) {
    const tail = (s) => s.trim().split('\n').slice(-5).join('\n    ');
    throw new BenchError(
      `${label}: \`${describe(side.args, side.exe)}\` ${problem}` + (r.stderr.trim() ? `\n  stderr:\n    ${tail(r.stderr)}` : '') + (r.stdout.trim() ? `\n  stdout:\n    ${tail(r.stdout)}` : ''),
    );
  }
  if (r.rssKb === undefined) throw new BenchError(`${label}: could not read the peak RSS of \`${describe(side.args, side.exe)}\``);
  return r;
}

/** dist/ holds a build: fast.json, tree.json, a main and a complete bundle (whatever their module format). */
function distComplete() {
  let names;
  try {
    names = readdirSync(DIST);
  } catch {
    return false;
  }
  const has = (re) => names.some((n) => re.test(n));
  return has(/^fast\.json$/) && has(/^tree\.json$/) && has(/^main\.[cm]?js$/) && has(/^complete\.[cm]?js$/);
}

async function waitForDist(timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (!distComplete()) {
    if (Date.now() > until) return false;
    await sleep(500);
  }
  await sleep(1000); // let a rebuild finish writing
  return distComplete();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One pair; if it fails while dist/ is being rebuilt by someone else, waits and tries again (up to 3 times). */
async function runPair(sc, label) {
  for (let attempt = 1; ; attempt++) {
    try {
      const p = await sc.pair();
      const a = await runSide(`${label} A`, p.a);
      const b = await runSide(`${label} B`, p.b);
      return { a, b, sides: p };
    } catch (e) {
      if (!(e instanceof BenchError) || attempt >= 3 || distComplete()) throw e;
      process.stderr.write(`bench: dist/ is incomplete (a rebuild?); waiting and retrying ${label}\n`);
      if (!(await waitForDist(120_000))) throw e;
    }
  }
}

// ---------------------------------------------------------------- the sandbox

async function startSandbox(env) {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const info = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => fail(new BenchError('the sandbox printed nothing within 15 s')), 15_000);
    const fail = (e) => {
      clearTimeout(timer);
      child.kill('SIGTERM');
      reject(e);
    };
    child.on('error', fail);
    child.on('exit', (c) => fail(new BenchError(`the sandbox exited ${c} before it was ready${stderr ? `: ${stderr.trim()}` : ''}`)));
    child.stdout.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout.on('data', () => {}); // keep draining
      try {
        resolve(JSON.parse(buf.slice(0, nl)));
      } catch {
        fail(new BenchError(`the sandbox's first line is not JSON: ${buf.slice(0, nl)}`));
      }
    });
  });
  const exited = new Promise((r) => child.once('exit', r));
  return {
    ...info,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

// ---------------------------------------------------------------- scenario 5: an HTTPS front and a proxy

const PROXIED_HOST = 'sandbox.chatctl.test';

/**
 * An HTTPS server on 127.0.0.1 forwarding every request to the sandbox, and
 * a CONNECT proxy that tunnels PROXIED_HOST:PORT to 127.0.0.1:PORT and
 * counts its tunnels. The certificate is made here, with openssl.
 */
async function startTlsFront(sb, dir) {
  const keyPath = join(dir, 'front-key.pem');
  const certPath = join(dir, 'front-cert.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        `/CN=${PROXIED_HOST}`,
        '-addext',
        `subjectAltName=DNS:${PROXIED_HOST},IP:127.0.0.1`,
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: 'ignore' },
    );
  } catch (e) {
    throw new BenchError(`scenario 5 needs openssl to make a certificate for its HTTPS front: ${e.message}`);
  }
  const target = new URL(sb.baseUrl);
  const front = https.createServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, agent: false }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  const port = front.address().port;

  const sockets = new Set();
  const track = (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const proxy = { tunnels: 0 };
  const server = http.createServer((_req, res) => res.writeHead(405).end());
  server.on('connection', track);
  server.on('connect', (req, client, head) => {
    const m = /^([^:]+):(\d+)$/.exec(req.url ?? '');
    if (!m || m[1] !== PROXIED_HOST) return void client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    proxy.tunnels++;
    const up = net.connect(Number(m[2]), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    track(up);
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    certPath,
    directUrl: `https://127.0.0.1:${port}`,
    proxiedUrl: `https://${PROXIED_HOST}:${port}`,
    proxyUrl: `http://127.0.0.1:${server.address().port}`,
    proxy,
    async stop() {
      for (const s of sockets) s.destroy();
      await Promise.all([new Promise((r) => front.close(r)), new Promise((r) => server.close(r))]);
    },
  };
}

function scopedUrl(sb, ...rest) {
  const segs = ['v1', 'organizations', sb.organizationId, 'applications', sb.applicationId, 'environments', sb.environmentKey, ...rest];
  return `${sb.baseUrl}/${segs.map(encodeURIComponent).join('/')}`;
}

async function sandboxCall(sb, url, { method = 'POST', body, headers = {} } = {}, expect) {
  const res = await fetch(url, {
    method,
    headers: {
      Authorization: `Bearer ${sb.token}`,
      Origin: new URL(sb.baseUrl).origin,
      'x-service-csrf': '1',
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status !== expect) throw new BenchError(`sandbox ${method} ${new URL(url).pathname} answered ${res.status} (expected ${expect}): ${text}`);
  return text ? JSON.parse(text) : undefined;
}

let endpointSerial = 0;
async function freshEndpoint(sb) {
  const n = ++endpointSerial;
  const res = await sandboxCall(
    sb,
    scopedUrl(sb, 'webhook-endpoints'),
    {
      body: { name: `bench ${n}`, destinationUrl: `https://example.com/bench/${n}`, eventTypes: ['chat.channel.created.v1'] },
      headers: { 'Idempotency-Key': randomUUID() },
    },
    201,
  );
  return { id: res.data.endpoint.id, version: res.data.endpoint.version };
}

// ---------------------------------------------------------------- scenarios

/** Reset the sandbox and make two endpoints at version 1, outside the timed region. */
async function twoFreshEndpoints(sb) {
  await sandboxCall(sb, `${sb.baseUrl}/_sandbox/reset`, {}, 200);
  return [await freshEndpoint(sb), await freshEndpoint(sb)];
}

function makeScenarios(env, getSandbox, getFront, getKeyring, getExecutable) {
  const sandboxEnv = (sb) => ({
    ...env,
    CHATCTL_BASE_URL: sb.baseUrl,
    CHATCTL_TOKEN: sb.token,
    CHATCTL_ORG: sb.organizationId,
    CHATCTL_APP: sb.applicationId,
    CHATCTL_ENV: sb.environmentKey,
  });
  const nodeFloor = { args: ['-e', '0'], env };
  const expect = (cond, what) => {
    if (!cond) throw new Error(what);
  };
  return [
    {
      id: 1,
      name: '--version',
      target: 1.05,
      pair: async () => ({
        a: { args: [BIN, '--version'], env, check: (out) => expect(out.trim() === VERSION, `expected ${VERSION}`) },
        b: nodeFloor,
      }),
    },
    {
      id: 2,
      name: 'webhooks rotate --help',
      target: 1.05,
      pair: async () => ({
        a: { args: [BIN, 'webhooks', 'rotate', '--help'], env, check: (out) => expect(/rotate/.test(out) && /--expected-version/.test(out), 'expected the rotate help') },
        b: nodeFloor,
      }),
    },
    {
      id: 3,
      name: "__complete bash -- --profile ''",
      target: 1.05,
      pair: async () => ({
        a: {
          args: [BIN, '__complete', 'bash', '--', '--profile', ''],
          env,
          check: (out) =>
            expect(
              PROFILES.every((p) => out.includes(p)),
              `expected the profile names ${PROFILES.join(', ')}`,
            ),
        },
        b: nodeFloor,
      }),
    },
    {
      id: 4,
      name: 'webhooks rotate --json (sandbox)',
      target: 1.25,
      needsSandbox: true,
      // Outside the timed region: reset the sandbox and create two endpoints,
      // so both A and B make a first `overlap` rotation at version 1.
      pair: async () => {
        const sb = getSandbox();
        const [ea, eb] = await twoFreshEndpoints(sb);
        const sbEnv = sandboxEnv(sb);
        const rotated = (ep) => (out) => {
          const r = JSON.parse(out);
          expect(r.data?.endpoint?.id === ep.id && r.data.endpoint.version === ep.version + 1, `expected ${ep.id} at version ${ep.version + 1}`);
        };
        const body = JSON.stringify({ expectedVersion: eb.version, mode: 'overlap' });
        return {
          a: {
            args: [BIN, 'webhooks', 'rotate', ea.id, '--expected-version', String(ea.version), '--mode', 'overlap', '--json'],
            env: sbEnv,
            check: rotated(ea),
          },
          b: {
            args: [
              BARE_POST,
              scopedUrl(sb, 'webhook-endpoints', eb.id, 'secret', 'rotate'),
              body,
              sb.token,
              `Idempotency-Key: ${randomUUID()}`,
              `x-request-id: ${randomUUID()}`,
              `User-Agent: bare-post node/${process.versions.node}`,
            ],
            env: sbEnv,
            check: rotated(eb),
          },
        };
      },
    },
    {
      id: 5,
      name: 'webhooks rotate --json via HTTPS_PROXY (CONNECT) vs direct, both https',
      target: 1.3,
      needsSandbox: true,
      needsFront: true,
      pair: async () => {
        const sb = getSandbox();
        const front = getFront();
        const [ea, eb] = await twoFreshEndpoints(sb);
        const scope = {
          ...env,
          CHATCTL_TOKEN: sb.token,
          CHATCTL_ORG: sb.organizationId,
          CHATCTL_APP: sb.applicationId,
          CHATCTL_ENV: sb.environmentKey,
          NODE_EXTRA_CA_CERTS: front.certPath,
        };
        const tunnelsBefore = front.proxy.tunnels;
        const rotated = (ep, tunnels) => (out) => {
          const r = JSON.parse(out);
          expect(r.data?.endpoint?.id === ep.id && r.data.endpoint.version === ep.version + 1, `expected ${ep.id} at version ${ep.version + 1}`);
          expect(front.proxy.tunnels === tunnelsBefore + tunnels, `expected ${tunnels} tunnel(s) through the proxy so far, saw ${front.proxy.tunnels - tunnelsBefore}`);
        };
        const rotate = (ep) => [BIN, 'webhooks', 'rotate', ep.id, '--expected-version', String(ep.version), '--mode', 'overlap', '--json'];
        return {
          a: { args: rotate(ea), env: { ...scope, CHATCTL_BASE_URL: front.proxiedUrl, HTTPS_PROXY: front.proxyUrl }, check: rotated(ea, 1) },
          b: { args: rotate(eb), env: { ...scope, CHATCTL_BASE_URL: front.directUrl }, check: rotated(eb, 1) },
        };
      },
    },
    {
      id: 6,
      name: 'webhooks rotate --json, token in the keyring vs CHATCTL_TOKEN',
      // What the keyring adds: a child process that reads the entry.
      target: 2,
      needsSandbox: true,
      needsKeyring: true,
      pair: async () => {
        const sb = getSandbox();
        const keyring = getKeyring();
        const [ea, eb] = await twoFreshEndpoints(sb);
        const rotated = (ep) => (out) => {
          const r = JSON.parse(out);
          expect(r.data?.endpoint?.id === ep.id && r.data.endpoint.version === ep.version + 1, `expected ${ep.id} at version ${ep.version + 1}`);
        };
        const rotate = (ep) => [BIN, 'webhooks', 'rotate', ep.id, '--expected-version', String(ep.version), '--mode', 'overlap', '--json'];
        return {
          a: { args: rotate(ea), env: keyring.env, check: rotated(ea) },
          b: { args: rotate(eb), env: { ...keyring.env, CHATCTL_TOKEN: sb.token }, check: rotated(eb) },
        };
      },
    },
    {
      id: 7,
      name: 'profile set (conf writes config.json)',
      // A write command: the program, conf, the lock and the write itself.
      target: 2.5,
      pair: async () => ({
        a: {
          args: [BIN, 'profile', 'set', 'default', '--env', 'default'],
          env,
          check: () => {
            const stored = JSON.parse(readFileSync(join(env.CHATCTL_CONFIG_DIR, 'config.json'), 'utf8'));
            expect(PROFILES.every((p) => stored.profiles?.[p]) && stored.profiles.default.environmentKey === 'default', 'expected the five profiles, default with env "default"');
          },
        },
        b: nodeFloor,
      }),
    },
    {
      id: 8,
      name: 'webhooks rotate --json (sandbox), code cache vs none',
      target: 1,
      needsSandbox: true,
      pair: async () => cachePair(getSandbox(), sandboxEnv, (sbEnv) => ({ args: [BIN], env: { ...sbEnv, CHATCTL_COMPILE_CACHE: '0' } })),
    },
    {
      id: 9,
      name: "webhooks rotate --json (sandbox), code cache vs Node's",
      target: 1,
      needsSandbox: true,
      needsNodeCompileCache: true,
      pair: async () => cachePair(getSandbox(), sandboxEnv, (sbEnv) => ({ args: [NODE_COMPILE_CACHE], env: sbEnv })),
    },
    {
      id: 10,
      name: 'the single executable --version vs node bin/chatctl.js --version',
      // npm run package: the same answer from the executable's assets.
      target: 1.1,
      needsExecutable: true,
      pair: async () => ({
        a: { exe: getExecutable(), args: ['--version'], env, check: (out) => expect(out.trim() === VERSION, `expected ${VERSION}`) },
        b: { args: [BIN, '--version'], env, check: (out) => expect(out.trim() === VERSION, `expected ${VERSION}`) },
      }),
    },
    // Scenarios 11-13: the single executable's fast answers against bare Node (target: at or below it).
    ...[
      [11, ['--version'], (out) => expect(out.trim() === VERSION, `expected ${VERSION}`)],
      [12, ['webhooks', 'rotate', '--help'], (out) => expect(/--expected-version/.test(out), 'expected the rotate help')],
      [
        13,
        ['__complete', 'bash', '--', '--profile', ''],
        (out) =>
          expect(
            PROFILES.every((p) => out.includes(p)),
            `expected the profile names ${PROFILES.join(', ')}`,
          ),
      ],
    ].map(([id, args, check]) => ({
      id,
      name: `the single executable ${args.map((a) => (a === '' ? "''" : a)).join(' ')} vs node -e 0`,
      target: 1.0,
      needsExecutable: true,
      pair: async () => ({ a: { exe: getExecutable(), args, env, check }, b: nodeFloor }),
    })),
  ];
}

/** Scenarios 8 and 9: the same rotate, A through bin/chatctl.js, B as `other` says. */
async function cachePair(sb, sandboxEnv, other) {
  const [ea, eb] = await twoFreshEndpoints(sb);
  const sbEnv = sandboxEnv(sb);
  const rotate = (ep) => ['webhooks', 'rotate', ep.id, '--expected-version', String(ep.version), '--mode', 'overlap', '--json'];
  const rotated = (ep) => (out) => {
    const r = JSON.parse(out);
    if (!(r.data?.endpoint?.id === ep.id && r.data.endpoint.version === ep.version + 1)) throw new Error(`expected ${ep.id} at version ${ep.version + 1}`);
  };
  const b = other(sbEnv);
  return {
    a: { args: [BIN, ...rotate(ea)], env: sbEnv, check: rotated(ea) },
    b: { args: [...b.args, ...rotate(eb)], env: b.env, check: rotated(eb) },
  };
}

const PROFILES = ['default', 'staging', 'production', 'ci-bot', 'local'];

// ---------------------------------------------------------------- scenario 6: a token in the system keyring

const KEYRING_TOOLS = ['dbus-run-session', 'gnome-keyring-daemon'];
const haveKeyringTools = () => KEYRING_TOOLS.every((t) => spawnSyncOk('sh', ['-c', `command -v ${t}`]));

function spawnSyncOk(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A D-Bus session of the bench's own with gnome-keyring unlocked by a test
 * password (HOME and XDG folders under tmp), and a config folder whose
 * profile "kr" points at the sandbox with its token in that keyring.
 */
async function startKeyring(sb, tmp) {
  const home = join(tmp, 'keyring-home');
  const runtime = join(home, 'run');
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_RUNTIME_DIR: runtime, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config') };
  const script = 'echo -n bench-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; echo "BUS=$DBUS_SESSION_BUS_ADDRESS"; exec sleep 3600';
  const child = spawn('dbus-run-session', ['--', 'sh', '-c', script], { env, detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const address = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new BenchError('the D-Bus session gave no address within 15 s')), 15_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = /BUS=(\S+)\n/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (c) => reject(new BenchError(`dbus-run-session ended (${c}) before giving its address`)));
  });
  const configDir = join(tmp, 'keyring-config');
  mkdirSync(configDir, { mode: 0o700 });
  const kr = { baseUrl: sb.baseUrl, organizationId: sb.organizationId, applicationId: sb.applicationId, environmentKey: sb.environmentKey };
  writeFileSync(join(configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: 'kr', profiles: { kr } }, null, 2) + '\n', { mode: 0o600 });
  const krEnv = { PATH: env.PATH, HOME: home, CHATCTL_CONFIG_DIR: configDir, NO_COLOR: '1', DBUS_SESSION_BUS_ADDRESS: address, XDG_RUNTIME_DIR: runtime };
  let stored = false;
  for (let i = 0; i < 30 && !stored; i++) {
    try {
      execFileSync(process.execPath, [BIN, 'auth', 'login', '--with-token'], { env: krEnv, input: sb.token, stdio: ['pipe', 'ignore', 'pipe'] });
      stored = JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8')).profiles.kr.tokenStorage === 'keyring';
    } catch {
      /* not ready yet */
    }
    if (!stored) await new Promise((r) => setTimeout(r, 200));
  }
  if (!stored) throw new BenchError("auth login could not store the token in the bench's keyring");
  return {
    env: krEnv,
    stop: async () => {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    },
  };
}

// ---------------------------------------------------------------- statistics

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function quantile(xs, q) {
  const s = [...xs].sort((x, y) => x - y);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo] + (s[Math.ceil(pos)] - s[lo]) * (pos - lo);
}

const r3 = (x) => Math.round(x * 1000) / 1000;

function summarise(sc, samples, a, b) {
  const ratios = samples.map((s) => s.ratio);
  const rssRatios = samples.map((s) => s.rssRatio);
  const medianRatio = median(ratios);
  const rssRatio = median(rssRatios);
  return {
    id: sc.id,
    name: sc.name,
    a: describe(a.args, a.exe),
    b: describe(b.args, b.exe),
    target: sc.target,
    rssTarget: RSS_TARGET,
    pairs: samples.length,
    medianAms: r3(median(samples.map((s) => s.aMs))),
    medianBms: r3(median(samples.map((s) => s.bMs))),
    medianRatio: r3(medianRatio),
    ratioP25: r3(quantile(ratios, 0.25)),
    ratioP75: r3(quantile(ratios, 0.75)),
    medianRssAkB: median(samples.map((s) => s.aRssKb)),
    medianRssBkB: median(samples.map((s) => s.bRssKb)),
    rssRatio: r3(rssRatio),
    timeTargetMet: medianRatio <= sc.target,
    rssTargetMet: rssRatio <= RSS_TARGET,
    samples,
  };
}

function table(rows) {
  const head = ['scenario', 'median A ms', 'median B ms', 'median ratio', 'target', 'RSS ratio', 'met'];
  const body = rows.map((r) => [
    `${r.id}. ${r.name}`,
    r.medianAms.toFixed(1),
    r.medianBms.toFixed(1),
    r.medianRatio.toFixed(3),
    `≤ ${r.target.toFixed(2)}`,
    `${r.rssRatio.toFixed(3)} (≤ ${RSS_TARGET})`,
    r.timeTargetMet && r.rssTargetMet ? 'yes' : [!r.timeTargetMet && 'time', !r.rssTargetMet && 'RSS'].filter(Boolean).join('+') + ' miss',
  ]);
  const all = [head, ...body];
  const w = head.map((_, i) => Math.max(...all.map((row) => [...row[i]].length)));
  const line = (row) => '| ' + row.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
  return [line(head), '|' + w.map((n, i) => (i === 0 ? '-'.repeat(n + 2) : '-'.repeat(n + 1) + ':')).join('|') + '|', ...body.map(line)].join('\n');
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!distComplete()) {
    process.stderr.write('bench: dist/ is incomplete; waiting for a build (npm run build) …\n');
    if (!(await waitForDist(120_000))) throw new BenchError('dist/ is missing: run npm run build first');
  }

  const tmp = mkdtempSync(join(tmpdir(), 'chatctl-bench-'));
  let sandbox;
  let front;
  let keyring;
  let executable;
  const cleanup = async () => {
    await keyring?.stop().catch(() => {});
    await front?.stop().catch(() => {});
    await sandbox?.stop().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  };
  const onSignal = (sig) => {
    cleanup().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const configDir = join(tmp, 'config');
    mkdirSync(configDir);
    const profile = (env) => ({ baseUrl: 'https://api.example.com', organizationId: 'org_bench', applicationId: 'app_bench', environmentKey: env });
    writeFileSync(join(configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: 'default', profiles: Object.fromEntries(PROFILES.map((p) => [p, profile(p)])) }, null, 2) + '\n');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, CHATCTL_CONFIG_DIR: configDir, NO_COLOR: '1' };

    let scenarios = makeScenarios(
      env,
      () => sandbox,
      () => front,
      () => keyring,
      () => executable,
    ).filter((s) => !opts.only || opts.only.has(s.id));
    if (scenarios.length === 0) usage('--only selects no scenario (1–13)');
    if (scenarios.some((s) => s.needsNodeCompileCache) && !NODE_HAS_COMPILE_CACHE) {
      process.stdout.write(`scenario 9 not run: Node ${process.version} has no module.enableCompileCache (22.1 and later)\n`);
      scenarios = scenarios.filter((s) => !s.needsNodeCompileCache);
    }
    if (scenarios.some((s) => s.needsKeyring) && !haveKeyringTools()) {
      process.stdout.write(`scenario 6 not run: it needs ${KEYRING_TOOLS.join(' and ')} (packages dbus and gnome-keyring)\n`);
      scenarios = scenarios.filter((s) => !s.needsKeyring);
    }
    if (scenarios.some((s) => s.needsSandbox)) sandbox = await startSandbox(env);
    if (scenarios.some((s) => s.needsFront)) front = await startTlsFront(sandbox, tmp);
    if (scenarios.some((s) => s.needsKeyring)) keyring = await startKeyring(sandbox, tmp);
    // Scenario 10: the executable `npm run package` builds, in the copy the test shares (built when its inputs changed).
    if (scenarios.some((s) => s.needsExecutable)) {
      executable = execFileSync(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--cached'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    }

    process.stdout.write(
      `chatctl ${VERSION} start-up benchmark: node ${process.version}, ${cpus().length}× ${cpus()[0]?.model ?? 'cpu'}, ` +
        `${opts.warmup} warm-up + ${opts.runs} interleaved pairs per scenario; peak RSS via ${TIME ? '/usr/bin/time -f %M' : 'an --import probe'}\n`,
    );

    const rows = [];
    for (const sc of scenarios) {
      for (let i = 0; i < opts.warmup; i++) await runPair(sc, `scenario ${sc.id} warm-up ${i + 1}`);
      const samples = [];
      let last;
      for (let i = 0; i < opts.runs; i++) {
        last = await runPair(sc, `scenario ${sc.id} pair ${i + 1}`);
        const { a, b } = last;
        samples.push({ aMs: r3(a.ms), bMs: r3(b.ms), ratio: r3(a.ms / b.ms), aRssKb: a.rssKb, bRssKb: b.rssKb, rssRatio: r3(a.rssKb / b.rssKb) });
      }
      const row = summarise(sc, samples, last.sides.a, last.sides.b);
      rows.push(row);
      process.stdout.write(`  ${sc.id}. ${sc.name}: A ${row.medianAms.toFixed(1)} ms, B ${row.medianBms.toFixed(1)} ms, ratio ${row.medianRatio.toFixed(3)}\n`);
    }

    process.stdout.write('\n' + table(rows) + '\n');
    const missed = rows.filter((r) => !r.timeTargetMet || !r.rssTargetMet).map((r) => r.id);
    process.stdout.write(missed.length ? `\ntargets missed by scenario ${missed.join(', ')} (reported, not enforced)\n` : '\nall targets met\n');

    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    const report = {
      generatedAt: new Date().toISOString(),
      chatctl: VERSION,
      node: process.version,
      platform: `${platform()} ${release()} ${arch()}`,
      cpu: { model: cpus()[0]?.model, count: cpus().length },
      loadavgBefore: loadavg(),
      method: {
        warmup: opts.warmup,
        pairs: opts.runs,
        order: 'interleaved A, B per pair; scenarios 4, 5 and 6 reset the sandbox and create two endpoints before each pair, outside the timed region',
        scenario6:
          'A and B are both chatctl in a D-Bus session of the bench with gnome-keyring unlocked: A with profile "kr" whose token is in the keyring, B the same with CHATCTL_TOKEN set; A - B is what reading the keyring adds',
        scenario5: `A and B are both chatctl against an HTTPS front (self-signed, NODE_EXTRA_CA_CERTS) forwarding to the sandbox: A as https://${PROXIED_HOST}:PORT through HTTPS_PROXY (a CONNECT proxy in the bench that alone resolves that name to 127.0.0.1), B as https://127.0.0.1:PORT direct`,
        wallTime: 'process.hrtime.bigint() from spawn() to the exit event',
        ratio: 'median of the pairwise ratios A/B',
        peakRss: TIME ? '/usr/bin/time -f %M (KiB), wrapping both A and B' : '--import bench/rss-probe.mjs: process.resourceUsage().maxRSS (KiB) on fd 3',
        env: 'PATH, HOME=<fresh temp dir, so the warm-up also fills any per-user cache, e.g. the compile cache>, CHATCTL_CONFIG_DIR=<temp>/config (5 profiles), NO_COLOR=1 (+ CHATCTL_BASE_URL/TOKEN/ORG/APP/ENV in scenario 4)',
      },
      scenarios: rows,
    };
    writeFileSync(RESULTS, JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`figures written to ${RESULTS.slice(ROOT.length)}\n`);
  } finally {
    await cleanup();
  }
}

// `npm run bench -- --fleet`: the rotate --from benchmark instead (bench/fleet.mjs);
// `npm run bench -- --kill-loop`: the random-kill loop (bench/kill-loop.mjs);
// `npm run bench -- --loop-delay`: the event loop of a run (bench/loop-delay.mjs).
if (process.argv.slice(2).includes('--fleet')) await import('./fleet.mjs');
else if (process.argv.slice(2).includes('--kill-loop')) await import('./kill-loop.mjs');
else if (process.argv.slice(2).includes('--loop-delay')) await import('./loop-delay.mjs');
else
  main().then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`bench: a run failed, so there are no figures:\n${e instanceof BenchError ? e.message : (e?.stack ?? e)}\n`);
      process.exit(1);
    },
  );
