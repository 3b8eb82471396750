// Escrow and recover, black-box through the execute seam against the
// in-process sandbox: a secret kept after a failed destination is also
// written age-encrypted to --escrow-dir (0600, one file per endpoint and
// version, a .json beside it without the secret), `age -d` opens it to the
// server's current secret, bad recipients are refused before sending, and
// `webhooks recover` delivers it from another config folder, and refuses
// (13) one that a later rotation noted here has superseded.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { baseEnv, cleanupTempDirs, fileMode, runInProcess, workspace } from '../support/run.js';
import { endpointBody, sandbox, T0 } from '../support/sandbox.js';

afterAll(cleanupTempDirs);

async function keyPair(dir: string) {
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  const keyFile = join(dir, 'ops.key');
  writeFileSync(keyFile, `# created: for a test\n# public key: ${recipient}\n${identity}\n`, { mode: 0o600 });
  return { identity, recipient, keyFile };
}

async function setUp() {
  const sb = await sandbox();
  const ws = workspace();
  const env = (extra: Record<string, string> = {}) => ({
    ...baseEnv(ws),
    ...sb.scopeEnv,
    ...extra,
  });
  const run = (args: string[], extra: Record<string, string> = {}) => runInProcess(args, { env: env(extra), cwd: ws.cwd, timeoutMs: 15_000, inject: { now: () => T0 } });
  const endpoint = async (id: string) => ((await sb.control('endpoints')).body.data.endpoints as { id: string; version: number; validSecrets: string[] }[]).find((e) => e.id === id)!;
  const created = async (n: number) => {
    const r = await sb.create(endpointBody(n));
    expect(r.status).toBe(201);
    return r.body.data.endpoint.id as string;
  };
  const keys = await keyPair(ws.root);
  return { sb, ws, run, env, endpoint, created, keys };
}

const FAILING = 'exec:echo "vault: permission denied for path secret/webhooks" >&2; exit 3';

