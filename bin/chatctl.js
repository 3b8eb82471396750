#!/usr/bin/env node
// chatctl's launcher. Start-up is chatctl's performance (every TAB and every
// CI step starts it anew), so this file answers what it can without loading
// the program: --version and --help from dist/fast.json (both rendered at
// build time by the real program, and tested against it), and completion
// from dist/complete.js. Everything else loads dist/main.js.
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const dist = new URL('../dist/', import.meta.url);

if (argv[0] === '__complete') {
  const { runComplete } = await import('../dist/complete.js');
  const tree = JSON.parse(readFileSync(new URL('tree.json', dist), 'utf8'));
  runComplete(argv.slice(1), tree, process.env, (s) => process.stdout.write(s));
} else {
  const text = fastAnswer(argv);
  if (text !== undefined) {
    process.stdout.write(text);
  } else {
    const { enableCompileCache } = await import('node:module');
    enableCompileCache?.(); // Node 22.1+: reuse V8's compiled code between runs
    const { run } = await import('../dist/main.js');
    process.exitCode = await run(argv);
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
  return JSON.parse(readFileSync(new URL('fast.json', dist), 'utf8'));
}
