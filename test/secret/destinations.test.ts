// Issue 10, black-box: the real bin/chatctl.js against a loopback server.
// Every `--secret-to` sink, failing stdouts, odd answers, --force onto what
// is not a regular file, CI on a TTY, what --debug, --json
// and stderr show. In each case the exit code, and that the secret is whole
// in exactly the places docs/secrets.md names and nowhere else.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../src/api/schemas.js';
import { APP, BIN, ENV, NODE, ORG, SECRET, TOKEN, scopeEnv, secretBody } from '../support/fixtures.js';
import { prepareRecoveryFolder, recordPaths } from '../../src/secret/record.js';
import { parseErrorLine } from '../support/json.js';
import { buildEnv, fileMode, runCli, shellQuote, signalPending, waitFor, workspace, type RunResult, type Workspace } from '../support/run.js';
import { useRecordingServer } from '../support/server.js';

const server = useRecordingServer();

const CREATE = ['webhooks', 'create', '--name', 'n', '--url', 'https://h.example/x', '--event', EVENT_TYPES[0]];
const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '2', '--mode', 'overlap'];
/** Written independently of chatctl: sha256: + 16 hex of the UTF-8 bytes. */
const FP = `sha256:${createHash('sha256').update(Buffer.from(SECRET, 'utf8')).digest('hex').slice(0, 16)}`;
const ok = () => ({ status: 200, body: secretBody() });

