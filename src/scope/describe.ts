// Where each value of the scope in effect comes from, for `auth status` and
// `doctor`: flag, environment, the selected profile, a default, or nowhere.
import { KEYRING_STORAGE, type ConfigData, type Profile } from '../config/schema.js';
import { selectProfile, type ProfileFlags, type ProfileSource } from '../config/profile.js';
import { tokenSourceOf, type TokenSource } from '../credentials/source.js';
import { nonEmpty } from '../input/values.js';
import type { ScopeFlags } from './connection.js';

/** Where a value came from (docs/configuration.md). */
export type ValueSource = 'flag' | 'env' | 'profile' | 'default' | 'none';

export interface SourcedValue {
  value: string | null;
  source: ValueSource;
}

/** Everything `auth status` and `doctor` say about the scope in effect; no credential's value. */
export interface ScopeDescription {
  profile: { name: string; source: ProfileSource; exists: boolean };
  baseUrl: SourcedValue;
  organizationId: SourcedValue;
  applicationId: SourcedValue;
  environmentKey: SourcedValue;
  origin: SourcedValue;
  /** A credential: where it comes from, never its value. */
  csrfToken: { source: ValueSource };
  /** Where the bearer token comes from (never its value), and whether the profile stores one (keyring or file). */
  token: { source: TokenSource | 'none'; stored: boolean };
}

/** The flag and variable behind each described value, for messages. */
export const SCOPE_INPUTS = {
  baseUrl: { flag: '--base-url', env: 'CHATCTL_BASE_URL' },
  organizationId: { flag: '--org', env: 'CHATCTL_ORG' },
  applicationId: { flag: '--app', env: 'CHATCTL_APP' },
  environmentKey: { flag: '--env', env: 'CHATCTL_ENV' },
  origin: { flag: undefined, env: 'CHATCTL_ORIGIN' },
  csrfToken: { flag: undefined, env: 'CHATCTL_CSRF_TOKEN' },
  token: { flag: undefined, env: 'CHATCTL_TOKEN' },
} as const;

/**
 * Each scope value and where it comes from: flag, environment, the selected
 * profile, a default, or nowhere. Pure, and never throws: a value that
 * resolveConnection would refuse is still described (as given).
 */
export function describeScope(flags: ProfileFlags & ScopeFlags, env: NodeJS.ProcessEnv, config: ConfigData): ScopeDescription {
  const sel = selectProfile(flags, env, config);
  const p: Profile = sel.profile ?? {};
  const pick = (flag: string | undefined, envName: string, stored: string | undefined): SourcedValue => {
    const f = nonEmpty(flag);
    if (f !== undefined) return { value: f, source: 'flag' };
    const e = nonEmpty(env[envName]);
    if (e !== undefined) return { value: e, source: 'env' };
    const s = nonEmpty(stored);
    if (s !== undefined) return { value: s, source: 'profile' };
    return { value: null, source: 'none' };
  };
  const baseUrl = pick(flags.baseUrl, 'CHATCTL_BASE_URL', p.baseUrl);
  let origin = pick(undefined, 'CHATCTL_ORIGIN', p.origin);
  if (origin.source === 'none' && baseUrl.value !== null) {
    const url = URL.canParse(baseUrl.value) ? new URL(baseUrl.value) : undefined;
    if (url && (url.protocol === 'https:' || url.protocol === 'http:')) origin = { value: url.origin, source: 'default' };
  }
  const csrf = pick(undefined, 'CHATCTL_CSRF_TOKEN', p.csrfToken).source;
  const token = tokenSourceOf(env, sel.profile);
  return {
    profile: { name: sel.name, source: sel.source, exists: sel.profile !== undefined },
    baseUrl,
    organizationId: pick(flags.org, 'CHATCTL_ORG', p.organizationId),
    applicationId: pick(flags.app, 'CHATCTL_APP', p.applicationId),
    environmentKey: pick(flags.env, 'CHATCTL_ENV', p.environmentKey),
    origin,
    csrfToken: { source: csrf === 'none' ? 'default' : csrf },
    token: { source: token ?? 'none', stored: p.tokenStorage === KEYRING_STORAGE || nonEmpty(p.token) !== undefined },
  };
}
