// The bound on a bearer token's size (docs/credentials.md, "How big a token
// may be"): over 64 KiB of bytes it is refused wherever chatctl takes one
// (auth login, CHATCTL_TOKEN, a token command, the keyring, config.json),
// before it is stored or sent. A token stored unbounded made config.json
// too large to read, for every profile.

/** The most bytes (UTF-8) a token may have. */
export const MAX_TOKEN_BYTES = 64 * 1024;

/**
 * Refuses a token over MAX_TOKEN_BYTES with `refuse` (usageError for
 * `auth login`, configError elsewhere); `what` names it in the message
 * ("the token", "the token from CHATCTL_TOKEN").
 */
export function checkTokenSize(token: string, what: string, refuse: (message: string, hint?: string) => Error, hint?: string): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most tokens are measured no further.
  if (token.length * 3 <= MAX_TOKEN_BYTES) return;
  const bytes = Buffer.byteLength(token, 'utf8');
  if (bytes > MAX_TOKEN_BYTES) throw refuse(`${what} is ${bytes} bytes; a token over 64 KiB (${MAX_TOKEN_BYTES} bytes) is refused`, hint);
}
