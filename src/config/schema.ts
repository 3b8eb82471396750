// The shape of config.json. Checked on every read: a file that does not fit
// is a configuration error, never silently "fixed" by overwriting it.
//
// Checked by hand, not with zod as the API's shapes are: the shape is a few
// optional strings, and every command that reads the config (each rotate
// with a profile) paid about 1 ms to build zod's schemas for it, against a
// round trip of about 40 ms (README, Dependencies).
import { isJsonObject } from '../output/json.js';

export const PROFILE_FIELDS = ['baseUrl', 'organizationId', 'applicationId', 'environmentKey', 'origin', 'csrfToken'] as const;

/**
 * Where a profile's token is kept besides the scope: `token` (the file
 * token, in plain text: written by chatctl 0.1, or on purpose with
 * --insecure-storage, or when no keyring answers), `tokenStorage`
 * ("keyring": the token is in the system keyring, not here) and
 * `tokenCommand` (a credential helper run for the token).
 */
const PROFILE_KEYS = [...PROFILE_FIELDS, 'token', 'tokenStorage', 'tokenCommand'] as const;

/** The only value of `tokenStorage`: the token is in the system keyring, under the profile's name. */
export const KEYRING_STORAGE = 'keyring';

/** A stored profile: each field optional, each a string. */
export type Profile = Partial<Record<(typeof PROFILE_KEYS)[number], string>>;

export interface ConfigData {
  version?: 1 | undefined;
  currentProfile?: string | undefined;
  /** A null-prototype map (see profileMap). */
  profiles?: Record<string, Profile> | undefined;
}

/**
 * Checks parsed JSON against the shape of config.json; `where` names the
 * first field that does not fit (`profiles.prod.baseUrl`). Each profile is
 * kept in a null-prototype map, so a profile called `__proto__` stays an
 * ordinary entry. Unknown keys are dropped.
 */
export function parseConfigData(json: unknown): { data: ConfigData } | { where: string } {
  if (!isJsonObject(json)) return { where: '(top level)' };
  const field = (o: Record<string, unknown>, k: string) => (Object.hasOwn(o, k) ? o[k] : undefined);
  const version = field(json, 'version');
  if (version !== undefined && version !== 1) return { where: 'version' };
  const currentProfile = field(json, 'currentProfile');
  if (currentProfile !== undefined && typeof currentProfile !== 'string') return { where: 'currentProfile' };
  const data: ConfigData = {};
  if (version !== undefined) data.version = version;
  if (currentProfile !== undefined) data.currentProfile = currentProfile;
  const raw = field(json, 'profiles');
  if (raw !== undefined) {
    if (!isJsonObject(raw)) return { where: 'profiles' };
    const profiles = profileMap(undefined);
    for (const [name, entry] of Object.entries(raw)) {
      if (!isJsonObject(entry)) return { where: `profiles.${name}` };
      const p: Profile = {};
      for (const k of PROFILE_KEYS) {
        const v = field(entry, k);
        if (v === undefined) continue;
        if (typeof v !== 'string') return { where: `profiles.${name}.${k}` };
        if (k === 'tokenStorage' && v !== KEYRING_STORAGE) return { where: `profiles.${name}.${k}` };
        p[k] = v;
      }
      profiles[name] = p;
    }
    data.profiles = profiles;
  }
  return { data };
}

export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Profile names are plain keys: `constructor`, `__proto__` or `toString` are
 * ordinary names, absent unless config.json has them. Maps of profiles are
 * null-prototype objects and every lookup asks for an own property.
 */
export type ProfileMap = Record<string, Profile>;

export function profileMap(from: Record<string, Profile> | undefined): ProfileMap {
  const map = Object.create(null) as ProfileMap;
  if (from) for (const [name, p] of Object.entries(from)) map[name] = p;
  return map;
}

export function profileOf(data: ConfigData, name: string): Profile | undefined {
  const profiles = data.profiles;
  return profiles !== undefined && Object.hasOwn(profiles, name) ? profiles[name] : undefined;
}

/**
 * The object written to config.json: `version`, `currentProfile`, `profiles`,
 * each profile's fields in the schema's order. A file read and written back
 * unchanged keeps its bytes, and the bytes are those chatctl 0.1 wrote.
 */
export function canonicalConfig(data: ConfigData): Record<string, unknown> {
  const out: Record<string, unknown> = { version: 1 };
  if (data.currentProfile !== undefined) out.currentProfile = data.currentProfile;
  if (data.profiles !== undefined) {
    const profiles = Object.create(null) as Record<string, Record<string, string>>;
    for (const [name, p] of Object.entries(data.profiles)) {
      const fields: Record<string, string> = {};
      for (const k of PROFILE_KEYS) if (p[k] !== undefined) fields[k] = p[k];
      profiles[name] = fields;
    }
    out.profiles = profiles;
  }
  return out;
}
