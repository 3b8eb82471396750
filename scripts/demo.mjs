#!/usr/bin/env node
// `npm run demo`: chatctl itself creates an endpoint, rehearses an overlap
// rotation of its secret against a receiver, and reactivates it after it was
// really deactivated, against the sandbox, showing what a user would see.
// Every line printed is what happened: commands as run, their own output,
// the sandbox's answers, the receiver's verdicts.
// Needs nothing but a built checkout (`npm install`).
//
// The rehearsal: `chatctl webhooks listen` is the receiver, on loopback,
// verifying each delivery with the secret files it holds and saying which
// matched. Before the rotation one secret matches; during the overlap (the
// sandbox signs with both secrets) the old file alone still matches, and a
// listener holding both files finds both; an immediate rotation rewrites the
// new file, which the listener reads again at the next delivery; with that
// file gone, the old file alone is refused.
//
// It leaves nothing behind on any exit: the sandbox runs inside this process
// (the same code `chatctl sandbox` runs), so no server outlives it; the
// chatctl runs are killed if still running; the temporary folder (config and
// secret files) is removed, whether the demo ends, fails, is interrupted,
// or its reader goes away (`npm run demo | head -3`).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
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
function run(args, { env, cwd = root, captureStdout = false } = {}) {
  return new Promise((resolve) => {
    if (stop.signal.aborted) return resolve({ code: exitCode, stdout: '' });
    const child = spawn(process.execPath, args, {
      cwd,
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

/** A port free now, for the endpoint's destination and the listener that will serve it. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * `chatctl webhooks listen …` in the background, its lines shown as
 * "listener | …" when the demo asks for them, so they come in a fixed place
 * (after the trigger that caused them). Stopped with Ctrl-C's signal, as a
 * user stops it; its summary is shown too.
 */
function startListener(args, env, cwd) {
  const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  held.children.add(child);
  const lines = [];
  const waiting = [];
  let stderr = '';
  let partial = '';
  const closed = new Promise((resolve) =>
    child.on('close', (code) => {
      held.children.delete(child);
      for (const w of waiting.splice(0)) w(undefined);
      resolve(code);
    }),
  );
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    for (const line of parts) {
      const w = waiting.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const next = () => (lines.length ? Promise.resolve(lines.shift()) : child.exitCode !== null ? Promise.resolve(undefined) : new Promise((resolve) => waiting.push(resolve)));
  return {
    /** Shows its next line (waiting for it); false if it ended instead. */
    show: async () => {
      const line = await next();
      if (line !== undefined) say(`listener | ${line}`);
      return line !== undefined;
    },
    stop: async () => {
      child.kill('SIGINT');
      const code = await closed;
      for (const line of stderr.split('\n').filter(Boolean)) say(`listener | ${line}`);
      return code;
    },
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

/** Starts a listener as a step: the command shown, then its first line (where it listens). */
async function listenStep(title, files, port, env, cwd) {
  say();
  say(`# ${title}`);
  const args = ['webhooks', 'listen', ...files.flatMap((f) => ['--secret-file', f]), '--port', String(port)];
  say(`$ chatctl ${args.map(quote).join(' ')} &`);
  const listener = startListener(args, env, cwd);
  return (await listener.show()) ? listener : undefined;
}

async function demo(tmp) {
  const sandbox = await startSandbox();
  // The listener running now, if any, for the end to stop.
  const running = { listener: undefined };
  try {
    const { info } = sandbox;
    const env = cliEnv(info, join(tmp, 'config'));
    mkdirSync(env.CHATCTL_CONFIG_DIR, { mode: 0o700 });
    say(`chatctl demo: the sandbox (what \`chatctl sandbox --port 0 --json\` serves) listens on ${info.baseUrl}`);
    say(
      `chatctl reads its scope from the environment: CHATCTL_BASE_URL=${info.baseUrl} CHATCTL_ORG=${info.organizationId} CHATCTL_APP=${info.applicationId} CHATCTL_ENV=${info.environmentKey}, and CHATCTL_TOKEN (the sandbox's token)`,
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hooks`;
    // The commands run in a folder of their own, where the secret files go.
    const work = join(tmp, 'work');
    mkdirSync(work, { mode: 0o700 });
    say(`The receiver will be \`chatctl webhooks listen\` on ${url}: it verifies each delivery with the secret files it holds and says which matched.`);

    const created = await step(
      "Create a signed webhook endpoint pointing at the receiver; --json prints the server's answer, the one-time secret goes to a file (mode 0600)",
      ['webhooks', 'create', '--name', 'demo', '--url', url, '--event', 'chat.message.created.v1', '--secret-file', 'old.whsec', '--json'],
      env,
      { captureStdout: true, cwd: work },
    );
    if (created.code !== 0) return created.code;
    const endpoint = JSON.parse(created.stdout).data.endpoint;
    const rehearsed = await rehearse({ env, work, port, endpoint, running });
    if (rehearsed !== 0) return rehearsed;
    return await deactivateThenReactivate(info, env, endpoint);
  } finally {
    await running.listener?.stop();
    await sandbox.close();
  }
}

/**
 * The rotation rehearsed with `webhooks listen` as the receiver: one secret
 * before, the old file alone during the overlap, both files once held, the
 * new file after an immediate rotation, and the old file alone refused.
 */
async function rehearse({ env, work, port, endpoint, running }) {
  const [oldFile, newFile] = ['old.whsec', 'new.whsec'];
  const inWork = { cwd: work };
  const failed = () => (stop.signal.aborted ? exitCode : 1);
  /** A delivery, then the listener's line about it. */
  const trigger = async (title, expectExit = 0) => {
    const r = await step(title, ['webhooks', 'trigger', endpoint.id, '--event', 'chat.message.created.v1'], env, { expectExit, ...inWork });
    return r.code === 0 && (await running.listener.show()) ? 0 : r.code || failed();
  };
  const listen = async (title, files) => (running.listener = await listenStep(title, files, port, env, work));

  if (!(await listen('The receiver starts, holding the secret it was given', [oldFile]))) return failed();
  let code = await trigger('Before the rotation: the sandbox delivers a signed event, and one secret matches');
  if (code !== 0) return code;
  const rotated = await step(
    'Rotate its secret with overlap: the old secret stays valid for 24 hours; the new one goes to another file',
    ['webhooks', 'rotate', endpoint.id, '--expected-version', String(endpoint.version), '--mode', 'overlap', '--secret-file', newFile],
    env,
    inWork,
  );
  if (rotated.code !== 0) return rotated.code;
  code = await trigger('During the overlap deliveries carry two signatures (new, then old): the receiver, still on the old file alone, accepts');
  if (code !== 0) return code;

  say();
  say('# The receiver switches: stopped (Ctrl-C) and started again holding both files');
  if ((await running.listener.stop()) !== 0) return failed();
  if (!(await listen('Now holding the old and the new file', [oldFile, newFile]))) return failed();
  code = await trigger('During the overlap both the old and the new file match, each by its own signature');
  if (code !== 0) return code;

  const immediate = await step(
    'Rotate immediately: the old secrets stop working now; the newest goes into the new file, which the receiver reads again at the next delivery',
    ['webhooks', 'rotate', endpoint.id, '--expected-version', String(endpoint.version + 1), '--mode', 'immediate', '--yes', '--secret-file', newFile, '--force'],
    env,
    inWork,
  );
  if (immediate.code !== 0) return immediate.code;
  code = await trigger('After the immediate rotation deliveries carry the newest signature only: the new file matches, the old one does not');
  if (code !== 0) return code;

  say();
  say('# Without the new file, the receiver holds the old file alone');
  say(`$ rm ${newFile}`);
  rmSync(join(work, newFile));
  code = await trigger('The old file alone is refused (401): the receiver says the new file is missing, and chatctl exits 9', 9);
  if (code !== 0) return code;
  say();
  say('# Stop the receiver (Ctrl-C): its summary, exit 0');
  const stopped = await running.listener.stop();
  running.listener = undefined;
  if (stopped !== 0) return failed();
  say();
  say('demo: the rotation rehearsal went as planned: one secret before, both files during the overlap, the old file alone refused after the immediate rotation');
  return 0;
}

/** Deactivates the endpoint (the sandbox's extension route: chatctl has no deactivate command), then reactivates it with chatctl. */
async function deactivateThenReactivate(info, env, endpoint) {
  // chatctl has no deactivate command; the sandbox serves one as an extension.
  const path = ['v1', 'organizations', info.organizationId, 'applications', info.applicationId, 'environments', info.environmentKey, 'webhook-endpoints', endpoint.id, 'deactivate']
    .map(encodeURIComponent)
    .join('/');
  const body = { expectedVersion: endpoint.version + 2 };
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
