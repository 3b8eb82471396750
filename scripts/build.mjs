// Bundles src/ into dist/ with esbuild, then asks the built program for what
// bin/chatctl.js's fast paths need (version, rendered help, command tree).
// Runs on `npm install` (prepare), so a fresh clone works after one command.
//
// The program is one CommonJS bundle, not ESM chunks: on Node 20 only
// scripts (not ES modules) can reuse V8's compiled code between runs, and
// CommonJS skips the ESM loader's per-module resolution and the facades it
// builds for every built-in module. Lazily imported parts (prompts, undici,
// the sandbox) stay in the bundle behind esbuild's lazy initialisers, so
// they cost nothing until a command uses them.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { buildCommit, inputsStamp, stampText } from './build-stamp.mjs';

const root = new URL('../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
// Build beside dist/ and move it in at the end (below), so a chatctl running
// while the build runs never finds dist/ half-written or missing.
const out = `dist.build-${process.pid}`;
// Taken before any source is read: a source changed during the build makes
// the recorded stamp stale, never a stale build current.
const inputs = inputsStamp();
rmSync(new URL(out, root), { recursive: true, force: true });

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20.19',
  logLevel: 'warning',
  // Kept: besides THIRD-PARTY-NOTICES.txt (below, one licence per bundled
  // package), it keeps notices of code that a package carries inside itself
  // (undici's copy of formdata-polyfill), which no package.json names.
  legalComments: 'external',
  // Every input file, so the build can list the packages it bundled.
  metafile: true,
  supported: { 'dynamic-import': false },
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version), __CHATCTL_COMMIT__: JSON.stringify(buildCommit()) },
  // The system keyring's binding is a native addon (a .node file per
  // platform, in its own optional package), which esbuild cannot bundle: it
  // stays a runtime dependency in node_modules, and src/credentials/keyring.ts
  // requires it there, in a child process, only when a keyring is used.
  external: ['@napi-rs/keyring', '@napi-rs/keyring-*'],
};

// Parts that few runs need are bundles of their own, required only when
// used: undici (behind a proxy), the prompts (on a terminal), the sandbox,
// execa (for an exec: secret destination), rotate --from, Standard Webhooks
// signing (sign, verify, listen, the sandbox's deliveries), the listener of
// webhooks listen, jmespath (--query) and escrow (age: --escrow and webhooks recover).
// Keeping them out of main.cjs keeps every other run's read, code-cache
// load and memory small.
const LAZY = {
  proxy: 'src/http/proxy.ts',
  prompts: 'src/prompts/inquirer.ts',
  sandbox: 'src/commands/sandbox/run.ts',
  conf: 'src/config/conf-writer.ts',
  exec: 'src/secret/exec.ts',
  bulk: 'src/commands/webhooks/rotate-from/command.ts',
  signing: 'src/signing/standard-webhooks.ts',
  listen: 'src/commands/webhooks/listen-server.ts',
  query: 'src/run/query.ts',
  escrow: 'src/secret/escrow.ts',
};
const lazyByFile = new Map(Object.entries(LAZY).map(([name, file]) => [resolve(file), name]));
// main.cjs reaches a lazy bundle through a stub that asks bin/chatctl.js's
// loader for it, so it too runs with V8's cached data (the launcher
// registers the loader under Symbol.for('chatctl.loadBundle')); without the
// launcher (the build itself, tests that require main.cjs) it is a plain
// require.
const lazyParts = {
  name: 'lazy-parts',
  setup(b) {
    b.onResolve({ filter: /\.js$/ }, (args) => {
      const name = lazyByFile.get(resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts')));
      return name ? { path: name, namespace: 'lazy-stub' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-stub' }, (args) => ({
      contents: [
        "const load = globalThis[Symbol.for('chatctl.loadBundle')];",
        `module.exports = typeof load === 'function' ? load(require('node:path').join(__dirname, 'lazy', ${JSON.stringify(`${args.path}.cjs`)})) : require(${JSON.stringify(`./lazy/${args.path}.cjs`)});`,
      ].join('\n'),
      loader: 'js',
      resolveDir: resolve('src'),
    }));
    b.onResolve({ filter: /^\.\/lazy\//, namespace: 'lazy-stub' }, (args) => ({ path: args.path, external: true }));
  },
};

// commander requires child_process for stand-alone executable subcommands,
// which chatctl does not have; a stub that fails loudly saves loading it.
const noChildProcess = {
  name: 'no-child-process-for-commander',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) => (/[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process-stub', namespace: 'stub' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: "const no = () => { throw new Error('chatctl has no executable subcommands'); }; module.exports = { spawn: no, execFileSync: no };",
      loader: 'js',
    }));
  },
};

