#!/usr/bin/env node
// chatctl's launcher. Start-up is chatctl's performance (every TAB and every
// CI step starts it anew), so this file:
// - answers --version and --help from dist/fast.json, rendered at build time
//   by the real program (test/commands/completion/drift.test.ts proves they match);
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
/** main.cjs's exports once it is loaded: the code caches are written with its writeFileAtomic (src/fs/atomic.ts). */
let program;
const dist = path.join(__dirname, '..', 'dist');
// The V8 flag a proxied run sets (codeCache names its cache files after it).
// Behind a proxy, undici parses HTTP with llhttp compiled to WebAssembly;
// V8 then also compiles it with its optimising compiler in the background,
// and on Node 20 the process cannot exit (process.exit neither) until that
// ends, about 200 ms. Liftoff, the baseline compiler, is plenty for one
// response. Node 24 does not hold the exit, but the background compile
// still took a core: a proxied rotate read 1.26-1.34x a direct one with the
// flag against 1.62-1.77x without (bench scenario 5, same session). Runs
// with no proxy variable never load undici. The flag is set once the proxy
// bundle has run (see liftoffFromNow), not at start-up.
const V8_FLAGS = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => process.env[name]) ? '--liftoff-only' : '';
/** --liftoff-only and the flags it turns off, as they are by default. */
const V8_FLAGS_UNDO = '--no-liftoff-only --liftoff --wasm-tier-up --wasm-dynamic-tiering';
/** Code caches not written yet: at exit, or before the flag is set (liftoffFromNow). */
const unwritten = [];

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
    program = loadProgram(path.join(dist, 'main.cjs'));
    program.run(argv).then((code) => {
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
    if (err.code === 'EAGAIN')
      process.stdout.write(buf.subarray(done)); // a full non-blocking pipe: let the stream wait
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
 * Runs a CommonJS bundle (main.cjs, or one of dist/lazy/) with V8's cached
 * data from the user's cache folder, one cache per bundle and command. Any
 * failure to read or write the cache only costs speed;
 * CHATCTL_COMPILE_CACHE=0 turns it off.
 *
 * The cache holds the code a run compiled: written by the first run of a
 * command that succeeds, it holds that command's path and no other. A cache
 * written by `exit-codes` or `profile set` left `webhooks rotate` to compile
 * most of its functions anew on every run (about 4 ms a rotation), so each
 * command (see commandKey) has a cache of its own.
 *
 * The cache is named after a SHA-256 of the bundle's text (plus the Node
 * version, the architecture and the V8 flags): V8 itself checks only the
 * source's length, so a bundle upgraded in place with the same size (and a
 * package manager's fixed mtime) must never meet the old code. Hashing costs
 * loading node:crypto (several ms), so the hash is remembered beside the
 * cache with the bundle's stat (device, inode, size, mtime and ctime, which
 * no utime() call can set back), as git's index does; a bundle changed in
 * the last two seconds is hashed again next time (a coarse clock could give
 * two versions the same ctime). A run whose stat matches the note reads the
 * note instead of hashing.
 *
 * The cache folder is created 0700 and is neither read nor written when
 * another user owns it or group or others can write it.
 */
function loadProgram(file) {
  const vm = require('node:vm');
  const { createRequire, wrap } = require('node:module');
  const source = fs.readFileSync(file, 'utf8');
  const cache = codeCache(file, source);
  let cached;
  if (cache?.trusted) {
    try {
      cached = fs.readFileSync(cache.file);
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
  if (cache && (!cached || script.cachedDataRejected || cache.note)) {
    const pending = { cache, script: !cached || script.cachedDataRejected ? script : undefined, written: false };
    unwritten.push(pending);
    // Only a run that succeeded writes the code: a failing one (a usage
    // error) went a short way down its command's path, and its cache would
    // leave every later run to compile the rest.
    process.once('exit', (code) => {
      if (!pending.written) writeCache(cache, code === 0 ? pending.script : undefined);
    });
  }
  if (V8_FLAGS && path.basename(file) === 'proxy.cjs') liftoffFromNow();
  return module.exports;
}

/**
 * Sets V8_FLAGS once undici is loaded, before its first connection compiles
 * llhttp. Any V8 flag changes the hash that cached code is checked against,
 * so whatever is compiled after it is compiled anew, Node's own modules
 * included (the node binary carries their compiled code): set at start-up,
 * it made every Node module a proxied run loads cost two to three times as
 * much (node:http2 5 ms → 15 ms; what undici's index loads, 20 ms more). The
 * bundles that ran before it (main.cjs, proxy.cjs) are cached now, under the
 * flags they were compiled with, so the next proxied run can use them; a run
 * that got this far has gone its command's way. Those caches lack what runs
 * after (the request and the answer: about a tenth of main.cjs's cache and a
 * third of proxy.cjs's), so at exit, once the flags are as at start-up
 * again, they are written anew (4-5% less CPU per proxied run).
 */
function liftoffFromNow() {
  const v8 = require('node:v8');
  const early = unwritten.splice(0);
  for (const pending of early) {
    pending.written = true;
    writeCache(pending.cache, pending.script);
  }
  const probe = early.length > 0 ? flagProbe() : undefined;
  v8.setFlagsFromString(V8_FLAGS);
  if (probe === undefined) return;
  // At exit the flag and what it implies are set back; only if V8's flags
  // then hash as at start-up (an empty script's cached data, which carries
  // that hash, is the same bytes) can a later run use what is written.
  process.once('exit', (code) => {
    v8.setFlagsFromString(V8_FLAGS_UNDO);
    if (code !== 0 || !flagProbe().equals(probe)) return;
    for (const pending of early) if (pending.script) writeCache(pending.cache, pending.script);
  });
}

/** Cached data of an empty script: its header carries the hash of V8's flags. */
function flagProbe() {
  return new (require('node:vm').Script)('', { filename: 'chatctl-flags' }).createCachedData();
}

function cacheDir() {
  const env = process.env;
  if (env.CHATCTL_CACHE_DIR) return env.CHATCTL_CACHE_DIR;
  const home = require('node:os').homedir();
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'chatctl', 'Cache');
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Caches', 'chatctl');
  return path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), 'chatctl');
}