/** The forms the secret could leak in: as is, JSON-escaped with \/, as \u escapes. */
const FORMS = [SECRET, SECRET.replace(/\//g, '\\/'), [...SECRET].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')];

function allFiles(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...allFiles(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

const recoveredFiles = (ws: Workspace) => allFiles(join(ws.configDir, 'recovered'));

/**
 * The secret is whole in `files` (and on stdout only if `stdout` says how),
 * and in no other file of the workspace, nor on stderr, in any form.
 */
function expectSecretOnlyIn(r: { stdout: string; stderr: string }, ws: Workspace, files: string[], stdout: 'none' | 'line' | 'anywhere' = 'none') {
  for (const f of files) expect(readFileSync(f, 'utf8'), f).toContain(SECRET);
  for (const f of [...allFiles(ws.home), ...allFiles(ws.configDir), ...allFiles(ws.cwd)]) {
    if (files.includes(f)) continue;
    const text = readFileSync(f, 'utf8');
    for (const form of FORMS) expect(text.includes(form), `${f} holds the secret`).toBe(false);
  }
  for (const form of FORMS) expect(r.stderr.includes(form), `stderr holds the secret: ${r.stderr}`).toBe(false);
  if (stdout === 'none') for (const form of FORMS) expect(r.stdout.includes(form), 'stdout holds the secret').toBe(false);
  if (stdout === 'line') expect(r.stdout).toBe(`${SECRET}\n`);
}

/** Exit 13 with the secret in exactly one new 0600 file under recovered/, named on stderr with the endpoint and fingerprint. */
function expectRecovered(r: RunResult, endpoint = 'we_1', extraFiles: string[] = []): string {
  expect(r.exitCode, r.stderr).toBe(13);
  const files = recoveredFiles(r.ws);
  expect(files).toHaveLength(1);
  const kept = files[0]!;
  expect(readFileSync(kept, 'utf8')).toBe(SECRET);
  expect(fileMode(kept)).toBe(0o600);
  expect(fileMode(join(r.ws.configDir, 'recovered'))).toBe(0o700);
  expect(r.stderr).toContain(kept);
  expect(r.stderr).toContain(endpoint);
  expect(r.stderr).toContain(FP);
  expectSecretOnlyIn(r, r.ws, [kept, ...extraFiles]);
  return kept;
}

/** Runs chatctl through sh, so stdout can be a pipe to `reader` or a file like /dev/full; chatctl's status comes back on a file. */
async function throughShell(args: string[], tail: string, env: Record<string, string | undefined>, ws = workspace()) {
  const cmd = [NODE, BIN, ...args].map(shellQuote).join(' ');
  const errFile = join(ws.cwd, '..', 'stderr.txt');
  const rcFile = join(ws.cwd, '..', 'rc.txt');
  await execa('sh', ['-c', `{ ${cmd} 2>${shellQuote(errFile)}; echo $? >${shellQuote(rcFile)}; } ${tail}`], {
    cwd: ws.cwd,
    env: buildEnv(ws, env),
    extendEnv: false,
    reject: false,
    timeout: 20_000,
  });
  return { exitCode: Number(readFileSync(rcFile, 'utf8').trim()), stdout: '', stderr: readFileSync(errFile, 'utf8'), ws, durationMs: 0, timedOut: false } as RunResult;
}

// ---------------------------------------------------------------- file:

describe('file:', () => {
  test('a new 0600 file with exactly the secret; --json shows secretDelivery and secretFile, secret null', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...ROTATE, '--json', '--secret-to', 'file:out/../s.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    const file = join(ws.cwd, 's.whsec');
    expect(readFileSync(file, 'utf8')).toBe(SECRET);
    expect(fileMode(file)).toBe(0o600);
    const data = JSON.parse(r.stdout).data;
    expect(data.secret).toBeNull();
    expect(data.secretFile).toBe(file);
    expect(data.secretDelivery).toEqual([{ to: `file:${file}`, fingerprint: FP }]);
    expect(r.stderr).toBe('');
    expectSecretOnlyIn(r, ws, [file]);
    expect(readdirSync(join(ws.configDir, 'recovered'))).toEqual([]); // the record was removed
  });

  test("{id} in a single rotate's path is the endpoint id, as with --from; create, which has no id before the answer, refuses it (exit 2, nothing sent)", async () => {
    server.enqueue(ok());
    const ws = workspace();
    mkdirSync(join(ws.cwd, 'secrets'));
    const r = await runCli([...ROTATE, '--json', '--secret-file', 'secrets/{id}.whsec', '--secret-to', 'env-file:{id}.env#WEBHOOK_SECRET'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    const file = join(ws.cwd, 'secrets', 'we_1.whsec');
    expect(readFileSync(file, 'utf8')).toBe(SECRET);
    expect(readFileSync(join(ws.cwd, 'we_1.env'), 'utf8')).toBe(`WEBHOOK_SECRET=${SECRET}\n`);
    expect(JSON.parse(r.stdout).data.secretDelivery).toEqual([
      { to: `file:${file}`, fingerprint: FP },
      { to: `env-file:${join(ws.cwd, 'we_1.env')}#WEBHOOK_SECRET`, fingerprint: FP },
    ]);
    expect(readdirSync(join(ws.cwd, 'secrets'))).toEqual(['we_1.whsec']);
    // The path is checked with the id in it, before sending: an existing we_1.whsec is refused.
    const again = await runCli([...ROTATE, '--secret-file', 'secrets/{id}.whsec'], { env: scopeEnv(server.url), ws });
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain(`${file} already exists`);
    expect(server.requests).toHaveLength(1);

    const created = await runCli([...CREATE, '--secret-to', 'file:{id}.whsec'], { env: scopeEnv(server.url), ws });
    expect(created.exitCode).toBe(2);
    expect(created.stderr).toContain('{id} stands for the endpoint id, which is not known before the server answers');
    expect(server.requests).toHaveLength(1);
    expect(existsSync(join(ws.cwd, '{id}.whsec'))).toBe(false);
  });

  test('human output names the destination and the fingerprint', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...CREATE, '--secret-to', 'file:a.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Signing secret ${FP} delivered to:`);
    expect(r.stdout).toContain(`file:${join(ws.cwd, 'a.whsec')} (mode 0600)`);
    expectSecretOnlyIn(r, ws, [join(ws.cwd, 'a.whsec')]);
  });

  test.each([
    ['--secret-to file:-', ['--secret-to', 'file:-']],
    ['--secret-file -', ['--secret-file', '-']],
  ])('%s is refused with a pointer to --secret-to stdout, nothing sent, no file named -', async (_l, flags) => {
    const ws = workspace();
    const r = await runCli([...CREATE, ...flags], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--secret-to stdout');
    expect(server.requests).toHaveLength(0);
    expect(readdirSync(ws.cwd)).toEqual([]);
  });

  describe('--force replaces only a regular file', () => {
    function targets(ws: Workspace): [string, string][] {
      const keep = join(ws.cwd, 'keep.txt');
      writeFileSync(keep, 'keep me');
      symlinkSync(keep, join(ws.cwd, 'link'));
      symlinkSync('/dev/null', join(ws.cwd, 'link-to-dev-null'));
      execFileSync('mkfifo', [join(ws.cwd, 'fifo')]);
      mkdirSync(join(ws.cwd, 'dir'));
      let device = join(ws.cwd, 'null-device');
      try {
        execFileSync('mknod', [device, 'c', '1', '3'], { stdio: 'ignore' }); // as root: a copy of /dev/null
      } catch {
        device = '/dev/null'; // not root: the real one
      }
      return [
        ['a symlink to a file', join(ws.cwd, 'link')],
        ['a symlink to /dev/null', join(ws.cwd, 'link-to-dev-null')],
        ['a FIFO', join(ws.cwd, 'fifo')],
        ['a directory', join(ws.cwd, 'dir')],
        ['a device node', device],
        ['/dev/stdout', '/dev/stdout'],
      ];
    }

    test('a symlink, FIFO, directory, device node or /dev/stdout: exit 2, nothing sent, nothing changed', async () => {
      const ws = workspace();
      for (const [label, target] of targets(ws)) {
        for (const flags of [
          ['--secret-file', target, '--force'],
          ['--secret-to', `file:${target}`, '--force'],
        ]) {
          const r = await runCli([...CREATE, '--json', ...flags], { env: scopeEnv(server.url), ws });
          expect(r.exitCode, `${label}: ${r.stderr}`).toBe(2);
          expect(parseErrorLine(r.stderr).error.message).toMatch(/symbolic link|FIFO|folder|device|not a regular file/);
        }
      }
      expect(server.requests).toHaveLength(0);
      expect(readFileSync(join(ws.cwd, 'keep.txt'), 'utf8')).toBe('keep me');
      expect(lstatSync(join(ws.cwd, 'link')).isSymbolicLink()).toBe(true);
      expect(lstatSync(join(ws.cwd, 'fifo')).isFIFO()).toBe(true);
    });

    test('a regular file: replaced atomically with mode 0600, nothing else left beside it', async () => {
      server.enqueue(ok());
      const ws = workspace();
      const file = join(ws.cwd, 'old.whsec');
      writeFileSync(file, 'an older and much longer secret value\n', { mode: 0o644 });
      const r = await runCli([...ROTATE, '--secret-to', `file:${file}`, '--force'], { env: scopeEnv(server.url), ws });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(SECRET);
      expect(fileMode(file)).toBe(0o600);
      expect(readdirSync(ws.cwd)).toEqual(['old.whsec']);
    });
  });
});

// ---------------------------------------------------------------- env-file:

describe('a run killed while it held the secret, re-run with its Idempotency-Key', () => {
  test('the secret the earlier run kept (found by endpoint and whole key) is delivered without sending again, then removed', async () => {
    const ws = workspace();
    // What the earlier run left after a failed delivery: the secret alone under recovered/.
    prepareRecoveryFolder(ws.configDir);
    const kept = recordPaths(ws.configDir, { op: 'rotate', scope: `${ORG}/${APP}/${ENV}`, endpointId: 'we_1', idempotencyKey: 'key-killed-1' }).secret;
    writeFileSync(kept, SECRET, { mode: 0o600 });
    const before = server.requests.length;
    const r = await runCli([...ROTATE, '--idempotency-key', 'key-killed-1', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(ws.cwd, 's.whsec'), 'utf8')).toBe(SECRET);
    expect(existsSync(kept)).toBe(false);
    expect(server.requests.length).toBe(before);
    expect(r.stderr).toContain('does not return the secret twice');
    expectSecretOnlyIn(r, ws, [join(ws.cwd, 's.whsec')]);
  });

  test('with no kept copy, exit 13: the secret is not in hand, and the hint rotates again', async () => {
    server.enqueue({ status: 200, body: secretBody(null, false) });
    const r = await runCli([...ROTATE, '--idempotency-key', 'key-killed-2', '--secret-to', 'file:s.whsec', '--json'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(13);
    const e = parseErrorLine(r.stderr);
    expect(e.error.details).toMatchObject({ endpointId: 'we_1', recoveredPath: null });
    expect(e.error.message).toContain('not available');
    // The key was given: the answer may be the replay of an earlier run's request, which this machine kept no record of.
    expect(e.error.message).toContain('if an earlier run sent this Idempotency-Key (key-killed-2)');
    expect(e.error.message).toContain('no record of it is kept here');
  });
});

describe('env-file:', () => {
  test('NAME=<secret> set, every other byte kept, mode 0600', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const env = join(ws.cwd, '.env');
    const before = '# deploy settings\r\nAPI_URL=https://x\r\nWEBHOOK_SECRET=old-value\r\n  export OTHER="a b"\r\n';
    writeFileSync(env, before, { mode: 0o600 });
    const r = await runCli([...ROTATE, '--secret-to', 'env-file:.env#WEBHOOK_SECRET'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(env, 'utf8')).toBe(before.replace('WEBHOOK_SECRET=old-value', `WEBHOOK_SECRET=${SECRET}`));
    expect(fileMode(env)).toBe(0o600);
    expect(r.stdout).toContain(`env-file:${env}#WEBHOOK_SECRET (mode 0600)`);
    expectSecretOnlyIn(r, ws, [env]);
  });

  test('created when absent', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...CREATE, '--json', '--secret-to', 'env-file:ci.env#S'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(ws.cwd, 'ci.env'), 'utf8')).toBe(`S=${SECRET}\n`);
    expect(fileMode(join(ws.cwd, 'ci.env'))).toBe(0o600);
    expect(JSON.parse(r.stdout).data.secretDelivery).toEqual([{ to: `env-file:${join(ws.cwd, 'ci.env')}#S`, fingerprint: FP }]);
  });

  test('an existing file readable by others, a symlink, or a bad NAME: exit 2, nothing sent, file unchanged', async () => {
    const ws = workspace();
    const env = join(ws.cwd, '.env');
    writeFileSync(env, 'A=1\n');
    chmodSync(env, 0o644);
    symlinkSync(env, join(ws.cwd, 'link.env'));
    for (const spec of ['env-file:.env#S', 'env-file:link.env#S', 'env-file:new.env#1BAD', 'env-file:new.env#A-B', 'env-file:new.env']) {
      const r = await runCli([...CREATE, '--secret-to', spec], { env: scopeEnv(server.url), ws });
      expect(r.exitCode, `${spec}: ${r.stderr}`).toBe(2);
    }
    expect(server.requests).toHaveLength(0);
    expect(readFileSync(env, 'utf8')).toBe('A=1\n');
    expect(fileMode(env)).toBe(0o644);
  });
});

// ---------------------------------------------------------------- exec:

describe('exec:', () => {
  test('the command gets exactly the secret on stdin and the two variables; its output goes to stderr, scrubbed', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const got = join(ws.cwd, 'got');
    const cmd = `exec:cat > ${shellQuote(got)}; printf '%s\\n' "$CHATCTL_ENDPOINT_ID $CHATCTL_SECRET_FINGERPRINT token:\${CHATCTL_TOKEN-unset}" > ${shellQuote(got)}.env; cat ${shellQuote(got)}; echo; echo stored >&2`;
    const r = await runCli([...ROTATE, '--secret-to', cmd], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(got, 'utf8')).toBe(SECRET);
    expect(readFileSync(`${got}.env`, 'utf8')).toBe(`we_1 ${FP} token:unset\n`);
    expect(r.stderr).toContain('[REDACTED]'); // the command echoed it; chatctl scrubbed it
    expect(r.stderr).toContain('stored');
    expect(r.stdout).toContain(`Signing secret ${FP} delivered to:`);
    expectSecretOnlyIn(r, ws, [got]);
  });

  test('a program not on PATH: exit 2, nothing sent', async () => {
    const r = await runCli([...CREATE, '--secret-to', 'exec:no-such-vault-cli kv put secret/x value=-'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('no-such-vault-cli');
    expect(server.requests).toHaveLength(0);
  });

  test('a program found on the PATH chatctl was given (a stand-in for gh or vault) receives the secret', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const bin = join(ws.home, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'fake-gh'), `#!/bin/sh\n[ "$1 $2 $3" = "secret set WEBHOOK_SECRET" ] || exit 9\ncat > ${shellQuote(join(ws.home, 'stored'))}\n`, { mode: 0o755 });
    const env = scopeEnv(server.url, { PATH: `${bin}:${buildEnv(ws).PATH}` });
    const r = await runCli([...ROTATE, '--secret-to', 'exec:fake-gh secret set WEBHOOK_SECRET --repo o/r'], { env, ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expectSecretOnlyIn(r, ws, [join(ws.home, 'stored')]);
  });

  test('a command that fails: exit 13, the secret kept, the other destinations still served', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', 'exec:cat >/dev/null; echo "vault: permission denied" >&2; exit 2', '--secret-to', 'file:also.whsec'], {
      env: scopeEnv(server.url),
      ws,
    });
    expectRecovered(r, 'we_1', [join(ws.cwd, 'also.whsec')]);
    expect(r.stderr).toContain('vault: permission denied');
    expect(r.stderr).toContain('exited with status 2');
    expect(readFileSync(join(ws.cwd, 'also.whsec'), 'utf8')).toBe(SECRET);
  });

  test.each(['exec:true', 'exec:head -c 3 >/dev/null'])('%s exits 0 without reading all of the secret: exit 13, the secret kept, never "delivered"', async (sink) => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', sink], { env: scopeEnv(server.url), ws });
    expectRecovered(r);
    expect(r.stderr).toContain('exited 0 without reading all of its input');
    expect(r.stdout).not.toContain('delivered to');
  });

  test('--json: the error line names the recovery file, endpoint and fingerprint; stdout is the envelope without the secret', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...ROTATE, '--json', '--secret-to', 'exec:exit 1'], { env: scopeEnv(server.url), ws });
    const kept = expectRecovered(r);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('secret_not_delivered');
    expect(line.error.details).toMatchObject({ recoveredPath: kept, endpointId: 'we_1', fingerprint: FP, delivered: [], failed: [{ to: 'exec:exit 1' }] });
    const data = JSON.parse(r.stdout).data;
    expect(data.secret).toBeNull();
    expect(data.secretDelivery).toEqual([]);
  });
});

