// Which profile a run uses: --profile, CHATCTL_PROFILE, the current profile (`profile use`), or "default".
import { profileOf, type ConfigData, type Profile } from './schema.js';
import { unknownProfileError } from '../errors/explain.js';
import { nonEmpty } from '../input/values.js';

export type ProfileFlags = { profile?: string | undefined };

export type ProfileSource = 'flag' | 'env' | 'current' | 'default';

export interface SelectedProfile {
  name: string;
  /** Named by --profile or CHATCTL_PROFILE (so it must exist), not a fallback. */
  explicit: boolean;
  source: ProfileSource;
  profile: Profile | undefined;
  /** The names of the stored profiles, for a suggestion when the one asked for is not among them. */
  stored?: readonly string[];
}

export function selectProfile(flags: ProfileFlags, env: NodeJS.ProcessEnv, config: ConfigData): SelectedProfile {
  const fromFlag = nonEmpty(flags.profile);
  const fromEnv = nonEmpty(env.CHATCTL_PROFILE);
  const current = nonEmpty(config.currentProfile);
  const [name, source]: [string, ProfileSource] =
    fromFlag !== undefined ? [fromFlag, 'flag'] : fromEnv !== undefined ? [fromEnv, 'env'] : current !== undefined ? [current, 'current'] : ['default', 'default'];
  return { name, explicit: source === 'flag' || source === 'env', source, profile: profileOf(config, name), stored: Object.keys(config.profiles ?? {}) };
}

export function requireSelected(sel: SelectedProfile): void {
  if (sel.explicit && !sel.profile) throw unknownProfileError(sel.name, sel.stored ?? [], sel.source);
}
