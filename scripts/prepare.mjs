// `prepare` (npm runs it after `npm install`, `npm link` and `npm install -g .`):
// builds dist/. From a fresh clone, `npm install -g .` links this folder and
// runs prepare here without having installed the devDependencies the build
// needs (esbuild and the libraries it bundles); in that case they are
// installed first, into this folder only, with scripts off. The built
// program has no runtime dependencies.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { distIsCurrent } from './build-stamp.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

function canBuild() {
  try {
    createRequire(new URL('../package.json', import.meta.url)).resolve('esbuild');
    return true;
  } catch {
    return false;
  }
}

// `npm install -g .` right after `npm install` (the quick start) finds dist/
// built from these very sources: nothing to do (scripts/build-stamp.mjs).
if (distIsCurrent()) {
  console.error('chatctl: dist/ is already built from these sources');
  process.exit(0);
}

if (!canBuild()) {
  const npm = process.env.npm_execpath;
  if (!npm) {
    console.error('chatctl: the build needs the devDependencies: run npm install in this folder first');
    process.exit(1);
  }
  console.error('chatctl: installing the build tools into this folder first (the devDependencies)');
  // The outer command's settings (global, prefix, omit=dev…) must not reach this local install.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_(global|location|prefix|omit|include|production|only|also|save.*|dry_run)$/i.test(k)));
  const r = spawnSync(process.execPath, [npm, 'install', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-save'], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

await import('./build.mjs');
