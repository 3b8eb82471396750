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
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const root = new URL('../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
// Build beside dist/ and swap it in at the end, so a chatctl running while
// the build runs never finds dist/ half-written or missing.
const out = `dist.build-${process.pid}`;
rmSync(new URL(out, root), { recursive: true, force: true });

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20.19',
  logLevel: 'warning',
  legalComments: 'external',
  supported: { 'dynamic-import': false },
  loader: { '.bash': 'text', '.zsh': 'text', '.fish': 'text' },
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
};

// Parts that few runs need are bundles of their own, required only when
// used: undici (behind a proxy), the prompts (on a terminal), the sandbox,
// rotate --from.
// Keeping them out of main.cjs keeps every other run's read, code-cache
// load and memory small.
const LAZY = { proxy: 'src/http/proxy.ts', prompts: 'src/prompts/inquirer.ts', sandbox: 'src/sandbox/command.ts', bulk: 'src/bulk/command.ts' };
const lazyByFile = new Map(Object.entries(LAZY).map(([name, file]) => [resolve(file), name]));
const lazyParts = {
  name: 'lazy-parts',
  setup(b) {
    b.onResolve({ filter: /\.js$/ }, (args) => {
      const name = lazyByFile.get(resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts')));
      return name ? { path: `./lazy/${name}.cjs`, external: true } : undefined;
    });
  },
};

// commander requires child_process for stand-alone executable subcommands,
// which chatctl does not have; a stub that fails loudly saves loading it.
const noChildProcess = {
  name: 'no-child-process-for-commander',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process-stub', namespace: 'stub' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: "const no = () => { throw new Error('chatctl has no executable subcommands'); }; module.exports = { spawn: no, execFileSync: no };",
      loader: 'js',
    }));
  },
};

await build({ ...common, entryPoints: ['src/main.ts'], outfile: `${out}/main.cjs`, plugins: [lazyParts, noChildProcess] });
await build({
  ...common,
  entryPoints: LAZY,
  outdir: `${out}/lazy`,
  outExtension: { '.js': '.cjs' },
});
// The completion engine stands alone: a TAB press loads this file only.
await build({ ...common, entryPoints: ['src/completion/entry.ts'], outfile: `${out}/complete.cjs` });

const { buildMeta } = createRequire(import.meta.url)(new URL(`${out}/main.cjs`, root).pathname);
const meta = await buildMeta();
writeFileSync(new URL(`${out}/fast.json`, root), JSON.stringify({ version: meta.version, aliases: meta.aliases, help: meta.help }));
writeFileSync(new URL(`${out}/tree.json`, root), JSON.stringify(meta.tree));

const old = `dist.old-${process.pid}`;
try {
  renameSync(new URL('dist', root), new URL(old, root));
} catch {
  /* first build: no dist/ yet */
}
renameSync(new URL(out, root), new URL('dist', root));
rmSync(new URL(old, root), { recursive: true, force: true });
