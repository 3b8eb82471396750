// `chatctl completion install` in a fresh temporary HOME, then real
// interactive bash (with bash-completion, from Debian's default ~/.bashrc),
// zsh and fish on a pseudo-terminal completing `chatctl webh<TAB>` to
// `webhooks`. The manual install lines of docs/completion.md get the same treatment.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { runInProcess } from '../../support/in-process.js';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BIN, ROOT } from '../../support/fixtures.js';
import { completionScript } from '../../../src/completion/install.js';
import { execa } from 'execa';
import { PYTHON } from '../../support/python.js';
import { scaled } from '../../support/slowdown.js';

const DRIVER = join(ROOT, 'test', 'support', 'pty_driver.py');
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const SHELL_PATHS = {
  bash: '/bin/bash',
  zsh: execFileSync('sh', ['-c', 'command -v zsh'], { encoding: 'utf8' }).trim(),
  fish: execFileSync('sh', ['-c', 'command -v fish'], { encoding: 'utf8' }).trim(),
};
type Shell = keyof typeof SHELL_PATHS;

/** A new user: an empty HOME but for Debian's default ~/.bashrc, and chatctl on PATH. */
function freshHome() {
  const root = mkdtempSync(join(tmpdir(), 'chatctl-install-'));
  temps.push(root);
  const home = join(root, 'home');
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(join(root, 'bin'));
  symlinkSync(BIN, join(root, 'bin', 'chatctl'));
  copyFileSync('/etc/skel/.bashrc', join(home, '.bashrc'));
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${join(root, 'bin')}:${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    TERM: 'xterm',
    LANG: 'C.UTF-8',
  };
  return { home, env };
}

/** chatctl in-process (through execute), as a child would run it here: its stdout, or a failure carrying stderr and the exit status. */
async function chatctl(args: string[], env: Record<string, string>): Promise<string> {
  const r = await runInProcess(args, { env, cwd: env.HOME! });
  if (r.exitCode !== 0) throw Object.assign(new Error(r.stderr), { stderr: r.stderr, status: r.exitCode });
  return r.stdout;
}

/** A fixed prompt, set after the user's own start-up files, so the terminal session knows when the shell is ready. */
function setPrompt(shell: Shell, home: string): void {
  if (shell === 'bash') appendFileSync(join(home, '.bashrc'), "\nPS1='READY> '\n");
  if (shell === 'zsh') appendFileSync(join(home, '.zshrc'), "\nPROMPT='READY> '\n");
  if (shell === 'fish') {
    mkdirSync(join(home, '.config', 'fish', 'functions'), { recursive: true });
    writeFileSync(join(home, '.config', 'fish', 'functions', 'fish_prompt.fish'), "function fish_prompt\n    echo -n 'READY> '\nend\n");
  }
}

/**
 * Types `chatctl webh` and TAB in an interactive shell on a pseudo-terminal;
 * returns what the terminal showed from the prompt on. Waits for `webhooks`;
 * or, for the control, types a command after the TAB and waits for its
 * output: the line editor finishes a TAB (and whatever completion it runs)
 * before it reads the next keys, so once that output is there, anything the
 * TAB would have shown is there before it.
 */
async function tabComplete(shell: Shell, env: Record<string, string>, expectCompletion = true): Promise<string> {
  const spec = {
    argv: [SHELL_PATHS[shell], '-i'],
    env: { ...env, SHELL: SHELL_PATHS[shell] },
    cwd: env.HOME,
    timeoutMs: scaled(20_000),
    stepTimeoutMs: scaled(10_000),
    cols: 120,
    rows: 30,
    steps: [
      { expect: 'READY> ' },
      { send: 'chatctl webh' },
      { sleepMs: 300 },
      { send: '\t' },
      ...(expectCompletion ? [{ expect: 'chatctl webhooks' }, { send: '\u0015' }, { sleepMs: 200 }] : [{ send: '\u0015' }, { send: 'echo "TAB-DONE-$((6*7))"\r' }, { expect: 'TAB-DONE-42' }]),
      { send: 'exit\r' },
    ],
  };
  const { stdout: out } = await execa(PYTHON, [DRIVER], { input: JSON.stringify(spec), timeout: scaled(30_000) });
  const r = JSON.parse(out) as { output: string; failedStep: number | null; error: string | null };
  if (r.failedStep !== null) throw new Error(`${shell}: ${r.error}\n${r.output}`);
  // eslint-disable-next-line no-control-regex
  const text = r.output.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g, '');
  return text.slice(text.indexOf('READY> '));
}

