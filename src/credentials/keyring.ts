// The system keyring (Secret Service on Linux, Keychain on macOS, Credential
// Manager on Windows) through @napi-rs/keyring, entries under the service
// "chatctl" and the profile's name.
//
// Every call runs in a child Node process that is killed at the limit (3 s).
// Not in this process, nor in a worker thread: the binding talks to D-Bus
// with synchronous calls, and against a bus that accepts a connection and
// never answers (a headless box, a stuck daemon, a locked keyring waiting on
// a prompt nobody sees) its constructor blocks for good (measured: still
// blocked after 40 s). In this process that blocks the event loop, so no
// timer can fire; in a worker the call cannot be interrupted either, and
// Node joins every worker thread before it exits, so the run would never
// end. A child process can always be killed. It costs a Node start-up, and
// only runs that use a keyring token pay it.
//
// The addon is never bundled (esbuild cannot bundle a .node file): the child
// requires it from node_modules, where npm put it with its per-platform
// package. Where no prebuilt binary exists for the platform, that require
// fails and the keyring counts as absent.
//
// On Linux the entry is pinned to the Secret Service: the binding would
// otherwise fall back silently on the kernel's keyutils, which forgets
// everything at reboot.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Env } from '../context.js';

export const KEYRING_SERVICE = 'chatctl';
/** How long the keyring has to answer a call. */
export const KEYRING_LIMIT_MS = 3_000;

export type KeyringOp = 'get' | 'set' | 'delete';

export type KeyringResult =
  /** get: the password, or null when there is no entry; set: null; delete: whether an entry was removed. */
  | { ok: true; value: string | null; deleted?: boolean }
  /** No keyring here: no binary for this platform, no Secret Service, no D-Bus session. */
  | { ok: false; kind: 'unavailable'; reason: string }
  /** A keyring that did not answer within the limit. */
  | { ok: false; kind: 'timeout'; reason: string }
  /** A keyring that answered with an error (locked, refused). */
  | { ok: false; kind: 'failed'; reason: string };

export interface KeyringOptions {
  env: Env;
  signal?: AbortSignal | undefined;
  limitMs?: number | undefined;
  /** The binding to require; by default @napi-rs/keyring as Node finds it from here. */
  modulePath?: string | undefined;
}

/**
 * The child: requires the binding, makes the entry (pinned to the Secret
 * Service on Linux), does one thing and prints one JSON line. A password to
 * store comes on its stdin, never on its argv (which `ps` shows).
 */
const CHILD = String.raw`(() => {
const [modulePath, op, service, account] = process.argv.slice(1);
const say = (o) => process.stdout.write(JSON.stringify(o));
const why = (e) => String((e && e.message) || e).split('\n')[0].slice(0, 300);
let lib;
try { lib = require(modulePath); } catch (e) { say({ ok: false, kind: 'unavailable', reason: 'no prebuilt keyring binary for ' + process.platform + '-' + process.arch }); return; }
let entry;
try { entry = new lib.Entry(service, account, { linux: { store: 'secret-service' } }); }
catch (e) { say({ ok: false, kind: 'unavailable', reason: why(e) }); return; }
try {
  if (op === 'get') say({ ok: true, value: entry.getPassword() ?? null });
  else if (op === 'delete') say({ ok: true, value: null, deleted: entry.deleteCredential() });
  else { entry.setPassword(require('node:fs').readFileSync(0, 'utf8')); say({ ok: true, value: null }); }
} catch (e) { say({ ok: false, kind: /Platform|NoStorage|NoDefault|not available|ServiceUnknown|NameHasNoOwner|autolaunch/i.test(why(e)) ? 'unavailable' : 'failed', reason: why(e) }); }
})();`;

/** Where Node finds the binding from chatctl's own folder (undefined when it is not installed at all). */
export function keyringModulePath(): string | undefined {
  try {
    const here = typeof __dirname === 'string' ? __dirname : process.cwd();
    return createRequire(join(here, 'noop.js')).resolve('@napi-rs/keyring');
  } catch {
    return undefined;
  }
}

/** One keyring call for `account` (the profile's name), bounded by the limit; never throws but on Ctrl-C. */
export function keyringCall(op: KeyringOp, account: string, opts: KeyringOptions, password?: string): Promise<KeyringResult> {
  const modulePath = opts.modulePath ?? keyringModulePath();
  if (modulePath === undefined) return Promise.resolve({ ok: false, kind: 'unavailable', reason: 'the keyring binding (@napi-rs/keyring) is not installed' });
  const limitMs = opts.limitMs ?? KEYRING_LIMIT_MS;
  // The run's environment (D-Bus address, HOME…), without the token of the environment.
  const env: Env = { ...opts.env };
  delete env.CHATCTL_TOKEN;
  return new Promise<KeyringResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CHILD, modulePath, op, KEYRING_SERVICE, account], {
      env: env as NodeJS.ProcessEnv,
      stdio: [op === 'set' ? 'pipe' : 'ignore', 'pipe', 'ignore'],
      windowsHide: true,
    });
    let out = '';
    let settled = false;
    const finish = (r: KeyringResult | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ ok: false, kind: 'timeout', reason: `the keyring did not answer within ${formatSeconds(limitMs)}` });
    }, limitMs);
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(Object.assign(new Error('interrupted'), { name: 'AbortError' }));
    };
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (c: string) => {
      if (out.length < 1 << 20) out += c;
    });
    child.on('error', (err) => finish({ ok: false, kind: 'unavailable', reason: `cannot start ${process.execPath}: ${(err as NodeJS.ErrnoException).code ?? err.message}` }));
    child.on('close', (code, signal) => {
      try {
        const r = JSON.parse(out) as KeyringResult;
        if (r && typeof r === 'object' && typeof r.ok === 'boolean') return finish(r);
      } catch {
        /* below */
      }
      // A binding that crashed the child (a broken prebuilt, a missing shared library).
      finish({ ok: false, kind: 'unavailable', reason: `the keyring helper process ended ${signal ? `by ${signal}` : `with status ${code}`} without an answer` });
    });
    if (op === 'set') {
      child.stdin!.on('error', () => {}); // a child that died early: its answer says why
      child.stdin!.end(password ?? '');
    }
  });
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