describe('--escrow: a secret kept after a failed destination is also written encrypted', () => {
  test('rotate: exit 13, <endpoint>-v<version>.age (0600) that age -d opens to the current secret, a .json beside it without the secret', async () => {
    const t = await setUp();
    const id = await t.created(1);
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', FAILING, '--escrow', t.keys.recipient, '--escrow-dir', 'escrow', '--json']);
    expect(r.exitCode, r.stderr).toBe(13);
    const current = (await t.endpoint(id)).validSecrets[0]!;
    const dir = join(t.ws.cwd, 'escrow');
    expect(readdirSync(dir).sort()).toEqual([`${id}-v2.age`, `${id}-v2.json`]);
    const sealed = join(dir, `${id}-v2.age`);
    expect(fileMode(sealed)).toBe(0o600);
    expect(fileMode(join(dir, `${id}-v2.json`))).toBe(0o600);
    // age's own tool opens it to exactly the secret (no newline, nothing else).
    expect(execFileSync('age', ['-d', '-i', t.keys.keyFile, sealed], { encoding: 'utf8' })).toBe(current);
    expect(readFileSync(sealed).includes(Buffer.from(current))).toBe(false);
    const meta = JSON.parse(readFileSync(join(dir, `${id}-v2.json`), 'utf8'));
    expect(meta).toMatchObject({ escrow: 1, endpointId: id, version: 2, scope: `${t.sb.sb.organizationId}/${t.sb.sb.applicationId}/${t.sb.sb.environmentKey}` });
    expect(JSON.stringify(meta)).not.toContain(current);
    const line = JSON.parse(r.stderr.trim().split('\n').at(-1)!);
    expect(line.error.details.escrowPath).toBe(sealed);
    expect(line.error.message).toContain(`an encrypted copy is in ${sealed}`);
    // The hint's recover command delivers where this job would have.
    const human = await t.run(['webhooks', 'rotate', id, '--expected-version', '2', '--mode', 'immediate', '--yes', '--secret-to', FAILING, '--escrow', t.keys.recipient, '--escrow-dir', 'escrow']);
    expect(human.exitCode).toBe(13);
    expect(human.stderr).toContain(`chatctl webhooks recover ${join(dir, `${id}-v3.age`)} --identity KEYFILE --secret-to '${FAILING.replace(/'/g, "'\\''")}'`);
    expect(r.stderr + r.stdout).not.toContain(current);
  });

  test('a delivered secret is not escrowed', async () => {
    const t = await setUp();
    const id = await t.created(2);
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', 'file:new.whsec', '--escrow', t.keys.recipient, '--escrow-dir', 'escrow']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readdirSync(join(t.ws.cwd, 'escrow'))).toEqual([]);
  });

  test('rotate --from: each failed item escrowed, named in its line; --escrow-file with comments', async () => {
    const t = await setUp();
    const a = await t.created(3);
    const b = await t.created(4);
    const other = await keyPair(t.ws.cwd);
    writeFileSync(join(t.ws.cwd, 'recipients.txt'), `# the on-call key\n${t.keys.recipient}\n\n  ${other.recipient}  \n`);
    writeFileSync(join(t.ws.cwd, 'fleet.ndjson'), `{"endpointId":"${a}","expectedVersion":1}\n{"endpointId":"${b}","expectedVersion":1}\n`);
    const r = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', FAILING, '--escrow-file', 'recipients.txt', '--escrow-dir', 'escrow', '--json']);
    expect(r.exitCode, r.stderr).toBe(14);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const id of [a, b]) {
      const sealed = join(t.ws.cwd, 'escrow', `${id}-v2.age`);
      const current = (await t.endpoint(id)).validSecrets[0]!;
      // Either recipient opens it.
      expect(execFileSync('age', ['-d', '-i', t.keys.keyFile, sealed], { encoding: 'utf8' })).toBe(current);
      expect(execFileSync('age', ['-d', '-i', other.keyFile, sealed], { encoding: 'utf8' })).toBe(current);
      const line = lines.find((l) => l.endpointId === id);
      expect(line.exitCode).toBe(13);
      expect(line.error.details.escrowPath).toBe(sealed);
    }
  });

  test.each([
    [['--escrow', 'age1notarecipient', '--escrow-dir', 'e'], /--escrow: "age1notarecipient" is not a valid age recipient/],
    [['--escrow', 'ssh-ed25519 AAAA', '--escrow-dir', 'e'], /is not an age recipient/],
    [['--escrow-dir', 'e'], /--escrow-dir needs a recipient/],
    [['--escrow', 'RECIPIENT'], /--escrow needs --escrow-dir/],
    [['--escrow-file', 'missing.txt', '--escrow-dir', 'e'], /--escrow-file missing.txt: cannot read it/],
  ])('refused before sending (exit 2): %j', async (flags, message) => {
    const t = await setUp();
    const id = await t.created(5);
    const args = flags.map((f) => (f === 'RECIPIENT' ? t.keys.recipient : f));
    const before = ((await t.sb.control('requests')).body.data.requests as unknown[]).length;
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', 'file:x.whsec', ...args]);
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(((await t.sb.control('requests')).body.data.requests as unknown[]).length).toBe(before);
  });
});

