// The single executable's launcher: the main script that `npm run package`
// (scripts/package.mjs) puts into a copy of Node with Node's single
// executable applications (docs/distribution.md). It does for the
// executable what bin/chatctl.js does for the npm package, from the
// executable's assets instead of dist/:
// - `--version` and `CMD… --help` from fast.json, written with fs.writeSync;
// - completion (`__complete`) from complete.cjs and tree.json;
// - the program, main.cjs, and its lazily loaded parts (lazy/*.cjs), each
//   compiled with the V8 code cache that the packaging made for it with this
//   very Node (its `.v8` asset), so a run skips most parsing and compiling;
// - `__keyring-child`: the keyring's child program (keyring-child.cjs, which
//   src/credentials/keyring.ts starts with process.execPath, here this
//   executable), with the keyring's native addon unpacked from the assets
//   into a private folder and checked by its SHA-256 before it is loaded.
// Kept small and free of the program's modules: every run, `--version`
// included, compiles it (from the code cache Node made at packaging).
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, readSync, renameSync, rmSync, statSync, writeSync, type Stats } from 'node:fs';
import { createRequire, wrap } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { getAsset } from 'node:sea';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { registerSingleExecutable } from '../system/packaging.js';
import { makeFolders } from '../config/make-folders.js';

/** The SHA-256 (hex) of the keyring's addon among the assets, or null when the packaging had none for this platform. */
declare const __CHATCTL_KEYRING_SHA256__: string | null;

/** The argument that makes the executable the keyring's child (never a command name). */
export const KEYRING_CHILD_ARG = '__keyring-child';

/**
 * Where the bundles "are": a path under the executable, which is a file, so
 * nothing on disk can be there. The lazy stubs in main.cjs name their
 * bundle by a path under it (scripts/build.mjs), which loadBundle maps back
 * to an asset.
 */
const VIRTUAL_DIST = join(process.execPath, 'dist');

// As bin/chatctl.js: on Node below 22, a proxied run compiles undici's
// WebAssembly parser with Liftoff only, set once the proxy bundle has run.
const LIFTOFF = Number(process.versions.node.split('.')[0]) < 22 && ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => process.env[name]);

/** The SEA's own require loads built-in modules only, which is all the bundles require. */
const builtin: NodeJS.Require = typeof require === 'function' ? require : createRequire(process.execPath);

main(process.argv.slice(2));

function main(argv: string[]): void {
  if (argv[0] === KEYRING_CHILD_ARG) return keyringChild();
  if (argv[0] === '__complete') {
    const { runComplete } = loadBundle(join(VIRTUAL_DIST, 'complete.cjs'));
    return runComplete(argv.slice(1), JSON.parse(getAsset('tree.json', 'utf8')), process.env, writeOut);
  }
  const text = fastAnswer(argv);
  if (text !== undefined) return writeOut(text);
  registerSingleExecutable({ keyringChildArgs: [KEYRING_CHILD_ARG] });
  (globalThis as Record<symbol, unknown>)[Symbol.for('chatctl.loadBundle')] = loadBundle;
  const program = loadBundle(join(VIRTUAL_DIST, 'main.cjs'));
  program.run(argv).then((code: number) => {
    process.exitCode = code;
  });
}

/** Writes a short answer straight to fd 1; a closed pipe ends quietly. */
function writeOut(text: string): void {
  const buf = Buffer.from(text);
  let done = 0;
  try {
    while (done < buf.length) done += writeSync(1, buf, done);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EAGAIN') process.stdout.write(buf.subarray(done));
    else if ((err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
  }
}

interface FastAnswers {
  version: string;
  aliases: Record<string, string>;
  help: Record<string, string>;
}

/** The pre-rendered answer for `--version`, `CMD… --help` and `help CMD…`, as bin/chatctl.js gives it. */
function fastAnswer(args: string[]): string | undefined {
  const isHelp = (a: string | undefined) => a === '--help' || a === '-h';
  const version = args.length === 1 && (args[0] === '--version' || args[0] === '-V');
  if (!version && !isHelp(args.at(-1)) && args[0] !== 'help') return undefined;
  const fast = JSON.parse(getAsset('fast.json', 'utf8')) as FastAnswers;
  if (version) return fast.version + '\n';
  let words = isHelp(args.at(-1)) ? args.slice(0, -1) : args.slice(1);
  const alias = words[0] === undefined ? undefined : fast.aliases[words[0]];
  if (alias) words = [alias, ...words.slice(1)];
  return fast.help[words.join(' ')];
}

/** Runs a CommonJS bundle from the assets, with the code cache made for it at packaging (V8 ignores one that does not fit). */
// biome-ignore lint/suspicious/noExplicitAny: a bundle's exports
function loadBundle(file: string): any {
  const name = relative(VIRTUAL_DIST, file).split(sep).join('/');
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset(`${name}.v8`));
  } catch {
    /* no cache for it: compiled as it runs */
  }
  const script = new Script(wrap(getAsset(name, 'utf8')), { filename: file, cachedData });
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, builtin, module, file, dirname(file));
  if (LIFTOFF && basename(file) === 'proxy.cjs') setFlagsFromString('--liftoff-only');
  return module.exports;
}

