#!/usr/bin/env node
// `npm run demo`: chatctl itself creates an endpoint, rehearses an overlap
// rotation of its secret against a receiver, and reactivates it after it was
// really deactivated, against the sandbox, showing what a user would see.
// Every line printed is what happened: commands as run, their own output,
// the sandbox's answers, the receiver's verdicts.
// Needs nothing but a built checkout (`npm install`).
//
// The rehearsal: a small receiver on loopback (below, as yours would be)
// verifies each delivery with the secrets it holds. The sandbox signs with
// both secrets during the overlap, so the receiver accepts deliveries whether
// it holds the old or the new one; it switches to the new one; the overlap is
// ended with the sandbox's clock; then a delivery is signed with the new
// secret only: accepted by the receiver that switched, refused by one that
// still holds the old secret.
//
// It leaves nothing behind on any exit: the sandbox runs inside this process
// (the same code `chatctl sandbox` runs), so no server outlives it; the
// chatctl runs are killed if still running; the temporary folder (config and
// secret files) is removed, whether the demo ends, fails, is interrupted,
// or its reader goes away (`npm run demo | head -3`).
import { spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'bin', 'chatctl.js');
const STEP_TIMEOUT_MS = 60_000;

/** Everything that must not outlive the demo. */
const held = { tmp: undefined, children: new Set(), stopSandbox: undefined };
/** Aborted when the demo must stop: a signal, or nobody reading stdout any more. */
const stop = new AbortController();
let exitCode = 0;

function stopWith(code) {
  // A second signal means now: the 'exit' handler below still cleans up.
  if (stop.signal.aborted) {
    if (code !== 0) process.exit(code);
    return;
  }
  exitCode = code;
  stop.abort();
  for (const child of held.children) child.kill('SIGTERM');
  held.stopSandbox?.();
}

// `| head -3`: the reader went away. Stop quietly, as chatctl itself does.
process.stdout.on('error', (err) => stopWith(err.code === 'EPIPE' ? 0 : 1));
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
])
  process.on(signal, () => stopWith(code));
// The last resort, whatever happened: nothing survives the demo.
process.on('exit', () => {
  for (const child of held.children) child.kill('SIGKILL');
  if (held.tmp) rmSync(held.tmp, { recursive: true, force: true });
});

