// `npm run package`: chatctl as one executable, dist/bin/chatctl-<target>,
// made with Node's single executable applications (docs/distribution.md).
// The target is the machine this runs on (made from the Node that runs this
// script), or with `--target linux-x64|linux-arm64` another Linux one: made
// from the npm registry's `node-linux-<arch>` package of this very Node
// version and the keyring addon package for that target, both fetched with
// `npm pack` at packaging time (never at npm install) into
// node_modules/.cache/chatctl/targets/ and kept there.
//
// The executable is a copy of that Node with a blob in it: a small main
// script (src/sea/main.ts: --version, help and completion, else the
// launcher) and as assets the launcher (src/sea/launcher.ts) and the very files of the npm build in
// dist/ (main.cjs, lazy/*.cjs, complete.cjs, fast.json, tree.json,
// keyring-child.cjs), a V8 code cache for each bundle made by this Node
// (only for this machine's target: V8 takes a cache made on another
// architecture as its own and crashes on it), and the keyring's native
// addon for the target (from the @napi-rs/keyring-<target> package), which
// the launcher unpacks into a private folder when the keyring is used.
//
// On Node with `--build-sea` (25.5 and later) Node writes the executable
// itself; before, `--experimental-sea-config` writes the blob and postject
// puts it into the copy. A build whose inputs (dist/, this script, the
// addon, the Node binary) are those of the executable already there is
// skipped (its stamp, beside it); `--out FILE` writes elsewhere, and
// `--cached` to node_modules/.cache/chatctl/sea/<Node version>/, printing
// the path: the test and the benchmark share that copy.
//
//   node scripts/package.mjs [--target T] [--out FILE | --cached] [--force] [--no-strip]
//                            [--registry-node] [--no-code-cache]
//
// --registry-node takes the npm registry's Node for this machine's target
// too (as `npm run release` does: the same Node whatever is installed
// here); --no-code-cache leaves the V8 code caches out. Beside the
// executable, `<out>.contents.json` says what it holds (the Node package
// and the addon package, with their licence files), for the release.
//   node scripts/package.mjs --code-caches DIR   (internal: run by the packaging in a clean Node)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
/** The files of the npm build that the executable carries, as asset names (paths under dist/). */
// Every lazy bundle the build wrote: a new one (a command's own bundle) is carried without an edit here.
const bundles = () => [
  'main.cjs',
  'complete.cjs',
  ...readdirSync(join(dist, 'lazy'))
    .filter((n) => n.endsWith('.cjs'))
    .sort()
    .map((n) => `lazy/${n}`),
];
const DATA = ['fast.json', 'tree.json', 'keyring-child.cjs'];
/**
 * V8's string hash seed while the code caches are made, and in the
 * executable before it uses them. A cache holds the hashes of
 * its strings, and Node picks a random seed per process: two builds would
 * write different caches. V8 rehashes on loading whatever the seed, but
 * accepts a cache only from a process whose flags hash the same as its
 * own, so the executable sets the same flag while it compiles a script with
 * its cache, and puts it back before the script runs (src/sea/launcher.ts,
 * withCacheFlag: while a flag is changed V8 also refuses the compiled code
 * the Node binary carries for its own modules). The seed of the running
 * process is fixed at its start and stays random; only the flags' hash
 * changes. Node's own code
 * cache of the main script (useCodeCache) is not used: V8 makes it with a
 * random seed, and checks it before any script could set a flag; the main
 * script is small, and the launcher has a cache of ours.
 * docs/distribution.md, "What is reproducible, and why".
 */
const HASH_SEED = '--hash-seed=20240601';

/** postject's name for Node's fuse (the same on every Node with single executable applications). */
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** This machine's target; the others that can be built here (Linux only: postject edits any ELF). */
const HOST = `${process.platform}-${process.arch}`;
const CROSS = ['linux-x64', 'linux-arm64'];

