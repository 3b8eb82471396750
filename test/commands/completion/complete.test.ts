// The completion engine, against the live command tree.
import { describe, expect, it } from 'vitest';
import { bashWords, complete, endpointsFor, formatCompletion, knownEndpoints, runComplete, type Sources } from '../../../src/completion/complete.js';
import { EndpointFacts } from '../../../src/secret/facts.js';

/** What a create or rotate answered, as custody adds it to the endpoint's facts. */
const seen = (cfg: string, scope: string, id: string, version: number, name: string | null = null) =>
  EndpointFacts.read(cfg, scope, id).add({ f: 'applied', at: '2030-01-01T00:00:00.000Z', key: `k-${id}`, op: 'rotate', version, endpoint: { name } });
import { type CommandNode, describeCommand } from '../../../src/meta/tree.js';
import { tempDir } from '../../support/run.js';
import { configuredProgram } from '../../../src/app/cli.js';
import { EVENT_TYPES } from '../../../src/api/schemas.js';
import { fakeContext, fakeIO } from '../../support/fakes.js';

const tree = describeCommand(configuredProgram(fakeContext({ io: fakeIO() })));
const NONE: Sources = { profiles: () => [], endpoints: () => [] };
const SOURCES: Sources = { profiles: () => ['prod', 'staging-eu'], endpoints: () => [] };
const values = (words: string[], current: string, sources = SOURCES) => complete(tree, words, current, sources).candidates.map((c) => c.value);

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
    const c = complete(tree, ['webhooks', 'create', '--secret-file'], '', NONE);
    expect(c.files).toBe(true);
    expect(formatCompletion(c, true)).toBe(':file\n');
    // rotate --from's next manifest: the flag, then a file name.
    expect(values(['webhooks', 'rotate', '--from', 'fleet.ndjson'], '--next')).toEqual(['--next-manifest']);
    expect(complete(tree, ['webhooks', 'rotate', '--from', 'fleet.ndjson', '--next-manifest'], '', NONE).files).toBe(true);
  });
  it('completes the signing commands: their flags, a file for the body, event types for trigger', () => {
    expect(values(['webhooks'], 's')).toEqual(['show', 'sign']);
    expect(values(['webhooks', 'verify'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--header', '--tolerance']));
    expect(values(['webhooks', 'sign'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--id', '--timestamp']));
    expect(values(['webhooks'], 'l')).toEqual(['list', 'listen']);
    expect(values(['webhooks', 'listen'], '--')).toEqual(expect.arrayContaining(['--secret-file', '--port', '--host', '--forward-to', '--tolerance']));
    // listen and verify take --secret-file more than once: the second asks for a file too.
    expect(complete(tree, ['webhooks', 'listen', '--secret-file', 'old.whsec', '--secret-file'], '', NONE).files).toBe(true);
    expect(complete(tree, ['webhooks', 'listen', '--port'], '', NONE).files).toBe(false);
    for (const cmd of ['sign', 'verify']) expect(complete(tree, ['webhooks', cmd, '--secret-file', 's'], '', NONE).files).toBe(true);
    for (const cmd of ['sign', 'verify', 'listen']) expect(complete(tree, ['webhooks', cmd, '--secret-file'], '', NONE).files).toBe(true);
    expect(values(['webhooks', 'trigger', 'we_1', '--event'], 'chat.message.c')).toEqual(['chat.message.created.v1']);
  });
  it('offers nothing for free-form values', () => {
    expect(values(['webhooks', 'rotate'], '')).toEqual([]);
    expect(values(['webhooks', 'create', '--name'], '')).toEqual([]);
  });
});

describe('file names, secret destinations, forms and endpoints', () => {
  const fileOptions = (node: CommandNode, path: string[] = []): string[] => [
    ...node.options.filter((o) => o.valueKind === 'file').map((o) => `${[...path, node.name].join(' ')} ${o.flags.at(-1)}`),
    ...node.arguments.filter((a) => a.valueKind === 'file').map((a) => `${[...path, node.name].join(' ')} [${a.name}]`),
    ...node.commands.flatMap((c) => fileOptions(c, [...path, node.name])),
  ];

  it('every option and argument whose value is named <file>, <path> or *-file completes file names, and only those', () => {
    expect(fileOptions(tree).sort()).toEqual(
      [
        'chatctl webhooks create --escrow-dir',
        'chatctl webhooks create --escrow-file',
        'chatctl webhooks recover --identity',
        'chatctl webhooks recover --journal',
        'chatctl webhooks recover --secret-file',
        'chatctl webhooks recover [file]',
        'chatctl webhooks rotate --escrow-dir',
        'chatctl webhooks rotate --escrow-file',
        'chatctl webhooks rotate --report',
        'chatctl webhooks create --secret-file',
        'chatctl webhooks rotate --secret-file',
        'chatctl webhooks rotate --from',
        'chatctl webhooks rotate --journal',
        'chatctl webhooks rotate --next-manifest',
        'chatctl webhooks fingerprint [file]',
        'chatctl webhooks sign --secret-file',
        'chatctl webhooks sign [body-file]',
        'chatctl webhooks verify --secret-file',
        'chatctl webhooks verify [body-file]',
        'chatctl webhooks listen --secret-file',
      ].sort(),
    );
    for (const words of [
      ['webhooks', 'rotate', '--from'],
      ['webhooks', 'rotate', '--from', 'f', '--journal'],
      ['webhooks', 'fingerprint'],
      ['webhooks', 'sign', '--secret-file', 's'],
    ])
      expect(formatCompletion(complete(tree, words, '', NONE), false), words.join(' ')).toBe(':file\n');
  });

  it('--secret-to: the destinations of src/secret/deliver.ts, then file names after file: and env-file:', () => {
    const rotate = ['webhooks', 'rotate', 'we_1', '--secret-to'];
    expect(values(rotate, '')).toEqual(['file:', 'env-file:', 'exec:', 'stdout', 'github-output:', 'github-env:']);
    const fi = complete(tree, rotate, 'fi', NONE);
    expect(formatCompletion(fi, true)).toBe('file:\ta new file holding the secret, mode 0600\n:nospace\n');
    expect(formatCompletion(complete(tree, rotate, 'st', NONE), false)).toBe('stdout\n:none\n');
    expect(formatCompletion(complete(tree, rotate, 'file:./se', NONE), false)).toBe(':file file:\n');
    expect(formatCompletion(complete(tree, ['webhooks', 'create', '--secret-to'], 'env-file:', NONE), false)).toBe(':file env-file:\n');
    expect(formatCompletion(complete(tree, rotate, 'exec:', NONE), false)).toBe(':none\n');
    // --secret-to=… keeps its head on every candidate and before the path.
    expect(formatCompletion(complete(tree, ['webhooks', 'rotate', 'we_1'], '--secret-to=file:x', NONE), false)).toBe(':file --secret-to=file:\n');
    expect(values(['webhooks', 'rotate', 'we_1'], '--secret-to=e')).toEqual(['--secret-to=env-file:', '--secret-to=exec:']);
  });

  it('offers only the flags of the form being typed: rotate ID or rotate --from FILE', () => {
    const FLEET = ['--from', '--concurrency', '--journal', '--next-manifest'];
    const ONE = ['--expected-version', '--idempotency-key'];
    const BOTH = ['--mode', '--secret-to', '--secret-file', '--force', '--yes', '--json', '--query'];
    const single = values(['webhooks', 'rotate', 'we_1'], '--');
    expect(single).toEqual(expect.arrayContaining([...ONE, ...BOTH]));
    for (const f of FLEET) expect(single).not.toContain(f);
    const fleet = values(['webhooks', 'rotate', '--from', 'fleet.ndjson'], '--');
    expect(fleet).toEqual(expect.arrayContaining([...FLEET, ...BOTH]));
    for (const f of ONE) expect(fleet).not.toContain(f);
    expect(values(['webhooks', 'rotate', '--from=fleet.ndjson'], '--j')).toEqual(['--journal', '--json']);
    expect(values(['webhooks', 'rotate', 'we_1'], '--j')).toEqual(['--json']);
    expect(values(['webhooks', 'rotate', '--mode', 'overlap'], '--')).toEqual(expect.arrayContaining([...ONE, ...FLEET, ...BOTH]));
    // After --from no endpoint id is offered: the argument belongs to the other form.
    const ids: Sources = { profiles: () => [], endpoints: () => [{ id: 'we_1', name: null, detail: 'version 2' }] };
    expect(values(['webhooks', 'rotate', '--from', 'f'], '', ids)).toEqual([]);
    expect(values(['webhooks', 'rotate'], '', ids)).toEqual(['we_1']);
  });

  it('endpoint ids after rotate, reactivate and trigger, with a description, from the scope the line names', () => {
    const asked: unknown[] = [];
    const sources: Sources = {
      profiles: () => [],
      endpoints: (globals) => {
        asked.push(globals);
        return [
          { id: 'we_billing', name: 'billing', detail: 'version 3' },
          { id: 'we_orders', name: null, detail: 'version 1, rotated 2030-01-01T00:00:00.000Z' },
        ];
      },
    };
    for (const verb of ['rotate', 'reactivate', 'trigger']) expect(values(['webhooks', verb], 'we_b', sources)).toEqual(['we_billing']);
    const c = complete(tree, ['--profile', 'prod', 'webhooks', 'rotate', '--org=org_2'], '', sources);
    expect(formatCompletion(c, true)).toBe('we_billing\tbilling (version 3)\nwe_orders\tversion 1, rotated 2030-01-01T00:00:00.000Z\n:none\n');
    expect(asked.at(-1)).toEqual({ profile: 'prod', org: 'org_2' });
    // A store that knows names but nothing more (an inventory): the name is the description.
    const named: Sources = { profiles: () => [], endpoints: () => [{ id: 'we_named', name: 'named' }] };
    expect(formatCompletion(complete(tree, ['webhooks', 'reactivate'], '', named), true)).toBe('we_named\tnamed\n:none\n');
    // Not after the id, nor for create.
    expect(values(['webhooks', 'rotate', 'we_billing'], '', sources)).toEqual([]);
    expect(values(['webhooks', 'create'], '', sources)).toEqual([]);
  });

  it('knownEndpoints: the endpoints this config folder has facts of, with their names, in the scope asked for only', () => {
    const cfg = tempDir('known');
    expect(knownEndpoints(cfg, 'org_1/app_1/prod')).toEqual([]);
    seen(cfg, 'org_1/app_1/prod', 'we_b', 4, 'billing');
    seen(cfg, 'org_1/app_1/prod', 'we_a', 2);
    seen(cfg, 'org_1/app_1/staging', 'we_c', 9);
    expect(knownEndpoints(cfg, 'org_1/app_1/prod')).toEqual([
      { id: 'we_a', name: null },
      { id: 'we_b', name: 'billing' },
    ]);
    expect(knownEndpoints(cfg, 'org_1/app_1/staging').map((e) => e.id)).toEqual(['we_c']);
    // What is typed of the id narrows them.
    expect(knownEndpoints(cfg, 'org_1/app_1/prod', 'we_b').map((e) => e.id)).toEqual(['we_b']);
    expect(knownEndpoints(cfg, 'org_1/app_1/prod', 'we_x')).toEqual([]);
    // The scope of the line: flags, then the environment, then the profile; none without a whole scope.
    const env = { CHATCTL_CONFIG_DIR: cfg, CHATCTL_BASE_URL: 'https://api.example.com', CHATCTL_ORG: 'org_1', CHATCTL_APP: 'app_1' };
    expect(endpointsFor(env, { env: 'staging' }, {}).map((e) => e.id)).toEqual(['we_c']);
    expect(endpointsFor({ ...env, CHATCTL_ENV: 'prod' }, {}, {}).map((e) => e.id)).toEqual(['we_a', 'we_b']);
    const profiles = { currentProfile: 'p', profiles: { p: { baseUrl: 'https://x.example', organizationId: 'org_1', applicationId: 'app_1', environmentKey: 'prod' } } };
    expect(endpointsFor({ CHATCTL_CONFIG_DIR: cfg }, {}, profiles).map((e) => e.id)).toEqual(['we_a', 'we_b']);
    expect(endpointsFor({ CHATCTL_CONFIG_DIR: cfg }, {}, {})).toEqual([]);
    // Through the entry point, with the config folder's own config.json absent.
    let out = '';
    runComplete(['fish', '--', 'webhooks', 'reactivate', 'we_'], tree, { ...env, CHATCTL_ENV: 'staging' }, (t) => void (out += t));
    expect(out).toBe('we_c\n:none\n'); // no name seen: the id alone
  });

  it("bash: words split at : and = are joined again from the line, and candidates given as bash's current word has them", () => {
    const line = 'chatctl webhooks rotate we_1 --secret-to file:./se';
    expect(bashWords(['webhooks', 'rotate', 'we_1', '--secret-to', 'file', ':'], './se', line)).toEqual({
      words: ['webhooks', 'rotate', 'we_1', '--secret-to'],
      current: 'file:./se',
      hidden: 'file:',
    });
    expect(bashWords(['webhooks', 'rotate', 'we_1', '--secret-to', 'file'], ':', 'chatctl webhooks rotate we_1 --secret-to file:')).toEqual({
      words: ['webhooks', 'rotate', 'we_1', '--secret-to'],
      current: 'file:',
      hidden: 'file',
    });
    // A space before the current word: nothing to join.
    expect(bashWords(['webhooks', 'rotate', 'we_1', '--secret-to'], '', 'chatctl webhooks rotate we_1 --secret-to ')).toEqual({
      words: ['webhooks', 'rotate', 'we_1', '--secret-to'],
      current: '',
      hidden: '',
    });
    const run = (argv: string[]) => {
      let out = '';
      runComplete(argv, tree, { CHATCTL_CONFIG_DIR: tempDir('cfg') }, (t) => void (out += t));
      return out;
    };
    expect(run(['bash', '--line', line, '--', 'webhooks', 'rotate', 'we_1', '--secret-to', 'file', ':', './se'])).toBe(':file\n');
    expect(run(['bash', '--line', 'chatctl webhooks rotate we_1 --secret-to env-f', '--', 'webhooks', 'rotate', 'we_1', '--secret-to', 'env-f'])).toBe('env-file:\n:nospace\n');
    expect(run(['bash', '--line', 'chatctl webhooks rotate --secret-to=fi', '--', 'webhooks', 'rotate', '--secret-to', '=', 'fi'])).toBe('file:\n:nospace\n');
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