// ---------------------------------------------------------------- stdout

describe('stdout', () => {
  test('the secret and one newline on stdout, nothing else; the result on stderr', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...CREATE, '--secret-to', 'stdout'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${SECRET}\n`);
    expect(r.stderr).toContain('Created webhook endpoint we_1.');
    expect(r.stderr).toContain(FP);
    expectSecretOnlyIn(r, ws, [], 'line');
  });

  test('$(…) capture in a shell', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const cmd = [NODE, BIN, ...ROTATE, '--secret-to', 'stdout'].map(shellQuote).join(' ');
    const r = await execa('sh', ['-c', `S="$(${cmd} 2>/dev/null)" && printf '%s' "$S" > captured`], { cwd: ws.cwd, env: buildEnv(ws, scopeEnv(server.url)), extendEnv: false, reject: false });
    expect(r.exitCode).toBe(0);
    expect(readFileSync(join(ws.cwd, 'captured'), 'utf8')).toBe(SECRET);
  });

  test('not with --json (exit 2), nothing sent', async () => {
    const r = await runCli([...CREATE, '--json', '--secret-to', 'stdout'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(2);
    expect(parseErrorLine(r.stderr).error.message).toContain('--json');
    expect(server.requests).toHaveLength(0);
  });

  test('not onto a terminal (exit 2), nothing sent', async () => {
    const r = await runCli([...CREATE, '--secret-to', 'stdout'], { env: scopeEnv(server.url), tty: { stdin: true, stdout: true, stderr: false } });
    expect(r.exitCode).toBe(2);
    expect(server.requests).toHaveLength(0);
  });
});

// ---------------------------------------------------------------- failing stdout

/**
 * A pipe reader that closes its end and is gone before the server answers:
 * the shell tail for it (which closes its end, then notes its pid), and an
 * answer that waits until that process has exited (no guessed delay).
 */
function goneReader(ws: Workspace): { tail: string; reply: () => Promise<ReturnType<typeof ok>> } {
  const marker = join(ws.root, 'reader-gone');
  return {
    tail: `| { exec 0<&-; sh -c 'echo $PPID' > ${shellQuote(`${marker}.tmp`)} && mv ${shellQuote(`${marker}.tmp`)} ${shellQuote(marker)}; }`,
    reply: async () => {
      await waitFor(() => existsSync(marker), 10_000, 'the reader to close its end');
      const pid = Number(readFileSync(marker, 'utf8'));
      await waitFor(() => !processAlive(pid), 10_000, "the reader's process to exit");
      return ok();
    },
  };
}

/** Whether pid is a process that has not exited (a zombie has). */
function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('stdout closed or failing after the change was applied', () => {
  test.each([
    ['--secret-to stdout', ['--secret-to', 'stdout']],
    ['--json alone', ['--json']],
  ])('%s > /dev/full: exit 13, the secret kept', async (_l, flags) => {
    server.enqueue(ok());
    const r = await throughShell([...ROTATE, ...flags], '>/dev/full', scopeEnv(server.url));
    expectRecovered(r);
  });

  test.each([
    ['--secret-to stdout', ['--secret-to', 'stdout']],
    ['--json alone', ['--json']],
  ])('%s into a pipe whose reader has gone: exit 13, the secret kept', async (_l, flags) => {
    const ws = workspace();
    const reader = goneReader(ws);
    server.enqueue(reader.reply); // the reader has closed the pipe when the answer comes
    const r = await throughShell([...ROTATE, ...flags], reader.tail, scopeEnv(server.url), ws);
    expectRecovered(r);
  });

  test('--json alone with a 600 KB record into `head -c 1`: the pipe closes mid-document → exit 13, kept', async () => {
    server.enqueue({ status: 200, body: { ...secretBody(), data: { ...secretBody().data, endpoint: { id: 'we_1', version: 2, description: 'x'.repeat(600_000) } } } });
    const r = await throughShell([...ROTATE, '--json'], '| head -c 1 >/dev/null', scopeEnv(server.url));
    expectRecovered(r);
  });

  test('with the secret in a file, a closed stdout ends quietly (exit 0): stdout held no secret', async () => {
    const ws = workspace();
    const reader = goneReader(ws);
    server.enqueue(reader.reply);
    const r = await throughShell([...ROTATE, '--secret-to', 'file:s.whsec'], reader.tail, scopeEnv(server.url), ws);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expectSecretOnlyIn(r, ws, [join(ws.cwd, 's.whsec')]);
  });
});

// ---------------------------------------------------------------- odd answers

describe('odd answers', () => {
  test('nested 5000 levels deep: --json prints the envelope, exit 0', async () => {
    const deep = '{"n":'.repeat(5000) + '1' + '}'.repeat(5000);
    const raw = `{"data":{"endpoint":{"id":"we_1","version":2,"deep":${deep}},"secret":"${SECRET}","secretAvailable":true},"meta":{"requestId":"r"}}`;
    server.enqueue({ status: 200, body: raw, headers: { 'Content-Type': 'application/json' } });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--json'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${raw}\n`);
    expectSecretOnlyIn(r, ws, [], 'anywhere');
  });

  test('nested 100 000 levels deep, human mode with a file: the table and the destination, exit 0', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const raw = `{"data":{"endpoint":{"id":"we_1","version":2,"deep":${deep}},"secret":"${SECRET}","secretAvailable":true},"meta":{"requestId":"r"}}`;
    server.enqueue({ status: 200, body: raw, headers: { 'Content-Type': 'application/json' } });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('we_1');
    expect(r.stdout).toContain(FP);
    expectSecretOnlyIn(r, ws, [join(ws.cwd, 's.whsec')]);
  });

  test.each([
    ['an empty secret', secretBody('', true)],
    ['secret null', secretBody(null, false)],
    ['secretAvailable false', secretBody(SECRET, false)],
  ])('%s: exit 13, "applied but not available", the rotate command with the id quoted; no file written', async (_l, body) => {
    server.enqueue({ status: 200, body });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(13);
    expect(r.stderr).toContain('the change was applied');
    expect(r.stderr).toContain('not available');
    expect(r.stderr).toContain("chatctl webhooks rotate 'we_1' --expected-version 2 --mode overlap");
    expect(existsSync(join(ws.cwd, 's.whsec'))).toBe(false);
    expect(recoveredFiles(ws)).toEqual([]);
  });

  test('an answer not in the expected shape that still carries a secret: kept, not lost (exit 13)', async () => {
    server.enqueue({ status: 200, body: { data: { secret: SECRET, secretAvailable: 'yes', endpoint: 'we_1' }, meta: {} } });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), ws });
    const kept = expectRecovered(r);
    expect(parseErrorLine(r.stderr).error.details).toMatchObject({ recoveredPath: kept, endpointId: 'we_1', fingerprint: FP });
    expect(existsSync(join(ws.cwd, 's.whsec'))).toBe(false);
    expect(r.stdout).toBe('');
  });

  test('an answer not in the expected shape and without a secret: invalid_response (exit 1) naming the Idempotency-Key', async () => {
    server.enqueue({ status: 200, body: { data: { secret: null, other: 42 }, meta: {} } });
    const r = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec', '--idempotency-key', 'k-odd-1'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(1);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('invalid_response');
    expect(line.error.message).toContain('k-odd-1');
    expect(recoveredFiles(r.ws)).toEqual([]);
  });

  test('an id with shell syntax is quoted in the suggested command', async () => {
    server.enqueue({ status: 200, body: secretBody(null, false, "we_$(touch pwned)'x") });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', 'file:x'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode).toBe(13);
    expect(r.stderr).toContain(`rotate 'we_$(touch pwned)'\\''x'`);
  });
});