async function packageExecutable(argv) {
  const target = option(argv, '--target') ?? HOST;
  if (target !== HOST && !(process.platform === 'linux' && CROSS.includes(target)))
    throw new Error(`--target ${target}: this machine (${HOST}) builds ${[...new Set([HOST, ...(process.platform === 'linux' ? CROSS : [])])].join(', ')}`);
  const name = `chatctl-${target}${target.startsWith('win32') ? '.exe' : ''}`;
  const cached = argv.includes('--cached') ? join(root, 'node_modules', '.cache', 'chatctl', 'sea', process.version, name) : undefined;
  const out = resolve(option(argv, '--out') ?? cached ?? join(dist, 'bin', name));
  await build(argv, out, target);
  // --cached: the path on stdout, for the test and the benchmark that share this copy.
  if (cached) process.stdout.write(`${out}\n`);
}

async function build(argv, out, target) {
  const { distIsCurrent, inputsStamp } = await import('./build-stamp.mjs');
  if (!distIsCurrent()) await import('./build.mjs');
  const native = target === HOST;
  const node = native && !argv.includes('--registry-node') ? { file: process.execPath } : fetchNode(target);
  const addon = native ? keyringAddon() : fetchAddon(target);
  const caches = native && !argv.includes('--no-code-cache');
  const stamp = inputsHash(inputsStamp(), `${target}${caches ? '' : ' without code caches'}`, node.file, addon);
  if (!argv.includes('--force') && existsSync(out) && readText(`${out}.stamp`) === stamp) {
    say(`${out} is current (${megabytes(out)}); --force builds it again`);
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'chatctl-package-'));
  try {
    const { launcher, main } = await bundleLauncher(work, addon, target);
    const assets = Object.fromEntries([...bundles(), ...DATA].map((name) => [name, join(dist, name)]));
    assets['launcher.cjs'] = launcher;
    if (caches) {
      makeCodeCaches(work, launcher);
      for (const name of ['launcher.cjs', ...bundles()]) assets[`${name}.v8`] = join(work, 'cache', `${name}.v8`);
    }
    if (addon) assets['keyring.node'] = addon.file;
    const made = join(work, 'chatctl');
    inject(work, { main, assets, node: node.file }, made, !argv.includes('--no-strip') && native);
    mkdirSync(dirname(out), { recursive: true });
    rmSync(`${out}.stamp`, { force: true });
    renameOrCopy(made, out);
    writeFileSync(`${out}.contents.json`, `${JSON.stringify({ target, node: { version: process.version.slice(1), ...node }, addon: addon ?? null, codeCaches: caches }, null, 2)}\n`);
    writeFileSync(`${out}.stamp`, stamp);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  say(`${out}: ${megabytes(out)} (Node ${process.version} for ${target}${native ? '' : ' from the npm registry'}; keyring addon: ${addon ? addon.name : 'none for this platform'})`);
}

function option(argv, name) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

