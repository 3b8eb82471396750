#!/usr/bin/env node
// `npm run demo`: chatctl itself creates an endpoint, rotates its secret with
// overlap, and reactivates it after it was really deactivated, against the
// sandbox, showing what a user would see. Every line printed is what
// happened: commands as run, their own output, the sandbox's answers.
// Needs nothing but a built checkout (`npm install`).
//
// It leaves nothing behind on any exit: the sandbox runs inside this process
// (the same code `chatctl sandbox` runs), so no server outlives it; the
// chatctl runs are killed if still running; the temporary folder (config and
// secret files) is removed, whether the demo ends, fails, is interrupted,
// or its reader goes away (`npm run demo | head -3`).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) process.on(signal, () => stopWith(code));
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
  const done = runSandboxCommand(
    { host: '127.0.0.1', port: 0, endpointLimit: 10, rateLimit: 0, json: true },
    { stdout: (s) => (first += s), stderr: (s) => (errors += s) },
    stopped,
  );
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
  if (result.code !== 0 && !stop.signal.aborted) say(`demo: that step failed (exit ${result.code})${result.error ? `: ${result.error.message}` : ''}`);
  return result;
}

async function demo(tmp) {
  const sandbox = await startSandbox();
  try {
    const { info } = sandbox;
    const env = cliEnv(info, join(tmp, 'config'));
    mkdirSync(env.CHATCTL_CONFIG_DIR, { mode: 0o700 });
    say(`chatctl demo: the sandbox (what \`chatctl sandbox --port 0 --json\` serves) listens on ${info.baseUrl}`);
    say(
      `chatctl reads its scope from the environment: CHATCTL_BASE_URL=${info.baseUrl} CHATCTL_ORG=${info.organizationId} CHATCTL_APP=${info.applicationId} CHATCTL_ENV=${info.environmentKey}, and CHATCTL_TOKEN (the sandbox's token)`,
    );

    const created = await step(
      "Create a signed webhook endpoint; --json prints the server's answer, the one-time secret goes to a file (mode 0600)",
      ['webhooks', 'create', '--name', 'demo', '--url', 'https://example.com/hooks', '--event', 'chat.message.created.v1', '--secret-file', join(tmp, 'secret'), '--json'],
      env,
      { captureStdout: true },
    );
    if (created.code !== 0) return created.code;
    const endpoint = JSON.parse(created.stdout).data.endpoint;

    const rotated = await step(
      'Rotate its secret with overlap: the old secret stays valid for 24 hours',
      ['webhooks', 'rotate', endpoint.id, '--expected-version', String(endpoint.version), '--mode', 'overlap', '--secret-file', join(tmp, 'secret2')],
      env,
    );
    if (rotated.code !== 0) return rotated.code;

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