describe('webhooks recover', () => {
  /** A rotation whose destination failed, escrowed: the .age path and the secret the server holds now. */
  async function escrowed(t: Awaited<ReturnType<typeof setUp>>, n: number) {
    const id = await t.created(n);
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', FAILING, '--escrow', t.keys.recipient, '--escrow-dir', 'escrow']);
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stderr).toContain('chatctl webhooks recover');
    return { id, sealed: join(t.ws.cwd, 'escrow', `${id}-v2.age`), secret: (await t.endpoint(id)).validSecrets[0]! };
  }

  test('on another machine (another config folder, no token): delivers it to the destination given; {id} works', async () => {
    const t = await setUp();
    const e = await escrowed(t, 6);
    const elsewhere = workspace();
    mkdirSync(join(elsewhere.cwd, 'secrets'));
    const r = await runInProcess(['webhooks', 'recover', e.sealed, '--identity', t.keys.keyFile, '--secret-to', 'file:secrets/{id}.whsec'], {
      env: baseEnv(elsewhere),
      cwd: elsewhere.cwd,
      inject: { now: () => T0 },
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(elsewhere.cwd, 'secrets', `${e.id}.whsec`), 'utf8').trim()).toBe(e.secret);
    expect(r.stdout).toContain(`endpoint ${e.id} (version 2)`);
    expect(r.stdout + r.stderr).not.toContain(e.secret);
  });

  test('--json: one document listing what was recovered', async () => {
    const t = await setUp();
    const e = await escrowed(t, 7);
    const r = await t.run(['webhooks', 'recover', e.sealed, '--identity', t.keys.keyFile, '--secret-to', 'file:got.whsec', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.recovered).toEqual([
      expect.objectContaining({ endpointId: e.id, version: 2, file: e.sealed, delivery: [{ to: `file:${join(t.ws.cwd, 'got.whsec')}`, fingerprint: expect.stringMatching(/^sha256:/) }] }),
    ]);
    expect(readFileSync(join(t.ws.cwd, 'got.whsec'), 'utf8').trim()).toBe(e.secret);
  });

  test('superseded by a later rotation noted in this config folder: exit 13, the destination untouched', async () => {
    const t = await setUp();
    const e = await escrowed(t, 8);
    // The endpoint is rotated again through chatctl here (a later month).
    const again = await t.run(['webhooks', 'rotate', e.id, '--expected-version', '2', '--mode', 'immediate', '--yes', '--secret-to', 'file:later.whsec']);
    expect(again.exitCode, again.stderr).toBe(0);
    writeFileSync(join(t.ws.cwd, 'dest.whsec'), 'untouched\n');
    const r = await t.run(['webhooks', 'recover', e.sealed, '--identity', t.keys.keyFile, '--secret-to', 'file:dest.whsec', '--force']);
    expect(r.exitCode).toBe(13);
    expect(r.stderr).toContain('superseded by the rotation to version 3');
    expect(readFileSync(join(t.ws.cwd, 'dest.whsec'), 'utf8')).toBe('untouched\n');
  });

  test('a wrong identity, or no .json beside the file: exit 2, nothing delivered', async () => {
    const t = await setUp();
    const e = await escrowed(t, 9);
    const stranger = await keyPair(t.ws.cwd);
    const wrong = await t.run(['webhooks', 'recover', e.sealed, '--identity', stranger.keyFile, '--secret-to', 'file:a.whsec']);
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain('cannot be opened with the identity given');
    const lone = join(t.ws.cwd, 'lone.age');
    writeFileSync(lone, readFileSync(e.sealed));
    const noMeta = await t.run(['webhooks', 'recover', lone, '--identity', t.keys.keyFile, '--secret-to', 'file:b.whsec']);
    expect(noMeta.exitCode).toBe(2);
    expect(noMeta.stderr).toContain('lone.json');
    expect(readdirSync(t.ws.cwd).filter((n) => n.endsWith('.whsec'))).toEqual([]);
  });

  test("a failing destination: exit 13 with the destination's reason; the escrowed file stays", async () => {
    const t = await setUp();
    const e = await escrowed(t, 10);
    const r = await t.run(['webhooks', 'recover', e.sealed, '--identity', t.keys.keyFile, '--secret-to', FAILING]);
    expect(r.exitCode).toBe(13);
    expect(r.stderr).toContain('exited with status 3');
    expect(r.stderr).toContain(`it is still in ${e.sealed}`);
    expect(r.stderr).not.toContain(e.secret);
  });
});