// ---------------------------------------------------------------- CI and terminals

// In-process, the standard streams claiming to be terminals; test/prompts/pty.test.ts runs CI on a real one.
describe('stdout is /dev/null (redirected there, or closed: Node opens /dev/null on a closed stdout)', () => {
  test('--json with no destination, or --secret-to stdout: refused before sending (exit 2); with a destination the run goes on', async () => {
    const json = await runCli([...ROTATE, '--json'], { env: scopeEnv(server.url), stdoutDiscards: true });
    expect(json.exitCode, json.stderr).toBe(2);
    expect(json.stderr).toContain('/dev/null');
    const capture = await runCli([...ROTATE, '--secret-to', 'stdout'], { env: scopeEnv(server.url), stdoutDiscards: true });
    expect(capture.exitCode, capture.stderr).toBe(2);
    expect(server.requests).toHaveLength(0);
    server.enqueue(ok());
    const ws = workspace();
    const toFile = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), stdoutDiscards: true, ws });
    expect(toFile.exitCode, toFile.stderr).toBe(0);
    expect(readFileSync(join(ws.cwd, 's.whsec'), 'utf8')).toBe(SECRET);
  });

  test('the real process: > /dev/null, a closed stdout, > /dev/zero and > /dev/urandom are all refused before sending (exit 2)', async () => {
    const ws = workspace();
    const cmd = [NODE, BIN, ...ROTATE, '--json'].map(shellQuote).join(' ');
    const script = [`${cmd} >/dev/null; echo "null $?" >&2`, `${cmd} >&-; echo "closed $?" >&2`, `${cmd} >/dev/zero; echo "zero $?" >&2`, `${cmd} >/dev/urandom; echo "urandom $?" >&2`].join('; ');
    const r = await execa('sh', ['-c', script], { cwd: ws.cwd, env: buildEnv(ws, scopeEnv(server.url)), extendEnv: false, reject: false });
    for (const what of ['null', 'closed', 'zero', 'urandom']) expect(r.stderr).toMatch(new RegExp(`^${what} 2$`, 'm'));
    expect(server.requests).toHaveLength(0);
  });
});