const say = (line = '') => {
  if (!stop.signal.aborted) process.stdout.write(line + '\n');
};
const quote = (arg) => (/^[\w./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/** Runs a child to its end; resolves with its exit code and captured stdout (when piped). */
function run(args, { env, captureStdout = false } = {}) {
  return new Promise((resolve) => {
    if (stop.signal.aborted) return resolve({ code: exitCode, stdout: '' });
    const child = spawn(process.execPath, args, {
      cwd: root,
      env,
      stdio: ['ignore', captureStdout ? 'pipe' : 'inherit', 'inherit'],
      timeout: STEP_TIMEOUT_MS,
    });
    held.children.add(child);
    let stdout = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.on('error', (error) => resolve({ code: 1, stdout, error }));
    child.on('close', (code, signal) => {
      held.children.delete(child);
      resolve({ code: code ?? (signal ? 1 : 0), stdout });
    });
  });
}

/** Ends the chatctl runs still going (none, unless the demo was stopped) and waits for them. */
async function endChildren() {
  await Promise.all(
    [...held.children].map(
      (child) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('close', () => (clearTimeout(timer), resolve()));
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** The sandbox `chatctl sandbox --port 0 --json` serves, started in this process. */
async function startSandbox() {
  const { runSandboxCommand } = createRequire(import.meta.url)(join(root, 'dist', 'lazy', 'sandbox.cjs'));
  let first = '';
  let errors = '';
  let release;
  const stopped = new Promise((resolve) => (release = resolve));
  const done = runSandboxCommand({ host: '127.0.0.1', port: 0, endpointLimit: 10, rateLimit: 0, json: true }, { stdout: (s) => (first += s), stderr: (s) => (errors += s) }, stopped);
  held.stopSandbox = () => release();
  // It prints its JSON line once listening, or returns at once on failure.
  while (!first.includes('\n')) {
    const code = await Promise.race([done, new Promise((r) => setTimeout(r, 10))]);
    if (typeof code === 'number') throw new Error(`the sandbox did not start: ${errors.trim()}`);
  }
  return {
    info: JSON.parse(first.split('\n')[0]),
    close: async () => {
      release();
      await done;
    },
  };
}

/**
 * A webhook receiver on loopback that verifies each delivery (Standard
 * Webhooks: HMAC-SHA256 of "{id}.{timestamp}.{body}", any one signature in
 * the header may match, timestamp within 5 minutes) with the secrets it
 * holds, named so its verdicts can say which matched. `hold` replaces them.
 */
async function startReceiver() {
  let held = [];
  const verify = (headers, body) => {
    const id = headers['webhook-id'];
    const ts = headers['webhook-timestamp'];
    if (!/^\d+$/.test(ts ?? '') || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return 'the timestamp is too far from now';
    const signatures = String(headers['webhook-signature'] ?? '').split(' ');
    for (const { name, secret } of held) {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const expected = Buffer.from('v1,' + createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64'));
      const at = signatures.findIndex((s) => s.length === expected.length && timingSafeEqual(Buffer.from(s), expected));
      if (at >= 0) return { name, at: at + 1, of: signatures.length };
    }
    return `none of the ${signatures.length} signatures matches the ${held.map((h) => h.name).join(' or ')} secret`;
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const v = verify(req.headers, Buffer.concat(chunks));
      const ok = typeof v === 'object';
      say(ok ? `receiver: accepted ${req.headers['webhook-id']}: signature ${v.at} of ${v.of} matches the ${v.name} secret` : `receiver: refused ${req.headers['webhook-id']}: ${v}`);
      res.writeHead(ok ? 204 : 401, { 'content-type': 'text/plain' }).end(ok ? '' : 'no signature matches');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks`,
    hold: (...secrets) => (held = secrets),
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

/** The environment for chatctl: this sandbox's scope and a throw-away config folder, nothing inherited from CHATCTL_*. */
function cliEnv(info, configDir) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CHATCTL_')));
  const noProxy = [process.env.NO_PROXY ?? process.env.no_proxy, '127.0.0.1', 'localhost', '::1'].filter(Boolean).join(',');
  return {
    ...env,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    CHATCTL_CONFIG_DIR: configDir,
    CHATCTL_BASE_URL: info.baseUrl,
    CHATCTL_TOKEN: info.token,
    CHATCTL_ORG: info.organizationId,
    CHATCTL_APP: info.applicationId,
    CHATCTL_ENV: info.environmentKey,
    CHATCTL_NO_INPUT: '1',
  };
}

async function step(title, args, env, options = {}) {
  say();
  say(`# ${title}`);
  say(`$ chatctl ${args.map(quote).join(' ')}`);
  const result = await run([bin, ...args], { env, ...options });
  if (options.captureStdout) say(result.stdout.replace(/\n$/, ''));
  const expected = options.expectExit ?? 0;
  if (result.code !== expected && !stop.signal.aborted) say(`demo: that step failed (exit ${result.code})${result.error ? `: ${result.error.message}` : ''}`);
  else if (expected !== 0) say(`(exit ${result.code}, as expected)`);
  return { ...result, code: result.code === expected ? 0 : result.code || 1 };
}

/** A control route of the sandbox, shown as sent with the sandbox's answer. */
async function sandboxControl(info, method, path, body) {
  say(`${method} ${info.baseUrl}${path} ${JSON.stringify(body)}`);
  if (stop.signal.aborted) return undefined;
  const res = await fetch(`${info.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${info.token}` }, body: JSON.stringify(body), signal: stop.signal });
  const answer = await res.json();
  say(`-> ${res.status} ${JSON.stringify(answer)}`);
  return res.ok ? answer : undefined;
}

async function demo(tmp) {
  const sandbox = await startSandbox();
  const receiver = await startReceiver();
  try {
    const { info } = sandbox;
    const env = cliEnv(info, join(tmp, 'config'));
    mkdirSync(env.CHATCTL_CONFIG_DIR, { mode: 0o700 });
    say(`chatctl demo: the sandbox (what \`chatctl sandbox --port 0 --json\` serves) listens on ${info.baseUrl}`);
    say(
      `chatctl reads its scope from the environment: CHATCTL_BASE_URL=${info.baseUrl} CHATCTL_ORG=${info.organizationId} CHATCTL_APP=${info.applicationId} CHATCTL_ENV=${info.environmentKey}, and CHATCTL_TOKEN (the sandbox's token)`,
    );

    say(`A receiver listens on ${receiver.url} and verifies each delivery with the secrets it holds.`);

    const created = await step(
      "Create a signed webhook endpoint pointing at the receiver; --json prints the server's answer, the one-time secret goes to a file (mode 0600)",
      ['webhooks', 'create', '--name', 'demo', '--url', receiver.url, '--event', 'chat.message.created.v1', '--secret-file', join(tmp, 'secret'), '--json'],
      env,
      { captureStdout: true },
    );
    if (created.code !== 0) return created.code;
    const endpoint = JSON.parse(created.stdout).data.endpoint;
    const oldSecret = { name: 'old', secret: readFileSync(join(tmp, 'secret'), 'utf8') };
    receiver.hold(oldSecret);
    const trigger = (title, expectExit = 0) => step(title, ['webhooks', 'trigger', endpoint.id, '--event', 'chat.message.created.v1'], env, { expectExit });

    let r = await trigger('The sandbox delivers a signed event; the receiver holds the secret it was given');
    if (r.code !== 0) return r.code;

    const rotated = await step(
      'Rotate its secret with overlap: the old secret stays valid for 24 hours',
      ['webhooks', 'rotate', endpoint.id, '--expected-version', String(endpoint.version), '--mode', 'overlap', '--secret-file', join(tmp, 'secret2')],
      env,
    );
    if (rotated.code !== 0) return rotated.code;
    const newSecret = { name: 'new', secret: readFileSync(join(tmp, 'secret2'), 'utf8') };

    r = await trigger('During the overlap deliveries carry two signatures (new, then old): the receiver, still on the old secret, accepts');
    if (r.code !== 0) return r.code;
    receiver.hold(newSecret);
    r = await trigger('The receiver switches to the new secret: it accepts too');
    if (r.code !== 0) return r.code;

    say();
    say("# End the overlap now with the sandbox's clock (24 hours forward) instead of waiting");
    if (!(await sandboxControl(info, 'POST', '/_sandbox/clock', { advanceMs: 24 * 60 * 60 * 1000 }))) return stop.signal.aborted ? exitCode : 1;

    r = await trigger('After the overlap deliveries are signed with the new secret only: the receiver that switched accepts');
    if (r.code !== 0) return r.code;
    receiver.hold(oldSecret);
    r = await trigger('A receiver still on the old secret refuses such a delivery (chatctl exits 9)', 9);
    if (r.code !== 0) return r.code;
    say();
    say('demo: the rotation rehearsal went as planned: accepted with either secret during the overlap, the new one only after it');

    // chatctl has no deactivate command; the sandbox serves one as an extension.
    const path = ['v1', 'organizations', info.organizationId, 'applications', info.applicationId, 'environments', info.environmentKey, 'webhook-endpoints', endpoint.id, 'deactivate']
      .map(encodeURIComponent)
      .join('/');
    const body = { expectedVersion: endpoint.version + 1 };
    say();
    say("# Deactivate it through the sandbox's extension route (chatctl has no deactivate command)");
    say(`POST ${info.baseUrl}/${path} ${JSON.stringify(body)}`);
    if (stop.signal.aborted) return exitCode;
    const res = await fetch(`${info.baseUrl}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${info.token}`, origin: info.baseUrl, 'x-service-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: stop.signal,
    });
    const answer = await res.json();
    say(`-> ${res.status} ${JSON.stringify(answer)}`);
    if (!res.ok) return 1;
    const inactive = answer.data.endpoint;

    const reactivated = await step(
      `Reactivate it: it is ${inactive.status}, so this changes it (version ${inactive.version} -> ${inactive.version + 1})`,
      ['webhooks', 'reactivate', endpoint.id, '--expected-version', String(inactive.version)],
      env,
    );
    if (reactivated.code !== 0) return reactivated.code;
    say();
    say('demo: create, rotate, deactivate and reactivate all succeeded');
    return 0;
  } finally {
    await receiver.close();
    await sandbox.close();
  }
}

async function main() {
  if (!existsSync(join(root, 'dist', 'main.cjs')) || !existsSync(join(root, 'dist', 'lazy', 'sandbox.cjs'))) {
    say('demo: dist/ is missing, building chatctl first');
    const built = await run([join(root, 'scripts', 'build.mjs')]);
    if (built.code !== 0) return built.code;
  }
  held.tmp = mkdtempSync(join(tmpdir(), 'chatctl-demo-'));
  try {
    const code = await demo(held.tmp);
    return stop.signal.aborted ? exitCode : code;
  } catch (error) {
    if (stop.signal.aborted) return exitCode;
    say(`demo: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await endChildren();
    rmSync(held.tmp, { recursive: true, force: true });
    held.tmp = undefined;
  }
}

process.exitCode = await main();
