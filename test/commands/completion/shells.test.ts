// Completion in real shells: bash with bash-completion, fish, and zsh; and
// real TAB presses in an interactive bash and zsh on a pseudo-terminal
// (test/support/pty_driver.py). .ci/run installs all three; a missing shell
// fails here rather than skipping.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sh, shellEnv, tempDir } from '../../support/run.js';
import { BIN, ROOT } from '../../support/fixtures.js';
import { PYTHON } from '../../support/python.js';
import { EndpointFacts } from '../../../src/secret/facts.js';

// The scope of the endpoints offered, and one rotation noted in it (as a rotate through chatctl leaves).
const SCOPE = { CHATCTL_BASE_URL: 'https://api.example.com', CHATCTL_ORG: 'org_1', CHATCTL_APP: 'app_1', CHATCTL_ENV: 'prod' };
const base = shellEnv();
const env: NodeJS.ProcessEnv = { ...base, ...SCOPE };
EndpointFacts.read(base.CHATCTL_CONFIG_DIR!, 'org_1/app_1/prod', 'we_billing').add({ f: 'applied', at: '2030-01-01T00:00:00.000Z', key: 'k', op: 'rotate', version: 3, endpoint: { name: 'billing' } });

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
      ['create', 'rotate', 'reactivate', 'list', 'show', 'fingerprint', 'sign', 'verify', 'trigger', 'listen', 'recover'],
      ['--mode'],
      ['overlap', 'immediate'],
      ['chat.message.reaction_added.v1', 'chat.message.reaction_removed.v1'],
      ['prod', 'staging-eu'],
      ['staging-eu'],
    ]);
  });
});

describe('fish', () => {
  it('completes secret destinations and the files after file:, the flags of the form typed, known endpoints', () => {
    expect(
      fishComplete(
        'chatctl webhooks rotate we_1 --secret-to fi',
        'chatctl webhooks rotate we_1 --secret-to file:completions/chatctl.b',
        'chatctl webhooks create --secret-to env-file:completions/_chat',
        'chatctl webhooks rotate we_1 --id',
        'chatctl webhooks rotate --from f --id',
        'chatctl webhooks rotate --from f --ne',
        'chatctl webhooks rotate we_1 --ne',
        'chatctl webhooks reactivate ',
        'chatctl webhooks rotate --journal completions/chatctl.f',
      ),
    ).toEqual([['file:'], ['file:completions/chatctl.bash'], ['env-file:completions/_chatctl'], ['--idempotency-key'], [], ['--next-manifest'], [], ['we_billing'], ['completions/chatctl.fish']]);
  });
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
      'compset() { print -r -- "COMPSET $*" }',
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

  it('secret destinations, then file names after file:; the flags of the form typed; known endpoints', () => {
    const [forms, path, jo, endpoints] = zshComplete(
      ['chatctl', 'webhooks', 'rotate', 'we_1', '--secret-to', 'e'],
      ['chatctl', 'webhooks', 'rotate', 'we_1', '--secret-to', 'file:./x'],
      ['chatctl', 'webhooks', 'rotate', '--from', 'f', '--'],
      ['chatctl', 'webhooks', 'trigger', ''],
    );
    expect(forms).toEqual(['env-file\\::PATH#NAME: the line NAME=secret in a dotenv file', 'exec\\::COMMAND: run by /bin/sh with the secret on its stdin']);
    expect(path).toEqual(['COMPSET -P file:', 'FILES']);
    const flags = jo!.map((l) => l.split(':')[0]);
    expect(flags).toEqual(expect.arrayContaining(['--journal', '--next-manifest', '--mode', '--secret-to', '--json']));
    expect(flags).not.toContain('--expected-version');
    expect(flags).not.toContain('--idempotency-key');
    expect(endpoints).toEqual(['we_billing:billing']);
  });
});

