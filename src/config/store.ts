// config.json and its folder, read and checked as docs/configuration.md
// (Files) says, never through a link nor opening a FIFO; written under the lock
// by conf-writer.ts. A bad file is an error naming it, never overwritten.
import type { Context } from '../context.js';
import { shellWord } from '../output/json.js';
import { kindOf, makeFolders, readToEnd } from '../system/files.js';
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, statSync, type Stats } from 'node:fs';
import { configError } from '../errors/cli-error.js';
import { canonicalConfig, configFile, parseConfigData, type ConfigData } from './schema.js';
import type { LockedUpdateOptions } from './conf-writer.js';

/** The effective uid, or undefined where files have no owner to check (Windows). */
export function currentUid(): number | undefined {
  return typeof process.geteuid === 'function' ? process.geteuid() : undefined;
}

type Warn = (message: string) => void;

const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
const NO_OVERWRITE = 'fix or remove the file by hand; chatctl will not overwrite it';

function errnoCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

function writableBy(mode: number): string {
  const g = (mode & 0o020) !== 0;
  const o = (mode & 0o002) !== 0;
  return g && o ? 'group and others' : g ? 'its group' : 'others';
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(3, '0');

/** Read permission for group or others: tightened with a warning (commands), or only reported (doctor changes no file). */
type Loose = 'tighten' | 'report';

/** Refuses a path another user owns or that group or others can write; loosens nothing, tightens read permission. */
function checkOwnerAndMode(path: string, st: Stats, what: 'folder' | 'file', mode: number, warn: Warn, uid: number | undefined, loose: Loose): void {
  if (uid === undefined) return;
  if (st.uid !== uid) {
    throw configError(
      `config ${what} ${path} belongs to another user (uid ${st.uid}), not to you (uid ${uid}); chatctl will not use it`,
      `make it yours (chown ${uid} ${shellWord(path)}), or point CHATCTL_CONFIG_DIR at a folder of your own`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    throw configError(
      `config ${what} ${path} can be written by ${writableBy(st.mode)} (mode ${octal(st.mode)}); chatctl will not use it`,
      `check its contents, then: chmod ${mode.toString(8)} ${shellWord(path)}`,
    );
  }
  if ((st.mode & 0o777 & ~mode) === 0) return;
  if (loose === 'report') {
    warn(`permissions of ${path} are ${octal(st.mode)}, readable by group or others; chatctl tightens them to ${mode.toString(8)} on its next read`);
    return;
  }
  try {
    chmodSync(path, mode);
    warn(`permissions of ${path} were ${octal(st.mode)}; tightened to ${mode.toString(8)}`);
  } catch {
    warn(`${path} has permissions ${octal(st.mode)}, looser than ${mode.toString(8)}, and could not be tightened`);
  }
}

/** Checks the config folder; false when it does not exist. A link to a folder is followed (dotfile managers make them). */
export function checkConfigFolder(dir: string, warn: Warn, uid: number | undefined, loose: Loose = 'tighten'): boolean {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw configError(`cannot read config folder ${dir}: ${errnoCode(err)}`);
  }
  if (!st.isDirectory()) {
    throw configError(`config folder ${dir} is ${kindOf(st)}, not a folder`, 'remove it, or point CHATCTL_CONFIG_DIR at a folder of your own');
  }
  checkOwnerAndMode(dir, st, 'folder', 0o700, warn, uid, loose);
  return true;
}

/** Writers rename a whole file into place (readers take no lock): a read starts over when it was replaced under it. */
const READ_ATTEMPTS = 5;
const REPLACED = Symbol('replaced');

/** The bytes of config.json, checked as docs/configuration.md says; undefined when there is none. */
export function readConfigBytes(path: string, warn: Warn, uid: number | undefined, loose: Loose = 'tighten'): Buffer | undefined {
  for (let attempt = 1; ; attempt++) {
    const bytes = readConfigOnce(path, warn, uid, loose);
    if (bytes !== REPLACED) return bytes;
    if (attempt >= READ_ATTEMPTS) throw configError(`config file ${path} changed while it was being read`, 'run the command again');
  }
}

function readConfigOnce(path: string, warn: Warn, uid: number | undefined, loose: Loose): Buffer | undefined | typeof REPLACED {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw configError(`cannot read config file ${path}: ${errnoCode(err)}`);
  }
  if (st.isSymbolicLink()) {
    throw configError(
      `config file ${path} is a symbolic link; chatctl does not follow links for its config file`,
      'replace the link with a copy of the file it points to, or point CHATCTL_CONFIG_DIR at the folder that holds that file',
    );
  }
  if (!st.isFile()) {
    throw configError(`config file ${path} is ${kindOf(st)}, not a regular file`, `remove it (rm ${shellWord(path)}); chatctl creates a new one on the next "chatctl profile set"`);
  }
  checkOwnerAndMode(path, st, 'file', 0o600, warn, uid, loose);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return REPLACED; // removed since lstat: look again
    throw configError(`cannot read config file ${path}: ${errnoCode(err)}`);
  }
  try {
    const now = fstatSync(fd);
    if (now.ino !== st.ino || now.dev !== st.dev) return REPLACED; // another writer's rename came between
    if (!now.isFile()) throw configError(`config file ${path} changed while it was being read`, 'run the command again');
    if (now.size > MAX_CONFIG_BYTES) throw configError(`config file ${path} is too large (${now.size} bytes)`, NO_OVERWRITE);
    return readToEnd(fd, now.size);
  } catch (err) {
    if ((err as Error).name === 'CliError') throw err;
    throw configError(`cannot read config file ${path}: ${errnoCode(err)}`);
  } finally {
    closeSync(fd);
  }
}

