// What a build of dist/ is made from, as one SHA-256: every file under src/,
// the build script, the package and lock files, and the tree npm installed
// (node_modules/.package-lock.json, rewritten whenever npm changes it). The
// build records it in dist/build-stamp.json with the files it wrote, so
// `npm install -g .` after `npm install`, or `npm test` after either, can
// tell that dist/ is already the build of these sources and skip it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(root, 'dist', 'build-stamp.json');
const INPUTS = ['scripts/build.mjs', 'scripts/build-stamp.mjs', 'package.json', 'package-lock.json', 'tsconfig.json', 'node_modules/.package-lock.json'];

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

/**
 * The git commit the sources are checked out at, for `chatctl version`; null
 * when they are not a git checkout of their own (a tarball, a copy, a folder
 * inside another project's repository) or git is not installed.
 */
export function buildCommit() {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
    if (resolve(git('rev-parse', '--show-toplevel')) !== resolve(root)) return null;
    const commit = git('rev-parse', 'HEAD');
    return /^[0-9a-f]{40,64}$/.test(commit) ? commit : null;
  } catch {
    return null;
  }
}

export function inputsStamp() {
  const hash = createHash('sha256');
  // The commit is built in (`chatctl version`): a new one makes dist/ stale.
  hash.update(`commit ${buildCommit()}`).update('\0');
  const files = [...walk(join(root, 'src')), ...INPUTS.map((f) => join(root, f))].sort();
  for (const file of files) {
    hash.update(relative(root, file)).update('\0');
    hash.update(existsSync(file) ? readFileSync(file) : '(absent)').update('\0');
  }
  return hash.digest('hex');
}

/** The stamp's JSON for a build of `inputs` that wrote `files` (paths relative to dist/) and the manual pages `man` (names in man/). */
export const stampText = (inputs, files, man = []) => JSON.stringify({ inputs, files: [...files].sort(), man: [...man].sort() });

/** True when dist/ holds a whole build of exactly the current sources. */
export function distIsCurrent() {
  try {
    const { inputs, files, man } = JSON.parse(readFileSync(STAMP, 'utf8'));
    return (
      inputs === inputsStamp() &&
      Array.isArray(files) &&
      files.length > 0 &&
      files.every((f) => existsSync(join(root, 'dist', f))) &&
      Array.isArray(man) &&
      man.length > 0 &&
      man.every((f) => existsSync(join(root, 'man', f)))
    );
  } catch {
    return false;
  }
}
