// The completion engine, against the live command tree.
import { describe, expect, it } from 'vitest';
import { complete, formatCompletion } from '../../../src/completion/complete.js';
import { describeCommand } from '../../../src/meta/tree.js';
import { configuredProgram } from '../../../src/app/cli.js';
import { EVENT_TYPES } from '../../../src/api/spec.js';
import { fakeContext, fakeIO } from '../../support/fakes.js';

const tree = describeCommand(configuredProgram(fakeContext({ io: fakeIO() })));
const values = (words: string[], current: string) => complete(tree, words, current, () => ['prod', 'staging-eu']).candidates.map((c) => c.value);

describe('completion engine', () => {
  it('completes commands at every level, aliases included as paths', () => {
    expect(values([], '')).toEqual(['webhooks', 'profile', 'auth', 'exit-codes', 'completion', 'doctor', 'sandbox', 'version']);
    expect(values(['webhooks'], 'r')).toEqual(['rotate', 'reactivate', 'recover']);
    expect(values(['webhook'], 'c')).toEqual(['create']);
    expect(values(['profile'], '')).toEqual(['list', 'show', 'set', 'use', 'remove']);
  });
  it('completes the flags of the command and the global ones', () => {
    const flags = values(['webhooks', 'rotate', 'we_1'], '--');
    for (const f of ['--expected-version', '--mode', '--idempotency-key', '--secret-file', '--force', '--yes', '--json', '--profile', '--dry-run', '--help']) expect(flags).toContain(f);
    expect(flags).not.toContain('--name');
    expect(values(['webhooks', 'create'], '--e')).toEqual(['--event', '--escrow', '--escrow-file', '--escrow-dir', '--env']);
  });
  it('completes --mode values and shell names', () => {
    expect(values(['webhooks', 'rotate', 'we_1', '--mode'], '')).toEqual(['overlap', 'immediate']);
    expect(values(['webhooks', 'rotate', 'we_1', '--mode'], 'im')).toEqual(['immediate']);
    // `completion` takes a shell or its `install` subcommand, whose --shell completes too.
    expect(values(['completion'], '')).toEqual(['install', 'bash', 'zsh', 'fish']);
    expect(values(['completion'], 'z')).toEqual(['zsh']);
    expect(values(['completion', 'install', '--shell'], '')).toEqual(['bash', 'zsh', 'fish']);
  });
  it('completes --event values filtered by what is typed, comma lists too', () => {
    expect(values(['webhooks', 'create', '--event'], '')).toEqual([...EVENT_TYPES]);
    expect(values(['webhooks', 'create', '--event'], 'chat.message.reply_')).toEqual(['chat.message.reply_created.v1', 'chat.message.reply_updated.v1', 'chat.message.reply_deleted.v1']);
    expect(values(['webhooks', 'create', '--event'], 'chat.channel.created.v1,chat.channel.')).toEqual(['chat.channel.created.v1,chat.channel.updated.v1']);
    expect(values(['webhooks', 'create'], '--event=chat.message.d')).toEqual(['--event=chat.message.deleted.v1']);
  });
  it('completes profile names for --profile and for profile commands', () => {
    expect(values(['--profile'], '')).toEqual(['prod', 'staging-eu']);
    expect(values(['webhooks', 'rotate', '--profile'], 'st')).toEqual(['staging-eu']);
    expect(values(['profile', 'use'], '')).toEqual(['prod', 'staging-eu']);
    expect(values(['profile', 'remove'], 'p')).toEqual(['prod']);
  });
  it('skips option values while walking, and asks for files after --secret-file', () => {
    expect(values(['--profile', 'prod', 'webhooks'], 'c')).toEqual(['create']);
    const c = complete(tree, ['webhooks', 'create', '--secret-file'], '', () => []);
    expect(c.files).toBe(true);
    expect(formatCompletion(c, true)).toBe(':file\n');
    // rotate --from's next manifest: the flag, then a file name.
    expect(values(['webhooks', 'rotate', '--from', 'fleet.ndjson'], '--next')).toEqual(['--next-manifest']);
    expect(complete(tree, ['webhooks', 'rotate', '--from', 'fleet.ndjson', '--next-manifest'], '', () => []).files).toBe(true);
  });
  it('completes the signing commands: their flags, a file for the body, event types for trigger', () => {
    expect(values(['webhooks'], 's')).toEqual(['sign']);
    expect(values(['webhooks', 'verify'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--header', '--tolerance']));
    expect(values(['webhooks', 'sign'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--id', '--timestamp']));
    expect(values(['webhooks'], 'l')).toEqual(['listen']);
    expect(values(['webhooks', 'listen'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--port', '--host', '--forward-to', '--tolerance']));
    // listen and verify take --secret-file more than once: the second asks for a file too.
    expect(complete(tree, ['webhooks', 'listen', '--secret-file', 'old.whsec', '--secret-file'], '', () => []).files).toBe(true);
    expect(complete(tree, ['webhooks', 'listen', '--port'], '', () => []).files).toBe(false);
    for (const cmd of ['sign', 'verify']) expect(complete(tree, ['webhooks', cmd, '--secret-file', 's'], '', () => []).files).toBe(true);
    for (const cmd of ['sign', 'verify', 'listen']) expect(complete(tree, ['webhooks', cmd, '--secret-file'], '', () => []).files).toBe(true);
    expect(values(['webhooks', 'trigger', 'we_1', '--event'], 'chat.message.c')).toEqual(['chat.message.created.v1']);
  });
  it('offers nothing for free-form values', () => {
    expect(values(['webhooks', 'rotate'], '')).toEqual([]);
    expect(values(['webhooks', 'create', '--name'], '')).toEqual([]);
  });
});

describe('focused command trees', () => {
  it('a run builds only the group its argv names; help is the same as from the full tree', async () => {
    const { configuredProgram, focusOf } = await import('../../../src/app/cli.js');
    expect(focusOf(['--profile', 'webhooks', 'profile', 'list'])).toBe('profile');
    expect(focusOf(['--json', 'webhook', 'rotate'])).toBe('webhooks');
    expect(focusOf(['help', 'webhooks'])).toBeUndefined();
    expect(focusOf(['--', 'webhooks'])).toBeUndefined();
    const render = (focus: string | undefined, path: string[]) => {
      let out = '';
      const io = fakeIO();
      io.stdout.write = (s: string) => void (out += s);
      let cmd = configuredProgram(fakeContext({ io }), focus);
      for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
      cmd.outputHelp();
      return out;
    };
    const full = configuredProgram(fakeContext({ io: fakeIO() }));
    for (const group of full.commands.filter((c) => c.name() !== 'help')) {
      const paths = [[group.name()], ...group.commands.map((c) => [group.name(), c.name()])];
      for (const path of paths) expect(render(group.name(), path)).toBe(render(undefined, path));
    }
    // The stubs stay stubs: no subcommands, no options.
    const focused = configuredProgram(fakeContext({ io: fakeIO() }), 'auth');
    expect(focused.commands.find((c) => c.name() === 'webhooks')!.commands).toHaveLength(0);
    expect(focused.commands.find((c) => c.name() === 'auth')!.commands.map((c) => c.name())).toEqual(['login', 'logout', 'status', 'token']);
  });
});
