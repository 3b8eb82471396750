// The single executable's launcher (docs/distribution.md): bin/chatctl.js's work from the assets,
// each bundle with its V8 code cache, and `__keyring-child`. Free of the program's modules: every command compiles it.
import { createRequire, wrap } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { getAsset } from 'node:sea';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { registerSingleExecutable } from '../system/process.js';
import { loadAddon } from './addon.js';

/** The keyring addon's SHA-256 (hex) among the assets; null when packaging had none for this platform. */
declare const __CHATCTL_KEYRING_SHA256__: string | null;
/** The V8 flag the code caches were made with (scripts/package.mjs, HASH_SEED). */
declare const __CHATCTL_HASH_SEED__: string;
declare const __CHATCTL_TARGET__: string;

const KEYRING_CHILD_ARG = '__keyring-child';

/** Where the bundles "are": under the executable, a file, so nothing on disk can be there; loadBundle maps it to assets. */
const VIRTUAL_DIST = join(process.execPath, 'dist');

// As bin/chatctl.js: on Node below 22, a proxied run compiles undici's
// WebAssembly parser with Liftoff only, set once the proxy bundle has run.
const LIFTOFF = Number(process.versions.node.split('.')[0]) < 22 && ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => process.env[name]);

/** The SEA's own require loads built-in modules only, which is all the bundles require. */
const builtin: NodeJS.Require = typeof require === 'function' ? require : createRequire(process.execPath);

export function start(argv: string[]): void {
  if (argv[0] === KEYRING_CHILD_ARG) return keyringChild();
  registerSingleExecutable({ keyringChildArgs: [KEYRING_CHILD_ARG], target: __CHATCTL_TARGET__ });
  (globalThis as Record<symbol, unknown>)[Symbol.for('chatctl.loadBundle')] = loadBundle;
  const program = loadBundle(join(VIRTUAL_DIST, 'main.cjs'));
  program.run(argv).then((code: number) => {
    process.exitCode = code;
  });
}

/** Compiles under the caches' flag (V8 takes a cache only then) and puts it back: while it is changed V8 refuses Node's own compiled modules. */
function withCacheFlag<T>(compile: () => T): T {
  setFlagsFromString(__CHATCTL_HASH_SEED__);
  try {
    return compile();
  } finally {
    setFlagsFromString('--hash-seed=0');
  }
}

/** Runs a CommonJS bundle from the assets with its code cache (V8 ignores one that does not fit). */
// biome-ignore lint/suspicious/noExplicitAny: a bundle's exports
function loadBundle(file: string): any {
  const name = relative(VIRTUAL_DIST, file).split(sep).join('/');
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset(`${name}.v8`));
  } catch {
    /* no cache for it: compiled as it runs */
  }
  const script = withCacheFlag(() => new Script(wrap(getAsset(name, 'utf8')), { filename: file, cachedData }));
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, builtin, module, file, dirname(file));
  if (LIFTOFF && basename(file) === 'proxy.cjs') setFlagsFromString('--liftoff-only');
  return module.exports;
}

/** One keyring call (keyring-child.cjs, with its argv), its addon loaded from the private folder. */
function keyringChild(): void {
  let addon: unknown;
  try {
    const hash = __CHATCTL_KEYRING_SHA256__;
    if (hash === null) throw new Error(`no prebuilt keyring binary for ${process.platform}-${process.arch} in this executable`);
    // node:crypto only here: it costs every run that loads it a few ms.
    const { createHash } = builtin('node:crypto') as typeof import('node:crypto');
    addon = loadAddon(cacheFolder(process.env), { sha256: hash, bytes: () => Buffer.from(getAsset('keyring.node')) }, { sha256: () => createHash('sha256') });
  } catch (err) {
    const reason = String((err as Error).message ?? err).slice(0, 300);
    process.stdout.write(JSON.stringify({ ok: false, kind: 'unavailable', reason }));
    return;
  }
  process.argv.splice(2, 1); // keyring-child.cjs reads its operation from argv[2]
  const file = join(VIRTUAL_DIST, 'keyring-child.cjs');
  const script = new Script(wrap(getAsset('keyring-child.cjs', 'utf8')), { filename: file });
  const requireWithAddon = (id: string) => (id === '@napi-rs/keyring' ? addon : builtin(id));
  script.runInThisContext().call({}, {}, requireWithAddon, { exports: {} }, file, VIRTUAL_DIST);
}

/** The cache folder bin/chatctl.js keeps its code caches in. */
function cacheFolder(env: NodeJS.ProcessEnv): string {
  if (env.CHATCTL_CACHE_DIR) return env.CHATCTL_CACHE_DIR;
  const home = homedir();
  if (process.platform === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), 'chatctl', 'Cache');
  if (process.platform === 'darwin') return join(home, 'Library', 'Caches', 'chatctl');
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'chatctl');
}
