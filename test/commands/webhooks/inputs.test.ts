// Every input is checked before anything is sent;
// a failed check, a missing value without prompts or a bad command line exits 2
// and the server receives nothing.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EVENT_TYPES, LIMITS } from '../../../src/api/schemas.js';
import { mutationBody, scopeEnv, secretBody } from '../../support/fixtures.js';
import { parseErrorLine } from '../../support/json.js';
import { buildEnv, cleanupTempDirs, runCli, runInProcess, workspace } from '../../support/run.js';
import { type RecordingServer, startServer } from '../../support/server.js';

let server: RecordingServer;
beforeAll(async () => {
  server = await startServer();
  server.setHandler((req) => {
    if (req.url.endsWith('/reactivate')) return { status: 200, body: mutationBody() };
    if (req.url.endsWith('/secret/rotate')) return { status: 200, body: secretBody() };
    return { status: 201, body: secretBody() };
  });
});
afterAll(async () => {
  await server.close();
  cleanupTempDirs();
});

const E0 = EVENT_TYPES[0];
let n = 0;
/** A unique org per test, so concurrent tests can count their own requests. */
function scoped(): { org: string; env: Record<string, string | undefined> } {
  const org = `case_${++n}_${process.pid}`;
  return { org, env: scopeEnv(server.url, { CHATCTL_ORG: org }) };
}
const sentFor = (org: string) => server.requestsTo(`/organizations/${org}/`);

async function expectRefused(args: string[], mention?: string | RegExp) {
  const { org, env } = scoped();
  const r = await runCli(args, { env });
  expect(r.exitCode, r.stderr).toBe(2);
  expect(sentFor(org)).toHaveLength(0);
  expect(r.stdout).toBe('');
  if (args.includes('--json')) {
    const line = parseErrorLine(r.stderr);
    expect(line.exitCode).toBe(2);
    expect(line.error.code).toBe('usage_error');
    expect(line.error.status).toBeNull();
    expect(line.error.requestId).toBeNull();
    if (mention !== undefined) expect(line.error.message).toMatch(mention);
  } else {
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
    if (mention !== undefined) expect(r.stderr).toMatch(mention);
  }
  return r;
}

