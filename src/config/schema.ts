// Where config.json is and its shape, checked on every read. By hand, not
// with zod: building zod's schemas cost each rotate with a profile about 1 ms.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isJsonObject } from '../output/json.js';

export function configDir(env: NodeJS.ProcessEnv, platform = process.platform, home = homedir()): string {
  if (env.CHATCTL_CONFIG_DIR) return env.CHATCTL_CONFIG_DIR;
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), 'chatctl');
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', 'chatctl');
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'chatctl');
}

export const configFile = (dir: string) => join(dir, 'config.json');

export const PROFILE_FIELDS = ['baseUrl', 'organizationId', 'applicationId', 'environmentKey', 'origin', 'csrfToken'] as const;

/** Besides the scope: the file token, `tokenStorage` ("keyring": the token is there, not here) and the token command. */
const PROFILE_KEYS = [...PROFILE_FIELDS, 'token', 'tokenStorage', 'tokenCommand'] as const;

export const KEYRING_STORAGE = 'keyring';

export type Profile = Partial<Record<(typeof PROFILE_KEYS)[number], string>>;

export interface ConfigData {
  version?: 1 | undefined;
  currentProfile?: string | undefined;
  /** A null-prototype map (see profileMap). */
  profiles?: Record<string, Profile> | undefined;
}

/** Parsed JSON checked against the shape; `where` names the first field that does not fit. Unknown keys are dropped. */
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

/** Null-prototype, and every lookup asks for an own property: `__proto__` or `constructor` is an ordinary profile name. */
export function profileMap(from: Record<string, Profile> | undefined): Record<string, Profile> {
  const map = Object.create(null) as Record<string, Profile>;
  if (from) for (const [name, p] of Object.entries(from)) map[name] = p;
  return map;
}

export function profileOf(data: ConfigData, name: string): Profile | undefined {
  return data.profiles !== undefined && Object.hasOwn(data.profiles, name) ? data.profiles[name] : undefined;
}

/** The object written to config.json, fields in a fixed order: a file read and written back unchanged keeps its bytes. */
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