describe('CI', () => {
  const TERMINAL = { stdin: true, stdout: true, stderr: true };

  test('CI=1 on a TTY, no destination: exit 2 before sending, naming --secret-to and --json', async () => {
    const r = await runCli([...CREATE], { env: scopeEnv(server.url, { CI: '1' }), tty: TERMINAL });
    const output = r.stdout + r.stderr;
    expect(r.exitCode, output).toBe(2);
    expect(server.requests).toHaveLength(0);
    expect(output).toContain('--secret-to');
    expect(output).toContain('--json');
    expect(output).not.toContain(SECRET);
  });

  test('CI=true on a TTY with a file: delivered, nothing of the secret on the terminal', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const r = await runCli([...CREATE, '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url, { CI: 'true' }), ws, tty: TERMINAL });
    const output = r.stdout + r.stderr;
    expect(r.exitCode, output).toBe(0);
    expect(output).toContain(FP);
    for (const form of FORMS) expect(output).not.toContain(form);
    expect(readFileSync(join(ws.cwd, 's.whsec'), 'utf8')).toBe(SECRET);
  });

  test('CI=0 (not set) on a TTY: shown once, with the fingerprint', async () => {
    server.enqueue(ok());
    const r = await runCli([...CREATE, '--no-input'], { env: scopeEnv(server.url, { CI: '0' }), tty: { stdin: true, stdout: true, stderr: false } });
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.split(SECRET)).toHaveLength(2);
    expect(r.stdout).toContain(FP);
    expect(r.stderr).not.toContain(SECRET);
  });
});

