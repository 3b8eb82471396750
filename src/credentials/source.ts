// Where a profile's token comes from, decided without reading it, and the
// words messages use for it. Credentials are never described by their value.
import { KEYRING_STORAGE, type Profile } from '../config/schema.js';
import type { SelectedProfile } from '../config/profile.js';
import { configError } from '../errors/cli-error.js';
import { nonEmpty } from '../input/values.js';
import { escapeInline } from '../output/json.js';

export type TokenSource = 'env' | 'command' | 'keyring' | 'file';

/** Where a profile keeps its token, in the order they are tried. */
export function storedTokenSource(p: Profile | undefined): Exclude<TokenSource, 'env'> | undefined {
  if (nonEmpty(p?.tokenCommand) !== undefined) return 'command';
  if (p?.tokenStorage === KEYRING_STORAGE) return 'keyring';
  if (nonEmpty(p?.token) !== undefined) return 'file';
  return undefined;
}

/** The source of the token in effect: CHATCTL_TOKEN first, then the profile's. Reads no token. */
export function tokenSourceOf(env: NodeJS.ProcessEnv, p: Profile | undefined): TokenSource | undefined {
  return nonEmpty(env.CHATCTL_TOKEN) !== undefined ? 'env' : storedTokenSource(p);
}

/** The token in effect when it is at hand without running anything (CHATCTL_TOKEN or the file token). */
export function resolveToken(env: NodeJS.ProcessEnv, sel: SelectedProfile): { token: string; source: 'env' | 'file' } | undefined {
  const source = tokenSourceOf(env, sel.profile);
  if (source === 'env') return { token: env.CHATCTL_TOKEN!.trim(), source };
  if (source === 'file') return { token: sel.profile!.token!, source };
  return undefined;
}

export function noTokenError(profile: string): Error {
  return configError(`no token for profile "${profile}"`, `run: chatctl auth login --profile ${profile}, or set CHATCTL_TOKEN`);
}

/** Not `auth login` alone: with no keyring answering it would store the token in plain text. */
export function unreachableKeyringHint(profile: string): string {
  return `unlock or start the system keyring (see docs/credentials.md), or set CHATCTL_TOKEN; to keep the token in config.json instead: chatctl auth login --profile ${profile} --insecure-storage`;
}

export function helperLabel(command: string): string {
  const line = escapeInline(command);
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

/** Where a token came from, in words for messages: "CHATCTL_TOKEN", "profile "p"'s keyring entry"… */
export function sourceWords(source: TokenSource, profile: string): string {
  const p = `profile "${escapeInline(profile)}"`;
  if (source === 'env') return 'CHATCTL_TOKEN';
  if (source === 'command') return `the token command of ${p}`;
  return source === 'keyring' ? `${p}'s entry in the system keyring` : `${p}'s file token (config.json)`;
}

/** The most bytes (UTF-8) a token may have (docs/credentials.md): one stored unbounded made config.json unreadable. */
export const MAX_TOKEN_BYTES = 64 * 1024;

export function checkTokenSize(token: string, what: string, refuse: (message: string, hint?: string) => Error, hint?: string): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most tokens are measured no further.
  if (token.length * 3 <= MAX_TOKEN_BYTES) return;
  const bytes = Buffer.byteLength(token, 'utf8');
  if (bytes > MAX_TOKEN_BYTES) throw refuse(`${what} is ${bytes} bytes; a token over 64 KiB (${MAX_TOKEN_BYTES} bytes) is refused`, hint);
}

/** Where the token of a run came from, and the profile's own source when CHATCTL_TOKEN hides it. */
export type TokenOrigin = { source: TokenSource; profile: string; shadowed?: Exclude<TokenSource, 'env'> | undefined; command?: string | undefined };

const STORED_WORDS = { command: 'token command', keyring: 'keyring entry', file: 'file token' } as const;

/** Exit 4: where the token that was refused came from, and what to do next. */
export function explainCredential(o: TokenOrigin): string[] {
  const p = `profile "${o.profile}"`;
  switch (o.source) {
    case 'env':
      return [
        'the token came from CHATCTL_TOKEN (the environment), which overrides any stored token',
        o.shadowed
          ? `next: unset CHATCTL_TOKEN to use ${p}'s ${STORED_WORDS[o.shadowed]}, or set it to a valid token`
          : `next: set CHATCTL_TOKEN to a valid token, or unset it and run: chatctl auth login --profile ${o.profile}`,
      ];
    case 'command':
      return [
        `the token came from the token command of ${p}${o.command ? ` (${helperLabel(o.command)})` : ''}`,
        `next: renew the token where the command gets it, or change it: chatctl profile set ${o.profile} --token-command 'CMD'`,
      ];
    case 'keyring':
      return [`the token came from ${p}'s entry in the system keyring`, `next: chatctl auth login --profile ${o.profile}`];
    case 'file':
      return [`the token came from ${p}'s file token (config.json)`, `next: chatctl auth login --profile ${o.profile}`];
  }
}
