// How this copy runs: from the npm package, or as the single executable whose
// launcher (src/sea/launcher.ts) registers itself here before loading the program.

type Packaging = 'single-executable' | 'npm';

interface SingleExecutable {
  /** The arguments that make the executable (process.execPath) run the keyring's child program. */
  keyringChildArgs: readonly string[];
  /** What it was built for, `<platform>-<arch>` (`npm run package -- --target`). */
  target: string;
}

const KEY = Symbol.for('chatctl.singleExecutable');

export function singleExecutable(): SingleExecutable | undefined {
  return (globalThis as Record<symbol, SingleExecutable | undefined>)[KEY];
}

export function registerSingleExecutable(info: SingleExecutable): void {
  (globalThis as Record<symbol, SingleExecutable | undefined>)[KEY] = info;
}

export function packaging(): Packaging {
  return singleExecutable() ? 'single-executable' : 'npm';
}

// No process chatctl starts is given chatctl's own credentials: an exec:
// destination needs the secret, a token command is asked for the token.
const CREDENTIAL_VARIABLES = ['CHATCTL_TOKEN', 'CHATCTL_CSRF_TOKEN'];

/** A copy of `env` for a child process, without chatctl's credentials. */
export function withoutCredentials<T extends Record<string, string | undefined>>(env: T): T {
  const copy = { ...env };
  for (const name of CREDENTIAL_VARIABLES) delete copy[name];
  return copy;
}
