// At home in GitHub Actions, black-box through the execute seam against the
// in-process sandbox: `::add-mask::` for the token and every secret before
// any output that could show them (on stdout, or stderr when stdout is the
// JSON document or the secret), the github-output:/github-env: sinks read
// back the way the runner reads its files, their refusals before sending,
// `--from` with `{id}`, an exec: destination that prints and fails under
// --json, and exit 13's details and hint during an overlap.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { baseEnv, cleanupTempDirs, runInProcess, workspace } from '../support/run.js';
import { endpointBody, sandbox, T0 } from '../support/sandbox.js';
import { parseRunnerFile } from '../support/github-runner.js';

afterAll(cleanupTempDirs);

const fp = (s: string) => `sha256:${createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 16)}`;

async function setUp() {
  const sb = await sandbox();
  const ws = workspace();
  const runner = join(ws.root, 'runner');
  mkdirSync(runner);
  const files = { GITHUB_OUTPUT: join(runner, 'output'), GITHUB_ENV: join(runner, 'env') };
  // The runner creates both files, empty, before each step.
  writeFileSync(files.GITHUB_OUTPUT, '');
  writeFileSync(files.GITHUB_ENV, '');
  const env = (extra: Record<string, string | undefined> = {}) => {
    const e: Record<string, string | undefined> = {
      ...baseEnv(ws),
      ...sb.scopeEnv,
      GITHUB_ACTIONS: 'true',
      ...files,
      ...extra,
    };
    for (const [k, v] of Object.entries(e)) if (v === undefined) delete e[k];
    return e;
  };
  const run = (args: string[], extra: Record<string, string | undefined> = {}, input?: string) =>
    runInProcess(args, { env: env(extra), cwd: ws.cwd, input, timeoutMs: 15_000, inject: { now: () => T0 } });
  const endpoints = async () => (await sb.control('endpoints')).body.data.endpoints as { id: string; version: number; validSecrets: string[]; previousSecretExpiresAt: string | null }[];
  const requests = async () => (await sb.control('requests')).body.data.requests as unknown[];
  const created = async () => {
    const r = await sb.create(endpointBody(Math.floor(Math.random() * 1e9)));
    expect(r.status).toBe(201);
    return { id: r.body.data.endpoint.id as string, secret: r.body.data.secret as string };
  };
  return { sb, ws, files, env, run, endpoints, requests, created };
}

let hooks = 0;
/** create, each time for a new destination (the sandbox refuses a second endpoint for one URL). */
const create = () => ['webhooks', 'create', '--name', 'ci', '--url', `https://hooks.example.com/ci/${++hooks}`, '--event', 'chat.message.created.v1'];
const masks = (text: string) => text.split('\n').filter((l) => l.startsWith('::add-mask::'));
const outsideMasks = (text: string) =>
  text
    .split('\n')
    .filter((l) => !l.startsWith('::add-mask::'))
    .join('\n');

