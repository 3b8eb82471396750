// Completion in real shells: bash with bash-completion, fish, and zsh.
// .ci/run installs all three; a missing shell fails here rather than skipping.
import { describe, expect, it } from 'vitest';
import { sh, shellEnv } from '../../support/run.js';

const env = shellEnv();

const END = '--chatctl-test-end--';
/** Each case's output lines: one shell process runs them all, each ended by END. */
const splitCases = (out: string): string[][] =>
  out
    .split(`${END}\n`)
    .slice(0, -1)
    .map((chunk) => chunk.split('\n').filter(Boolean));

/** `_chatctl` in bash (with bash-completion loaded once) for each word list: the candidates of each. */
function bashComplete(...cases: string[][]): string[][] {
  const script = [
    'source /usr/share/bash-completion/bash_completion',
    'source completions/chatctl.bash',
    ...cases.map((words) =>
      [
        'COMPREPLY=()',
        `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
        `COMP_CWORD=${words.length - 1}`,
        `COMP_LINE='${words.join(' ')}'`,
        'COMP_POINT=${#COMP_LINE}',
        '_chatctl',
        '[ ${#COMPREPLY[@]} -gt 0 ] && printf "%s\\n" "${COMPREPLY[@]}"',
        `echo ${END}`,
      ].join('\n'),
    ),
  ].join('\n');
  return splitCases(sh('bash', ['-c', script], env));
}

/** fish's `complete -C` for each line, in one fish process: the candidates of each. */
function fishComplete(...lines: string[]): string[][] {
  const script = ['source completions/chatctl.fish', ...lines.map((line) => `complete -C '${line}'; echo ${END}`)].join('\n');
  return splitCases(sh('fish', ['--no-config', '-c', script], env)).map((c) => c.map((l) => l.split('\t')[0]!));
}

describe('bash', () => {
  it('completes commands, flags, modes, event types and profile names', () => {
    expect(
      bashComplete(
        ['chatctl', 'web'],
        ['chatctl', 'webhooks', ''],
        ['chatctl', 'webhooks', 'rotate', 'we_1', '--mo'],
        ['chatctl', 'webhooks', 'rotate', 'we_1', '--mode', ''],
        ['chatctl', 'webhooks', 'create', '--event', 'chat.message.reaction_'],
        ['chatctl', '--profile', ''],
        ['chatctl', 'profile', 'use', 'st'],
      ),
    ).toEqual([
      ['webhooks'],
      ['create', 'rotate', 'reactivate', 'fingerprint', 'sign', 'verify', 'trigger', 'listen', 'recover'],
      ['--mode'],
      ['overlap', 'immediate'],
      ['chat.message.reaction_added.v1', 'chat.message.reaction_removed.v1'],
      ['prod', 'staging-eu'],
      ['staging-eu'],
    ]);
  });
});

describe('fish', () => {
  it('completes commands, flags, modes, event types and profile names', () => {
    const [commands, ...rest] = fishComplete(
      'chatctl webhooks ',
      'chatctl webhooks rotate we_1 --mode ',
      'chatctl webhooks rotate we_1 --y',
      'chatctl webhooks create --event chat.channel_membership.re',
      'chatctl profile show ',
    );
    expect(commands).toEqual(expect.arrayContaining(['create', 'rotate', 'reactivate']));
    expect(rest).toEqual([['immediate', 'overlap'], ['--yes'], ['chat.channel_membership.reactivated.v1', 'chat.channel_membership.removed.v1'], ['prod', 'staging-eu']]);
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
  /** The real _chatctl function in real zsh, with the completion system's inputs (words, CURRENT) set and its output builtins captured; one zsh for all cases. */
  function zshComplete(...cases: string[][]): string[][] {
    const script = [
      'compdef() { : }',
      '_describe() { print -rl -- "${(@P)4}" }',
      '_files() { print -r -- FILES }',
      'source completions/_chatctl',
      ...cases.map((words) => [`words=(${words.map((w) => `'${w}'`).join(' ')})`, `CURRENT=${words.length}`, '_chatctl', `print -r -- ${END}`].join('\n')),
    ].join('\n');
    return splitCases(sh('zsh', ['-f', '-c', script], env));
  }

  it('its completion function offers the real candidates', () => {
    const [mode, r, profile, event, file] = zshComplete(
      ['chatctl', 'webhooks', 'rotate', 'we_1', '--mode', ''],
      ['chatctl', 'webhooks', 'r'],
      ['chatctl', '--profile', ''],
      ['chatctl', 'webhooks', 'create', '--event', 'chat.message.de'],
      ['chatctl', 'webhooks', 'create', '--secret-file', ''],
    );
    expect(mode).toEqual(['overlap', 'immediate']);
    expect(r![0]).toMatch(/^rotate:rotate the signing secret/);
    expect(profile).toEqual(['prod', 'staging-eu']);
    expect(event).toEqual(['chat.message.deleted.v1']);
    expect(file).toEqual(['FILES']);
  });
});
