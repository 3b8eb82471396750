// A Secret Service of the test's own: a D-Bus session (dbus-run-session)
// with gnome-keyring-daemon unlocked by a test password, HOME and the XDG
// folders in a temporary folder, so the user's own keyring is never touched.
// Needs dbus-run-session (dbus), gnome-keyring-daemon (gnome-keyring) and
// secret-tool (libsecret-tools); .ci/run installs them and sets
// CHATCTL_REQUIRE_KEYRING_TESTS, under which their absence fails instead of
// skipping.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, waitFor } from './run.js';

export const KEYRING_PATH = '/usr/local/bin:/usr/bin:/bin';
const TOOLS = ['dbus-run-session', 'gnome-keyring-daemon', 'secret-tool'];

/** The tools this machine lacks for a real Secret Service ([] when it has them all). */
export const missingKeyringTools = (): string[] => TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`], { env: { PATH: KEYRING_PATH } }).status !== 0);

/** Whether the keyring tests must run here (CI), rather than be skipped with a warning. */
export const keyringTestsRequired = Boolean(process.env.CHATCTL_REQUIRE_KEYRING_TESTS);

/** Says on stderr that `file`'s tests against a real Secret Service are skipped, when they are. */
export function warnIfKeyringSkipped(file: string, missing: string[]): void {
  if (missing.length === 0 || keyringTestsRequired) return;
  process.stderr.write(
    `\n*** ${file}: SKIPPED, the tests against a real Secret Service did not run: ${missing.join(', ')} not found. ` +
      'Install dbus, gnome-keyring and libsecret-tools (as .ci/run does) to run them. ***\n\n',
  );
}

export interface KeyringSession {
  /** The session's variables: what chatctl and secret-tool need to find the keyring. */
  busEnv: Record<string, string>;
  stop(): void;
}

export async function startKeyringSession(): Promise<KeyringSession> {
  const home = tempDir('keyring-home');
  const runtime = join(home, 'run');
  mkdirSync(runtime, { mode: 0o700 });
  const env = {
    PATH: KEYRING_PATH,
    LANG: 'C.UTF-8',
    HOME: home,
    XDG_RUNTIME_DIR: runtime,
    XDG_DATA_HOME: join(home, 'data'),
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
  };
  // The daemon is unlocked with a test password and asked nothing after.
  const script = 'echo -n test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; echo "BUS=$DBUS_SESSION_BUS_ADDRESS"; exec sleep 3600';
  const session = spawn('dbus-run-session', ['--', 'sh', '-c', script], { env, detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const stop = () => {
    // The whole session: dbus-daemon, the shell; gnome-keyring-daemon leaves with its bus.
    try {
      if (session.pid !== undefined) process.kill(-session.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  };
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    session.stdout!.on('data', (c: Buffer) => {
      out += String(c);
      const m = /BUS=(\S+)\n/.exec(out);
      if (m) resolve(m[1]!);
    });
    session.on('exit', (code) => reject(new Error(`dbus-run-session ended (${code}) before giving its bus address`)));
  });
  const busEnv = { DBUS_SESSION_BUS_ADDRESS: address, XDG_RUNTIME_DIR: runtime };
  // Ready when the Secret Service answers (a lookup of nothing: exit 1, not an error).
  await waitFor(
    () => {
      const r = spawnSync('secret-tool', ['lookup', 'service', 'chatctl-readiness', 'username', 'none'], { env: { PATH: KEYRING_PATH, ...busEnv }, encoding: 'utf8' });
      return r.status === 1 && r.stderr === '';
    },
    10_000,
    'the Secret Service to answer',
  );
  return { busEnv, stop };
}

/** What the Secret Service holds for a chatctl profile, as its own tool reads it (undefined: no entry). */
export function keyringLookup(session: KeyringSession, profile: string): { stdout: string; stderr: string; status: number | null } {
  return spawnSync('secret-tool', ['lookup', 'service', 'chatctl', 'username', profile], { env: { PATH: KEYRING_PATH, ...session.busEnv }, encoding: 'utf8' });
}
