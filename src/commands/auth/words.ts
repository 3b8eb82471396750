// Words the auth commands share for their notices.
import type { ProfileSource } from '../../config/profile.js';

/** Why this profile: words for a notice. */
export function profileReason(source: ProfileSource): string {
  switch (source) {
    case 'flag':
      return 'named by --profile';
    case 'env':
      return 'named by CHATCTL_PROFILE';
    case 'current':
      return 'the current profile';
    case 'default':
      return 'no profile chosen: --profile, CHATCTL_PROFILE or chatctl profile use NAME chooses one';
  }
}
