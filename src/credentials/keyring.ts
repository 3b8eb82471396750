// The system keyring (service "chatctl", account the profile's name), each call in a child process
// killed at the limit: against a D-Bus that never answers, the binding blocks this process or a
// worker for good, and only a child can always be killed. keyring-child.cjs requires the addon.
import { singleExecutable, withoutCredentials } from '../system/process.js';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from '../context.js';

const KEYRING_SERVICE = 'chatctl';
export const KEYRING_LIMIT_MS = 3_000;

/** get: the password or null; delete: whether an entry went. Failures: no keyring here, no answer in time, or an error (locked). */
type KeyringResult = { ok: true; value: string | null; deleted?: boolean } | { ok: false; kind: 'unavailable' | 'timeout' | 'failed'; reason: string };

type KeyringOptions = { env: Env; signal?: AbortSignal | undefined; limitMs?: number | undefined };

const CHILD_FILE = 'keyring-child.cjs';

/** One keyring call for `account` (the profile's name), bounded by the limit; never throws but on Ctrl-C. */
export async function keyringCall(op: 'get' | 'set' | 'delete', account: string, opts: KeyringOptions, password?: string): Promise<KeyringResult> {
  // The single executable is its own child (src/sea/launcher.ts). The child program sits beside this
  // file in src/ and beside the bundle in dist/; lazy bundles are one folder down, in dist/lazy/.
  const sea = singleExecutable();
  const here = typeof __dirname === 'string' ? __dirname : process.cwd();
  const childPath = sea ? undefined : [join(here, CHILD_FILE), join(here, '..', CHILD_FILE)].find((p) => existsSync(p));
  if (!sea && childPath === undefined) return { ok: false, kind: 'unavailable', reason: `${CHILD_FILE} is missing from the installation` };
  const childArgs = [...(sea ? sea.keyringChildArgs : [childPath!]), op, KEYRING_SERVICE, account];
  const limitMs = opts.limitMs ?? KEYRING_LIMIT_MS;
  // Without NODE_OPTIONS: what it preloads is for chatctl, and would only slow down (or break) the child.
  const env: Env = withoutCredentials(opts.env);
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, childArgs, { env: env as NodeJS.ProcessEnv, stdio: [op === 'set' ? 'pipe' : 'ignore', 'pipe', 'ignore'], windowsHide: true });
  const timedOut: KeyringResult = { ok: false, kind: 'timeout', reason: `the keyring did not answer within ${formatSeconds(limitMs)}` };
  const kill = () => child.kill('SIGKILL');
  const outcome = await childOutcome<KeyringResult>(kill, limitMs, timedOut, opts.signal, (finish) => {
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (c: string) => {
      if (out.length < 1 << 20) out += c;
    });
    child.on('error', (err) => finish({ ok: false, kind: 'unavailable', reason: `cannot start ${process.execPath}: ${(err as NodeJS.ErrnoException).code ?? err.message}` }));
    child.on('close', (code, signal) => {
      try {
        const r = JSON.parse(out) as KeyringResult;
        if (r && typeof r === 'object' && typeof r.ok === 'boolean') return finish(r.ok ? r : { ...r, reason: plainReason(r.reason, opts.env) });
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
  if (outcome instanceof Error) throw outcome;
  return outcome;
}

/** A child process's one outcome: `end` settles once; at `limitMs` the child is killed (`kill`) and it settles with `timedOut`, on abort with an AbortError. */
export function childOutcome<T>(kill: () => void, limitMs: number, timedOut: T, signal: AbortSignal | undefined, run: (end: (r: T | Error) => void) => void): Promise<T | Error> {
  return new Promise((resolve) => {
    let settled = false;
    const end = (r: T | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const timer = setTimeout(() => {
      kill();
      end(timedOut);
    }, limitMs);
    const onAbort = () => {
      kill();
      end(Object.assign(new Error('interrupted'), { name: 'AbortError' }));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    run(end);
  });
}

/** The binding's failure in plain words: D-Bus's own text says nothing to someone who only wanted a token stored. */
function plainReason(raw: string, env: Env): string {
  if (/autolaunch|DBUS_SESSION_BUS_ADDRESS/i.test(raw) || (process.platform === 'linux' && !env.DBUS_SESSION_BUS_ADDRESS && /dbus/i.test(raw)))
    return 'no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set';
  if (/failed to connect|no such file|connection refused|could not connect|broken pipe|connection reset/i.test(raw)) return 'the D-Bus session named by DBUS_SESSION_BUS_ADDRESS cannot be reached';
  if (/ServiceUnknown|NameHasNoOwner|org\.freedesktop\.secrets|not provided by any/i.test(raw)) return 'no Secret Service (gnome-keyring, KWallet, KeePassXC) runs on the D-Bus session';
  if (/no result found|locked|prompt|dismissed|NoDefault|no default collection/i.test(raw)) return 'the Secret Service has no unlocked keyring';
  return raw.replace(/^(Platform failure|Couldn't access platform storage): */i, '').replace(/DBus error: */gi, '');
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