describe('GITHUB_ACTIONS=true: ::add-mask:: before anything could show a secret', () => {
  test('create with github-output: the token and the secret are masked on stdout, first; the value reads back as the runner reads it', async () => {
    const t = await setUp();
    const r = await t.run([...create(), '--secret-to', 'github-output:WEBHOOK_SECRET']);
    expect(r.exitCode, r.stderr).toBe(0);
    const [endpoint] = await t.endpoints();
    const secret = endpoint!.validSecrets[0]!;
    // The first lines of the run: the token, then the secret (before the summary that names its fingerprint).
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`::add-mask::${t.sb.sb.token}`);
    expect(lines[1]).toBe(`::add-mask::${secret}`);
    expect(masks(r.stdout)).toEqual([`::add-mask::${t.sb.sb.token}`, `::add-mask::${secret}`]);
    expect(outsideMasks(r.stdout)).not.toContain(secret);
    expect(r.stdout).toContain(fp(secret));
    expect(r.stderr).not.toContain(secret);
    expect(r.stderr).not.toContain('::add-mask::');
    const values = parseRunnerFile(readFileSync(t.files.GITHUB_OUTPUT, 'utf8'));
    expect([...values]).toEqual([['WEBHOOK_SECRET', secret]]);
    expect(readFileSync(t.files.GITHUB_ENV, 'utf8')).toBe('');
  });

  test('--json: the masks go to stderr, before the JSON document that holds the secret; stdout is the document alone', async () => {
    const t = await setUp();
    const r = await t.run([...create(), '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { data: { secret: string } };
    expect(masks(r.stderr)).toEqual([`::add-mask::${t.sb.sb.token}`, `::add-mask::${doc.data.secret}`]);
    expect(r.stderr.trim().split('\n')).toHaveLength(2);
  });

  test('--secret-to stdout: the masks go to stderr; stdout is the secret and one newline', async () => {
    const t = await setUp();
    const { id } = await t.created();
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', 'stdout']);
    expect(r.exitCode, r.stderr).toBe(0);
    const secret = (await t.endpoints())[0]!.validSecrets[0]!;
    expect(r.stdout).toBe(`${secret}\n`);
    expect(masks(r.stderr)).toEqual([`::add-mask::${t.sb.sb.token}`, `::add-mask::${secret}`]);
    expect(r.stderr.indexOf(`::add-mask::${secret}`)).toBe(r.stderr.indexOf('::add-mask::', 1));
    expect(outsideMasks(r.stderr)).not.toContain(secret);
  });

  test('stdout sent to /dev/null: the masks go to stderr, where the runner still sees them', async () => {
    const t = await setUp();
    const r = await runInProcess([...create(), '--secret-to', 'github-env:WEBHOOK_SECRET'], { env: t.env(), cwd: t.ws.cwd, stdoutDiscards: true, inject: { now: () => T0 } });
    expect(r.exitCode, r.stderr).toBe(0);
    const secret = parseRunnerFile(readFileSync(t.files.GITHUB_ENV, 'utf8')).get('WEBHOOK_SECRET')!;
    expect(masks(r.stderr)).toEqual([`::add-mask::${t.sb.sb.token}`, `::add-mask::${secret}`]);
    expect(masks(r.stdout)).toEqual([]);
  });

  test('without GITHUB_ACTIONS=true nothing is announced', async () => {
    const t = await setUp();
    for (const value of [undefined, 'false', '1']) {
      const r = await t.run([...create(), '--json'], { GITHUB_ACTIONS: value });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout + r.stderr).not.toContain('::add-mask::');
    }
  });

  test('--debug: the trace never shows the secret, and the mask precedes every trace line that follows the answer', async () => {
    const t = await setUp();
    const r = await t.run([...create(), '--secret-to', 'github-env:WEBHOOK_SECRET', '--debug']);
    expect(r.exitCode, r.stderr).toBe(0);
    const secret = parseRunnerFile(readFileSync(t.files.GITHUB_ENV, 'utf8')).get('WEBHOOK_SECRET')!;
    expect(secret).toBe((await t.endpoints())[0]!.validSecrets[0]);
    expect(r.stderr).toContain('[debug]');
    expect(r.stderr).not.toContain(secret);
    expect(r.stderr).not.toContain(t.sb.sb.token);
    expect(masks(r.stdout)).toEqual([`::add-mask::${t.sb.sb.token}`, `::add-mask::${secret}`]);
  });
});

