// The scripts `chatctl completion SHELL` prints: thin, every TAB asks `chatctl __complete`, so
// they cannot drift from the commands; and `completion install`, every path from ctx.env.
import { existsSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, dirname, isAbsolute, join } from 'node:path';
import type { Context } from '../context.js';
import { usageError } from '../errors/cli-error.js';
import { writeFileAtomic } from '../system/files.js';
import { BASH, FISH, ZSH } from './templates.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

export function completionScript(shell: Shell): string {
  return shell === 'bash' ? BASH : shell === 'zsh' ? ZSH : FISH;
}

export const COMPLETION_FILES: Record<Shell, string> = { bash: 'chatctl.bash', zsh: '_chatctl', fish: 'chatctl.fish' };

function xdg(env: NodeJS.ProcessEnv, name: string, home: string, fallback: string): string {
  const v = env[name];
  return v && isAbsolute(v) ? v : join(home, fallback);
}

function tilde(path: string, home: string): string {
  return path === home ? '~' : path.startsWith(home + '/') ? `~${path.slice(home.length)}` : path;
}

/** The ways a start-up file may name `path`: as it is, with ~, with $HOME. */
const spellings = (path: string, home: string) => [path, tilde(path, home), path.startsWith(home + '/') ? `$HOME${path.slice(home.length)}` : path];

/** What bash reads at start-up system-wide (Debian, Fedora), bash-completion's main script where packages put it. */
const BASH_SYSTEM = {
  rcFiles: ['/etc/bash.bashrc', '/etc/bashrc'],
  scripts: [
    '/usr/share/bash-completion/bash_completion',
    '/etc/bash_completion',
    '/usr/local/share/bash-completion/bash_completion',
    '/opt/homebrew/etc/profile.d/bash_completion.sh',
    '/usr/local/etc/profile.d/bash_completion.sh',
  ],
  profileScript: '/etc/profile.d/bash_completion.sh',
};

function activeLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
  } catch {
    return [];
  }
}

/** Whether a new interactive bash loads `file`: its start-up files source it, or an installed bash-completion (which loads its user folder). */
export function bashWillLoad(file: string, home: string, system: typeof BASH_SYSTEM = BASH_SYSTEM): boolean {
  const userRc = ['.bashrc', '.bash_profile', '.bash_login', '.profile'].map((f) => join(home, f));
  const forms = spellings(file, home);
  const lines = [...userRc, ...system.rcFiles].flatMap(activeLines);
  if (lines.some((l) => forms.some((f) => l.includes(f)) || l.includes('chatctl completion bash'))) return true;
  const installed = system.scripts.some((s) => existsSync(s));
  if (installed && lines.some((l) => /bash_completion/.test(l))) return true;
  // Fedora: /etc/bashrc runs every /etc/profile.d/*.sh, bash-completion's among them.
  return existsSync(system.profileScript) && system.rcFiles.flatMap(activeLines).some((l) => l.includes('/etc/profile.d/'));
}

