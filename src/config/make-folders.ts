// `mkdir -p` that always ends. Node's own recursive mkdirSync loops for ever
// (growing memory until the process is killed) on a path under /proc such as
// /proc/self/nonexistent/x: there mkdir answers ENOENT for a child of a
// folder that exists, and Node keeps going back up and down. Here each
// missing folder, from the top down, is made once; an error is thrown as it
// comes, with `path` the folder that could not be made.
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Above this many missing levels a path is refused rather than walked (no real config path is this deep). */
const MAX_DEPTH = 512;

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * Creates `dir` and any missing parents with `mode`; returns the first folder
 * it created (as mkdirSync's recursive form does), or undefined if `dir` existed.
 */
export function makeFolders(dir: string, mode: number): string | undefined {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    let st;
    try {
      st = statSync(d);
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') throw err;
    }
    if (st) {
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${d}'`), { code: 'ENOTDIR', syscall: 'mkdir', path: d });
      break;
    }
    missing.push(d);
    if (dirname(d) === d || missing.length > MAX_DEPTH) throw Object.assign(new Error(`ENOENT: no such file or directory, mkdir '${d}'`), { code: 'ENOENT', syscall: 'mkdir', path: d });
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      // Made meanwhile by another run: fine if it is a folder.
      if (codeOf(err) === 'EEXIST' && statSync(d).isDirectory()) continue;
      throw err;
    }
    first ??= d;
  }
  return first;
}