describe('github-output: and github-env: are checked before anything is sent', () => {
  const cases: [string, string[], Record<string, string | undefined>, RegExp][] = [
    ['GITHUB_OUTPUT unset', ['--secret-to', 'github-output:S'], { GITHUB_OUTPUT: undefined }, /GITHUB_OUTPUT is not set/],
    ['GITHUB_ENV empty', ['--secret-to', 'github-env:S'], { GITHUB_ENV: '' }, /GITHUB_ENV is not set/],
    ['a name starting with a digit', ['--secret-to', 'github-output:1S'], {}, /"1S" is not a valid name/],
    ['a name with a dash', ['--secret-to', 'github-env:MY-SECRET'], {}, /"MY-SECRET" is not a valid name/],
    ['an empty name', ['--secret-to', 'github-output:'], {}, /"" is not a valid name/],
    ['{id} in create (no id before the answer)', ['--secret-to', 'github-output:S_{id}'], {}, /not known before the server answers/],
    ['the same name twice', ['--secret-to', 'github-output:S', '--secret-to', 'github-output:S'], {}, /given twice/],
  ];
  test.each(cases)('%s: exit 2, nothing sent', async (_what, flags, extra, message) => {
    const t = await setUp();
    const before = (await t.requests()).length;
    const r = await t.run([...create(), ...flags, '--json'], extra);
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(r.stderr.split('\n').filter((l) => l.startsWith('{'))[0]!).error.message).toMatch(message);
    expect(await t.requests()).toHaveLength(before);
  });

  test('a file that cannot be appended to (a folder; a path in a missing folder): exit 2, nothing sent', async () => {
    const t = await setUp();
    const before = (await t.requests()).length;
    for (const path of [t.ws.cwd, join(t.ws.root, 'missing', 'output')]) {
      const r = await t.run([...create(), '--secret-to', 'github-output:S'], { GITHUB_OUTPUT: path });
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain(path.includes('missing') ? 'does not exist' : 'a folder');
    }
    expect(await t.requests()).toHaveLength(before);
  });

  test('a value appended after an unfinished last line and beside earlier values: every value reads back', async () => {
    const t = await setUp();
    writeFileSync(t.files.GITHUB_OUTPUT, 'before=1\nlast=unfinished');
    const r = await t.run([...create(), '--secret-to', 'github-output:WEBHOOK_SECRET', '--secret-to', 'github-env:WEBHOOK_SECRET']);
    expect(r.exitCode, r.stderr).toBe(0);
    const secret = (await t.endpoints())[0]!.validSecrets[0]!;
    expect(Object.fromEntries(parseRunnerFile(readFileSync(t.files.GITHUB_OUTPUT, 'utf8')))).toEqual({ before: '1', last: 'unfinished', WEBHOOK_SECRET: secret });
    expect(Object.fromEntries(parseRunnerFile(readFileSync(t.files.GITHUB_ENV, 'utf8')))).toEqual({ WEBHOOK_SECRET: secret });
    // Each delimiter is its own: random, not a fixed word.
    const delimiters = [t.files.GITHUB_OUTPUT, t.files.GITHUB_ENV].map((f) => /WEBHOOK_SECRET<<(.+)\n/.exec(readFileSync(f, 'utf8'))![1]);
    expect(delimiters[0]).not.toBe(delimiters[1]);
  });
});

describe('rotate --from with github-output:NAME_{id}', () => {
  test('each endpoint its own value, ids made safe; a name without {id} for many endpoints is refused', async () => {
    const t = await setUp();
    const a = await t.created();
    const b = await t.created();
    writeFileSync(join(t.ws.cwd, 'fleet.ndjson'), [a, b].map((e) => JSON.stringify({ endpointId: e.id, expectedVersion: 1 })).join('\n') + '\n');

    const before = (await t.requests()).length;
    const shared = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'github-output:SECRET', '--json']);
    expect(shared.exitCode).toBe(2);
    expect(await t.requests()).toHaveLength(before);

    const r = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'github-output:SECRET_{id}', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const now = new Map((await t.endpoints()).map((e) => [e.id, e.validSecrets[0]!]));
    const values = parseRunnerFile(readFileSync(t.files.GITHUB_OUTPUT, 'utf8'));
    expect(Object.fromEntries(values)).toEqual({ [`SECRET_${a.id}`]: now.get(a.id), [`SECRET_${b.id}`]: now.get(b.id) });
    // Masked before delivery, on stderr (stdout holds the JSON lines).
    for (const secret of now.values()) expect(masks(r.stderr)).toContain(`::add-mask::${secret}`);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { endpointId?: string; delivery?: { to: string }[] });
    expect(lines.find((l) => l.endpointId === a.id)!.delivery).toEqual([{ to: `github-output:SECRET_${a.id}`, fingerprint: fp(now.get(a.id)!) }]);
  });
});