describe('completion install in a fresh HOME', () => {
  it.each([
    ['bash', '.local/share/bash-completion/completions/chatctl'],
    ['zsh', '.local/share/zsh/site-functions/_chatctl'],
    ['fish', '.config/fish/completions/chatctl.fish'],
  ] as const)('%s: creates the folders, writes the script, says so; a second run is up to date', async (shell, rel) => {
    const { home, env } = freshHome();
    const out = await chatctl(['completion', 'install'], { ...env, SHELL: SHELL_PATHS[shell] });
    const file = join(home, rel);
    expect(readFileSync(file, 'utf8')).toBe(completionScript(shell));
    expect(statSync(file).mode & 0o777).toBe(0o644);
    expect(out).toContain(`Created ${dirname(file)}\n`);
    expect(out).toContain(`Wrote the ${shell} completion script: ${file}\n`);
    expect(out).not.toContain('not on your PATH');
    const again = await chatctl(['completion', 'install', '--shell', shell], env);
    expect(again).toContain(`The ${shell} completion script is already up to date: ${file}\n`);
    expect(again).not.toContain('Created');
    // An older script is replaced, and said to be.
    writeFileSync(file, '# old\n');
    expect(await chatctl(['completion', 'install', '--shell', shell], env)).toContain(`Updated the ${shell} completion script: ${file}\n`);
    expect(readFileSync(file, 'utf8')).toBe(completionScript(shell));
  });

  it('honours XDG_DATA_HOME, XDG_CONFIG_HOME and BASH_COMPLETION_USER_DIR', async () => {
    const { home, env } = freshHome();
    await chatctl(['completion', 'install', '--shell', 'bash'], { ...env, XDG_DATA_HOME: join(home, 'data') });
    expect(existsSync(join(home, 'data', 'bash-completion', 'completions', 'chatctl'))).toBe(true);
    await chatctl(['completion', 'install', '--shell', 'bash'], { ...env, BASH_COMPLETION_USER_DIR: join(home, 'bc') });
    expect(existsSync(join(home, 'bc', 'completions', 'chatctl'))).toBe(true);
    await chatctl(['completion', 'install', '--shell', 'fish'], { ...env, XDG_CONFIG_HOME: join(home, 'conf') });
    expect(existsSync(join(home, 'conf', 'fish', 'completions', 'chatctl.fish'))).toBe(true);
  });

  it('zsh: prints the ~/.zshrc lines, and says when ~/.zshrc already has them', async () => {
    const { home, env } = freshHome();
    const out = await chatctl(['completion', 'install', '--shell', 'zsh'], env);
    expect(out).toContain('\n    fpath=(~/.local/share/zsh/site-functions $fpath)\n    autoload -Uz compinit && compinit\n');
    appendFileSync(join(home, '.zshrc'), 'fpath=(~/.local/share/zsh/site-functions $fpath)\n');
    expect(await chatctl(['completion', 'install', '--shell', 'zsh'], env)).toContain('~/.zshrc already adds ~/.local/share/zsh/site-functions to fpath; open a new shell.\n');
  });

  it('without --shell or a known $SHELL: exit 2 naming --shell; a path that is a folder: exit 2', async () => {
    const { home, env } = freshHome();
    let err = '';
    try {
      await chatctl(['completion', 'install'], { ...env, SHELL: '/bin/tcsh' });
    } catch (e) {
      err = String((e as { stderr: string; status: number }).stderr);
      expect((e as { status: number }).status).toBe(2);
    }
    expect(err).toBe('chatctl: error: cannot tell your shell from SHELL="/bin/tcsh"\n  hint: name it: chatctl completion install --shell bash|zsh|fish\n');
    mkdirSync(join(home, '.config', 'fish', 'completions', 'chatctl.fish'), { recursive: true });
    await expect(chatctl(['completion', 'install', '--shell', 'fish'], env)).rejects.toThrow(/is not a regular file/);
  });
});

// Every session has a HOME of its own: they run side by side.
describe.concurrent('real shells complete chatctl webh<TAB> after completion install', () => {
  it.each(['bash', 'zsh', 'fish'] as const)('%s', async (shell) => {
    const { home, env } = freshHome();
    const printed = await chatctl(['completion', 'install', '--shell', shell], env);
    if (shell === 'zsh') {
      // What the user is told to add to ~/.zshrc, added.
      const lines = printed
        .split('\n')
        .filter((l) => l.startsWith('    '))
        .map((l) => l.trim());
      expect(lines).toHaveLength(2);
      writeFileSync(join(home, '.zshrc'), lines.join('\n') + '\n');
    }
    setPrompt(shell, home);
    expect(await tabComplete(shell, env)).toMatch(/chatctl webhooks/);
  });

  it('without it, the same keystrokes complete nothing (the check can fail)', async () => {
    const { home, env } = freshHome();
    writeFileSync(join(home, '.zshrc'), 'autoload -Uz compinit && compinit\n');
    setPrompt('bash', home);
    setPrompt('zsh', home);
    const [bash, zsh] = await Promise.all([tabComplete('bash', env, false), tabComplete('zsh', env, false)]);
    for (const shown of [bash, zsh]) {
      expect(shown).toContain('TAB-DONE-42');
      expect(shown).not.toMatch(/webhooks/);
    }
  });
});