/** 'ok', 'missing', or 'untrusted' (not a folder, another user's, or writable by group or others). */
function folderState(dir) {
  let st;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    return err.code === 'ENOENT' ? 'missing' : 'untrusted';
  }
  if (!st.isDirectory()) return 'untrusted';
  if (typeof process.geteuid === 'function' && (st.uid !== process.geteuid() || (st.mode & 0o022) !== 0)) return 'untrusted';
  return 'ok';
}

/** FNV-1a, 32 bits: names files after short strings (paths, flags); never used for the bundle's text. */
function fnv(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

function codeCache(file, source) {
  if (process.env.CHATCTL_COMPILE_CACHE === '0') return undefined;
  const dir = cacheDir();
  const state = folderState(dir);
  if (state === 'untrusted') return undefined;
  let st;
  try {
    st = fs.statSync(file, { bigint: true });
  } catch {
    return undefined;
  }
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  const noteFile = path.join(dir, `bundle-${fnv(file)}.sha256`);
  let hash;
  if (state === 'ok') {
    try {
      const [was, h] = fs.readFileSync(noteFile, 'utf8').split('\n');
      if (was === stamp && /^[0-9a-f]{64}$/.test(h)) hash = h;
    } catch {
      /* no note yet */
    }
  }
  let note;
  if (hash === undefined) {
    hash = require('node:crypto').createHash('sha256').update(source).digest('hex');
    if (Date.now() - Number(st.ctimeNs / 1000000n) > 2000) note = `${stamp}\n${hash}\n`;
  }
  const flags = fnv([...process.execArgv, process.env.NODE_OPTIONS || '', V8_FLAGS].join('\0'));
  const prefix = `${path.basename(file, '.cjs')}-`; // main-, proxy-, prompts-, sandbox-
  return {
    dir,
    trusted: state === 'ok',
    prefix,
    file: path.join(dir, `${prefix}${hash.slice(0, 32)}-${process.version}-${process.arch}-${flags}@${commandKey(argv)}.v8`),
    noteFile,
    note,
  };
}

/**
 * The command a run names, as a cache key: its first word, and for a group
 * of subcommands its second (`webhooks rotate`), skipping options and the
 * values of the global options that take one. A test keeps both lists equal
 * to the program's (src/cli.ts's GLOBALS_WITH_VALUE; the commands with
 * subcommands). Only words of commands are taken: after `sandbox` comes
 * nothing, so `sandbox --token T` never puts T in a file name. A word that
 * is no plain command name stands as `_`; a wrong guess only costs a cache.
 */
function commandKey(args) {
  const withValue = ['--profile', '--base-url', '--org', '--app', '--env', '--query', '--max-retries', '--timeout', '--deadline'];
  const groups = ['webhooks', 'webhook', 'profile', 'auth', 'completion'];
  const words = [];
  for (let i = 0; i < args.length && words.length < (groups.includes(words[0]) ? 2 : 1); i++) {
    const a = args[i];
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (withValue.includes(a)) i++;
      continue;
    }
    words.push(/^[a-z][a-z0-9-]{0,31}$/.test(a) ? a : '_');
  }
  return words.join('.') || '_';
}

function writeCache(cache, script) {
  try {
    fs.mkdirSync(cache.dir, { recursive: true, mode: 0o700 });
    if (folderState(cache.dir) !== 'ok') return;
    if (script) {
      writeReplacing(cache.file, script.createCachedData());
      // Keep the caches of this bundle's four newest builds (other installs,
      // other Node versions), and of each at most 32 commands.
      const builds = new Map(); // build → { rank (0 = newest), caches seen }
      for (const f of newestFirst(cache.dir, (n) => n.startsWith(cache.prefix) && n.endsWith('.v8'))) {
        const build = f.name.split('@')[0];
        const b = builds.get(build) ?? { rank: builds.size, seen: 0 };
        builds.set(build, b);
        if (b.rank >= 4 || ++b.seen > 32) fs.rmSync(f.path, { force: true });
      }
    }
    if (cache.note) writeReplacing(cache.noteFile, cache.note);
    if (script || cache.note) {
      // One note per install path: keep the 16 newest (npx runs each from a new folder).
      const notes = newestFirst(cache.dir, (n) => n.startsWith('bundle-') && n.endsWith('.sha256'));
      for (const n of notes.slice(16)) fs.rmSync(n.path, { force: true });
    }
  } catch {
    /* a cache we cannot write only costs speed */
  }
}

/** The files of `dir` whose names pass `test`, newest first. */
function newestFirst(dir, test) {
  return fs
    .readdirSync(dir)
    .filter(test)
    .map((name) => ({ name, path: path.join(dir, name), t: fs.statSync(path.join(dir, name)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
}

/**
 * The program's own atomic write (a cache is written at exit, so main.cjs is
 * loaded): 0600, an exclusive temporary file renamed into place. Not
 * fsynced: a cache lost in a crash of the machine only costs speed.
 */
function writeReplacing(file, data) {
  program.writeFileAtomic(file, data, { durable: false });
}
