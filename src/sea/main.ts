// The single executable's main script: `--version`, help and completion answered with node:sea and
// node:fs alone, as fast as bare Node; anything else to the launcher (node:v8 costs 2 ms: only then).
import { writeSync } from 'node:fs';
import { getAsset } from 'node:sea';

declare const __CHATCTL_VERSION__: string;
/** The V8 flag the code caches were made with (scripts/package.mjs, HASH_SEED). */
declare const __CHATCTL_HASH_SEED__: string;

type FastAnswers = { aliases: Record<string, string>; help: Record<string, string> };

/** The pre-rendered answer for `--version`, `CMD… --help` and `help CMD…`, as bin/chatctl.js gives it. */
export function fastAnswer(args: string[], fast: () => FastAnswers, version: string): string | undefined {
  const isHelp = (a: string | undefined) => a === '--help' || a === '-h';
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) return `${version}\n`;
  if (!isHelp(args.at(-1)) && args[0] !== 'help') return undefined;
  const { aliases, help } = fast();
  let words = isHelp(args.at(-1)) ? args.slice(0, -1) : args.slice(1);
  const alias = words[0] === undefined ? undefined : aliases[words[0]];
  if (alias) words = [alias, ...words.slice(1)];
  return help[words.join(' ')];
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

/** A CommonJS asset compiled without a cache (the SEA's require loads built-in modules only: all they need). */
// biome-ignore lint/suspicious/noExplicitAny: a bundle's exports
function plainBundle(name: string): any {
  const module = { exports: {} };
  new Function('exports', 'require', 'module', '__filename', '__dirname', getAsset(name, 'utf8'))(module.exports, require, module, name, '.');
  return module.exports;
}

/** The launcher, compiled with its code cache under the caches' flag, put back before it runs (launcher.ts, withCacheFlag). */
function launch(argv: string[]): void {
  const { setFlagsFromString } = require('node:v8') as typeof import('node:v8');
  const { Script } = require('node:vm') as typeof import('node:vm');
  const { wrap } = require('node:module') as typeof import('node:module');
  const file = `${process.execPath}/dist/launcher.cjs`;
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset('launcher.cjs.v8'));
  } catch {
    /* a build without code caches */
  }
  const module = { exports: {} as { start(argv: string[]): void } };
  setFlagsFromString(__CHATCTL_HASH_SEED__);
  let script: import('node:vm').Script;
  try {
    script = new Script(wrap(getAsset('launcher.cjs', 'utf8')), { filename: file, cachedData });
  } finally {
    setFlagsFromString('--hash-seed=0');
  }
  script.runInThisContext().call(module.exports, module.exports, require, module, file, process.execPath);
  module.exports.start(argv);
}

function main(argv: string[]): void {
  if (argv[0] === '__complete') {
    const { runComplete } = plainBundle('complete.cjs');
    return runComplete(argv.slice(1), JSON.parse(getAsset('tree.json', 'utf8')), process.env, writeOut);
  }
  const text = fastAnswer(argv, () => JSON.parse(getAsset('fast.json', 'utf8')) as FastAnswers, __CHATCTL_VERSION__);
  if (text !== undefined) return writeOut(text);
  launch(argv);
}

// Not when a test imports fastAnswer.
if (typeof __CHATCTL_VERSION__ === 'string') main(process.argv.slice(2));