// ---------------------------------------------------------------- what --debug, --json and stderr show

describe('redaction by value; mentions shown', () => {
  test('--debug: the secret under an escaped key and in \\u/\\/ forms is blanked; previousSecretExpiresAt and secretAvailable are shown', async () => {
    const escaped = [...SECRET].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    const raw = `{"data":{"endpoint":{"id":"we_1","version":2,"previousSecretExpiresAt":"2030-01-02T03:04:05Z","note":"${escaped}"},"s\\u0065cret":"${SECRET.replace(/\//g, '\\/')}","secretAvailable":true},"meta":{"requestId":"r"}}`;
    server.enqueue({ status: 200, body: raw, headers: { 'Content-Type': 'application/json' } });
    const ws = workspace();
    const r = await runCli([...ROTATE, '--debug', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url), ws });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('previousSecretExpiresAt');
    expect(r.stderr).toContain('2030-01-02T03:04:05Z');
    expect(r.stderr).toContain('"secretAvailable":true');
    expect(r.stderr).toContain('[REDACTED]');
    expect(r.stdout).toContain('2030-01-02T03:04:05Z');
    expect(r.stderr).not.toContain(TOKEN);
    expectSecretOnlyIn(r, ws, [join(ws.cwd, 's.whsec')]);
  });

  test('an error that echoes the token JSON-escaped and wrapped is scrubbed; details that mention secrets are shown', async () => {
    const wrapped = `${TOKEN.slice(0, 12)}\n${TOKEN.slice(12).replace(/_/g, '\\u005f')}`;
    server.enqueue({
      status: 409,
      body: {
        error: {
          code: 'webhook_secret_rotation_conflict',
          message: `rotation in progress for token ${wrapped}`,
          requestId: 'req_c',
          details: { previousSecretExpiresAt: '2030-05-06T07:08:09Z', secretAvailable: false },
        },
      },
    });
    const r = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url) });
    expect(r.exitCode).toBe(8);
    const line = parseErrorLine(r.stderr);
    expect(line.error.details).toEqual({ previousSecretExpiresAt: '2030-05-06T07:08:09Z', secretAvailable: false });
    expect(r.stderr).not.toContain(TOKEN.slice(12, 30));
    expect(r.stderr).toContain('[REDACTED]');
  });

  test('server text with newlines, CR, bidi and zero-width characters is escaped on stderr; C1 escaped in the --json line', async () => {
    const message = 'bad\nchatctl: fake line\r\u202eevil\u200b\u2066x\u009b31m';
    const reply = { status: 422, body: { error: { code: 'validation_failed', message, requestId: 'req\u202e1', details: { fields: [{ field: 'name\u200d', problem: 'p\n' }] } } } };
    server.enqueue(reply, reply);
    const human = await runCli([...ROTATE, '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url) });
    expect(human.exitCode).toBe(9);
    expect(/[\r\u202e\u200b\u2066\u0080-\u009f]|\u200d/.test(human.stderr)).toBe(false);
    expect(human.stderr.split('\n').filter((l) => l.startsWith('chatctl:'))).toHaveLength(1);
    expect(human.stderr).toContain('bad\\nchatctl: fake line\\r\\u202eevil\\u200b\\u2066x\\x9b31m');
    const json = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url) });
    expect(/[\u0080-\u009f\u202e]/.test(json.stderr)).toBe(false);
    expect(parseErrorLine(json.stderr).error.message).toBe(message);
  });

  test('details 10 000 levels deep do not crash the reporter (human and --json)', async () => {
    const deep = '{"d":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    const raw = `{"error":{"code":"validation_failed","message":"m","requestId":"r","details":{"fields":[${deep}],"x":${deep}}}}`;
    server.enqueue({ status: 422, body: raw }, { status: 422, body: raw });
    const human = await runCli([...ROTATE, '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url) });
    expect(human.exitCode, human.stderr).toBe(9);
    expect(human.stderr).not.toMatch(/\n\s+at /);
    const json = await runCli([...ROTATE, '--json', '--secret-to', 'file:s.whsec'], { env: scopeEnv(server.url) });
    expect(json.exitCode).toBe(9);
    expect(parseErrorLine(json.stderr).error.code).toBe('validation_failed');
  });
});

// ---------------------------------------------------------------- chatctl webhooks fingerprint

describe('webhooks fingerprint', () => {
  test('from a file, from stdin, whitespace ignored; the same as create/rotate print', async () => {
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'held'), `  ${SECRET}\r\n\n`);
    const a = await runCli(['webhooks', 'fingerprint', 'held'], { ws });
    expect(a.exitCode, a.stderr).toBe(0);
    expect(a.stdout).toBe(`${FP}\n`);
    const b = await runCli(['webhooks', 'fingerprint', '-'], { input: `${SECRET}\n` });
    expect(b.stdout).toBe(`${FP}\n`);
    const c = await runCli(['webhooks', 'fingerprint', '--json'], { input: SECRET });
    expect(JSON.parse(c.stdout)).toEqual({ fingerprint: FP });
    for (const r of [a, b, c]) expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  test('in GitHub Actions the secret is masked on stderr: stdout, captured by FP="$(…)", is the fingerprint alone', async () => {
    const r = await runCli(['webhooks', 'fingerprint', '-'], { input: `${SECRET}\n`, env: { GITHUB_ACTIONS: 'true' } });
    expect(r).toMatchObject({ exitCode: 0, stdout: `${FP}\n`, stderr: `::add-mask::${SECRET}\n` });
  });

  test('empty input, a missing file, a directory: exit 2', async () => {
    const ws = workspace();
    expect((await runCli(['webhooks', 'fingerprint', '-'], { input: ' \n' })).exitCode).toBe(2);
    expect((await runCli(['webhooks', 'fingerprint', 'nope'], { ws })).exitCode).toBe(2);
    expect((await runCli(['webhooks', 'fingerprint', '.'], { ws })).exitCode).toBe(2);
  });
});

