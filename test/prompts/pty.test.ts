// chatctl at a real terminal: bin/chatctl.js runs on a pseudo-terminal
// (pty_driver.py, Python's stdlib pty) against a real sandbox started with
// `chatctl sandbox --port 0 --json`; the tests type answers, press arrows,
// space, enter and Ctrl-C, and read back what the terminal showed, what
// the sandbox received and what was stored. Every session has a hard time
// limit, so a hang fails instead of blocking.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { PYTHON } from '../support/python.js';
import { SHARED_CACHE_DIR } from '../support/run.js';
import { scaled } from '../support/slowdown.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'chatctl.js');
const DRIVER = join(ROOT, 'test', 'support', 'pty_driver.py');
const NODE = process.execPath;

const ENTER = '\r';
const DOWN = '\x1b[B';
const SPACE = ' ';
const CTRL_C = '\x03';
const CTRL_U = '\x15';

/** SGR (colour/style) sequences only; inquirer's cursor movement is not colour. */
const SGR = /\x1b\[[0-9;]*m/;
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;
const plain = (s: string) => s.replace(ANSI, '').replace(/\r/g, '');
/** A JavaScript stack frame ("    at fn (file.js:1:2)") or an uncaught error banner. */
const STACK = /^\s+at .+:\d+:\d+\)?$|node:internal|ExitPromptError|Uncaught/m;

interface Sandbox {
  baseUrl: string;
  token: string;
  organizationId: string;
  applicationId: string;
  environmentKey: string;
}

let sb: Sandbox;
let sandboxProc: ChildProcess | undefined;
const temps: string[] = [];

function tempDir(label: string): string {
  const d = mkdtempSync(join(tmpdir(), `chatctl-pty-${label}-`));
  temps.push(d);
  return d;
}

async function startSandbox(): Promise<Sandbox> {
  const child = spawn(NODE, [BIN, 'sandbox', '--port', '0', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  sandboxProc = child;
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error('the sandbox did not start in time')), scaled(10_000));
    lines.once('line', (l) => {
      clearTimeout(timer);
      res(l);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`the sandbox exited with ${code}`));
    });
  });
  return JSON.parse(first) as Sandbox;
}