describe('--json: an exec: destination that prints and fails', () => {
  const NOISY = (token: string) => `exec:echo "stored nowhere"; echo "the secret was $(cat)"; echo ${token} >&2; exit 3`;

  test('single rotate: stderr is one JSON line; the output, secret and token blanked, is in the failure', async () => {
    const t = await setUp();
    const { id } = await t.created();
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', NOISY(t.sb.sb.token), '--json'], { GITHUB_ACTIONS: undefined });
    expect(r.exitCode).toBe(13);
    const secret = (await t.endpoints())[0]!.validSecrets[0]!;
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    const e = JSON.parse(lines[0]!) as {
      error: { details: { failed: { to: string; reason: string; output: string }[]; endpointId: string; version: number; fingerprint: string; recoveredPath: string } };
    };
    const failed = e.error.details.failed[0]!;
    expect(failed.reason).toBe('exited with status 3');
    expect(failed.output).toContain('stored nowhere\n');
    expect(failed.output).toContain('the secret was [REDACTED]\n');
    expect(failed.output).toContain('[REDACTED]\n');
    expect(failed.output).not.toContain(secret);
    expect(failed.output).not.toContain(t.sb.sb.token);
    expect(e.error.details).toMatchObject({ endpointId: id, version: 2, fingerprint: fp(secret) });
    expect(readFileSync(e.error.details.recoveredPath, 'utf8')).toBe(secret);
  });

  test('only the last 4,096 bytes of a long output are kept, whole characters', async () => {
    const t = await setUp();
    const { id } = await t.created();
    const cmd = `exec:cat >/dev/null; i=0; while [ $i -lt 3000 ]; do printf 'é-'; i=$((i+1)); done; echo END; exit 1`;
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', cmd, '--json']);
    expect(r.exitCode).toBe(13);
    const line = r.stderr.split('\n').find((l) => l.startsWith('{'))!;
    const output = (JSON.parse(line) as { error: { details: { failed: { output: string }[] } } }).error.details.failed[0]!.output;
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(4096);
    expect(Buffer.byteLength(output)).toBeGreaterThan(4090);
    expect(output.endsWith('é-END\n')).toBe(true);
    expect(output).not.toContain('\ufffd');
  });

  test("--from: the item line carries the output; stderr holds nothing but mask lines and the item's ::error annotation", async () => {
    const t = await setUp();
    const { id } = await t.created();
    writeFileSync(join(t.ws.cwd, 'one.ndjson'), JSON.stringify({ endpointId: id, expectedVersion: 1 }) + '\n');
    const r = await t.run(['webhooks', 'rotate', '--from', 'one.ndjson', '--mode', 'overlap', '--secret-to', NOISY(t.sb.sb.token), '--json']);
    expect(r.exitCode).toBe(14);
    const secret = (await t.endpoints())[0]!.validSecrets[0]!;
    const [annotation, ...others] = r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('::add-mask::'));
    expect(others).toEqual([]);
    // What the command said last reaches the annotation, scrubbed (docs/ci-systems.md).
    expect(annotation).toMatch(new RegExp(`^::error title=chatctl webhooks rotate ${id} \\(exit 13\\)::endpoint ${id}: exit 13; .*the destination said: `));
    expect(annotation).not.toContain(secret);
    expect(annotation).not.toContain(t.sb.sb.token);
    const item = JSON.parse(r.stdout.split('\n')[0]!) as { ok: boolean; exitCode: number; error: { details: { failed: { output: string }[]; endpointId: string; version: number } } };
    expect(item).toMatchObject({ ok: false, exitCode: 13, error: { details: { endpointId: id, version: 2 } } });
    expect(item.error.details.failed[0]!.output).toContain('the secret was [REDACTED]');
    expect(item.error.details.failed[0]!.output).not.toContain(secret);
    expect(item.error.details.failed[0]!.output).not.toContain(t.sb.sb.token);
  });

  test('human mode still shows the command output on stderr, scrubbed', async () => {
    const t = await setUp();
    const { id } = await t.created();
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', NOISY(t.sb.sb.token)], { GITHUB_ACTIONS: undefined });
    expect(r.exitCode).toBe(13);
    expect(r.stderr).toContain('stored nowhere');
    expect(r.stderr).toContain('the secret was [REDACTED]');
  });
});