const say = (line) => process.stderr.write(`package: ${line}\n`);
const megabytes = (file) => `${(statSync(file).size / 1e6).toFixed(1)} MB`;
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The keyring's addon for this platform, from the package npm installed
 * beside @napi-rs/keyring (its name as @napi-rs/keyring's index.js picks it),
 * or undefined when there is none: the executable then reports the keyring
 * as absent, as the npm package does.
 */
function keyringAddon() {
  const abi = process.platform === 'linux' ? (process.report?.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl') : process.platform === 'win32' ? '-msvc' : '';
  const name = `@napi-rs/keyring-${HOST}${abi}`;
  try {
    return addonIn(dirname(keyringRequire().resolve(`${name}/package.json`)));
  } catch {
    say(`no ${name} installed: the executable will have no keyring`);
    return undefined;
  }
}

const keyringRequire = () => createRequire(join(root, 'node_modules', '@napi-rs', 'keyring', 'index.js'));

/** Where fetched packages are kept: one folder per package and version, written once. */
const targetsCache = join(root, 'node_modules', '.cache', 'chatctl', 'targets');

/**
 * A package from the npm registry, unpacked into targetsCache (`npm pack`,
 * which checks the tarball against the registry's integrity, then tar;
 * only `members` of it when named): the folder holding its `package/`.
 * Fetched once; a second build reads it from there.
 */
function fetchPackage(spec, members = []) {
  const dir = join(targetsCache, spec.replace('/', '+'));
  if (existsSync(join(dir, 'package', 'package.json'))) return dir;
  mkdirSync(targetsCache, { recursive: true });
  const temp = mkdtempSync(join(targetsCache, '.fetch-'));
  try {
    say(`fetching ${spec} from the npm registry`);
    const r = spawnSync('npm', ['pack', spec, '--json', '--pack-destination', temp], { cwd: temp, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
    if (r.status !== 0) throw new Error(`npm pack ${spec} failed (${r.status ?? r.signal}):\n${r.stderr}`);
    const [{ filename }] = JSON.parse(r.stdout);
    run('tar', ['-xzf', join(temp, filename), '-C', temp, '--no-same-owner', ...members.map((m) => `package/${m}`)], `unpacking ${filename}`);
    rmSync(join(temp, filename));
    try {
      renameSync(temp, dir);
    } catch (err) {
      if (!existsSync(join(dir, 'package', 'package.json'))) throw err; // else another build put it there first
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return dir;
}

/** The registry's Node binary for `target`, of this Node's version (the blob's format is the version's). */
function fetchNode(target) {
  // Only what the executable and a release need of its 150 MB unpacked.
  const dir = fetchPackage(`node-${target}@${process.version.slice(1)}`, ['package.json', 'bin/node', 'LICENSE']);
  return { file: join(dir, 'package', 'bin', 'node'), package: `node-${target}`, license: join(dir, 'package', 'LICENSE') };
}

/** The keyring addon package for `target` (glibc), at the version @napi-rs/keyring asks for. */
function fetchAddon(target) {
  const name = `@napi-rs/keyring-${target}-gnu`;
  const version = JSON.parse(readFileSync(keyringRequire().resolve('./package.json'), 'utf8')).optionalDependencies?.[name];
  if (!version) {
    say(`@napi-rs/keyring names no ${name}: the executable will have no keyring`);
    return undefined;
  }
  return addonIn(join(fetchPackage(`${name}@${version}`), 'package'));
}

/** The addon of the package in `dir`: its file, hash, version and licence files. */
function addonIn(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const file = join(dir, pkg.main);
  const licenses = readdirSync(dir)
    .filter((n) => /^licen[cs]e/i.test(n))
    .sort()
    .map((n) => join(dir, n));
  return { name: pkg.name, version: pkg.version, license: pkg.license ?? null, file, sha256: sha256(readFileSync(file)), licenseFiles: licenses };
}

/** What the executable is made from: the sources of dist/ (scripts/build-stamp.mjs), this script, the target, the Node binary, the addon. */
function inputsHash(sources, target, node, addon) {
  const hash = createHash('sha256');
  hash.update(sources).update('\0');
  hash.update(readFileSync(fileURLToPath(import.meta.url))).update('\0');
  hash.update(`${target}\0${node}\0${process.version}\0${statSync(node).size}\0${statSync(node).mtimeMs}\0${addon?.sha256 ?? 'no addon'}`);
  return hash.digest('hex');
}

/** The main script (src/sea/main.ts) and the launcher (src/sea/launcher.ts), each one CommonJS script (no top-level await), with the values they are built with. */
async function bundleLauncher(work, addon, target) {
  const { build } = await import('esbuild');
  const common = { bundle: true, format: 'cjs', platform: 'node', target: 'node20.19', logLevel: 'warning', minifyWhitespace: true };
  const version = JSON.parse(readFileSync(join(dist, 'fast.json'), 'utf8')).version;
  const main = join(work, 'main.cjs');
  await build({
    ...common,
    entryPoints: [join(root, 'src', 'sea', 'main.ts')],
    outfile: main,
    define: { __CHATCTL_VERSION__: JSON.stringify(version), __CHATCTL_HASH_SEED__: JSON.stringify(HASH_SEED) },
  });
  const launcher = join(work, 'launcher.cjs');
  await build({
    ...common,
    entryPoints: [join(root, 'src', 'sea', 'launcher.ts')],
    outfile: launcher,
    define: { __CHATCTL_KEYRING_SHA256__: JSON.stringify(addon?.sha256 ?? null), __CHATCTL_TARGET__: JSON.stringify(target), __CHATCTL_HASH_SEED__: JSON.stringify(HASH_SEED) },
  });
  return { launcher, main };
}

/** The launcher's and the bundles' code caches, made by this Node in a child with HASH_SEED's flag only, as the executable runs them. */
function makeCodeCaches(work, launcher) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, [HASH_SEED, fileURLToPath(import.meta.url), '--code-caches', join(work, 'cache'), launcher], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`making the code caches failed (${r.status ?? r.signal})`);
}

/**
 * Compiles and runs each bundle as the launcher does (src/sea/launcher.ts),
 * main.cjs then renders every help page and the command tree (buildMeta),
 * so its cache holds the commander code a run compiles, and writes V8's
 * cached data for each. A cache that does not fit the executable's V8 is
 * refused by V8 and costs only speed.
 */
async function writeCodeCaches(dir, launcher) {
  // The launcher compiled only: running it would run chatctl. What V8 compiles up front is cached, as Node's own cache of a main script does.
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'launcher.cjs.v8'), new Script(Module.wrap(readFileSync(launcher, 'utf8')), { filename: 'launcher.cjs' }).createCachedData());
  const require = createRequire(import.meta.url);
  for (const name of bundles()) {
    const file = join(dist, name);
    const script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file });
    const module = { exports: {} };
    script.runInThisContext().call(module.exports, module.exports, require, module, file, dirname(file));
    if (name === 'main.cjs') await module.exports.buildMeta();
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, `${name}.v8`), script.createCachedData());
  }
}

