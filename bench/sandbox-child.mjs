// A real `chatctl sandbox --json` child on 127.0.0.1 for the benches
// (bench/fleet.mjs, kill-loop.mjs, loop-delay.mjs): started, its first stdout line
// read, its API called as chatctl calls it, stopped with SIGTERM.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

/** The environment of a chatctl child with its own HOME and config folder; given the sandbox's `info`, pointed at it. */
export function chatctlEnv(home, info) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CHATCTL_CONFIG_DIR: join(home, 'config'), NO_COLOR: '1' };
  if (!info) return env;
  return { ...env, CHATCTL_BASE_URL: info.baseUrl, CHATCTL_TOKEN: info.token, CHATCTL_ORG: info.organizationId, CHATCTL_APP: info.applicationId, CHATCTL_ENV: info.environmentKey };
}

/**
 * Starts it with `args` (after `sandbox --json`); `fail(message)` makes the
 * error a bench reports. `call(method, path, body)`: body `{ key, json }`
 * sends `json` with that Idempotency-Key, any other body is sent as is.
 */
export async function startSandboxChild(bin, home, args, fail = (m) => new Error(m)) {
  const child = spawn(process.execPath, [bin, 'sandbox', '--json', ...args], {
    cwd: home,
    env: chatctlEnv(home),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.resume();
  let out = '';
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(fail('the sandbox did not start in 10 s')), 10_000);
    child.stdout.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(JSON.parse(out.slice(0, nl)));
      }
    });
    child.on('exit', (code) => reject(fail(`the sandbox exited (${code}) before it started`)));
  });
  const call = async (method, path, body) => {
    const res = await fetch(`${info.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${info.token}`,
        origin: 'https://bench.example',
        'x-service-csrf': '1',
        'content-type': 'application/json',
        ...(body?.key ? { 'idempotency-key': body.key } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body.json ?? body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    info,
    call,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}