async function expectSent(args: string[]) {
  const { org, env } = scoped();
  const r = await runCli(args, { env });
  expect(r.exitCode, r.stderr).toBe(0);
  const sent = sentFor(org);
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

const rotate = (v: string) => ['webhooks', 'rotate', 'we_1', '--expected-version', v, '--mode', 'overlap', '--json'];
const reactivate = (v: string) => ['webhooks', 'reactivate', 'we_1', '--expected-version', v, '--json'];
const create = (name: string, url = 'https://h.example/x', events: string[] = [E0]) => ['webhooks', 'create', '--name', name, '--url', url, ...events.flatMap((e) => ['--event', e]), '--json'];

describe.concurrent('--expected-version is a strict decimal from 1 to 2^53-1', () => {
  for (const bad of ['0', '-1', '1.5', '1e3', 'abc', '9007199254740992', '']) {
    test(`rotate refuses ${JSON.stringify(bad)}`, async () => {
      await expectRefused(rotate(bad));
    });
    test(`reactivate refuses ${JSON.stringify(bad)}`, async () => {
      await expectRefused(reactivate(bad));
    });
  }
  test('reactivate accepts 1', async () => {
    expect((await expectSent(reactivate('1'))).body).toBe('{"expectedVersion":1}');
  });
  test('reactivate accepts 9007199254740991', async () => {
    expect(LIMITS.versionMax).toBe(9007199254740991);
    expect((await expectSent(reactivate('9007199254740991'))).body).toBe('{"expectedVersion":9007199254740991}');
  });
  test('rotate accepts 1', async () => {
    expect((await expectSent(rotate('1'))).body).toBe('{"expectedVersion":1,"mode":"overlap"}');
  });
  test('rotate accepts 9007199254740991', async () => {
    expect((await expectSent(rotate('9007199254740991'))).body).toBe('{"expectedVersion":9007199254740991,"mode":"overlap"}');
  });
});

describe.concurrent('name: 1 to 80 characters, counted in code points', () => {
  const emoji80 = '😀'.repeat(LIMITS.nameMax);
  test('80 astral code points (160 UTF-16 units) are accepted and sent intact', async () => {
    const req = await expectSent(create(emoji80));
    expect(req.body).toBe(JSON.stringify({ name: emoji80, destinationUrl: 'https://h.example/x', eventTypes: [E0] }));
  });
  test('80 code points made of 40 e + combining acute are accepted and sent unnormalised', async () => {
    const name = 'e\u0301'.repeat(40);
    expect(JSON.parse((await expectSent(create(name))).body).name).toBe(name);
  });
  test('81 code points with combining marks are refused', async () => {
    await expectRefused(create('e\u0301'.repeat(40) + 'x'));
  });
  test('80 ASCII characters are accepted', async () => {
    const name = 'n'.repeat(80);
    expect(JSON.parse((await expectSent(create(name))).body).name).toBe(name);
  });
  test('81 astral code points are refused', async () => {
    await expectRefused(create('😀'.repeat(81)));
  });
  test('81 ASCII characters are refused', async () => {
    await expectRefused(create('n'.repeat(81)));
  });
  test('an empty name is refused', async () => {
    await expectRefused(create(''));
  });
});

describe.concurrent('destinationUrl: absolute http(s), at most 2048 characters', () => {
  const at = (len: number) => {
    const head = 'https://h.example/';
    return head + 'a'.repeat(len - head.length);
  };
  test('2048 characters accepted and sent verbatim', async () => {
    const url = at(LIMITS.destinationUrlMax);
    expect(url).toHaveLength(2048);
    expect(JSON.parse((await expectSent(create('n', url))).body).destinationUrl).toBe(url);
  });
  test('2049 characters refused', async () => {
    await expectRefused(create('n', at(2049)));
  });
  test('http: accepted', async () => {
    expect(JSON.parse((await expectSent(create('n', 'http://h.example/in'))).body).destinationUrl).toBe('http://h.example/in');
  });
  for (const bad of ['ftp://h.example/x', '/relative/path', 'h.example/hook', 'not a url', '']) {
    test(`refuses ${JSON.stringify(bad)}`, async () => {
      await expectRefused(create('n', bad));
    });
  }
});

describe.concurrent('event types and mode', () => {
  test('unknown event type refused', async () => {
    await expectRefused(create('n', undefined, ['chat.bogus.v1']), /chat\.bogus\.v1/);
  });
  test('unknown event inside a comma list refused', async () => {
    await expectRefused(create('n', undefined, [`${E0},chat.message.created.v2`]));
  });
  test('event type with different case refused', async () => {
    await expectRefused(create('n', undefined, [E0.toUpperCase()]));
  });
  test('--mode sideways refused', async () => {
    await expectRefused(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'sideways', '--json']);
  });
  test('--mode OVERLAP refused', async () => {
    await expectRefused(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'OVERLAP', '--json']);
  });
});

describe.concurrent('missing values without a TTY exit 2 naming the flag', () => {
  // human mode with a secret file, so the only thing wrong is the missing value
  const sf = ['--secret-file', 'new.secret'];
  test('create without --name', async () => {
    await expectRefused(['webhooks', 'create', '--url', 'https://h.example/x', '--event', E0, ...sf], /--name/);
  });
  test('create without --url', async () => {
    await expectRefused(['webhooks', 'create', '--name', 'n', '--event', E0, ...sf], /--url/);
  });
  test('create without --event', async () => {
    await expectRefused(['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', ...sf], /--event/);
  });
  test('rotate without --expected-version', async () => {
    await expectRefused(['webhooks', 'rotate', 'we_1', '--mode', 'overlap', ...sf], /--expected-version/);
  });
  test('rotate without --mode', async () => {
    // The hint names both modes and why nothing was asked.
    await expectRefused(['webhooks', 'rotate', 'we_1', '--expected-version', '1', ...sf], /missing --mode[\s\S]*--mode overlap[\s\S]*--mode immediate --yes[\s\S]*never when CI/);
  });
  test('reactivate without --expected-version', async () => {
    await expectRefused(['webhooks', 'reactivate', 'we_1'], /--expected-version/);
  });
  test('--json: create without --name gives a usage_error line naming --name', async () => {
    await expectRefused(['webhooks', 'create', '--url', 'https://h.example/x', '--event', E0, '--json'], /--name/);
  });
  test('--mode immediate without --yes', async () => {
    await expectRefused(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'immediate', ...sf], /--yes is required when not running interactively/);
  });
  test('--mode immediate without --yes (--json)', async () => {
    await expectRefused(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'immediate', '--json'], /--yes is required when not running interactively/);
  });
});

