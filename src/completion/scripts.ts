// The shell scripts `chatctl completion SHELL` prints (and completions/
// holds, byte for byte). They are thin: every TAB asks `chatctl __complete`,
// which answers from the build's copy of the command tree, so completion
// cannot drift from the real commands and flags. CHATCTL_BIN overrides the
// program they call (default: chatctl on the PATH).

import { BASH, FISH, ZSH } from './templates.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export function completionScript(shell: Shell): string {
  return shell === 'bash' ? BASH : shell === 'zsh' ? ZSH : FISH;
}

export const COMPLETION_FILES: Record<Shell, string> = {
  bash: 'chatctl.bash',
  zsh: '_chatctl',
  fish: 'chatctl.fish',
};
