// The shape of config.json. Checked on every read: a file that does not fit
// is a configuration error, never silently "fixed" by overwriting it.
import * as z from 'zod/mini';
import { lazy } from '../api/schemas.js';

export const PROFILE_FIELDS = [
  'baseUrl',
  'organizationId',
  'applicationId',
  'environmentKey',
  'origin',
  'csrfToken',
] as const;

const profileSchema = () =>
  z.object({
    baseUrl: z.optional(z.string()),
    organizationId: z.optional(z.string()),
    applicationId: z.optional(z.string()),
    environmentKey: z.optional(z.string()),
    origin: z.optional(z.string()),
    csrfToken: z.optional(z.string()),
    token: z.optional(z.string()),
  });
export type Profile = z.infer<ReturnType<typeof profileSchema>>;

const topSchema = lazy(() =>
  z.object({
    version: z.optional(z.literal(1)),
    currentProfile: z.optional(z.string()),
  }),
);
const oneProfile = lazy(profileSchema);

export interface ConfigData {
  version?: 1 | undefined;
  currentProfile?: string | undefined;
  /** A null-prototype map (see profileMap). */
  profiles?: Record<string, Profile> | undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks parsed JSON against the shape of config.json. Each profile is
 * checked on its own and kept in a null-prototype map, so a profile called
 * `__proto__` stays an ordinary entry (a zod record would turn it into the
 * map's prototype). Unknown keys are dropped, as zod objects do.
 */
export function parseConfigData(json: unknown): { data: ConfigData } | { where: string } {
  if (!isPlainObject(json)) return { where: '(top level)' };
  const top = topSchema().safeParse({ version: json.version, currentProfile: json.currentProfile });
  if (!top.success) return { where: top.error.issues[0]?.path.join('.') || '(top level)' };
  const data: ConfigData = {};
  if (top.data.version !== undefined) data.version = top.data.version;
  if (top.data.currentProfile !== undefined) data.currentProfile = top.data.currentProfile;
  if (Object.hasOwn(json, 'profiles') && json.profiles !== undefined) {
    if (!isPlainObject(json.profiles)) return { where: 'profiles' };
    const profiles = profileMap(undefined);
    for (const [name, raw] of Object.entries(json.profiles)) {
      const p = oneProfile().safeParse(raw);
      if (!p.success) return { where: ['profiles', name, ...p.error.issues[0]!.path].join('.') };
      profiles[name] = p.data;
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

const PROFILE_KEYS = [...PROFILE_FIELDS, 'token'] as const;

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