/** One keyring call (keyring-child.cjs, with its argv), its addon loaded from the private folder. */
function keyringChild(): void {
  let addon: unknown;
  try {
    addon = loadKeyringAddon();
  } catch (err) {
    const reason = String((err as Error).message ?? err).slice(0, 300);
    process.stdout.write(JSON.stringify({ ok: false, kind: 'unavailable', reason }));
    return;
  }
  process.argv.splice(2, 1); // keyring-child.cjs reads `get|set|delete SERVICE ACCOUNT` from argv[2]
  const file = join(VIRTUAL_DIST, 'keyring-child.cjs');
  const script = new Script(wrap(getAsset('keyring-child.cjs', 'utf8')), { filename: file });
  const requireWithAddon = (id: string) => (id === '@napi-rs/keyring' ? addon : builtin(id));
  script.runInThisContext().call({}, {}, requireWithAddon, { exports: {} }, file, VIRTUAL_DIST);
}

/** The cache folder bin/chatctl.js keeps its code caches in (docs/configuration.md). */
function cacheFolder(env: NodeJS.ProcessEnv): string {
  if (env.CHATCTL_CACHE_DIR) return env.CHATCTL_CACHE_DIR;
  const home = homedir();
  if (process.platform === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), 'chatctl', 'Cache');
  if (process.platform === 'darwin') return join(home, 'Library', 'Caches', 'chatctl');
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'chatctl');
}

/**
 * The keyring's addon, loaded with process.dlopen from
 * `<cache folder>/native/keyring-<hash>.node`. The cache folder and native/
 * must be folders of this user's that group and others cannot write (native/
 * not a link, and made 0700); the file, opened without following a link,
 * must be a regular file of this user's that group and others cannot write,
 * whose SHA-256 is the asset's. A file that is not is replaced from the
 * asset (a new file, renamed into place) and checked again before loading.
 */
function loadKeyringAddon(): unknown {
  const hash = __CHATCTL_KEYRING_SHA256__;
  if (hash === null) throw new Error(`no prebuilt keyring binary for ${process.platform}-${process.arch} in this executable`);
  const cache = cacheFolder(process.env);
  const dir = join(cache, 'native');
  makeFolders(cache, 0o700);
  checkPrivate(cache, statSync(cache), 'the cache folder');
  makeFolders(dir, 0o700);
  checkPrivate(dir, lstatSync(dir), 'its native/ folder');
  const file = join(dir, `keyring-${hash.slice(0, 16)}.node`);
  if (!holds(file, hash)) {
    const temp = join(dir, `.keyring-${process.pid}-${Date.now()}.tmp`);
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o700);
    try {
      const bytes = Buffer.from(getAsset('keyring.node'));
      for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    if (!holds(file, hash)) {
      rmSync(file, { force: true });
      throw new Error(`the keyring addon written to ${file} does not match the one in this executable`);
    }
  }
  const module = { exports: {} };
  process.dlopen(module, file);
  return module.exports;
}

/** A folder this user owns and that group and others cannot write (and, for native/, no link); read access for others is taken away. */
function checkPrivate(dir: string, st: Stats, what: string): void {
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : undefined;
  if (st.isSymbolicLink() || !st.isDirectory()) throw new Error(`${what} ${dir} is not a folder; the keyring addon is not unpacked there`);
  if (uid === undefined) return; // Windows: no owner or mode bits to check (docs/distribution.md)
  if (st.uid !== uid) throw new Error(`${what} ${dir} belongs to another user (uid ${st.uid}); the keyring addon is not unpacked there`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${what} ${dir} can be written by group or others; the keyring addon is not unpacked there`);
  if (what !== 'the cache folder' && (st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Whether `file` is a regular file of this user's, not writable by others, whose SHA-256 is `hash` (read without following a link). */
function holds(file: string, hash: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd);
    const uid = typeof process.geteuid === 'function' ? process.geteuid() : undefined;
    if (!st.isFile() || (uid !== undefined && (st.uid !== uid || (st.mode & 0o022) !== 0))) return false;
    // node:crypto only here: loading it costs every run that does not need it a few ms.
    const digest = (builtin('node:crypto') as typeof import('node:crypto')).createHash('sha256');
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let n: number; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) digest.update(chunk.subarray(0, n));
    return digest.digest('hex') === hash;
  } finally {
    closeSync(fd);
  }
}
