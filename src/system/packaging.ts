// How this copy of chatctl runs: from the npm package (bin/chatctl.js and
// dist/), or as the single executable that `npm run package` builds
// (docs/distribution.md), whose launcher (src/sea/launcher.ts) says so here
// before it loads the program. `chatctl version --json` reports it as
// "packaging"; the keyring's child is started through it.

export type Packaging = 'single-executable' | 'npm';

/** What the single executable's launcher hands the program. */
export interface SingleExecutable {
  /** The arguments that make the executable (process.execPath) run the keyring's child program. */
  keyringChildArgs: readonly string[];
  /** What it was built for, `<platform>-<arch>` (`npm run package -- --target`). */
  target: string;
}

const KEY = Symbol.for('chatctl.singleExecutable');

/** The single executable's hand-over, or undefined in the npm package. */
export function singleExecutable(): SingleExecutable | undefined {
  return (globalThis as Record<symbol, SingleExecutable | undefined>)[KEY];
}

/** Called by the launcher only. */
export function registerSingleExecutable(info: SingleExecutable): void {
  (globalThis as Record<symbol, SingleExecutable | undefined>)[KEY] = info;
}

export function packaging(): Packaging {
  return singleExecutable() ? 'single-executable' : 'npm';
}
