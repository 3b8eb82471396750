// What the profile commands share about a stored profile: the rule for its
// name, what of it may be shown (never a token, only whether one is stored),
// and the error for a name that is not stored.
import { KEYRING_STORAGE, PROFILE_NAME, profileMap, type ConfigData, type Profile } from '../../config/schema.js';
import { usageError, type CliError } from '../../errors/cli-error.js';
import { unknownProfileError } from '../../errors/explain.js';
import { storedTokenSource } from '../../credentials/source.js';
import { escapeInline } from '../../output/json.js';

export function checkProfileName(name: string): string {
  if (!PROFILE_NAME.test(name)) {
    throw usageError(`invalid profile name "${escapeInline(name)}"`, 'use letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64 characters');
  }
  return name;
}

/** What `profile show` and `profile list --json` print: no token, only whether one is stored. */
export function publicProfile(name: string, p: Profile, current: boolean) {
  return {
    name,
    current,
    baseUrl: p.baseUrl ?? null,
    organizationId: p.organizationId ?? null,
    applicationId: p.applicationId ?? null,
    environmentKey: p.environmentKey ?? null,
    origin: p.origin ?? null,
    csrfToken: p.csrfToken === undefined ? null : '[set]',
    tokenStored: Boolean(p.token) || p.tokenStorage === KEYRING_STORAGE,
    /** Where this profile's own token comes from (CHATCTL_TOKEN aside): "command", "keyring", "file" or null. */
    tokenSource: storedTokenSource(p) ?? null,
    tokenCommand: p.tokenCommand ?? null,
  };
}

// use, show and remove look the name up and nothing more: any name that is
// not stored (`constructor`, `__proto__`, a typo) is one that does not exist.
/** A name that is not stored, with the stored one nearest to it (`sbz` → sbx) when there is one. */
export function notStored(data: ConfigData, name: string, instead?: (near: string) => string, otherwise?: string): CliError {
  return unknownProfileError(name, Object.keys(profileMap(data.profiles)), instead ?? 'default', otherwise);
}
