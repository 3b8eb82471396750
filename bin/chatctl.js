#!/usr/bin/env node
// chatctl's launcher. Start-up is chatctl's performance (every TAB and every
// CI step starts it anew), so this file:
// - answers --version and --help from dist/fast.json, rendered at build time
//   by the real program (test/completion/drift.test.ts proves they match);
// - answers completion from dist/complete.cjs, a small bundle of its own;
// - loads the program, dist/main.cjs, as a script with V8's cached data, so
//   the second and later runs skip parsing and compiling it.
// It is CommonJS (bin/package.json says so): an ES module launcher costs
// the ESM loader's start-up, and fast answers are written with
// fs.writeSync, as creating process.stdout costs more than the answer.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const argv = process.argv.slice(2);
const dist = path.join(__dirname, '..', 'dist');
// V8 flags, set before any bundle is compiled (V8 rejects cached data made
// under other flags), and named in the cache files. Behind a proxy, undici
// parses HTTP with llhttp compiled to WebAssembly; Node 20's V8 then also
// compiles it with its optimising compiler in the background, and the
// process cannot exit (process.exit neither) until that ends, about 200 ms.
// Liftoff, the baseline compiler, is plenty for one response; Node 22 and
// later do not wait. Runs with no proxy variable never load undici.
const V8_FLAGS_TAG =
  Number(process.versions.node.split('.')[0]) < 22 && ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => process.env[name])
    ? '+liftoff'
    : '';

if (argv[0] === '__complete') {
  const { runComplete } = require(path.join(dist, 'complete.cjs'));
  const tree = JSON.parse(fs.readFileSync(path.join(dist, 'tree.json'), 'utf8'));
  runComplete(argv.slice(1), tree, process.env, writeOut);
} else {
  const text = fastAnswer(argv);
  if (text !== undefined) writeOut(text);
  else {
    // The program's lazily loaded parts (dist/lazy/*.cjs: undici behind a
    // proxy, the prompts, the sandbox) come through this loader too.
    globalThis[Symbol.for('chatctl.loadBundle')] = loadProgram;
    if (V8_FLAGS_TAG) require('node:v8').setFlagsFromString('--liftoff-only');
    loadProgram(path.join(dist, 'main.cjs'))
      .run(argv)
      .then((code) => {
        process.exitCode = code;
      });
  }
}

/** Writes a short answer straight to fd 1; a closed pipe ends quietly. */
function writeOut(text) {
  const buf = Buffer.from(text);
  let done = 0;
  try {
    while (done < buf.length) done += fs.writeSync(1, buf, done);
  } catch (err) {
    if (err.code === 'EAGAIN') process.stdout.write(buf.subarray(done)); // a full non-blocking pipe: let the stream wait
    else if (err.code !== 'EPIPE') throw err;
  }
}

/** The pre-rendered answer for `--version`, `CMD… --help` and `help CMD…`, if argv is exactly that. */
function fastAnswer(args) {
  const isHelp = (a) => a === '--help' || a === '-h';
  let words;
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) return meta().version + '\n';
  if (args.length >= 1 && isHelp(args[args.length - 1])) words = args.slice(0, -1);
  else if (args[0] === 'help') words = args.slice(1);
  else return undefined;
  const m = meta();
  if (words[0] !== undefined && m.aliases[words[0]]) words = [m.aliases[words[0]], ...words.slice(1)];
  return m.help[words.join(' ')];
}

function meta() {
  return JSON.parse(fs.readFileSync(path.join(dist, 'fast.json'), 'utf8'));
}

/**
 * Runs a CommonJS bundle with V8's cached data from the user's cache folder.
 * The cache file is named after the bundle (main, proxy …), its size and
 * mtime and the Node version, so a rebuild or another Node never reuses
 * stale code; it is written once, at exit, with what this run compiled. Any
 * failure to read or write it only costs speed. CHATCTL_COMPILE_CACHE=0
 * turns it off.
 */
function loadProgram(file) {
  const vm = require('node:vm');
  const { createRequire, wrap } = require('node:module');
  const source = fs.readFileSync(file, 'utf8');
  const cacheFile = cachePath(file);
  let cached;
  if (cacheFile) {
    try {
      cached = fs.readFileSync(cacheFile);
    } catch {
      /* first run with this bundle and this Node */
    }
  }
  const script = new vm.Script(wrap(source), {
    filename: file,
    cachedData: cached,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file));
  if (cacheFile && (!cached || script.cachedDataRejected)) {
    process.once('exit', () => writeCache(cacheFile, script));
  }
  return module.exports;
}

function cachePath(file) {
  const env = process.env;
  if (env.CHATCTL_COMPILE_CACHE === '0') return undefined;
  const os = require('node:os');
  let dir = env.CHATCTL_CACHE_DIR;
  if (!dir) {
    const home = os.homedir();
    if (process.platform === 'win32') dir = path.join(env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'chatctl', 'Cache');
    else if (process.platform === 'darwin') dir = path.join(home, 'Library', 'Caches', 'chatctl');
    else dir = path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), 'chatctl');
  }
  try {
    const st = fs.statSync(file);
    return path.join(dir, `${bundleName(file)}-${st.size}-${Math.floor(st.mtimeMs)}-${process.version}-${process.arch}.v8`);
  } catch {
    return undefined;
  }
}

/** main, proxy, prompts, sandbox (+ the V8 flags' tag): each keeps its own cache file. */
function bundleName(file) {
  return path.basename(file, '.cjs') + V8_FLAGS_TAG;
}

function writeCache(cacheFile, script) {
  // Older cache files of the same bundle (named "<bundle>-…") are removed.
  const prefix = `${path.basename(cacheFile).split('-')[0]}-`;
  try {
    const dir = path.dirname(cacheFile);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
    fs.renameSync(tmp, cacheFile);
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith(prefix) && name.endsWith('.v8') && path.join(dir, name) !== cacheFile) fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    /* a cache we cannot write only costs speed */
  }
}
