import { homedir } from 'node:os';
import { join } from 'node:path';

/** `CHATCTL_CONFIG_DIR`, else the platform's config folder for chatctl. */
export function configDir(env: NodeJS.ProcessEnv, platform = process.platform, home = homedir()): string {
  if (env.CHATCTL_CONFIG_DIR) return env.CHATCTL_CONFIG_DIR;
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), 'chatctl');
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', 'chatctl');
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'chatctl');
}

export const configFile = (dir: string) => join(dir, 'config.json');