// Each build's metafile, for the third-party notices (below).
const metafiles = [];
// main.cjs is read, compiled and run by every command, so its size is paid
// on every run: without its indentation and comments it is a third smaller
// (490 → about 330 KB), which is less to read and less young memory (V8
// puts the source string there), so a rotate round trip less often pays a
// second garbage collection. Names are kept (no
// identifier mangling): a --debug stack trace still names its functions.
// The lazy bundles stay as they are: few runs load them.
metafiles.push((await build({ ...common, entryPoints: ['src/app/main.ts'], outfile: `${out}/main.cjs`, plugins: [lazyParts, noChildProcess], minifyWhitespace: true, minifySyntax: true })).metafile);
const { proxy: proxyEntry, ...otherLazy } = LAZY;
metafiles.push((await build({ ...common, entryPoints: otherLazy, outdir: `${out}/lazy`, outExtension: { '.js': '.cjs' } })).metafile);
// undici from its package entry: its index also brings fetch, WebSocket,
// the cache stores and the mocks (esbuild cannot leave out parts of a
// CommonJS package), 1.09 MB as written. Like main.cjs, the proxy bundle is
// written without indentation and comments (0.74 MB: less to read on each
// proxied run, and one of undici's comments that follows code on its line
// is not ASCII). Names are kept, so a --debug stack trace still names its
// functions.
metafiles.push((await build({ ...common, entryPoints: { proxy: proxyEntry }, outdir: `${out}/lazy`, outExtension: { '.js': '.cjs' }, minifyWhitespace: true, minifySyntax: true })).metafile);
// The keyring's child program is not bundled: it is a script of its own,
// started with Node for each keyring call (src/credentials/keyring.ts), that
// requires the native addon from node_modules.
copyFileSync(new URL('src/credentials/keyring-child.cjs', root), new URL(`${out}/keyring-child.cjs`, root));
// The completion engine stands alone: a TAB press loads this file only.
// Written without indentation and comments, as main.cjs: with the scope of
// the endpoints it offers (config, profile, scope rules) it is about 28 KB
// as written, 22 KB so (the engine alone was 7 KB).
metafiles.push((await build({ ...common, entryPoints: ['src/completion/complete.ts'], outfile: `${out}/complete.cjs`, minifyWhitespace: true, minifySyntax: true })).metafile);

// Every bundle is ASCII. A single character beyond it makes V8 hold the
// whole source as a two-byte string: main.cjs then took twice as long to
// read and compile (measured: 1.25 ms against 0.55 ms to read, on each run).
// esbuild escapes strings and identifiers itself; what it must keep as
// written (a String.raw template, a regular expression) has to be written
// with \u escapes in src/, and a library's comment is made ASCII here.
for (const rel of listFiles(new URL(`${out}/`, root).pathname).filter((f) => f.endsWith('.cjs'))) {
  const file = new URL(`${out}/${rel}`, root);
  const text = readFileSync(file, 'utf8');
  if (!/[^\x00-\x7f]/.test(text)) continue;
  const bad = [];
  const lines = text.split('\n').map((line, i) => {
    if (!/[^\x00-\x7f]/.test(line)) return line;
    // A line comment, or a line of a block comment (`/*`, ` * …`: esbuild keeps a library's doc comments).
    if (/^\s*(\/\/|\/\*|\*)/.test(line)) return line.replace(/[^\x00-\x7f]/g, '?');
    bad.push(`${rel}:${i + 1}: ${line.trim().slice(0, 120)}`);
    return line;
  });
  if (bad.length > 0) throw new Error(`non-ASCII characters in the bundle outside comments; write them as \\u escapes in the source:\n  ${bad.join('\n  ')}`);
  writeFileSync(file, lines.join('\n'));
}

