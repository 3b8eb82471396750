#!/usr/bin/env node
// `npm run demo`: a local sandbox on a free port, then chatctl itself creates
// an endpoint, rotates its secret with overlap and reactivates it, showing
// what a user would see. Needs nothing but a built checkout (`npm install`).
// Exits 0 only if every step did; always stops the sandbox and removes its
// temporary folder.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'bin', 'chatctl.js');
const STEP_TIMEOUT_MS = 60_000;

const say = (line = '') => process.stdout.write(line + '\n');
const quote = (arg) => (/^[\w./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/** Runs a child to its end; resolves with its exit code and captured stdout (when piped). */
function run(args, { env, captureStdout = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env,
      stdio: ['ignore', captureStdout ? 'pipe' : 'inherit', 'inherit'],
      timeout: STEP_TIMEOUT_MS,
    });
    let stdout = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.on('error', (error) => resolve({ code: 1, stdout, error }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), stdout }));
  });
}

/** Starts `chatctl sandbox --port 0 --json` and reads its first stdout line. */
function startSandbox() {
  const child = spawn(process.execPath, [bin, 'sandbox', '--port', '0', '--json'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const ready = new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error('the sandbox printed nothing within 15 s')), 15_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      lines.close();
      child.stdout.resume(); // keep draining; --json prints nothing more
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`the sandbox's first line is not JSON: ${line}`));
      }
    });
    child.on('error', reject);
    exited.then((code) => reject(new Error(`the sandbox exited (code ${code}) before it was ready`)));
  });
  return { child, ready, exited };
}

async function stopSandbox(sandbox) {
  if (sandbox.child.exitCode !== null || sandbox.child.signalCode !== null) return;
  sandbox.child.kill('SIGTERM');
  const timer = setTimeout(() => sandbox.child.kill('SIGKILL'), 5_000);
  await sandbox.exited;
  clearTimeout(timer);
}

/** The environment for chatctl: this sandbox's scope and a throw-away config folder, nothing inherited. */
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
  if (result.code !== 0) {
    if (result.stdout) process.stdout.write(result.stdout);
    say(`demo: step failed (exit ${result.code})${result.error ? `: ${result.error.message}` : ''}`);
  }
  return result;
}

async function demo(tmp, sandbox) {
  const info = await sandbox.ready;
  const env = cliEnv(info, join(tmp, 'config'));
  mkdirSync(env.CHATCTL_CONFIG_DIR, { mode: 0o700 });
  say(`chatctl demo: sandbox listening on ${info.baseUrl}`);
  say(`scope: organization ${info.organizationId}, application ${info.applicationId}, environment ${info.environmentKey}`);

  const secretFile = join(tmp, 'secret');
  const created = await step(
    'Create a signed webhook endpoint; the one-time secret goes to a file (mode 0600)',
    ['webhooks', 'create', '--name', 'demo', '--url', 'https://example.com/hooks', '--event', 'chat.message.created.v1', '--secret-file', secretFile, '--json'],
    env,
    { captureStdout: true },
  );
  if (created.code !== 0) return created.code;
  let endpoint;
  try {
    endpoint = JSON.parse(created.stdout).data.endpoint;
  } catch {
    say(`demo: cannot read the endpoint from create's output: ${created.stdout}`);
    return 1;
  }
  say(`created endpoint ${endpoint.id}: "${endpoint.name}" -> ${endpoint.destinationUrl}, ${endpoint.status}, version ${endpoint.version}`);
  say(`signing secret saved to ${secretFile}`);

  const rotated = await step(
    'Rotate the secret with overlap: the old secret stays valid for 24 hours',
    ['webhooks', 'rotate', endpoint.id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', join(tmp, 'secret2')],
    env,
  );
  if (rotated.code !== 0) return rotated.code;

  const reactivated = await step(
    'Reactivate it (it is already active, so nothing changes: changed is false)',
    ['webhooks', 'reactivate', endpoint.id, '--expected-version', '2'],
    env,
  );
  if (reactivated.code !== 0) return reactivated.code;

  say();
  say('demo: all three steps succeeded');
  return 0;
}

async function main() {
  if (!existsSync(join(root, 'dist', 'main.cjs'))) {
    say('demo: dist/ is missing, building chatctl first');
    const built = await run([join(root, 'scripts', 'build.mjs')]);
    if (built.code !== 0) return built.code;
  }
  const tmp = mkdtempSync(join(tmpdir(), 'chatctl-demo-'));
  const sandbox = startSandbox();
  const cleanUp = async () => {
    await stopSandbox(sandbox);
    rmSync(tmp, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));
  process.once('SIGTERM', () => void cleanUp().then(() => process.exit(143)));
  try {
    return await demo(tmp, sandbox);
  } catch (error) {
    say(`demo: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await cleanUp();
  }
}

process.exitCode = await main();
