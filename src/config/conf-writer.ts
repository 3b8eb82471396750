// The write path of config.json, for the commands that change it (profile
// set/use/remove, auth login/logout): the lock (fs/lock.ts), a checked read
// under it, the change, and conf to write the result. A bundle of its own
// (dist/lazy/conf.cjs): commands that only read never load it.
//
// conf (v15) is used through its public options and `store` alone:
// - `cwd` is the config folder, the file `config.json` (`configName`,
//   `fileExtension`): no env-paths folder, no `-nodejs` suffix;
// - `configFileMode` 0600: its temporary file and the file are 0600 whatever
//   the umask; `serialize` gives chatctl 0.1's format (two-space JSON and a
//   final newline), and the store hands in the canonical object;
// - no schema, defaults, migrations or watching; `clearInvalidConfig: false`:
//   conf never replaces a file it cannot parse (ours is checked already).
// chatctl's rules around it (CONTRIBUTING, Dependencies): the lock over the
// read, change and write; the folder made 0700 and checked, so only its
// owner can put a name in it; the file read by chatctl's checked reader,
// never conf's; and, under the lock, right before conf writes, config.json
// must be a regular file or absent (refuseNonRegular: conf's write would
// resolve a link and write its target). One case conf's options cannot
// cover: with SNAP set (Node.js from the Snap Store) conf writes the file
// in place, so a crash or a reader (readers take no lock) could meet half a
// file; there chatctl's own atomic write writes the same bytes.
import { setTimeout as delay } from 'node:timers/promises';
import Conf from 'conf';
import type { Context } from '../context.js';
import { configError } from '../errors/cli-error.js';
import { refuseNonRegular, syncPath, writeFileAtomic } from '../fs/files.js';
import { systemLockHost, withLock, type LockHost } from '../fs/lock.js';
import { configFile } from './paths.js';

/** conf's temporary files for config.json (its atomically's `NAME.tmp-` and 16 characters), which a killed write leaves. */
export const isConfTemp = (name: string) => /^config\.json\.tmp-[0-9a-f]{16}$/.test(name);

/** config.json as chatctl writes it: two-space JSON and a final newline. */
export const serialize = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

/**
 * Replaces config.json in `dir` with `data` (call it holding the lock); a
 * configuration error names the file. `snap`: the run has SNAP set, with
 * which conf would write in place.
 */
export function writeWithConf(dir: string, data: Record<string, unknown>, snap: boolean): void {
  const path = configFile(dir);
  try {
    refuseNonRegular(path);
    if (snap) {
      writeFileAtomic(path, serialize(data));
      return;
    }
    const conf = new Conf<Record<string, unknown>>({ cwd: dir, configName: 'config', fileExtension: 'json', configFileMode: 0o600, clearInvalidConfig: false, serialize });
    conf.store = data;
    // conf fsyncs the file, not the folder that now names it.
    syncPath(dir);
  } catch (err) {
    throw configError(`cannot write config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** How a write waits for the lock and what it says meanwhile (the store's options). */
export interface LockedUpdateOptions {
  /** Said once when a writer has waited a while for the lock. */
  notice?: (message: string) => void;
  signal?: AbortSignal;
  /** For the real lock host's waits. */
  clock?: Pick<Context, 'now' | 'sleep' | 'random'>;
  lockHost?: LockHost;
  lockWaitMs?: number;
  /** SNAP is set in the run's environment (Node.js from the Snap Store): chatctl's atomic write, not conf's in-place one. */
  snap?: boolean;
}

const realClock: Pick<Context, 'now' | 'sleep' | 'random'> = { now: () => Date.now(), sleep: (ms, signal) => delay(ms, undefined, { signal }), random: Math.random };

/**
 * Holding the lock: `prepare` reads the file and applies the change (it may
 * throw to write nothing), and its document is written. The caller brings
 * the checked read, so this bundle carries neither zod nor the checks.
 */
export async function lockedUpdate<T>(dir: string, o: LockedUpdateOptions, prepare: () => { result: T; document: Record<string, unknown> }): Promise<T> {
  const path = configFile(dir);
  return withLock(
    `${path}.lock`,
    {
      host: o.lockHost ?? systemLockHost(o.clock ?? realClock),
      signal: o.signal ?? new AbortController().signal,
      waitMs: o.lockWaitMs,
      onWait: (holder) => o.notice?.(`waiting for ${holder} to finish writing ${path}`),
      leftover: isConfTemp,
    },
    (lock) => {
      const { result, document } = prepare();
      if (!lock.stillHeld()) throw configError(`lost the lock on ${path} before writing; nothing was written`, 'run the command again');
      writeWithConf(dir, document, o.snap ?? false);
      return result;
    },
  );
}
