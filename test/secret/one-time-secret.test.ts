// docs/secrets.md, "The one-time signing secret": every bullet.
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../src/api/schemas.js';
import { SECRET, TOKEN, scopeEnv, secretBody } from '../support/fixtures.js';
import { parseErrorLine, parseStdoutJson } from '../support/json.js';
import { listFiles, fileMode, runCli, workspace } from '../support/run.js';
import { useRecordingServer } from '../support/server.js';
import { createHash } from 'node:crypto';

/** The fingerprint, written independently: sha256: + 16 hex of the UTF-8 bytes. */
const fingerprintOf = (s: string) => `sha256:${createHash('sha256').update(Buffer.from(s, 'utf8')).digest('hex').slice(0, 16)}`;

const server = useRecordingServer();

const E0 = EVENT_TYPES[0];
const CREATE = ['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', E0];
const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '2', '--mode', 'overlap'];

/** The secret file content: exactly the secret (one trailing newline tolerated). */
function expectSecretContent(path: string) {
  expect(readFileSync(path, 'utf8').replace(/\n$/, '')).toBe(SECRET);
}

describe('no TTY, no --json, no --secret-file: refused before sending', () => {
  for (const [label, args] of [
    ['create', CREATE],
    ['rotate', ROTATE],
  ] as const) {
    test(`${label} exits 2, sends nothing, names --secret-file and --json`, async () => {
      const r = await runCli([...args], { env: scopeEnv(server.url) });
      expect(r.exitCode).toBe(2);
      expect(server.requests).toHaveLength(0);
      expect(r.stdout).toBe('');
      expect(r.stderr.startsWith('chatctl: ')).toBe(true);
      expect(r.stderr).toContain('--secret-file');
      expect(r.stderr).toContain('--json');
    });
  }
});

