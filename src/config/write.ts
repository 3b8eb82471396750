// The write path of config.json, for the commands that change it (profile
// set/use/remove, auth login/logout): the lock (fs/lock.ts), a checked read
// under it, the change, and the one atomic write (fs/atomic.ts: 0600, an
// exclusive temporary file, fsync, rename over a regular file only, folder
// fsync). A bundle of its own (dist/lazy/config-write.cjs): commands that
// only read never load the lock.
//
// conf is not used (CONTRIBUTING, Dependencies): its write (atomically)
// follows a symbolic link put where config.json was, opens its temporary
// file without O_EXCL, and writes the file in place when the process has
// SNAP set; and what it adds on top (defaults, schemas, migrations,
// watching, dot paths, its default folder) chatctl has no use for.
import type { Context } from '../context.js';
import { configError } from '../errors/cli-error.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { systemLockHost, withLock, type LockHost } from '../fs/lock.js';
import { configFile } from './paths.js';

/** config.json as chatctl writes it: two-space JSON and a final newline. */
export const serialize = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

/** Replaces config.json in `dir` with `data`, whole or not at all (a configuration error names the file). */
export function writeConfig(dir: string, data: Record<string, unknown>): void {
  const path = configFile(dir);
  try {
    writeFileAtomic(path, serialize(data));
  } catch (err) {
    throw configError(`cannot write config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export interface LockedUpdateOptions {
  dir: string;
  signal: AbortSignal;
  /** For the real lock host's waits. */
  clock: Pick<Context, 'now' | 'sleep' | 'random'>;
  lockHost?: LockHost | undefined;
  lockWaitMs?: number | undefined;
  notice?: ((message: string) => void) | undefined;
}

/**
 * Holding the lock: `prepare` reads the file and applies the change (it may
 * throw to write nothing), and its document is written. The caller brings
 * the checked read, so this bundle carries neither it nor the checks.
 */
export async function lockedUpdate<T>(o: LockedUpdateOptions, prepare: () => { result: T; document: Record<string, unknown> }): Promise<T> {
  const path = configFile(o.dir);
  return withLock(
    `${path}.lock`,
    {
      host: o.lockHost ?? systemLockHost(o.clock),
      signal: o.signal,
      waitMs: o.lockWaitMs,
      onWait: (holder) => o.notice?.(`waiting for ${holder} to finish writing ${path}`),
    },
    (lock) => {
      const { result, document } = prepare();
      if (!lock.stillHeld()) throw configError(`lost the lock on ${path} before writing; nothing was written`, 'run the command again');
      writeConfig(o.dir, document);
      return result;
    },
  );
}
