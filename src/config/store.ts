// config.json: profiles, the current profile and stored tokens.
// - Reads are a direct read, checked (config/files.ts: owner, modes, regular
//   file, UTF-8, JSON, the shape): no command on the request path loads
//   conf or the lock.
// - Writes (profile set/use/remove, auth login/logout) load the write path
//   (config/conf-writer.ts) when they run: the lock (fs/lock.ts), a
//   checked read under it, the change, and conf writing the result (0600,
//   temporary file and rename; a link or other non-regular file in its place
//   refused).
// - A corrupt or unreadable file is a configuration error naming the file,
//   and is never overwritten.
import type { Context } from '../context.js';
import { ensureConfigFolder, readConfigChecked, currentUid, type Warn } from './files.js';
import { configFile } from './paths.js';
import { canonicalConfig, type ConfigData } from './schema.js';
import type { LockedUpdateOptions } from './conf-writer.js';

export interface ConfigStore {
  readonly path: string;
  read(): ConfigData;
  /** Read-modify-write under the lock; `change` may throw to write nothing. */
  update(change: (data: ConfigData) => ConfigData | undefined): Promise<ConfigData>;
}

export interface StoreOptions extends LockedUpdateOptions {
  warn?: Warn;
  uid?: number | undefined;
}

/** The store a command uses: its warnings are notices (muted with --json). */
export function configStoreFor(ctx: Pick<Context, 'configDir' | 'env' | 'io' | 'signal' | 'now' | 'sleep' | 'random'>): ConfigStore {
  return openConfigStore(ctx.configDir, {
    warn: (m) => ctx.io.notice(`warning: ${m}`),
    notice: (m) => ctx.io.notice(m),
    signal: ctx.signal,
    clock: ctx,
    snap: Boolean(ctx.env.SNAP),
  });
}

export function openConfigStore(dir: string, opts: StoreOptions = {}): ConfigStore {
  const path = configFile(dir);
  const warn = opts.warn ?? (() => {});
  const uid = 'uid' in opts ? opts.uid : currentUid();
  return {
    path,
    read: () => readConfigChecked(dir, path, warn, uid),
    async update(change) {
      ensureConfigFolder(dir, warn, uid);
      readConfigChecked(dir, path, warn, uid); // a bad file is refused before the write path loads
      const { lockedUpdate } = await import('./conf-writer.js');
      return lockedUpdate(dir, opts, () => {
        const data = readConfigChecked(dir, path, warn, uid);
        const next = change(data) ?? data;
        return { result: next, document: canonicalConfig(next) };
      });
    },
  };
}
