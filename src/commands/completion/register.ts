import { Argument, Option, type Command } from 'commander';
import { examples, oneOf, type Factory } from '../app.js';

const SHELLS = ['bash', 'zsh', 'fish'];

export function registerCompletion(cmd: Command, f: Factory): void {
  const { ctx } = f;
  cmd
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS).argParser(oneOf('shell', SHELLS)))
    .addHelpText(
      'after',
      examples(
        'chatctl completion install',
        'mkdir -p ~/.local/share/bash-completion/completions && chatctl completion bash > ~/.local/share/bash-completion/completions/chatctl',
        'source <(chatctl completion zsh)    # in ~/.zshrc, after compinit',
        'chatctl completion fish | source',
      ),
    )
    .action(async (shell: 'bash' | 'zsh' | 'fish') => ctx.io.stdout.write((await import('../../completion/install.js')).completionScript(shell)));
  cmd
    .command('install')
    .description('write the completion script where your shell finds it (for this user), creating folders; says what it did')
    .addOption(new Option('--shell <shell>', 'bash, zsh or fish (default: from $SHELL)').choices(SHELLS).argParser(oneOf('--shell', SHELLS)))
    .addHelpText(
      'after',
      examples('chatctl completion install', 'chatctl completion install --shell zsh') +
        `
Where it goes:
  bash  \${XDG_DATA_HOME:-~/.local/share}/bash-completion/completions/chatctl
        (bash-completion loads it on first use; $BASH_COMPLETION_USER_DIR wins;
        when your bash start-up files do not load bash-completion, the
        line to add to ~/.bashrc is printed)
  zsh   \${XDG_DATA_HOME:-~/.local/share}/zsh/site-functions/_chatctl, and the
        line to add to ~/.zshrc is printed
  fish  \${XDG_CONFIG_HOME:-~/.config}/fish/completions/chatctl.fish
Running it again says the script is already up to date, or replaces an old one.
`,
    )
    .action(async (opts: { shell?: 'bash' | 'zsh' | 'fish' }) => (await import('../../completion/install.js')).runCompletionInstall(opts, ctx));
}