/** The file the script goes to, and what to tell the user after writing it. */
function installTarget(shell: Shell, env: NodeJS.ProcessEnv, home: string): { file: string; notes: string[] } {
  switch (shell) {
    case 'bash': {
      // Where bash-completion's loader looks first (its __load_completion).
      const userDir =
        env.BASH_COMPLETION_USER_DIR && isAbsolute(env.BASH_COMPLETION_USER_DIR) ? env.BASH_COMPLETION_USER_DIR : join(xdg(env, 'XDG_DATA_HOME', home, '.local/share'), 'bash-completion');
      const file = join(userDir, 'completions', 'chatctl');
      if (bashWillLoad(file, home)) return { file, notes: ['bash-completion loads it in new shells the first time you complete a chatctl command.'] };
      // The script stands alone: sourcing it is enough, with or without bash-completion.
      const shown = file.startsWith(home + '/') ? `"$HOME${file.slice(home.length)}"` : `'${file.replace(/'/g, `'\\''`)}'`;
      const add = 'Your bash start-up files do not load bash-completion, so nothing would load this script. Add this line to ~/.bashrc, then open a new shell:';
      return { file, notes: [add, `    [ -f ${shown} ] && . ${shown}`] };
    }
    case 'zsh': {
      const dir = join(xdg(env, 'XDG_DATA_HOME', home, '.local/share'), 'zsh', 'site-functions');
      const shown = tilde(dir, home);
      const zshrc = join(env.ZDOTDIR && isAbsolute(env.ZDOTDIR) ? env.ZDOTDIR : home, '.zshrc');
      const forms = spellings(dir, home);
      const notes = activeLines(zshrc).some((line) => line.startsWith('fpath=') && forms.some((f) => line.includes(f)))
        ? [`${tilde(zshrc, home)} already adds ${shown} to fpath; open a new shell.`]
        : [
            `zsh finds it once that folder is on fpath. Add these lines to ${tilde(zshrc, home)} (the fpath line before any compinit already there), then open a new shell:`,
            `    fpath=(${shown} $fpath)`,
            '    autoload -Uz compinit && compinit',
          ];
      return { file: join(dir, '_chatctl'), notes };
    }
    case 'fish': {
      const dir = join(xdg(env, 'XDG_CONFIG_HOME', home, '.config'), 'fish', 'completions');
      return { file: join(dir, 'chatctl.fish'), notes: ['fish loads it in new shells.'] };
    }
  }
}

function installScript(file: string, text: string): { outcome: 'created' | 'updated' | 'unchanged'; createdDir: string | undefined } {
  let current: string | undefined;
  try {
    const st = lstatSync(file);
    if (!st.isFile()) throw usageError(`${file} exists and is not a regular file`, 'remove it, or write the script yourself with: chatctl completion SHELL > FILE');
    current = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (current === text) return { outcome: 'unchanged', createdDir: undefined };
  const createdDir = mkdirSync(dirname(file), { recursive: true });
  writeFileAtomic(file, text, { mode: 0o644 }); // an error (EACCES, ENOSPC) is the caller's exit 2
  return { outcome: current === undefined ? 'created' : 'updated', createdDir };
}

export function runCompletionInstall(opts: { shell?: Shell }, ctx: Pick<Context, 'env' | 'io'>): void {
  const fromEnv = basename(ctx.env.SHELL ?? '');
  const shell = opts.shell ?? SHELLS.find((s) => s === fromEnv);
  if (!shell) throw usageError(`cannot tell your shell from SHELL=${JSON.stringify(ctx.env.SHELL ?? '')}`, 'name it: chatctl completion install --shell bash|zsh|fish');
  const home = ctx.env.HOME && isAbsolute(ctx.env.HOME) ? ctx.env.HOME : homedir();
  const target = installTarget(shell, ctx.env, home);
  let result: ReturnType<typeof installScript>;
  try {
    result = installScript(target.file, completionScript(shell));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('E')) throw usageError(`cannot write ${target.file}: ${code}`);
    throw err;
  }
  const out: string[] = [];
  if (result.createdDir) out.push(`Created ${dirname(target.file)}`);
  if (result.outcome === 'unchanged') out.push(`The ${shell} completion script is already up to date: ${target.file}`);
  else out.push(`${result.outcome === 'created' ? 'Wrote' : 'Updated'} the ${shell} completion script: ${target.file}`);
  out.push(...target.notes);
  const onPath = (ctx.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, 'chatctl')));
  if (!onPath && !ctx.env.CHATCTL_BIN) {
    out.push('Note: chatctl is not on your PATH, and the script runs "chatctl" on each TAB: install it with npm install -g . (or npm link), or set CHATCTL_BIN to its path.');
  }
  ctx.io.stdout.write(out.join('\n') + '\n');
}