describe.concurrent('bad command lines', () => {
  test('rotate without ENDPOINT_ID', async () => {
    await expectRefused(['webhooks', 'rotate', '--expected-version', '1', '--mode', 'overlap', '--json']);
  });
  test('reactivate without ENDPOINT_ID', async () => {
    await expectRefused(['webhooks', 'reactivate', '--expected-version', '1']);
  });
  test('unknown option', async () => {
    await expectRefused(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--frobnicate']);
  });
  test('unknown subcommand', async () => {
    await expectRefused(['webhooks', 'frobnicate', 'we_1']);
  });
  test('--max-retries abc', async () => {
    await expectRefused(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--max-retries', 'abc']);
  });
  test('--timeout abc', async () => {
    await expectRefused(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--timeout', 'abc']);
  });
  test('the token is never taken from argv: --token is a bad command line', async () => {
    const r = await expectRefused(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--token', 'tok_argv_value']);
    expect(r.stderr).not.toContain('tok_argv_value');
  });
  test('unknown option with --json gives a usage_error line', async () => {
    await expectRefused(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--frobnicate', '--json']);
  });
});

// In-process, stdin and stdout claiming to be terminals (stderr not, so that
// what it says can be read on its own); test/prompts/pty.test.ts plays the
// same switches on a real terminal.
describe.concurrent('prompts are off under CI, CHATCTL_NO_INPUT and --no-input even on a TTY', () => {
  const CREATE_NO_NAME = ['webhooks', 'create', '--url', 'https://h.example/x', '--event', E0, '--secret-file', 'x.secret'];
  const ROTATE_IMMEDIATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'immediate', '--secret-file', 'x.secret'];
  const ON_A_TTY = { stdin: true, stdout: true, stderr: false };

  /** The same command line on the same TTY with none of the switches: it asks (the run is stopped once the question is shown). */
  async function asks(args: string[], question: string) {
    const { org, env } = scoped();
    const ws = workspace();
    const stop = new AbortController();
    const r = await runInProcess(args, {
      env: buildEnv(ws, env),
      cwd: ws.cwd,
      tty: ON_A_TTY,
      signal: stop.signal,
      timeoutMs: 10_000,
      onStdout: (text) => {
        if (text.includes(question)) stop.abort('SIGINT');
      },
    });
    expect(r.timedOut, r.stdout + r.stderr).toBe(false);
    expect(r.stdout).toContain(question);
    expect(r.exitCode).toBe(130);
    expect(sentFor(org)).toHaveLength(0);
  }
  test('control: with none of them, missing --name is asked for on a TTY', async () => {
    await asks(CREATE_NO_NAME, 'Endpoint name');
  });
  test('control: with none of them, --mode immediate without --yes asks for confirmation on a TTY', async () => {
    await asks(ROTATE_IMMEDIATE, 'Rotate we_1 immediately?');
  });

  const cases: [string, Record<string, string>, string[]][] = [
    ['CI=1', { CI: '1' }, []],
    ['CHATCTL_NO_INPUT=1', { CHATCTL_NO_INPUT: '1' }, []],
    ['--no-input', {}, ['--no-input']],
  ];
  for (const [label, extra, flags] of cases) {
    test(`${label}: missing --name exits 2 naming it, nothing sent`, async () => {
      const { org, env } = scoped();
      const r = await runCli([...CREATE_NO_NAME, ...flags], { env: { ...env, ...extra }, tty: ON_A_TTY, timeoutMs: 10_000 });
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/--name/);
      expect(sentFor(org)).toHaveLength(0);
    });
    test(`${label}: --mode immediate without --yes exits 2`, async () => {
      const { org, env } = scoped();
      const r = await runCli([...ROTATE_IMMEDIATE, ...flags], { env: { ...env, ...extra }, tty: ON_A_TTY, timeoutMs: 10_000 });
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain('--yes is required when not running interactively');
      expect(sentFor(org)).toHaveLength(0);
    });
  }
});