const run = (command, argv, what) => runIn(undefined, command, argv, what);

function runIn(cwd, command, argv, what) {
  const r = spawnSync(command, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
}

/** Writes the executable: Node's --build-sea where it has it and builds for itself, else the blob and postject into a copy of the target's Node. */
function inject(work, { main, assets, node }, out, strip) {
  const config = { main, output: out, disableExperimentalSEAWarning: true, useCodeCache: false, assets };
  const configFile = join(work, 'sea-config.json');
  if (node === process.execPath && spawnSync(process.execPath, ['--help'], { encoding: 'utf8' }).stdout.includes('--build-sea')) {
    writeFileSync(configFile, JSON.stringify(config));
    run(process.execPath, ['--build-sea', configFile], 'node --build-sea');
    return;
  }
  const blob = join(work, 'sea.blob');
  writeFileSync(configFile, JSON.stringify({ ...config, main: relative(work, main), output: blob }));
  // From the work folder, with the main script's relative name: the blob keeps the name as given, and a temporary folder's would differ build to build.
  runIn(work, process.execPath, ['--experimental-sea-config', configFile], 'node --experimental-sea-config');
  copyFileSync(node, out);
  chmodSync(out, 0o755);
  // Node's Linux binaries carry their symbol table and debug information
  // (about 13 MB of the 99 MB of Node 20); the dynamic symbols that native
  // addons (the keyring's) link against stay. Not for another architecture,
  // which this machine's strip does not read.
  if (process.platform === 'linux' && strip && spawnSync('strip', ['--version'], { stdio: 'ignore' }).status === 0) run('strip', ['--strip-all', out], 'strip');
  const mac = process.platform === 'darwin';
  if (mac) run('codesign', ['--remove-signature', out], 'codesign --remove-signature');
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  run(process.execPath, [postject, out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE, ...(mac ? ['--macho-segment-name', 'NODE_SEA'] : [])], 'postject');
  if (mac) run('codesign', ['--sign', '-', out], 'codesign --sign -');
}

/** Into place by a rename (a running copy keeps its file), or a copy across file systems. */
function renameOrCopy(from, to) {
  try {
    renameSync(from, to);
  } catch (err) {
    if (err.code !== 'EXDEV') throw err;
    const temp = `${to}.${process.pid}.tmp`;
    copyFileSync(from, temp);
    chmodSync(temp, 0o755);
    renameSync(temp, to);
  }
}

// Last: the helpers above are defined by now.
const args = process.argv.slice(2);
if (args[0] === '--code-caches') await writeCodeCaches(args[1], args[2]);
else await packageExecutable(args);
