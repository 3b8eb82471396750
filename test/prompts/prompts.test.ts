// Prompt flows at the command level (docs/configuration.md), each in a pair:
// with a Prompter (stdin and stdout are a terminal, prompts allowed) the
// missing value is asked for; with `undefined` (no terminal, --no-input, CI)
// the same command line is a usage error (exit 2) naming the flag, and
// nothing is sent. The transport is scripted and records what it was sent.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Prompter } from '../../src/prompts/prompter.js';
import type { Context } from '../../src/context.js';
import type { GlobalOptions } from '../../src/run/state.js';
import type { WireRequest } from '../../src/http/transport.js';
import { CliError } from '../../src/errors/cli-error.js';
import { runCreate, type CreateOptions } from '../../src/commands/webhooks/create.js';
import { runRotate, type RotateOptions } from '../../src/commands/webhooks/rotate.js';
import { runReactivate } from '../../src/commands/webhooks/reactivate.js';
import { runAuthLogin, runAuthToken } from '../../src/commands/auth/auth.js';
import { EndpointFacts } from '../../src/secret/facts.js';
import { fakeContext, fakeFactory, fakeIO, scriptedTransport, type FakeIO } from '../support/fakes.js';

const BASE = 'https://api.example.com';
const PREFIX = '/v1/organizations/org_t/applications/app_t/environments/env_t/webhook-endpoints';
const ENV = {
  CHATCTL_BASE_URL: BASE,
  CHATCTL_TOKEN: 'tok_terminal_test_0123456789',
  CHATCTL_ORG: 'org_t',
  CHATCTL_APP: 'app_t',
  CHATCTL_ENV: 'env_t',
};
const SECRET = 'whsec_terminal_dGVybWluYWwtc2VjcmV0';

// ------------------------------------------------------------------ fakes

type Answers = { [K in keyof Prompter]?: Awaited<ReturnType<Prompter[K]>> | Error };

/** A Prompter that answers from a script and records each question asked. */
function fakePrompter(answers: Answers) {
  const calls: string[] = [];
  const ask =
    <K extends keyof Prompter>(key: K) =>
    async (...args: unknown[]) => {
      calls.push(args.length ? `${key}(${args.map(String).join(',')})` : key);
      const a = answers[key];
      if (a === undefined) throw new Error(`fakePrompter: unexpected question ${key}`);
      if (a instanceof Error) throw a;
      return a;
    };
  const p = {
    name: ask('name'),
    url: ask('url'),
    events: ask('events'),
    expectedVersion: ask('expectedVersion'),
    mode: ask('mode'),
    confirmImmediate: ask('confirmImmediate'),
    confirmShowToken: ask('confirmShowToken'),
    token: ask('token'),
  } as unknown as Prompter;
  return { prompter: p, calls };
}

const endpoint = (extra: Record<string, unknown> = {}) => ({
  id: 'we_abc',
  name: 'billing',
  destinationUrl: 'https://hooks.example.com/in',
  eventTypes: ['chat.message.created.v1'],
  status: 'active',
  version: 4,
  ...extra,
});
const secretAnswer = () => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ data: { endpoint: endpoint(), secret: SECRET, secretAvailable: true }, meta: { requestId: 'req_1' } }),
});
const mutationAnswer = () => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ data: { endpoint: endpoint({ version: 5 }), changed: true }, meta: { requestId: 'req_2' } }),
});

