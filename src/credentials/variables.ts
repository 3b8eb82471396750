// The variables that carry chatctl's own credentials (the bearer token, the
// x-service-csrf value). No process chatctl starts is given them: an exec:
// destination needs the secret, a token command is asked for the token, and
// the keyring's child stores what it is handed on stdin.

export const CREDENTIAL_VARIABLES: readonly string[] = ['CHATCTL_TOKEN', 'CHATCTL_CSRF_TOKEN'];

/** A copy of `env` for a child process, without chatctl's credentials. */
export function withoutCredentials<T extends Record<string, string | undefined>>(env: T): T {
  const copy = { ...env };
  for (const name of CREDENTIAL_VARIABLES) delete copy[name];
  return copy;
}
