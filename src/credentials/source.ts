// Where a profile's token comes from, decided without reading it:
// CHATCTL_TOKEN, the profile's token command (credential helper), its entry
// in the system keyring, or its file token (config.json). Credentials are
// never described by their value.
import { KEYRING_STORAGE, type Profile } from '../config/schema.js';
import type { SelectedProfile } from '../config/profile.js';
import { configError } from '../errors/cli-error.js';
import { nonEmpty } from '../input/values.js';
import { escapeInline } from '../output/json.js';

export type TokenSource = 'env' | 'command' | 'keyring' | 'file';

/** Where a profile keeps its token, in the order they are tried: its token command, its keyring entry, its file token. */
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

/**
 * The token in effect when it is at hand without running anything: from
 * CHATCTL_TOKEN or the file token. Undefined when there is none, or when it
 * is behind a token command or in the keyring (credentials/token.ts gets it).
 */
export function resolveToken(env: NodeJS.ProcessEnv, sel: SelectedProfile): { token: string; source: 'env' | 'file' } | undefined {
  const source = tokenSourceOf(env, sel.profile);
  if (source === 'env') return { token: env.CHATCTL_TOKEN!.trim(), source };
  if (source === 'file') return { token: sel.profile!.token!, source };
  return undefined;
}

export function noTokenError(profile: string): Error {
  return configError(`no token for profile "${profile}"`, `run: chatctl auth login --profile ${profile}, or set CHATCTL_TOKEN`);
}

/**
 * The next step when a profile's keyring does not answer. Not `auth login`
 * alone: with no keyring answering it would store the token in plain text
 * in config.json. Fix the keyring, or choose the file knowingly.
 */
export function unreachableKeyringHint(profile: string): string {
  return `unlock or start the system keyring (see docs/credentials.md), or set CHATCTL_TOKEN; to keep the token in config.json instead: chatctl auth login --profile ${profile} --insecure-storage`;
}

/** A token command as a message shows it: on one line, at most 120 characters. */
export function helperLabel(command: string): string {
  const line = escapeInline(command);
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