/** Decodes and checks config.json's bytes: strict UTF-8 (no BOM), JSON, the expected shape. */
export function parseConfigBytes(path: string, bytes: Buffer): ConfigData {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw configError(`config file ${path} is not valid UTF-8`, NO_OVERWRITE);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw configError(`config file ${path} is not valid JSON`, NO_OVERWRITE);
  }
  const parsed = parseConfigData(json);
  if ('where' in parsed) throw configError(`config file ${path} has an unexpected shape at ${parsed.where}`, NO_OVERWRITE);
  return parsed.data;
}

export function readConfigChecked(dir: string, path: string, warn: Warn, uid = currentUid()): ConfigData {
  if (!checkConfigFolder(dir, warn, uid)) return {};
  const bytes = readConfigBytes(path, warn, uid);
  return bytes === undefined ? {} : parseConfigBytes(path, bytes);
}

export interface ConfigStore {
  readonly path: string;
  read(): ConfigData;
  /** Read-modify-write under the lock; `change` may throw to write nothing. */
  update(change: (data: ConfigData) => ConfigData | undefined): Promise<ConfigData>;
}

type StoreOptions = LockedUpdateOptions & { warn?: Warn; uid?: number | undefined };

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
      try {
        makeFolders(dir, 0o700); // 0700 whatever the umask
      } catch (err) {
        const at = (err as NodeJS.ErrnoException).path;
        const where = typeof at === 'string' && at !== dir ? ` (making ${at})` : '';
        throw configError(`cannot create config folder ${dir}: ${errnoCode(err)}${where}`, 'point CHATCTL_CONFIG_DIR at a folder of your own on an ordinary file system');
      }
      readConfigChecked(dir, path, warn, uid); // a bad folder or file is refused before the write path loads
      const { lockedUpdate } = await import('./conf-writer.js');
      return lockedUpdate(dir, opts, () => {
        const data = readConfigChecked(dir, path, warn, uid);
        const next = change(data) ?? data;
        return { result: next, document: canonicalConfig(next) };
      });
    },
  };
}