const sessionDirs: string[] = [];
afterAll(() => {
  for (const d of sessionDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A terminal session (both TTYs) or a pipe/script session (neither). */
function session(tty: boolean, answers: Array<ReturnType<typeof secretAnswer>> = [], extra: Partial<Context> = {}) {
  const io: FakeIO = fakeIO({ stdin: tty, stdout: tty, stderr: tty });
  const transport = scriptedTransport([...answers]);
  // A config folder of its own: what an earlier session saw (its facts) would answer for the prompt.
  const configDir = mkdtempSync(join(tmpdir(), 'chatctl-terminal-'));
  sessionDirs.push(configDir);
  const ctx = fakeContext({ io, env: { ...ENV }, transportImpl: transport, configDir, ...extra });
  return { io, ctx, sent: transport.sent };
}

const g: GlobalOptions = {};

async function failure(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    return e as CliError;
  }
  throw new Error('expected the command to fail');
}

const bodyOf = (req: WireRequest) => JSON.parse(req.body) as Record<string, unknown>;

// ------------------------------------------------------------------ create

describe('webhooks create: missing values', () => {
  it('TTY: asks for name, URL and event types, in that order, and sends the answers', async () => {
    const { ctx, io, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({
      name: 'billing',
      url: 'https://hooks.example.com/in',
      events: ['chat.message.created.v1', 'chat.message.updated.v1'],
    });
    await runCreate({}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['name', 'url', 'events']);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe(BASE + PREFIX);
    expect(bodyOf(sent[0]!)).toEqual({
      name: 'billing',
      destinationUrl: 'https://hooks.example.com/in',
      eventTypes: ['chat.message.created.v1', 'chat.message.updated.v1'],
    });
    // The secret on a TTY: framed, with the notice.
    expect(io.out()).toContain(SECRET);
    expect(io.out()).toMatch(/will not be shown again/);
    expect(io.err()).not.toContain(SECRET);
  });

  it('TTY: asks only for what the flags left out', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({ url: 'https://hooks.example.com/only-url' });
    await runCreate({ name: 'given', event: ['chat.message.deleted.v1'] }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['url']);
    expect(bodyOf(sent[0]!)).toMatchObject({ name: 'given', destinationUrl: 'https://hooks.example.com/only-url', eventTypes: ['chat.message.deleted.v1'] });
  });

  it('TTY: every value given, nothing is asked', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({});
    await runCreate({ name: 'n', url: 'https://hooks.example.com/x', event: ['chat.message.created.v1'] }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  const createCases: Array<[string, CreateOptions, string]> = [
    ['name', {}, '--name'],
    ['url', { name: 'n' }, '--url'],
    ['events', { name: 'n', url: 'https://hooks.example.com/x' }, '--event'],
    ['events (empty list)', { name: 'n', url: 'https://hooks.example.com/x', event: [] }, '--event'],
  ];
  for (const [what, opts, flag] of createCases) {
    it(`no TTY: missing ${what} → exit 2 naming ${flag}, nothing sent`, async () => {
      const { ctx, sent } = session(false);
      const e = await failure(runCreate(opts, fakeFactory(ctx, undefined, g)));
      expect(e.exitCode).toBe(2);
      expect(e.code).toBe('usage_error');
      expect(e.message).toContain(flag);
      expect(sent).toHaveLength(0);
    });
  }

  it('an answer that breaks the rules is still checked: exit 2 naming the flag, nothing sent', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter } = fakePrompter({ name: 'n', url: 'hooks.example.com/relative', events: ['chat.message.created.v1'] });
    const e = await failure(runCreate({}, fakeFactory(ctx, prompter, g)));
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain('--url');
    expect(sent).toHaveLength(0);
  });

  it('Ctrl-C at a prompt (inquirer ExitPromptError) propagates and nothing is sent', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const exit = Object.assign(new Error('User force closed the prompt with SIGINT'), { name: 'ExitPromptError' });
    const { prompter, calls } = fakePrompter({ name: 'n', url: exit });
    await expect(runCreate({}, fakeFactory(ctx, prompter, g))).rejects.toMatchObject({ name: 'ExitPromptError' });
    expect(calls).toEqual(['name', 'url']);
    expect(sent).toHaveLength(0);
  });
});

// ------------------------------------------------------------------ rotate

describe('webhooks rotate: missing values', () => {
  it('TTY: asks for expected version and mode, sends them', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({ expectedVersion: '4', mode: 'overlap' });
    await runRotate('we_abc', {}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['expectedVersion', 'mode']);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe(`${BASE}${PREFIX}/we_abc/secret/rotate`);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4, mode: 'overlap' });
  });

  it('TTY: a version this machine saw is used, said on stderr, and not asked for; without a TTY it is named, not used', async () => {
    const { ctx, io, sent } = session(true, [secretAnswer()]);
    EndpointFacts.read(ctx.configDir, 'org_t/app_t/env_t', 'we_abc').add({ f: 'seen', at: '2030-01-01T00:00:00.000Z', version: 4, via: 'rotate' });
    const { prompter, calls } = fakePrompter({ mode: 'overlap' });
    await runRotate('we_abc', {}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['mode']);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4, mode: 'overlap' });
    expect(io.err()).toContain('chatctl: expected version 4, as this machine last saw it at 2030-01-01T00:00:00.000Z; pass --expected-version to set it\n');

    const pipe = session(false, [secretAnswer()], { configDir: ctx.configDir });
    const e = await failure(runRotate('we_abc', { mode: 'overlap' }, fakeFactory(pipe.ctx, undefined, g)));
    expect(e.exitCode).toBe(2);
    expect(e.hint).toContain('this machine last saw version 4 of endpoint we_abc');
    expect(pipe.sent).toHaveLength(0);
  });

  it('TTY: a mode picked at the prompt as immediate is confirmed too', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({ mode: 'immediate', confirmImmediate: true });
    await runRotate('we_abc', { expectedVersion: '4' }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['mode', 'confirmImmediate(we_abc)']);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4, mode: 'immediate' });
  });

  const rotateCases: Array<[string, RotateOptions, string]> = [
    ['expected version', { mode: 'overlap' }, '--expected-version'],
    ['mode', { expectedVersion: '4' }, '--mode'],
  ];
  for (const [what, opts, flag] of rotateCases) {
    it(`no TTY: missing ${what} → exit 2 naming ${flag}, nothing sent`, async () => {
      const { ctx, sent } = session(false);
      const e = await failure(runRotate('we_abc', opts, fakeFactory(ctx, undefined, g)));
      expect(e.exitCode).toBe(2);
      expect(e.message).toContain(flag);
      expect(sent).toHaveLength(0);
    });
  }
});