// The bundles carry the code of MIT, ISC and Apache-2.0 libraries, whose
// licences ask that their notice go with every copy: one file lists each
// bundled package with its licence text.
// The same packages as data, for the release's software bill of materials (scripts/release.mjs).
const notices = thirdPartyNotices(metafiles);
writeFileSync(new URL(`${out}/THIRD-PARTY-NOTICES.txt`, root), notices.text);
writeFileSync(new URL(`${out}/bundled.json`, root), `${JSON.stringify(notices.packages, null, 2)}\n`);

const { buildMeta } = createRequire(import.meta.url)(new URL(`${out}/main.cjs`, root).pathname);
const meta = await buildMeta();
writeFileSync(new URL(`${out}/fast.json`, root), JSON.stringify({ version: meta.version, aliases: meta.aliases, help: meta.help }));
writeFileSync(new URL(`${out}/tree.json`, root), JSON.stringify(meta.tree));
// A manual page per command, rendered by the program (src/meta/reference.ts); they
// go to man/ beside dist/ below, and the package ships them.
const manBuild = new URL(`${out}/man/`, root).pathname;
mkdirSync(manBuild, { recursive: true });
for (const [name, text] of Object.entries(meta.man)) writeFileSync(join(manBuild, name), text);

// Move the new build into dist/ file by file, each with an atomic rename, so
// dist/ is never missing or half-written: a chatctl that starts during a
// rebuild sees each file whole, old or new. Files the new build no longer
// has are removed last.
const distDir = new URL('dist/', root).pathname;
const buildDir = new URL(`${out}/`, root).pathname;
// The manual pages first, each by an atomic rename; pages of commands that
// are gone are removed.
const manDir = new URL('man/', root).pathname;
const pages = listFiles(manBuild);
mkdirSync(manDir, { recursive: true });
for (const name of pages) renameSync(join(manBuild, name), join(manDir, name));
for (const name of listFiles(manDir)) if (name.endsWith('.1') && !pages.includes(name)) rmSync(join(manDir, name), { force: true });
rmSync(manBuild, { recursive: true, force: true });
const fresh = new Set(listFiles(buildDir));
mkdirSync(distDir, { recursive: true });
// Until the new stamp is written, dist/ counts as not current.
rmSync(join(distDir, 'build-stamp.json'), { force: true });
for (const rel of fresh) {
  mkdirSync(dirname(join(distDir, rel)), { recursive: true });
  renameSync(join(buildDir, rel), join(distDir, rel));
}
// dist/bin/ and dist/release/ are not the build's: they hold what `npm run package` and `npm run release` made.
for (const rel of listFiles(distDir)) if (!fresh.has(rel) && !rel.startsWith(`bin${sep}`) && !rel.startsWith(`release${sep}`)) rmSync(join(distDir, rel), { force: true });
rmSync(buildDir, { recursive: true, force: true });
// Last, once every file is in place: what this build was made from.
writeFileSync(join(distDir, 'build-stamp.json.tmp'), stampText(inputs, fresh, pages));
renameSync(join(distDir, 'build-stamp.json.tmp'), join(distDir, 'build-stamp.json'));

/**
 * THIRD-PARTY-NOTICES.txt for the packages whose code the builds' outputs
 * hold: for each (by name, then version), `name@version (license)` and
 * the text of its licence file, or, for a package without one, its
 * package.json's license and author. A package with neither fails the build.
 * Returns the text and the packages ({name, version, license}).
 */
