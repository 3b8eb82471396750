// No process chatctl starts is given chatctl's own credentials: an exec:
// destination needs the secret, a token command is asked for the token.
const CREDENTIAL_VARIABLES = ['CHATCTL_TOKEN', 'CHATCTL_CSRF_TOKEN'];

/** A copy of `env` for a child process, without chatctl's credentials. */
export function withoutCredentials<T extends Record<string, string | undefined>>(env: T): T {
  const copy = { ...env };
  for (const name of CREDENTIAL_VARIABLES) delete copy[name];
  return copy;
}