async function control(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(sb.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: unknown };
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

interface Recorded {
  method: string;
  path: string;
  body: string;
  status: number | null;
}
const apiRequests = async (): Promise<Recorded[]> => (await control('GET', '/_sandbox/requests')).requests;

const scopePath = (...rest: string[]) =>
  `/v1/organizations/${sb.organizationId}/applications/${sb.applicationId}/environments/${sb.environmentKey}/webhook-endpoints${rest.map((r) => '/' + r).join('')}`;

let keys = 0;
/** An endpoint made directly through the API (not through chatctl), version 1. */
async function seedEndpoint(url = `https://hooks.example.com/seed-${++keys}`): Promise<{ id: string; version: number }> {
  const res = await fetch(sb.baseUrl + scopePath(), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${sb.token}`,
      origin: 'https://console.example.com',
      'x-service-csrf': '1',
      'content-type': 'application/json',
      'idempotency-key': `seed-${keys}-${Date.now()}`,
    },
    body: JSON.stringify({ name: 'seeded', destinationUrl: url, eventTypes: ['chat.message.created.v1'] }),
  });
  const json = (await res.json()) as { data: { endpoint: { id: string; version: number } } };
  if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${JSON.stringify(json)}`);
  await control('DELETE', '/_sandbox/requests');
  return json.data.endpoint;
}

// ------------------------------------------------------------------ the pty

type Step = { expect: string; timeoutMs?: number } | { send: string; delayMs?: number } | { sleepMs: number };

interface PtyRun {
  exitCode: number | null;
  signal: number | null;
  timedOut: boolean;
  failedStep: number | null;
  error: string | null;
  /** Raw bytes the terminal received. */
  output: string;
  /** The same without escape sequences or CRs. */
  text: string;
}

interface PtyOptions {
  env?: Record<string, string | undefined>;
  /** Use the sandbox's scope and token from the environment (default true). */
  scope?: boolean;
  /** Colour switches are left to the test: by default neither NO_COLOR nor FORCE_COLOR is set. */
  configDir?: string;
  stdoutFile?: string;
  timeoutMs?: number;
}

function ptyEnv(opts: PtyOptions): Record<string, string> {
  const env: Record<string, string | undefined> = {
    PATH: `${dirname(NODE)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: tempDir('home'),
    // The run's compile cache: a fresh HOME would compile the program (and the prompts) anew in every session.
    CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
    CHATCTL_CONFIG_DIR: opts.configDir ?? join(tempDir('cfg'), 'config'),
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    ...(opts.scope === false
      ? {}
      : {
          CHATCTL_BASE_URL: sb.baseUrl,
          CHATCTL_TOKEN: sb.token,
          CHATCTL_ORG: sb.organizationId,
          CHATCTL_APP: sb.applicationId,
          CHATCTL_ENV: sb.environmentKey,
        }),
    ...opts.env,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

async function pty(args: string[], steps: Step[], opts: PtyOptions = {}): Promise<PtyRun> {
  const timeoutMs = scaled(opts.timeoutMs ?? 8_000);
  const spec = {
    argv: [NODE, BIN, ...args],
    env: ptyEnv(opts),
    cwd: tempDir('cwd'),
    timeoutMs,
    stepTimeoutMs: scaled(5_000),
    cols: 120,
    rows: 40,
    stdoutFile: opts.stdoutFile ?? null,
    steps,
  };
  const r = await execa(PYTHON, [DRIVER], { input: JSON.stringify(spec), timeout: timeoutMs + 3_000, reject: false });
  if (r.exitCode !== 0) throw new Error(`pty_driver failed (${r.exitCode}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as Omit<PtyRun, 'text'>;
  return { ...out, text: plain(out.output) };
}

/** Fails with the whole terminal transcript when the script did not play out. */
function played(r: PtyRun): PtyRun {
  if (r.failedStep !== null || r.timedOut) throw new Error(`${r.error ?? 'timed out'}\n--- terminal ---\n${r.text}`);
  return r;
}

// ------------------------------------------------------------------ set-up

beforeAll(async () => {
  sb = await startSandbox();
}, scaled(20_000));

afterAll(() => {
  sandboxProc?.kill('SIGTERM');
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
});

beforeEach(async () => {
  await control('POST', '/_sandbox/reset');
});

const EVENT_0 = 'chat.channel.created.v1';
const EVENT_1 = 'chat.channel.updated.v1';
const EVENT_2 = 'chat.channel_membership.added.v1';

// ------------------------------------------------------------------ create

describe('webhooks create at a terminal', () => {
  it('with nothing given: asks name, URL and event types, then shows the table and the framed secret once', async () => {
    const r = played(
      await pty(
        ['webhooks', 'create'],
        [
          { expect: 'Endpoint name' },
          { send: 'billing' + ENTER },
          { expect: 'Destination URL' },
          { send: 'https://hooks.example.com/pty-create' + ENTER },
          { expect: 'Event types' },
          { expect: EVENT_2 },
          { send: SPACE },
          { send: DOWN },
          { send: DOWN },
          { send: SPACE },
          { send: ENTER },
          { expect: 'will not be shown again' },
        ],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(0);

    const [ep] = (await control('GET', '/_sandbox/endpoints')).endpoints as Array<Record<string, any>>;
    expect(ep).toMatchObject({ name: 'billing', destinationUrl: 'https://hooks.example.com/pty-create', eventTypes: [EVENT_0, EVENT_2], version: 1 });

    // The endpoint table (cli-table3 box drawing), known fields in order.
    expect(r.text).toMatch(/┌─+┬─+┐/);
    const fieldRow = (k: string) => new RegExp(`│ ${k}\\s+│ `);
    for (const k of ['id', 'name', 'status', 'version', 'destinationUrl', 'eventTypes']) expect(r.text).toMatch(fieldRow(k));
    expect(r.text.indexOf('│ id ')).toBeLessThan(r.text.indexOf('│ destinationUrl '));
    expect(r.text).toContain(ep!.id);

    // The secret: exactly once, after the notice, and it is the one the sandbox accepts.
    const secret: string = ep!.validSecrets[0];
    expect(secret).toMatch(/^whsec_/);
    expect(r.text.split(secret)).toHaveLength(2);
    expect(r.text.indexOf('will not be shown again')).toBeLessThan(r.text.indexOf(secret));
    expect(r.text).not.toMatch(STACK);
  });

  it('checks the URL as it is typed: a bad one is refused at the prompt, the corrected one is sent', async () => {
    const r = played(
      await pty(
        ['webhooks', 'create', '--name', 'typed', '--event', EVENT_1],
        [
          { expect: 'Destination URL' },
          { send: 'ftp://hooks.example.com/x' + ENTER },
          { expect: 'must be an absolute http:// or https:// URL' },
          { send: CTRL_U },
          { send: 'https://hooks.example.com/typed' + ENTER },
          { expect: 'will not be shown again' },
        ],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(0);
    const sent = await apiRequests();
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toEqual({ name: 'typed', destinationUrl: 'https://hooks.example.com/typed', eventTypes: [EVENT_1] });
  });

  it('asks again for an http:// URL that is not on this machine, before anything is sent', async () => {
    const r = played(
      await pty(
        ['webhooks', 'create', '--name', 'plain', '--event', EVENT_1],
        [
          { expect: 'Destination URL' },
          { send: 'http://x' + ENTER },
          { expect: 'must use https://' },
          { send: CTRL_U },
          { send: 'https://hooks.example.com/plain' + ENTER },
          { expect: 'will not be shown again' },
        ],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(0);
    const sent = await apiRequests();
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ destinationUrl: 'https://hooks.example.com/plain' });
  });

  it('Ctrl-C at the first prompt: exit 130, no stack trace, nothing sent', async () => {
    const r = played(await pty(['webhooks', 'create'], [{ expect: 'Endpoint name' }, { send: CTRL_C }], { env: { NO_COLOR: '1' } }));
    expect(r.exitCode).toBe(130);
    expect(r.text).not.toMatch(STACK);
    expect(r.text).not.toMatch(/unexpected error/);
    expect(await apiRequests()).toEqual([]);
  });

  it('Ctrl-C in the event checklist, after answering two prompts: exit 130, nothing sent', async () => {
    const r = played(
      await pty(
        ['webhooks', 'create'],
        [
          { expect: 'Endpoint name' },
          { send: 'n' + ENTER },
          { expect: 'Destination URL' },
          { send: 'https://hooks.example.com/never' + ENTER },
          { expect: EVENT_2 },
          { send: SPACE },
          { send: CTRL_C },
        ],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(130);
    expect(r.text).not.toMatch(STACK);
    expect(await apiRequests()).toEqual([]);
    expect((await control('GET', '/_sandbox/endpoints')).endpoints).toEqual([]);
  });
});

// ------------------------------------------------------------------ rotate / reactivate

describe('webhooks rotate --mode immediate at a terminal', () => {
  it('answering "n": exit 130 and nothing sent', async () => {
    const ep = await seedEndpoint();
    const r = played(
      await pty(['webhooks', 'rotate', ep.id, '--expected-version', '1', '--mode', 'immediate'], [{ expect: `Rotate ${ep.id} immediately?` }, { send: 'n' }, { send: ENTER }], {
        env: { NO_COLOR: '1' },
      }),
    );
    expect(r.exitCode).toBe(130);
    expect(r.text).not.toMatch(STACK);
    expect(r.text).not.toContain('whsec_');
    expect(await apiRequests()).toEqual([]);
  });

  it('answering "y": exit 0, the immediate rotation is sent and its secret shown', async () => {
    const ep = await seedEndpoint();
    const r = played(
      await pty(
        ['webhooks', 'rotate', ep.id, '--expected-version', '1', '--mode', 'immediate'],
        [{ expect: `Rotate ${ep.id} immediately?` }, { send: 'y' }, { send: ENTER }, { expect: 'will not be shown again' }],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(0);
    const sent = await apiRequests();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.path).toBe(scopePath(ep.id, 'secret', 'rotate'));
    expect(JSON.parse(sent[0]!.body)).toEqual({ expectedVersion: 1, mode: 'immediate' });
    const after = ((await control('GET', '/_sandbox/endpoints')).endpoints as Array<Record<string, any>>).find((e) => e.id === ep.id)!;
    expect(after.validSecrets).toHaveLength(1);
    expect(r.text).toContain(after.validSecrets[0]);
  });

  it('the confirmation defaults to no: plain Enter, or Ctrl-C, → exit 130 and nothing sent', async () => {
    const ep = await seedEndpoint();
    const args = ['webhooks', 'rotate', ep.id, '--expected-version', '1', '--mode', 'immediate'];
    const enter = played(await pty(args, [{ expect: 'immediately?' }, { send: ENTER }], { env: { NO_COLOR: '1' } }));
    expect(enter.exitCode).toBe(130);
    const ctrlC = played(await pty(args, [{ expect: 'immediately?' }, { send: CTRL_C }], { env: { NO_COLOR: '1' } }));
    expect(ctrlC.exitCode).toBe(130);
    expect(ctrlC.text).not.toMatch(STACK);
    expect(await apiRequests()).toEqual([]);
  });

  it('with nothing given: asks the version, the mode (picked with the arrow), then confirms', async () => {
    const ep = await seedEndpoint();
    const r = played(
      await pty(
        ['webhooks', 'rotate', ep.id],
        [
          { expect: "Endpoint's current version" },
          { send: '1' + ENTER },
          { expect: 'Rotation mode' },
          { expect: 'immediate' },
          { send: DOWN },
          { send: ENTER },
          { expect: `Rotate ${ep.id} immediately?` },
          { send: 'y' + ENTER },
          { expect: 'will not be shown again' },
        ],
        { env: { NO_COLOR: '1' } },
      ),
    );
    expect(r.exitCode).toBe(0);
    const sent = await apiRequests();
    expect(sent.map((s) => JSON.parse(s.body))).toEqual([{ expectedVersion: 1, mode: 'immediate' }]);
  });
});

describe('webhooks reactivate at a terminal', () => {
  it('asks for the missing expected version and reactivates', async () => {
    const ep = await seedEndpoint();
    const deact = await fetch(sb.baseUrl + scopePath(ep.id, 'deactivate'), {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.token}`, origin: 'https://c.example.com', 'x-service-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ expectedVersion: 1 }),
    });
    expect(deact.status).toBe(200);
    await control('DELETE', '/_sandbox/requests');
    const r = played(
      await pty(['webhooks', 'reactivate', ep.id], [{ expect: "Endpoint's current version" }, { send: '2' + ENTER }, { expect: 'Reactivated' }], {
        env: { NO_COLOR: '1' },
      }),
    );
    expect(r.exitCode).toBe(0);
    const sent = await apiRequests();
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toEqual({ expectedVersion: 2 });
  });
});

// ------------------------------------------------------------------ auth login

describe('auth login at a terminal', () => {
  it('reads the token from a masked prompt: not echoed, stored', async () => {
    const token = 'tok_pty_masked_Zx9Qw8Er7Ty6';
    const configDir = join(tempDir('auth'), 'config');
    const r = played(
      await pty(['auth', 'login'], [{ expect: 'Bearer token' }, { send: token }, { expect: '*'.repeat(token.length) }, { send: ENTER }, { expect: 'token stored' }], {
        scope: false,
        configDir,
        env: { NO_COLOR: '1' },
      }),
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain(token);
    expect(r.text).toContain('*'.repeat(token.length));

    const status = await execa(NODE, [BIN, 'auth', 'status', '--json'], {
      env: { PATH: process.env.PATH, HOME: tempDir('home'), CHATCTL_CACHE_DIR: SHARED_CACHE_DIR, CHATCTL_CONFIG_DIR: configDir, NO_COLOR: '1' },
      extendEnv: false,
      reject: false,
    });
    expect(status.exitCode).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ profile: 'default', tokenStored: true, tokenSource: 'file' });
    // Stored as typed (and only in the config file, which is 0600).
    const cfg = JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8'));
    expect(cfg.profiles.default.token).toBe(token);
  });

  it('Ctrl-C at the token prompt: exit 130, nothing stored', async () => {
    const configDir = join(tempDir('auth'), 'config');
    const r = played(await pty(['auth', 'login'], [{ expect: 'Bearer token' }, { send: 'tok_partial' }, { send: CTRL_C }], { scope: false, configDir, env: { NO_COLOR: '1' } }));
    expect(r.exitCode).toBe(130);
    expect(r.output).not.toContain('tok_partial');
    expect(r.text).not.toMatch(STACK);
    expect(existsSync(join(configDir, 'config.json'))).toBe(false);
  });
});

// ------------------------------------------------------------------ colour

describe('colour on a terminal', () => {
  const createArgs = (n: string) => ['webhooks', 'create', '--name', n, '--url', `https://hooks.example.com/colour-${n}`, '--event', EVENT_0];
  const done: Step[] = [{ expect: 'will not be shown again' }];

  it('FORCE_COLOR=1 without NO_COLOR: coloured', async () => {
    const r = played(await pty(createArgs('force'), done, { env: { FORCE_COLOR: '1' } }));
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(SGR);
  });

  it('a terminal with neither: coloured; NO_COLOR beats FORCE_COLOR', async () => {
    const tty = played(await pty(createArgs('tty'), done));
    expect(tty.exitCode).toBe(0);
    expect(tty.output).toMatch(SGR);
    const both = played(await pty(createArgs('both'), done, { env: { NO_COLOR: '1', FORCE_COLOR: '1' } }));
    expect(both.exitCode).toBe(0);
    expect(both.output).not.toMatch(SGR);
  });

  // No colour "with NO_COLOR or --no-color", prompts included.
  // One session each: the prompt, then chatctl's own output (summary, table, secret).
  it('NO_COLOR=1: no colour sequences at all, and the prompts are plain too', async () => {
    const r = played(
      await pty(['webhooks', 'create', '--url', 'https://hooks.example.com/colour-p', '--event', EVENT_0], [{ expect: 'Endpoint name' }, { send: 'p' + ENTER }, ...done], {
        env: { NO_COLOR: '1' },
      }),
    );
    expect(r.exitCode).toBe(0);
    expect(r.output.slice(r.output.indexOf('Created webhook endpoint'))).toContain('will not be shown again');
    expect(r.output).not.toMatch(SGR);
  });

  it("--no-color on a terminal: chatctl's own output (summary, table, secret) is plain, and the prompts too", async () => {
    const r = played(
      await pty(['--no-color', 'webhooks', 'create', '--url', 'https://hooks.example.com/colour-nc', '--event', EVENT_0], [{ expect: 'Endpoint name' }, { send: 'p' + ENTER }, ...done]),
    );
    expect(r.exitCode).toBe(0);
    const after = r.output.slice(r.output.indexOf('Created webhook endpoint'));
    expect(after).toContain('will not be shown again');
    expect(after).not.toMatch(SGR);
    expect(r.output).not.toMatch(SGR);
  });
});

// ------------------------------------------------------------------ no prompts

describe('prompts turned off on a terminal', () => {
  const cases: Array<[string, string[], Record<string, string>]> = [
    ['CI=true', [], { CI: 'true' }],
    ['--no-input', ['--no-input'], {}],
    ['CHATCTL_NO_INPUT=1', [], { CHATCTL_NO_INPUT: '1' }],
  ];
  for (const [label, flags, env] of cases) {
    it(`${label}: create with nothing given does not prompt, exits 2 naming --name`, async () => {
      const r = played(await pty([...flags, 'webhooks', 'create'], [], { env: { NO_COLOR: '1', ...env }, timeoutMs: 6_000 }));
      expect(r.exitCode).toBe(2);
      expect(r.text).toContain('--name');
      expect(r.text).not.toContain('Endpoint name');
      expect(await apiRequests()).toEqual([]);
    });
  }

  it('CI=true: rotate --mode immediate without --yes exits 2 ("--yes is required when not running interactively")', async () => {
    const ep = await seedEndpoint();
    const r = played(
      // A destination for the secret: under CI it is never printed (issue 10), so without one the run would stop for that first.
      await pty(['webhooks', 'rotate', ep.id, '--expected-version', '1', '--mode', 'immediate', '--secret-to', `file:${join(tempDir('ci'), 's')}`], [], {
        env: { NO_COLOR: '1', CI: 'true' },
        timeoutMs: 6_000,
      }),
    );
    expect(r.exitCode).toBe(2);
    expect(r.text).toContain('--yes is required when not running interactively');
    expect(r.text).not.toContain('immediately?');
    expect(await apiRequests()).toEqual([]);
  });

  it('CI=true with --yes: the immediate rotation goes through without a question', async () => {
    const ep = await seedEndpoint();
    const secretFile = join(tempDir('ci'), 's');
    const r = played(
      // Under CI the secret is never printed on the terminal (issue 10): it goes to a file.
      await pty(['webhooks', 'rotate', ep.id, '--expected-version', '1', '--mode', 'immediate', '--yes', '--secret-to', `file:${secretFile}`], [{ expect: 'delivered to' }], {
        env: { NO_COLOR: '1', CI: 'true' },
      }),
    );
    expect(r.exitCode).toBe(0);
    expect(r.text).not.toContain('will not be shown again');
    expect(readFileSync(secretFile, 'utf8')).toMatch(/^whsec_/);
    expect(r.text).not.toContain('immediately?');
    expect(await apiRequests()).toHaveLength(1);
  });

  it('stdin a terminal but stdout a file: no prompt, exit 2 naming --name', async () => {
    const out = join(tempDir('out'), 'stdout.txt');
    mkdirSync(dirname(out), { recursive: true });
    const r = played(await pty(['webhooks', 'create'], [], { env: { NO_COLOR: '1' }, stdoutFile: out, timeoutMs: 6_000 }));
    expect(r.exitCode).toBe(2);
    expect(r.text).toContain('--name');
    expect(r.text + readFileSync(out, 'utf8')).not.toContain('Endpoint name');
    expect(await apiRequests()).toEqual([]);
  });
});
