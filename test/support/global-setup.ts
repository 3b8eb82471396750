// Runs once in vitest's main process, before any worker starts: one V8
// compile-cache folder for every chatctl process the whole run starts, as a
// user's runs share theirs (only the first start of each bundle compiles
// it, not the first in each worker). test/faults/compile-cache.test.ts gives
// each of its runs a folder of its own, empty, to test the cache itself.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    compileCacheDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'chatctl-test-cache-'));
  project.provide('compileCacheDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
