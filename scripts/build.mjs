// Bundles src/ into dist/ with esbuild. Runs on `npm install` (prepare), so a
// fresh clone works after one command.
import { build } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });

await build({
  entryPoints: { main: 'src/main.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  minify: false,
  sourcemap: false,
  logLevel: 'warning',
  define: { __CHATCTL_VERSION__: JSON.stringify(pkg.version) },
  banner: {
    // Bundled CommonJS dependencies call require(); give ESM chunks one.
    js: "import { createRequire as __chatctlCreateRequire } from 'node:module'; const require = __chatctlCreateRequire(import.meta.url);",
  },
});
