// The scope, base URL, Origin and x-service-csrf value a command sends, each from the first of flag,
// environment, profile, default, and where each came from. Pure: every precedence rule is a table test.
import type { Scope } from '../api/schemas.js';
import { KEYRING_STORAGE, type ConfigData, type Profile } from '../config/schema.js';
import { requireSelected, selectProfile, type ProfileFlags, type ProfileSource, type SelectedProfile } from '../config/profile.js';
import { tokenSourceOf, type TokenSource } from '../credentials/source.js';
import { configError } from '../errors/cli-error.js';
import { checkBaseUrl, checkHeaderValue } from '../http/wire-checks.js';
import { nonEmpty } from '../input/values.js';

/** The global options that name the scope and the base URL, as commander parses them. */
export type ScopeFlags = { baseUrl?: string | undefined; org?: string | undefined; app?: string | undefined; env?: string | undefined };

export interface Connection {
  baseUrl: string; // no trailing slash
  origin: string;
  csrfToken: string;
  scope: Scope;
}

export type ValueSource = 'flag' | 'env' | 'profile' | 'default' | 'none';

export type SourcedValue = { value: string | null; source: ValueSource };

/** Everything `auth status` and `doctor` say about the scope in effect; no credential's value. */
export interface ScopeDescription {
  profile: { name: string; source: ProfileSource; exists: boolean };
  baseUrl: SourcedValue;
  organizationId: SourcedValue;
  applicationId: SourcedValue;
  environmentKey: SourcedValue;
  origin: SourcedValue;
  csrfToken: { source: ValueSource };
  /** Where the bearer token comes from, and whether the profile stores one (keyring or file). */
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

function pick(flag: string | undefined, env: string | undefined, stored: string | undefined): SourcedValue {
  const [f, e, p] = [nonEmpty(flag), nonEmpty(env), nonEmpty(stored)];
  if (f !== undefined) return { value: f, source: 'flag' };
  if (e !== undefined) return { value: e, source: 'env' };
  return p !== undefined ? { value: p, source: 'profile' } : { value: null, source: 'none' };
}

/** Each value as given, refusing nothing. */
function pickAll(flags: ScopeFlags, env: NodeJS.ProcessEnv, p: Profile) {
  return {
    baseUrl: pick(flags.baseUrl, env.CHATCTL_BASE_URL, p.baseUrl),
    organizationId: pick(flags.org, env.CHATCTL_ORG, p.organizationId),
    applicationId: pick(flags.app, env.CHATCTL_APP, p.applicationId),
    environmentKey: pick(flags.env, env.CHATCTL_ENV, p.environmentKey),
    origin: pick(undefined, env.CHATCTL_ORIGIN, p.origin),
    csrfToken: pick(undefined, env.CHATCTL_CSRF_TOKEN, p.csrfToken),
  };
}

const SCOPE_KEYS = ['organizationId', 'applicationId', 'environmentKey'] as const;

export function resolveConnection(flags: ScopeFlags, env: NodeJS.ProcessEnv, sel: SelectedProfile): Connection {
  requireSelected(sel);
  const v = pickAll(flags, env, sel.profile ?? {});
  if (v.baseUrl.value === null) throw configError('no base URL', 'pass --base-url, set CHATCTL_BASE_URL, or store one with: chatctl profile set NAME --base-url URL');
  const base = checkBaseUrl(v.baseUrl.value, configError);
  const missing = SCOPE_KEYS.filter((k) => v[k].value === null).map((k) => `${SCOPE_INPUTS[k].flag} (${SCOPE_INPUTS[k].env})`);
  if (missing.length) throw configError(`missing scope: ${missing.join(', ')}`, 'pass the flags, set the variables, or store them in a profile with: chatctl profile set');
  const scope: Scope = { organizationId: v.organizationId.value!, applicationId: v.applicationId.value!, environmentKey: v.environmentKey.value! };
  for (const [label, value] of Object.entries(scope)) {
    if (value === '.' || value === '..') throw configError(`${label} cannot be "${value}"`);
  }
  const origin = v.origin.value ?? base.origin;
  const csrfToken = v.csrfToken.value ?? '1';
  checkHeaderValue(origin, 'Origin');
  checkHeaderValue(csrfToken, 'x-service-csrf value');
  return { baseUrl: base.href, origin, csrfToken, scope };
}

/** Each scope value and where it comes from; never throws: a value resolveConnection would refuse is described as given. */
export function describeScope(flags: ProfileFlags & ScopeFlags, env: NodeJS.ProcessEnv, config: ConfigData): ScopeDescription {
  const sel = selectProfile(flags, env, config);
  const p: Profile = sel.profile ?? {};
  const v = pickAll(flags, env, p);
  let origin = v.origin;
  if (origin.source === 'none' && v.baseUrl.value !== null) {
    const url = URL.canParse(v.baseUrl.value) ? new URL(v.baseUrl.value) : undefined;
    if (url && (url.protocol === 'https:' || url.protocol === 'http:')) origin = { value: url.origin, source: 'default' };
  }
  return {
    profile: { name: sel.name, source: sel.source, exists: sel.profile !== undefined },
    ...v,
    origin,
    csrfToken: { source: v.csrfToken.source === 'none' ? 'default' : v.csrfToken.source },
    token: { source: tokenSourceOf(env, sel.profile) ?? 'none', stored: p.tokenStorage === KEYRING_STORAGE || nonEmpty(p.token) !== undefined },
  };
}
