// chatctl completion bash|zsh|fish
import { Argument, type Command } from 'commander';
import { examples, type App } from '../app.js';

export function registerCompletion(cmd: Command, { ctx }: App): void {
  cmd
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .addHelpText(
      'after',
      examples(
        'chatctl completion bash > ~/.local/share/bash-completion/completions/chatctl',
        'chatctl completion zsh > "${fpath[1]}/_chatctl"',
        'chatctl completion fish > ~/.config/fish/completions/chatctl.fish',
      ),
    )
    .action(async (shell: 'bash' | 'zsh' | 'fish') => {
      const { completionScript } = await import('../../completion/scripts.js');
      ctx.io.stdout.write(completionScript(shell));
    });
}