describe.concurrent("docs/completion.md's manual install lines, pasted in a fresh HOME", () => {
  const section = readFileSync(join(ROOT, 'docs', 'completion.md'), 'utf8');
  const block = (lang: string) => {
    const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section);
    if (!m) throw new Error(`no \`\`\`${lang} block in docs/completion.md`);
    return m[1]!;
  };

  // The lines must leave a HOME just as `completion install` (and, for zsh,
  // the two ~/.zshrc lines it prints) leaves it: that HOME completes on a TAB
  // in a real shell (above), so this one does too, without a terminal
  // session of its own.
  it.each([
    ['bash', '.local/share/bash-completion/completions/chatctl'],
    ['zsh', '.local/share/zsh/site-functions/_chatctl'],
    ['fish', '.config/fish/completions/chatctl.fish'],
  ] as const)('%s: the lines run in that shell without error and leave what `completion install` leaves', async (shell, rel) => {
    const pasted = freshHome();
    await execa(SHELL_PATHS[shell], shell === 'fish' ? ['--no-config', '-c', block(shell)] : ['-c', block(shell)], {
      env: { ...pasted.env, SHELL: SHELL_PATHS[shell] },
      extendEnv: false,
      cwd: pasted.home,
      timeout: 20_000,
    });
    const installed = freshHome();
    const printed = await chatctl(['completion', 'install', '--shell', shell], installed.env);
    expect(printed).toContain(`: ${join(installed.home, rel)}\n`);
    expect(readFileSync(join(pasted.home, rel), 'utf8')).toBe(readFileSync(join(installed.home, rel), 'utf8'));
    if (shell === 'zsh') {
      const lines = printed
        .split('\n')
        .filter((l) => l.startsWith('    '))
        .map((l) => l.trim());
      expect(readFileSync(join(pasted.home, '.zshrc'), 'utf8')).toBe(lines.join('\n') + '\n');
    }
  });
});

describe('completion install for bash checks that bash will load what it writes', () => {
  const system = (dir: string, rc = '', script = true) => {
    writeFileSync(join(dir, 'bash.bashrc'), rc);
    if (script) writeFileSync(join(dir, 'bash_completion'), '# bash-completion\n');
    return { rcFiles: [join(dir, 'bash.bashrc')], scripts: [join(dir, 'bash_completion')], profileScript: join(dir, 'profile.d-bash_completion.sh') };
  };

  it('decides from the user rc files, the system rc and whether bash-completion is installed', async () => {
    const { bashWillLoad } = await import('../../../src/completion/install.js');
    const { home } = freshHome(); // Debian's default ~/.bashrc: sources bash-completion
    const dir = mkdtempSync(join(tmpdir(), 'chatctl-bashsys-'));
    temps.push(dir);
    const file = join(home, '.local/share/bash-completion/completions/chatctl');
    expect(bashWillLoad(file, home, system(dir))).toBe(true);
    const noScript = mkdtempSync(join(tmpdir(), 'chatctl-bashsys-'));
    temps.push(noScript);
    expect(bashWillLoad(file, home, system(noScript, '', false))).toBe(false); // the package is not installed: the line loads nothing
    writeFileSync(join(home, '.bashrc'), '# . /usr/share/bash-completion/bash_completion\nalias ll="ls -l"\n');
    expect(bashWillLoad(file, home, system(dir))).toBe(false); // commented out
    expect(bashWillLoad(file, home, system(dir, 'if [ -f /usr/share/bash-completion/bash_completion ]; then . /usr/share/bash-completion/bash_completion; fi\n'))).toBe(true);
    writeFileSync(join(home, '.bashrc'), '[ -f "$HOME/.local/share/bash-completion/completions/chatctl" ] && . "$HOME/.local/share/bash-completion/completions/chatctl"\n');
    expect(bashWillLoad(file, home, system(noScript, '', false))).toBe(true); // sourced directly
  });

  it('when nothing loads bash-completion, prints the one line for ~/.bashrc; with it added, TAB completes in a real bash', async () => {
    const { home, env } = freshHome();
    writeFileSync(join(home, '.bashrc'), '# a .bashrc that never loads bash-completion\n');
    const printed = await chatctl(['completion', 'install', '--shell', 'bash'], env);
    // Whatever the machine's /etc/bash.bashrc does, what install says is what makes TAB work.
    const lines = printed
      .split('\n')
      .filter((l) => l.startsWith('    '))
      .map((l) => l.trim());
    const { bashWillLoad } = await import('../../../src/completion/install.js');
    if (bashWillLoad(join(home, '.local/share/bash-completion/completions/chatctl'), home)) expect(lines).toEqual([]);
    else {
      expect(printed).toContain('do not load bash-completion');
      expect(lines).toEqual(['[ -f "$HOME/.local/share/bash-completion/completions/chatctl" ] && . "$HOME/.local/share/bash-completion/completions/chatctl"']);
      appendFileSync(join(home, '.bashrc'), lines[0] + '\n');
      expect(await chatctl(['completion', 'install', '--shell', 'bash'], env)).not.toContain('do not load');
    }
    setPrompt('bash', home);
    expect(await tabComplete('bash', env)).toMatch(/chatctl webhooks/);
  });
});