/**
 * Real TAB presses: an interactive shell on a pseudo-terminal, the script
 * loaded as a user loads it, and `chatctl` a function that prints the words
 * it was given, so Enter shows the line TAB completed. The completion
 * script calls the real chatctl through CHATCTL_BIN.
 */
async function typed(shell: 'bash' | 'zsh', setup: string, lines: string[]): Promise<string[]> {
  const cwd = tempDir('tab');
  for (const f of ['secret-a.whsec', 'fleet.ndjson']) writeFileSync(join(cwd, f), '');
  const steps = [{ expect: '$ ' }, { send: `${setup}; chatctl() { print_args "$@"; }; cd ${cwd}\r` }, { expect: '$ ' }];
  for (const line of lines) steps.push({ send: line }, { sleepMs: 0 } as never, { send: '\r' }, { expect: 'END>' });
  steps.push({ send: 'exit\r' });
  const argv = shell === 'bash' ? ['/bin/bash', '--norc', '--noprofile', '-i'] : [(await execa('sh', ['-c', 'command -v zsh'])).stdout.trim(), '-f', '-i'];
  const spec = {
    argv,
    env: { ...env, CHATCTL_BIN: BIN, PS1: '$ ', PROMPT: '$ ', TERM: 'xterm', HISTFILE: '/dev/null' },
    cwd: ROOT,
    timeoutMs: 60_000,
    stepTimeoutMs: 20_000,
    cols: 200,
    rows: 40,
    steps,
  };
  const r = await execa(PYTHON, [join(ROOT, 'test', 'support', 'pty_driver.py')], { input: JSON.stringify(spec), timeout: 70_000, reject: false });
  const out = JSON.parse(r.stdout) as { output: string; failedStep: number | null; error: string | null };
  const text = out.output.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\r/g, '');
  if (out.failedStep !== null) throw new Error(`${out.error}\n--- terminal ---\n${text}`);
  return [...text.matchAll(/<ARGS (.*?) END>/g)].map((m) => m[1]!);
}
// The format is split so that the echo of this line is not taken for a result.
const PRINT_ARGS = `print_args() { printf '<%s %s END>\\n' ARGS "$*"; }`;
const TAB = '\t';

describe('TAB on a terminal', () => {
  it('bash: a secret destination then its file (bash splits file:PATH at the colon), the flags of the form, a known endpoint', async () => {
    const lines = await typed('bash', `${PRINT_ARGS}; source completions/chatctl.bash`, [
      `chatctl webhooks rotate we_1 --secret-to fi${TAB}sec${TAB}`,
      `chatctl webhooks rotate we_1 --secret-to=file:sec${TAB}`,
      `chatctl webhooks rotate --from fle${TAB}--ne${TAB}`,
      `chatctl webhooks rotate we_1 --ne${TAB}`,
      `chatctl webhooks rotate we_b${TAB}`,
    ]);
    expect(lines).toEqual([
      'webhooks rotate we_1 --secret-to file:secret-a.whsec',
      'webhooks rotate we_1 --secret-to=file:secret-a.whsec',
      'webhooks rotate --from fleet.ndjson --next-manifest',
      'webhooks rotate we_1 --ne',
      'webhooks rotate we_billing',
    ]);
  });

  it('zsh: the same through compinit', async () => {
    const setup = `${PRINT_ARGS}; fpath=(${join(ROOT, 'completions')} $fpath); autoload -U compinit; compinit -u -D`;
    const lines = await typed('zsh', setup, [`chatctl webhooks rotate we_1 --secret-to fi${TAB}sec${TAB}`, `chatctl webhooks rotate --from fle${TAB}--ne${TAB}`, `chatctl webhooks rotate we_b${TAB}`]);
    expect(lines).toEqual(['webhooks rotate we_1 --secret-to file:secret-a.whsec', 'webhooks rotate --from fleet.ndjson --next-manifest', 'webhooks rotate we_billing']);
  });
});