describe('exit 13 during an overlap', () => {
  test('details name the endpoint, its new version, fingerprint and copy; the hint names the overlap end and --mode immediate, which works', async () => {
    const t = await setUp();
    const { id } = await t.created();
    const failing = ['--secret-to', 'exec:cat >/dev/null; exit 4'];
    const json = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', ...failing, '--json'], { GITHUB_ACTIONS: undefined });
    expect(json.exitCode).toBe(13);
    const e = JSON.parse(json.stderr.trim()) as { error: { details: Record<string, unknown> } };
    const [endpoint] = await t.endpoints();
    expect(e.error.details).toMatchObject({ endpointId: id, version: 2, fingerprint: fp(endpoint!.validSecrets[0]!), recoveredPath: expect.stringContaining('recovered') });
    expect(Object.keys(e.error.details).slice(0, 4)).toEqual(['endpointId', 'version', 'fingerprint', 'recoveredPath']);
    expect(endpoint!.previousSecretExpiresAt).not.toBeNull();

    // The hint of the human run (version 3 after it), during the overlap the first one started.
    const human = await t.run(['webhooks', 'rotate', id, '--expected-version', '2', '--mode', 'immediate', '--yes', ...failing], { GITHUB_ACTIONS: undefined });
    expect(human.exitCode).toBe(13);
    // An immediate rotation ends any overlap: plain overlap rotation next.
    // The job's own destination, as given (not a placeholder).
    expect(human.stderr).toContain(`to get a new secret, rotate it: chatctl webhooks rotate '${id}' --expected-version 3 --mode overlap --secret-to 'exec:cat >/dev/null; exit 4'`);

    const overlap = await t.run(['webhooks', 'rotate', id, '--expected-version', '3', '--mode', 'overlap', ...failing], { GITHUB_ACTIONS: undefined });
    expect(overlap.exitCode).toBe(13);
    const end = (await t.endpoints())[0]!.previousSecretExpiresAt!;
    expect(overlap.stderr).toContain(`the overlap of this rotation runs until ${end}`);
    const immediate = `chatctl webhooks rotate '${id}' --expected-version 4 --mode immediate --yes --secret-to 'exec:cat >/dev/null; exit 4'`;
    expect(overlap.stderr).toContain(immediate);

    // What the hint says holds: overlap is refused (8) during the overlap, immediate works.
    expect((await t.run(['webhooks', 'rotate', id, '--expected-version', '4', '--mode', 'overlap', '--secret-to', 'file:x'])).exitCode).toBe(8);
    const again = await t.run(['webhooks', 'rotate', id, '--expected-version', '4', '--mode', 'immediate', '--yes', '--secret-to', 'file:new.whsec']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(readFileSync(join(t.ws.cwd, 'new.whsec'), 'utf8')).toBe((await t.endpoints())[0]!.validSecrets[0]);
  });
});

describe('chatctl sandbox in a GitHub Actions job', () => {
  const start = async (json: boolean) => {
    const ws = workspace();
    const stop = new AbortController();
    const r = await runInProcess(['sandbox', '--port', '0', ...(json ? ['--json'] : [])], {
      env: { ...baseEnv(ws), GITHUB_ACTIONS: 'true' },
      cwd: ws.cwd,
      signal: stop.signal,
      timeoutMs: 15_000,
      // Stopped (as by Ctrl-C) once it has said where it listens.
      onStdout: (text) => void (text.includes('127.0.0.1') && setImmediate(() => stop.abort('SIGINT'))),
    });
    expect(r.timedOut).toBe(false);
    return r;
  };

  test('its token is masked before it is printed: on stdout, or on stderr with --json', async () => {
    const human = await start(false);
    const token = /::add-mask::(\S+)/.exec(human.stdout)![1]!;
    expect(token).toMatch(/^sbx_/);
    expect(human.stdout.indexOf(`::add-mask::${token}\n`)).toBe(0);
    expect(human.stdout.split(token).length).toBeGreaterThan(2); // printed after the mask (token line, export line)

    const json = await start(true);
    const info = JSON.parse(json.stdout.split('\n')[0]!) as { token: string };
    expect(json.stderr).toBe(`::add-mask::${info.token}\n`);
  });
});
