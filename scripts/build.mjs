// Bundles src/ into dist/ with esbuild, then asks the built program for what
// bin/chatctl.js's fast paths need (version, rendered help, command tree).
// Runs on `npm install` (prepare), so a fresh clone works after one command.
import { build } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
rmSync(new URL('dist', root), { recursive: true, force: true });

const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  logLevel: 'warning',
  legalComments: 'none',
  loader: { '.bash': 'text', '.zsh': 'text', '.fish': 'text' },
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
  banner: {
    // Bundled CommonJS dependencies call require(); give ESM chunks one.
    js: "import { createRequire as __chatctlCreateRequire } from 'node:module'; const require = __chatctlCreateRequire(import.meta.url);",
  },
};

await build({ ...common, entryPoints: { main: 'src/main.ts' }, outdir: 'dist', splitting: true, chunkNames: 'chunks/[name]-[hash]' });
// The completion engine stands alone: a TAB press loads this file only.
await build({ ...common, entryPoints: { complete: 'src/completion/entry.ts' }, outdir: 'dist', banner: {} });

const { buildMeta } = await import(new URL('dist/main.js', root).href);
const meta = await buildMeta();
writeFileSync(new URL('dist/fast.json', root), JSON.stringify({ version: meta.version, aliases: meta.aliases, help: meta.help }));
writeFileSync(new URL('dist/tree.json', root), JSON.stringify(meta.tree));
