// The write path of config.json, for the commands that change it (profile
// set/use/remove, auth login/logout): the lock (fs/lock.ts), a checked read
// under it, the change, and conf to write the result. A bundle of its own
// (dist/lazy/conf.cjs): commands that only read never load it.
//
// conf is used as published, through its options (conf 15):
// - `cwd` is the config folder and the file is `config.json`: no
//   env-paths, no `-nodejs` suffix;
// - `serialize` gives chatctl 0.1's format (two-space JSON and a final
//   newline); the store hands in the canonical object, so nothing moves;
// - `accessPropertiesByDotNotation: false`, no schema, no defaults, no
//   migrations, no watch, `clearInvalidConfig: false` (the file has been
//   checked already; conf must never replace a file it cannot parse);
// - one adapter: the file itself is written by chatctl's one atomic write
//   (fs/atomic.ts: 0600, exclusive temporary file, fsync, rename, folder
//   fsync), not by conf's: its write (`_write`) is replaced on the instance.
//   Its own (atomically) writes through a symbolic link put where
//   config.json was, opens its temporary file without O_EXCL, and writes
//   the file in place when the process has SNAP set (as Node.js from the
//   Snap Store has for every program); test/config/store.test.ts shows
//   the link refused and SNAP without effect. atomically is bundled, unused.
import Conf from 'conf';
import type { Context } from '../context.js';
import { configError } from '../errors/cli-error.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { systemLockHost, withLock, type LockHost } from '../fs/lock.js';
import { configFile } from './paths.js';

export type ConfigWriter = (dir: string, data: Record<string, unknown>) => void;

export const serialize = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

export const writeWithConf: ConfigWriter = (dir, data) => {
  try {
    const conf = new Conf<Record<string, unknown>>({
      cwd: dir,
      configName: 'config',
      fileExtension: 'json',
      projectSuffix: '',
      accessPropertiesByDotNotation: false,
      clearInvalidConfig: false,
      watch: false,
      serialize,
      deserialize: (text: string) => JSON.parse(text) as Record<string, unknown>,
    });
    if (typeof (conf as unknown as Record<string, unknown>)._write !== 'function') throw new Error('conf no longer writes through _write: review src/config/conf-writer.ts');
    Object.assign(conf, { _write: (value: unknown) => writeFileAtomic(conf.path, serialize(value)) });
    conf.store = data;
  } catch (err) {
    throw configError(`cannot write config file ${configFile(dir)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
};

export interface LockedUpdateOptions {
  dir: string;
  signal: AbortSignal;
  /** For the real lock host's waits. */
  clock: Pick<Context, 'now' | 'sleep' | 'random'>;
  lockHost?: LockHost | undefined;
  lockWaitMs?: number | undefined;
  notice?: ((message: string) => void) | undefined;
  write?: ConfigWriter | undefined;
}

/**
 * Holding the lock: `prepare` reads the file and applies the change (it may
 * throw to write nothing), and its document is written. The caller brings
 * the checked read, so this bundle carries neither zod nor the checks.
 */
export async function lockedUpdate<T>(o: LockedUpdateOptions, prepare: () => { result: T; document: Record<string, unknown> }): Promise<T> {
  const path = configFile(o.dir);
  const write = o.write ?? writeWithConf;
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
      write(o.dir, document);
      return result;
    },
  );
}
