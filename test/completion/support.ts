import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const BIN = join(ROOT, 'bin', 'chatctl.js');

/** A PATH with `chatctl` on it and a config folder holding two profiles. */
export function shellEnv(): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), 'chatctl-completion-'));
  mkdirSync(join(dir, 'bin'));
  symlinkSync(BIN, join(dir, 'bin', 'chatctl'));
  mkdirSync(join(dir, 'cfg'), { mode: 0o700 });
  writeFileSync(join(dir, 'cfg', 'config.json'), JSON.stringify({ profiles: { prod: {}, 'staging-eu': {} } }), { mode: 0o600 });
  return {
    PATH: `${join(dir, 'bin')}:${process.env.PATH}`,
    HOME: dir,
    CHATCTL_CONFIG_DIR: join(dir, 'cfg'),
    TERM: 'dumb',
  };
}

export function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync(cmd, args, { env, cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
}