function thirdPartyNotices(metas) {
  const packages = new Map();
  // The inputs some output holds code of: a build also loads files that
  // end up contributing nothing.
  const bundled = new Set(
    metas.flatMap((meta) =>
      Object.values(meta.outputs).flatMap((o) =>
        Object.entries(o.inputs)
          .filter(([, i]) => i.bytesInOutput > 0)
          .map(([input]) => input),
      ),
    ),
  );
  for (const meta of metas) {
    for (const input of Object.keys(meta.inputs)) {
      if (!bundled.has(input)) continue;
      // Inputs of plugin namespaces (the lazy stubs) are `namespace:path`; files are paths relative to the working folder.
      if (/^[\w-]+:/.test(input) && !/^[A-Za-z]:[\\/]/.test(input)) continue;
      const file = resolve(input);
      if (!file.split(sep).includes('node_modules')) continue;
      const found = packageOf(file);
      packages.set(`${found.pkg.name}@${found.pkg.version}`, found);
    }
  }
  if (packages.size === 0) throw new Error('third-party notices: the builds bundled no package from node_modules; review scripts/build.mjs');
  const sorted = [...packages.values()].sort((a, b) => (a.pkg.name < b.pkg.name ? -1 : a.pkg.name > b.pkg.name ? 1 : a.pkg.version < b.pkg.version ? -1 : 1));
  const missing = [];
  const sections = sorted.map(({ dir, root: pkgRoot, pkg: p }) => {
    const license = typeof p.license === 'string' ? p.license : typeof p.license?.type === 'string' ? p.license.type : undefined;
    const file = licenseFile(dir) ?? (pkgRoot !== dir ? licenseFile(pkgRoot) : undefined);
    const header = `${p.name}@${p.version} (${license ?? 'no license field'})`;
    if (file) return `${header}\n\n${readFileSync(file, 'utf8').replace(/\r\n?/g, '\n').trimEnd()}\n`;
    if (!license) {
      missing.push(`${p.name}@${p.version} (${dir})`);
      return '';
    }
    const person = (x) => (typeof x === 'string' ? x : x && typeof x.name === 'string' ? [x.name, x.email && `<${x.email}>`, x.url && `(${x.url})`].filter(Boolean).join(' ') : undefined);
    const lines = [`License: ${license}`];
    if (typeof p.copyright === 'string') lines.push(p.copyright);
    if (person(p.author)) lines.push(`Author: ${person(p.author)}`);
    for (const c of Array.isArray(p.contributors) ? p.contributors : []) if (person(c)) lines.push(`Contributor: ${person(c)}`);
    return `${header}\n\n(no licence file in the package; from its package.json)\n${lines.join('\n')}\n`;
  });
  if (missing.length > 0) {
    throw new Error(`third-party notices: bundled package(s) with neither a licence file nor a license field:\n  ${missing.join('\n  ')}`);
  }
  const rule = `\n${'-'.repeat(78)}\n\n`;
  const text = [`chatctl ${pkg.version} bundles code from the following ${sorted.length} packages into dist/.\nTheir licence notices follow, one package each.\n`, ...sections].join(rule);
  const list = sorted.map(({ pkg: p }) => ({ name: p.name, version: p.version, license: typeof p.license === 'string' ? p.license : (p.license?.type ?? null) }));
  return { text, packages: list };
}

/** The package a file under node_modules belongs to: the nearest package.json with a name, up to the folder under node_modules. */
function packageOf(file) {
  const parts = file.split(sep);
  const nm = parts.lastIndexOf('node_modules');
  const rootDepth = nm + (parts[nm + 1]?.startsWith('@') ? 3 : 2);
  const pkgRoot = parts.slice(0, rootDepth).join(sep);
  for (let dir = dirname(file); dir.length >= pkgRoot.length; dir = dirname(dir)) {
    let p;
    try {
      p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    if (typeof p.name === 'string' && p.name) return { dir, root: pkgRoot, pkg: p };
    if (dir === pkgRoot) break;
  }
  throw new Error(`third-party notices: no package.json with a name for ${file}`);
}

/** The package folder's licence file (LICENSE, LICENCE.md, license-mit, …), if any. */
function licenseFile(dir) {
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /^licen[cs]e(?:[-._].*)?$/i.test(e.name))
    .map((e) => e.name)
    .sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
  return names.length > 0 ? join(dir, names[0]) : undefined;
}

function listFiles(dir, prefix = '') {
  const out = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = join(prefix, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(dir, rel));
    else out.push(rel);
  }
  return out;
}