describe('webhooks rotate --mode immediate: confirmation', () => {
  const immediate: RotateOptions = { expectedVersion: '4', mode: 'immediate' };

  it('TTY, confirmed → the request is sent', async () => {
    const { ctx, io, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({ confirmImmediate: true });
    await runRotate('we_abc', immediate, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['confirmImmediate(we_abc)']);
    expect(sent).toHaveLength(1);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4, mode: 'immediate' });
    expect(io.out()).toContain(SECRET);
  });

  it('TTY, declined → exit 130, nothing sent', async () => {
    const { ctx, io, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({ confirmImmediate: false });
    const e = await failure(runRotate('we_abc', immediate, fakeFactory(ctx, prompter, g)));
    expect(calls).toEqual(['confirmImmediate(we_abc)']);
    expect(e.exitCode).toBe(130);
    expect(e.code).toBe('interrupted');
    expect(sent).toHaveLength(0);
    expect(io.out()).toBe('');
    // A plain notice, not an error: the reporter prints nothing more.
    expect(io.err()).toBe('chatctl: immediate rotation declined; nothing was sent\n');
    expect(e.reported).toBe(true);
  });

  it('no TTY, no --yes → exit 2 "--yes is required when not running interactively", nothing sent', async () => {
    const { ctx, sent } = session(false);
    const e = await failure(runRotate('we_abc', immediate, fakeFactory(ctx, undefined, { json: true })));
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain('--yes is required when not running interactively');
    expect(sent).toHaveLength(0);
  });

  it('TTY with --yes → no question, sent', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({});
    await runRotate('we_abc', { ...immediate, yes: true }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it('no TTY with --yes → sent without asking', async () => {
    const { ctx, sent } = session(false, [secretAnswer()]);
    await runRotate('we_abc', { ...immediate, yes: true }, fakeFactory(ctx, undefined, { json: true }));
    expect(sent).toHaveLength(1);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4, mode: 'immediate' });
  });

  it('--mode overlap never asks for confirmation', async () => {
    const { ctx, sent } = session(true, [secretAnswer()]);
    const { prompter, calls } = fakePrompter({});
    await runRotate('we_abc', { expectedVersion: '4', mode: 'overlap' }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it('no TTY and no secret destination: refused before the confirmation question (nothing to lose)', async () => {
    // stdout is a pipe and neither --secret-file nor --json: the secret could not be delivered.
    const { ctx, sent } = session(false);
    const e = await failure(runRotate('we_abc', { ...immediate, yes: true }, fakeFactory(ctx, undefined, g)));
    expect(e.exitCode).toBe(2);
    expect(e.message + ' ' + (e.hint ?? '')).toMatch(/--secret-file/);
    expect(sent).toHaveLength(0);
  });
});

// ------------------------------------------------------------------ reactivate

describe('webhooks reactivate: missing expected version', () => {
  it('TTY: asks for it and sends it', async () => {
    const { ctx, io, sent } = session(true, [mutationAnswer()]);
    const { prompter, calls } = fakePrompter({ expectedVersion: '4' });
    await runReactivate('we_abc', {}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['expectedVersion']);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe(`${BASE}${PREFIX}/we_abc/reactivate`);
    expect(bodyOf(sent[0]!)).toEqual({ expectedVersion: 4 });
    expect(io.out()).toContain('we_abc');
  });

  it('TTY: given as a flag, nothing is asked', async () => {
    const { ctx, sent } = session(true, [mutationAnswer()]);
    const { prompter, calls } = fakePrompter({});
    await runReactivate('we_abc', { expectedVersion: '4' }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it('no TTY: exit 2 naming --expected-version, nothing sent', async () => {
    const { ctx, sent } = session(false);
    const e = await failure(runReactivate('we_abc', {}, fakeFactory(ctx, undefined, g)));
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain('--expected-version');
    expect(sent).toHaveLength(0);
  });
});

// ------------------------------------------------------------------ auth login

describe('auth login: the token', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'chatctl-terminal-auth-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const stored = () => JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { profiles: Record<string, { token?: string }> };

  it('TTY: read from the masked prompt and stored; never echoed on stdout or stderr', async () => {
    const { ctx, io } = session(true, [], { configDir: dir, env: {} });
    const { prompter, calls } = fakePrompter({ token: '  tok_from_prompt_ABCdef123  ' });
    await runAuthLogin({}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['token']);
    expect(stored().profiles.default?.token).toBe('tok_from_prompt_ABCdef123');
    expect(io.out() + io.err()).not.toContain('tok_from_prompt_ABCdef123');
    expect(io.err()).toContain('token stored in profile "default"');
  });

  it('no TTY and no --with-token: exit 2 pointing at --with-token, nothing stored', async () => {
    const { ctx } = session(false, [], { configDir: dir, env: {} });
    const e = await failure(runAuthLogin({}, fakeFactory(ctx, undefined, g)));
    expect(e.exitCode).toBe(2);
    expect(`${e.message} ${e.hint ?? ''}`).toContain('--with-token');
    expect(() => readFileSync(join(dir, 'config.json'))).toThrow();
  });

  it('--with-token on a TTY reads stdin, does not prompt', async () => {
    const io = fakeIO({ stdin: true, stdout: true, stderr: true }, 'tok_from_stdin_xyz\n');
    const ctx = fakeContext({ io, configDir: dir, env: {} });
    const { prompter, calls } = fakePrompter({});
    await runAuthLogin({ withToken: true }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(stored().profiles.default?.token).toBe('tok_from_stdin_xyz');
  });

  it('TTY: an empty answer is a usage error, nothing stored', async () => {
    const { ctx } = session(true, [], { configDir: dir, env: {} });
    const { prompter } = fakePrompter({ token: '   ' });
    const e = await failure(runAuthLogin({}, fakeFactory(ctx, prompter, g)));
    expect(e.exitCode).toBe(2);
    expect(() => readFileSync(join(dir, 'config.json'))).toThrow();
  });
});

describe('auth token on a terminal: asks before printing the token', () => {
  it('confirmed: the token on stdout, the question naming where it comes from', async () => {
    const { ctx, io } = session(true);
    const { prompter, calls } = fakePrompter({ confirmShowToken: true });
    await runAuthToken({}, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual(['confirmShowToken(CHATCTL_TOKEN)']);
    expect(io.out()).toBe(`${ENV.CHATCTL_TOKEN}\n`);
  });

  it('declined: nothing printed, exit 130', async () => {
    const { ctx, io } = session(true);
    const { prompter } = fakePrompter({ confirmShowToken: false });
    const e = await failure(runAuthToken({}, fakeFactory(ctx, prompter, g)));
    expect(e.exitCode).toBe(130);
    expect(io.out()).toBe('');
  });

  it('--yes: no question', async () => {
    const { ctx, io } = session(true);
    const { prompter, calls } = fakePrompter({});
    await runAuthToken({ yes: true }, fakeFactory(ctx, prompter, g));
    expect(calls).toEqual([]);
    expect(io.out()).toBe(`${ENV.CHATCTL_TOKEN}\n`);
  });

  it('stdout not a terminal: no question', async () => {
    const { ctx, io } = session(false);
    await runAuthToken({}, fakeFactory(ctx, undefined, g));
    expect(io.out()).toBe(`${ENV.CHATCTL_TOKEN}\n`);
  });
});
