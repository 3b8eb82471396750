// Completion in real shells: bash with bash-completion, fish, and zsh.
// .ci/run installs all three; a missing shell fails here rather than skipping.
import { describe, expect, it } from 'vitest';
import { sh, shellEnv } from '../support/run.js';

const env = shellEnv();

function bashComplete(words: string[]): string[] {
  const script = [
    'source /usr/share/bash-completion/bash_completion',
    'source completions/chatctl.bash',
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    `COMP_LINE='${words.join(' ')}'`,
    'COMP_POINT=${#COMP_LINE}',
    '_chatctl',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  return sh('bash', ['-c', script], env).split('\n').filter(Boolean);
}

function fishComplete(line: string): string[] {
  return sh('fish', ['--no-config', '-c', `source completions/chatctl.fish; complete -C '${line}'`], env)
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0]!);
}

describe('bash', () => {
  it('completes commands, flags, modes, event types and profile names', () => {
    expect(bashComplete(['chatctl', 'web'])).toEqual(['webhooks']);
    expect(bashComplete(['chatctl', 'webhooks', ''])).toEqual(['create', 'rotate', 'reactivate', 'fingerprint']);
    expect(bashComplete(['chatctl', 'webhooks', 'rotate', 'we_1', '--mo'])).toEqual(['--mode']);
    expect(bashComplete(['chatctl', 'webhooks', 'rotate', 'we_1', '--mode', ''])).toEqual(['overlap', 'immediate']);
    expect(bashComplete(['chatctl', 'webhooks', 'create', '--event', 'chat.message.reaction_'])).toEqual([
      'chat.message.reaction_added.v1',
      'chat.message.reaction_removed.v1',
    ]);
    expect(bashComplete(['chatctl', '--profile', ''])).toEqual(['prod', 'staging-eu']);
    expect(bashComplete(['chatctl', 'profile', 'use', 'st'])).toEqual(['staging-eu']);
  });
});

describe('fish', () => {
  it('completes commands, flags, modes, event types and profile names', () => {
    expect(fishComplete('chatctl webhooks ')).toEqual(expect.arrayContaining(['create', 'rotate', 'reactivate']));
    expect(fishComplete('chatctl webhooks rotate we_1 --mode ')).toEqual(['immediate', 'overlap']);
    expect(fishComplete('chatctl webhooks rotate we_1 --y')).toEqual(['--yes']);
    expect(fishComplete('chatctl webhooks create --event chat.channel_membership.re')).toEqual(['chat.channel_membership.reactivated.v1', 'chat.channel_membership.removed.v1']);
    expect(fishComplete('chatctl profile show ')).toEqual(['prod', 'staging-eu']);
  });
});

describe('zsh', () => {
  it('loads through compinit without errors, from fpath and by source', () => {
    const out = sh(
      'zsh',
      ['-f', '-c', 'fpath=(completions $fpath); autoload -U compinit; compinit -u -D; print -r -- ${_comps[chatctl]}; source completions/_chatctl; print -r -- ${_comps[chatctl]}'],
      env,
    );
    expect(out.trim().split('\n')).toEqual(['_chatctl', '_chatctl']);
  });
  function zshComplete(words: string[]): string[] {
    // The real _chatctl function in real zsh, with the completion system's
    // inputs (words, CURRENT) set and its output builtins captured.
    const script = [
      'compdef() { : }',
      '_describe() { print -rl -- "${(@P)4}" }',
      '_files() { print -r -- FILES }',
      'source completions/_chatctl',
      `words=(${words.map((w) => `'${w}'`).join(' ')})`,
      `CURRENT=${words.length}`,
      '_chatctl',
    ].join('\n');
    return sh('zsh', ['-f', '-c', script], env).split('\n').filter(Boolean);
  }

  it('its completion function offers the real candidates', () => {
    expect(zshComplete(['chatctl', 'webhooks', 'rotate', 'we_1', '--mode', ''])).toEqual(['overlap', 'immediate']);
    expect(zshComplete(['chatctl', 'webhooks', 'r'])[0]).toMatch(/^rotate:rotate the signing secret/);
    expect(zshComplete(['chatctl', '--profile', ''])).toEqual(['prod', 'staging-eu']);
    expect(zshComplete(['chatctl', 'webhooks', 'create', '--event', 'chat.message.de'])).toEqual(['chat.message.deleted.v1']);
    expect(zshComplete(['chatctl', 'webhooks', 'create', '--secret-file', ''])).toEqual(['FILES']);
  });
});