describe('--secret-file', () => {
  test('create: new file, mode 0600, exactly the secret; secret not printed', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const ws = workspace();
    const file = join(ws.cwd, 'new.secret');
    const r = await runCli([...CREATE, '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    expectSecretContent(file);
    expect(fileMode(file)).toBe(0o600);
    expect(r.stdout).not.toContain(SECRET);
    expect(r.stderr).not.toContain(SECRET);
  });

  test('rotate --json: stdout is the envelope with data.secret null and data.secretFile the absolute path', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const ws = workspace();
    mkdirSync(join(ws.cwd, 'rel', 'dir'), { recursive: true });
    const r = await runCli([...ROTATE, '--json', '--secret-file', 'rel/dir/../out.secret'], {
      env: scopeEnv(server.url),
      ws,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    const abs = join(ws.cwd, 'rel', 'out.secret');
    const expected = secretBody();
    const out = parseStdoutJson(r.stdout) as { data: Record<string, unknown> };
    expect(isAbsolute(out.data.secretFile as string)).toBe(true);
    expect(out).toEqual({
      ...expected,
      // secretDelivery names each destination with the fingerprint
      data: { ...expected.data, secret: null, secretFile: abs, secretDelivery: [{ to: `file:${abs}`, fingerprint: fingerprintOf(SECRET) }] },
    });
    expectSecretContent(abs);
    expect(fileMode(abs)).toBe(0o600);
    expect(r.stdout).not.toContain(SECRET);
    expect(r.stderr).not.toContain(SECRET);
  });

  test('existing path without --force: exit 2, nothing sent, file unchanged', async () => {
    const ws = workspace();
    const file = join(ws.cwd, 'taken.secret');
    writeFileSync(file, 'old contents\n', { mode: 0o644 });
    const r = await runCli([...CREATE, '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(readFileSync(file, 'utf8')).toBe('old contents\n');
    expect(fileMode(file)).toBe(0o644);
    expect(r.stderr.startsWith('chatctl: ')).toBe(true);
  });

  test('existing path without --force, --json: usage_error line, nothing sent', async () => {
    const ws = workspace();
    const file = join(ws.cwd, 'taken.secret');
    writeFileSync(file, 'old');
    const r = await runCli([...ROTATE, '--json', '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(parseErrorLine(r.stderr).error.code).toBe('usage_error');
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(r.stdout).toBe('');
  });

  test('existing path with --force: replaced, mode 0600', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const ws = workspace();
    const file = join(ws.cwd, 'taken.secret');
    writeFileSync(file, 'old contents that are longer than the secret itself, by quite a lot\n', { mode: 0o644 });
    const r = await runCli([...ROTATE, '--secret-file', file, '--force'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    expectSecretContent(file);
    expect(fileMode(file)).toBe(0o600);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    // replaced atomically: no temporary files left beside it
    expect(readdirSync(ws.cwd)).toEqual(['taken.secret']);
  });

  test('a directory that does not exist: refused before sending (exit 2)', async () => {
    const ws = workspace();
    const file = join(ws.cwd, 'no', 'such', 'dir', 'x.secret');
    const r = await runCli([...CREATE, '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(existsSync(file)).toBe(false);
  });
});

describe('--json without --secret-file', () => {
  test('create: stdout is exactly the server envelope including the secret; stderr has no secret', async () => {
    const body = secretBody();
    server.enqueue({ status: 201, body });
    const r = await runCli([...CREATE, '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(body);
    expect(r.stderr).not.toContain(SECRET);
  });
});

describe('stdout is a TTY', () => {
  test('create prints the secret once on stdout; not on stderr', async () => {
    server.enqueue({ status: 201, body: secretBody() });
    const r = await runCli([...CREATE, '--no-input'], { env: scopeEnv(server.url), tty: { stdin: true, stdout: true, stderr: false } });
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(r.stdout.split(SECRET).length - 1).toBe(1);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  test('rotate on a TTY with stderr on the terminal too: secret appears exactly once', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const r = await runCli([...ROTATE, '--no-input'], { env: scopeEnv(server.url), tty: { stdin: true, stdout: true, stderr: true } });
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect((r.stdout + r.stderr).split(SECRET).length - 1).toBe(1);
  });
});

describe('stdin a TTY but stdout not', () => {
  test('create without --json/--secret-file is refused before sending (exit 2)', async () => {
    const r = await runCli([...CREATE, '--no-input'], {
      env: scopeEnv(server.url),
      tty: { stdin: true, stdout: false, stderr: false },
    });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('--secret-file');
    expect(r.stderr).toContain('--json');
  });
});

describe('server withholds the secret → exit 13', () => {
  const withheld: [string, ReturnType<typeof secretBody>][] = [
    ['secret null, secretAvailable false', secretBody(null, false)],
    ['secret null, secretAvailable true', secretBody(null, true)],
    ['secret present, secretAvailable false', secretBody(SECRET, false)],
  ];
  for (const [label, body] of withheld) {
    test(`${label}, --json: stdout is the envelope, stderr a secret_not_delivered line`, async () => {
      server.enqueue({ status: 201, body });
      const r = await runCli([...CREATE, '--json'], { env: scopeEnv(server.url) });
      expect(r.exitCode).toBe(13);
      expect(parseStdoutJson(r.stdout)).toEqual(body);
      const line = parseErrorLine(r.stderr);
      expect(line.exitCode).toBe(13);
      expect(line.error.code).toBe('secret_not_delivered');
      expect(line.error.status).toBeNull();
      expect(line.error.requestId).toBeNull();
      expect(server.requests).toHaveLength(1);
    });
  }

  test('human mode with --secret-file: exit 13, says the change was applied and points at rotate', async () => {
    server.enqueue({ status: 200, body: secretBody(null, false) });
    const r = await runCli([...ROTATE, '--secret-file', 'x.secret'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(13);
    expect(r.stderr.startsWith('chatctl: ') || r.stdout.length > 0).toBe(true);
    expect((r.stdout + r.stderr).toLowerCase()).toContain('rotate');
    expect(server.requests).toHaveLength(1);
  });
});

describe('saving fails after the server applied the change', () => {
  test('secret kept under <config>/recovered/ (0600, exactly the secret), path on stderr, exit 13', async () => {
    const ws = workspace();
    const dir = join(ws.cwd, 'vanishing');
    mkdirSync(dir);
    const file = join(dir, 'x.secret');
    server.enqueue(() => {
      rmSync(dir, { recursive: true, force: true });
      writeFileSync(dir, 'now a plain file, not a directory'); // so it cannot be re-created as a dir either
      return { status: 201, body: secretBody() };
    });
    const r = await runCli([...CREATE, '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(13);
    expect(server.requests).toHaveLength(1);
    const recoveredDir = join(ws.configDir, 'recovered');
    const files = readdirSync(recoveredDir).map((f) => join(recoveredDir, f));
    expect(files).toHaveLength(1);
    const saved = files[0]!;
    expect(readFileSync(saved, 'utf8')).toBe(SECRET);
    expect(fileMode(saved)).toBe(0o600);
    expect(r.stderr).toContain(saved);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stdout).not.toContain(SECRET);
    // and nowhere else on disk below config/home
    const elsewhere = [...listFiles(ws.configDir), ...listFiles(ws.home)].filter((f) => f !== saved && readFileSync(f, 'utf8').includes(SECRET));
    expect(elsewhere).toEqual([]);
  });

  test('--json: same recovery, exit 13', async () => {
    const ws = workspace();
    const dir = join(ws.cwd, 'gone');
    mkdirSync(dir);
    server.enqueue(() => {
      rmSync(dir, { recursive: true, force: true });
      return { status: 200, body: secretBody() };
    });
    const r = await runCli([...ROTATE, '--json', '--secret-file', join(dir, 's')], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(13);
    const files = readdirSync(join(ws.configDir, 'recovered'));
    expect(files).toHaveLength(1);
    const saved = join(ws.configDir, 'recovered', files[0]!);
    expect(readFileSync(saved, 'utf8')).toBe(SECRET);
    expect(fileMode(saved)).toBe(0o600);
    expect(r.stderr).toContain(saved);
    expect(r.stderr).not.toContain(SECRET);
  });
});

describe('the secret never reaches stderr, --debug or the config file', () => {
  test('--debug --json create: traces on stderr without secret or token; stdout still exactly the envelope', async () => {
    const body = secretBody();
    server.enqueue({ status: 201, body });
    const ws = workspace();
    const r = await runCli([...CREATE, '--json', '--debug'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(parseStdoutJson(r.stdout)).toEqual(body);
    expect(r.stderr).toMatch(/^\[debug\] > POST http:\/\/127\.0\.0\.1:\d+\/\S+ \(attempt 1 of \d+\)$/m);
    expect(r.stderr).toMatch(/^\[debug\] < 201 in \d+ ms$/m);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stderr).not.toContain(TOKEN);
    for (const f of [...listFiles(ws.configDir), ...listFiles(ws.home)]) expect(readFileSync(f, 'utf8'), f).not.toContain(SECRET);
  });

  test('--debug with --secret-file: secret only in the file', async () => {
    server.enqueue({ status: 200, body: secretBody() });
    const ws = workspace();
    const file = join(ws.cwd, 'd.secret');
    const r = await runCli([...ROTATE, '--debug', '--secret-file', file], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^\[debug\] > POST http:\/\/127\.0\.0\.1:\d+\/\S+ \(attempt 1 of \d+\)$/m);
    expect(r.stderr).toMatch(/^\[debug\] < 200 in \d+ ms$/m);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expectSecretContent(file);
  });

  test('a symlink at the target path is an existing path: refused without --force, target untouched', async () => {
    const ws = workspace();
    const target = join(ws.cwd, 'elsewhere.txt');
    writeFileSync(target, 'keep me');
    chmodSync(target, 0o644);
    const link = join(ws.cwd, 'link.secret');
    symlinkSync(target, link);
    const r = await runCli([...CREATE, '--secret-file', link], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });
});
