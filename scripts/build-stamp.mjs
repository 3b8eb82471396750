// What a build of dist/ is made from, as one SHA-256: every file under src/,
// the build script, the package and lock files, and the tree npm installed
// (node_modules/.package-lock.json, rewritten whenever npm changes it). The
// build records it in dist/build-stamp.json with the files it wrote, so
// `npm install -g .` after `npm install`, or `npm test` after either, can
// tell that dist/ is already the build of these sources and skip it.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(root, 'dist', 'build-stamp.json');
const INPUTS = ['scripts/build.mjs', 'scripts/build-stamp.mjs', 'package.json', 'package-lock.json', 'tsconfig.json', 'node_modules/.package-lock.json'];

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

export function inputsStamp() {
  const hash = createHash('sha256');
  const files = [...walk(join(root, 'src')), ...INPUTS.map((f) => join(root, f))].sort();
  for (const file of files) {
    hash.update(relative(root, file)).update('\0');
    hash.update(existsSync(file) ? readFileSync(file) : '(absent)').update('\0');
  }
  return hash.digest('hex');
}

/** The stamp's JSON for a build of `inputs` that wrote `files` (paths relative to dist/). */
export const stampText = (inputs, files) => JSON.stringify({ inputs, files: [...files].sort() });

/** True when dist/ holds a whole build of exactly the current sources. */
export function distIsCurrent() {
  try {
    const { inputs, files } = JSON.parse(readFileSync(STAMP, 'utf8'));
    return inputs === inputsStamp() && Array.isArray(files) && files.length > 0 && files.every((f) => existsSync(join(root, 'dist', f)));
  } catch {
    return false;
  }
}
