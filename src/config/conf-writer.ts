// The write path of config.json, its own bundle: the lock, the caller's checked read under it, and
// conf's write through its public options only (0600, chatctl 0.1's format, never over a bad file).
import { setTimeout as delay } from 'node:timers/promises';
import Conf from 'conf';
import type { Context } from '../context.js';
import { configError } from '../errors/cli-error.js';
import { refuseNonRegular, syncPath, writeFileAtomic } from '../system/files.js';
import { systemLockHost, withLock } from '../system/lock.js';
import { configFile } from './schema.js';

/** conf's temporary files for config.json, which a killed write leaves. */
const isConfTemp = (name: string) => /^config\.json\.tmp-[0-9a-f]{16}$/.test(name);

const serialize = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

/** Replaces config.json in `dir` with `data` (holding the lock). With SNAP set conf would write in place: chatctl's atomic write instead. */
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
    syncPath(dir); // conf fsyncs the file, not the folder that now names it
  } catch (err) {
    throw configError(`cannot write config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export interface LockedUpdateOptions {
  /** Said once when a writer has waited a while for the lock. */
  notice?: (message: string) => void;
  signal?: AbortSignal;
  clock?: Pick<Context, 'now' | 'sleep' | 'random'>;
  snap?: boolean;
}

const realClock: Pick<Context, 'now' | 'sleep' | 'random'> = { now: () => Date.now(), sleep: (ms, signal) => delay(ms, undefined, { signal }), random: Math.random };

/** Holding the lock: `prepare` reads and changes the file (it may throw to write nothing), and its document is written. */
export async function lockedUpdate<T>(dir: string, o: LockedUpdateOptions, prepare: () => { result: T; document: Record<string, unknown> }): Promise<T> {
  const path = configFile(dir);
  const options = {
    host: systemLockHost(o.clock ?? realClock),
    signal: o.signal ?? new AbortController().signal,
    onWait: (holder: string) => o.notice?.(`waiting for ${holder} to finish writing ${path}`),
    leftover: isConfTemp,
  };
  return withLock(`${path}.lock`, options, (lock) => {
    const { result, document } = prepare();
    if (!lock.stillHeld()) throw configError(`lost the lock on ${path} before writing; nothing was written`, 'run the command again');
    writeWithConf(dir, document, o.snap ?? false);
    return result;
  });
}
