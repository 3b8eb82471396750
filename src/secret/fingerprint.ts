// A secret's fingerprint names it without showing it, so
// an operator can compare the copy a receiver holds with the one delivered.
// node:crypto is loaded here, when a secret is in hand, not at start-up.

/** `sha256:` + the first 16 lowercase hex digits of the SHA-256 of the UTF-8 bytes (or of the bytes given). */
export function fingerprint(secret: string | Buffer): string {
  const { createHash } = process.getBuiltinModule('node:crypto');
  // update() reads a string as UTF-8.
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}