// ---------------------------------------------------------------- signals after sending

function spawnChatctl(args: string[], ws: Workspace, env: Record<string, string | undefined>) {
  const child = spawn(NODE, [BIN, ...args], { cwd: ws.cwd, env: buildEnv(ws, env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) => child.on('close', (code) => r({ code, stdout, stderr })));
  return { child, done, err: () => stderr };
}

async function waitForRequest(): Promise<void> {
  await waitFor(() => server.requests.length > 0, 10_000, 'the request to arrive');
}

describe('a signal after the request was sent: its answer is not abandoned', () => {
  test('SIGINT twice: the first says chatctl waits for the answer, the second abandons it: exit 130 naming the endpoint and the key; the record stays', async () => {
    server.enqueue({ hang: true });
    const ws = workspace();
    const { child, done, err } = spawnChatctl([...ROTATE, '--secret-to', 'file:s.whsec', '--idempotency-key', 'key-abc-123'], ws, scopeEnv(server.url));
    await waitForRequest();
    child.kill('SIGINT');
    await waitFor(() => err().includes("waiting for the server's answer"), 10_000, 'the notice that chatctl waits');
    expect(err()).toContain('a second Ctrl-C abandons it');
    child.kill('SIGINT');
    const r = await done;
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain('key-abc-123');
    expect(r.stderr).toContain("--idempotency-key 'key-abc-123'");
    expect(server.requests[0]!.headers['idempotency-key']).toBe('key-abc-123');
    expect(readdirSync(ws.cwd)).toEqual([]);
    // The record of the request stays for the re-run.
    expect(readdirSync(join(ws.configDir, 'recovered')).filter((n) => n.endsWith('.record'))).toHaveLength(1);
  });

  test.each([['SIGINT'], ['SIGTERM'], ['SIGHUP']] as const)('%s while the answer is on its way: chatctl waits for it and the secret reaches its destination', async (signal) => {
    let release: (() => void) | undefined;
    server.enqueue(() => new Promise((r) => (release = () => r(ok()))));
    const ws = workspace();
    const { child, done, err } = spawnChatctl([...ROTATE, '--secret-to', 'file:s.whsec', '--idempotency-key', 'key-wait-1'], ws, scopeEnv(server.url));
    await waitForRequest();
    await waitFor(() => release !== undefined, 10_000, 'the server to hold the answer');
    child.kill(signal);
    await waitFor(() => err().includes("waiting for the server's answer"), 10_000, 'the notice that chatctl waits');
    release!();
    const r = await done;
    // Delivered; the exit says the run was interrupted, or that it completed.
    expect([0, { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }[signal]], r.stderr).toContain(r.code);
    expect(readFileSync(join(ws.cwd, 's.whsec'), 'utf8')).toBe(SECRET);
    expect(readdirSync(join(ws.configDir, 'recovered'))).toEqual([]);
  });

  test('--json, SIGINT twice: one error line with code interrupted and the key', async () => {
    server.enqueue({ hang: true });
    const ws = workspace();
    const { child, done } = spawnChatctl([...CREATE, '--json', '--secret-to', 'file:s.whsec'], ws, scopeEnv(server.url));
    await waitForRequest();
    child.kill('SIGINT');
    // --json: no notice on stderr (it holds JSON lines only); the second signal comes once the first was taken.
    await waitFor(() => !signalPending(child.pid!, 'SIGINT'), 10_000, 'chatctl to take the first SIGINT');
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(130);
    const line = parseErrorLine(
      r.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .join('\n'),
    );
    expect(line.error.code).toBe('interrupted');
    const key = String(server.requests[0]!.headers['idempotency-key']);
    expect(line.error.message).toContain(key);
    expect(line.idempotencyKey).toBe(key);
  });

  /**
   * rotate --json with a 600 KB answer into a pipe nobody reads, SIGINT once
   * the copy is kept and the write waits; resolves when the run has said
   * secret_not_delivered (exit 13), the process still waiting on the reader.
   */
  async function interruptedWhileStdoutWaits() {
    const big = { ...secretBody(), data: { ...secretBody().data, endpoint: { id: 'we_1', version: 2, description: 'x'.repeat(600_000) } } };
    server.enqueue({ status: 200, body: big });
    const ws = workspace();
    const child = spawn(NODE, [BIN, ...ROTATE, '--json'], { cwd: ws.cwd, env: buildEnv(ws, scopeEnv(server.url)), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pause(); // never read: the pipe fills and the write waits
    const run = { child, ws, stderr: '', closed: new Promise<number | null>((r) => child.on('close', (code) => r(code))) };
    child.stderr.on('data', (c: Buffer) => (run.stderr += c.toString()));
    await waitFor(() => recoveredFiles(ws).length === 1, 10_000, 'the copy to be kept');
    // The answer is one line of more than 600 KB: once its first bytes have
    // come through, the rest waits on this reader, which reads no more than
    // its buffer holds.
    await waitFor(() => child.stdout.readableLength > 0, 10_000, 'the answer to be written');
    child.kill('SIGINT');
    // The error comes while the write still waits.
    await waitFor(() => run.stderr.includes('secret_not_delivered'), 10_000, 'the run to report secret_not_delivered');
    return run;
  }

  test('SIGINT while --json waits on a reader that never reads: the secret kept (exit 13), not held hostage', async () => {
    const run = await interruptedWhileStdoutWaits();
    run.child.stdout!.destroy(); // the reader goes, so the process can end
    const code = await run.closed;
    expectRecovered({ exitCode: code ?? -1, stdout: '', stderr: run.stderr, ws: run.ws, durationMs: 0, timedOut: false });
    expect(run.stderr).toContain('interrupted');
  });

  // A hostile review: once the run had reported 13 (the copy named), a second
  // Ctrl-C while stdout still waited on the reader ended the process with 130.
  test('a second SIGINT after the run reported 13, while stdout still waits on the reader: still 13', async () => {
    const run = await interruptedWhileStdoutWaits();
    run.child.kill('SIGINT'); // the reader still does not read
    const code = await run.closed;
    expectRecovered({ exitCode: code ?? -1, stdout: '', stderr: run.stderr, ws: run.ws, durationMs: 0, timedOut: false });
  });

  test('SIGINT while an exec: destination runs: it is stopped, the secret kept (exit 13)', async () => {
    server.enqueue(ok());
    const ws = workspace();
    const marker = join(ws.home, 'started');
    const { child, done } = spawnChatctl([...ROTATE, '--secret-to', `exec:cat >/dev/null; touch ${shellQuote(marker)}; sleep 30`], ws, scopeEnv(server.url));
    await waitFor(() => existsSync(marker), 10_000, 'the destination to have the secret');
    child.kill('SIGINT');
    const r = await done;
    expectRecovered({ exitCode: r.code ?? -1, stdout: r.stdout, stderr: r.stderr, ws, durationMs: 0, timedOut: false });
    expect(r.stderr).toContain('interrupted');
  });
});

// ---------------------------------------------------------------- exec: and a kill

/**
 * A preload for the real chatctl process that SIGKILLs it at one instant of
 * an exec: destination's start: `spawn` as soon as the command's process
 * exists (before a byte of its input is written), `before-go` when the whole
 * secret is written but the command not yet told to start, `after-go` just
 * after it was. The process group's id goes to KILL_NOTE first.
 */
const KILLER = `
const cp = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
const at = process.env.KILL_AT;
const die = () => process.kill(process.pid, 'SIGKILL');
const spawn = cp.spawn;
cp.spawn = function (file, args, ...rest) {
  const child = spawn.call(this, file, args, ...rest);
  if (Array.isArray(args) && args.includes('chatctl-exec')) {
    fs.writeFileSync(process.env.KILL_NOTE, String(child.pid));
    if (at === 'spawn') die();
  }
  return child;
};
require('node:module').syncBuiltinESMExports();
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (chunk, ...rest) {
  const go = chunk === 'go\\n';
  if (go && at === 'before-go') die();
  const done = write.call(this, chunk, ...rest);
  if (go && at === 'after-go') die();
  return done;
};
`;

/** Whether any process of the group is left (a zombie counts as gone). */
function groupAlive(pgid: number): boolean {
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
    } catch {
      /* gone meanwhile */
    }
  }
  return false;
}

describe.runIf(process.platform === 'linux')('exec: when chatctl is killed (SIGKILL) as the command starts', () => {
  test.each([
    ['spawn', 'never runs'],
    ['before-go', 'never runs'],
    ['after-go', 'stores the whole secret'],
  ] as const)('killed at %s: the command %s, never on an empty or cut secret', async (at, outcome) => {
    server.enqueue(ok());
    const ws = workspace();
    const killer = join(ws.home, 'killer.cjs');
    writeFileSync(killer, KILLER);
    const note = join(ws.home, 'pgid');
    const got = join(ws.home, 'got');
    const ran = join(ws.home, 'ran');
    const env = scopeEnv(server.url, { NODE_OPTIONS: `--require ${killer}`, KILL_AT: at, KILL_NOTE: note });
    const { child, done } = spawnChatctl([...ROTATE, '--secret-to', `exec:cat > ${shellQuote(got)}; echo ran > ${shellQuote(ran)}`], ws, env);
    await done;
    expect(child.signalCode).toBe('SIGKILL');
    // The command's process group outlives chatctl: wait for all of it to end.
    const pgid = Number(readFileSync(note, 'utf8'));
    await waitFor(() => !groupAlive(pgid), 5_000, "the command's process group to end");
    if (outcome === 'never runs') {
      expect(existsSync(ran)).toBe(false);
      expect(existsSync(got)).toBe(false);
    } else {
      expect(readFileSync(ran, 'utf8')).toBe('ran\n');
      expect(readFileSync(got, 'utf8')).toBe(SECRET);
    }
  });
});

// ---------------------------------------------------------------- a full disk

/** A 64 KiB tmpfs, full: needs root and mount (as this CI has); elsewhere the test says so by not running. */
function fullDisk(ws: Workspace): string | undefined {
  const mnt = join(ws.home, 'full');
  mkdirSync(mnt);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${join(mnt, 'filler')}`, 'bs=4096'], { stdio: 'ignore' });
  } catch {
    /* ENOSPC: full, as wanted */
  }
  return mnt;
}
const canMount = (() => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('sh', ['-c', 'command -v mount && command -v umount'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.runIf(canMount)('a full disk (tmpfs, as root)', () => {
  test('ENOSPC on file: and on --force: exit 13, no empty or partial file, the old file intact, the secret kept', async () => {
    const ws = workspace();
    const mnt = fullDisk(ws);
    expect(mnt, 'mount tmpfs').toBe(join(ws.home, 'full'));
    try {
      writeFileSync(join(mnt!, 'old.whsec'), '', { flag: 'a' }); // an inode still fits
      server.enqueue(ok(), ok());
      const r1 = await runCli([...ROTATE, '--secret-to', `file:${join(mnt!, 'new.whsec')}`], { env: scopeEnv(server.url), ws });
      expect(r1.stderr).toContain('ENOSPC');
      expect(existsSync(join(mnt!, 'new.whsec'))).toBe(false);
      expectRecovered(r1);
      const before = readdirSync(mnt!).sort();
      const r2 = await runCli([...ROTATE, '--secret-to', `env-file:${join(mnt!, 'ci.env')}#S`], { env: scopeEnv(server.url), ws: workspace() });
      expect(r2.exitCode).toBe(13);
      expect(readdirSync(mnt!).sort()).toEqual(before);
    } finally {
      execFileSync('umount', [mnt!]);
    }
  });
});
