import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planSecret, writeSecretFile } from '../../src/secret/deliver.js';
import type { CliError } from '../../src/errors/cli-error.js';
import { deliverAnswer as deliverSecretResult } from '../support/secret-answer.js';
import { fakeContext, fakeIO } from '../support/fakes.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-secret-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const usage = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect((e as CliError).exitCode).toBe(2);
    return (e as CliError).message + ' ' + ((e as CliError).hint ?? '');
  }
  throw new Error('expected a usage error');
};
const base = () => ({ force: false, json: false, stdoutIsTTY: false, dryRun: false, cwd: dir, env: {} as Record<string, string | undefined> });
const fileSink = (path: string, force = false) => ({ kind: 'file', to: `file:${path}`, path, force });

describe('planSecret (decided before sending)', () => {
  it('sinks > json > tty; refuses a pipe with no destination, naming --secret-to and --json', () => {
    expect(planSecret({ ...base(), secretFile: join(dir, 's'), json: true })).toEqual({ sinks: [fileSink(join(dir, 's'))] });
    expect(planSecret({ ...base(), json: true })).toEqual({ sinks: [], fallback: 'json' });
    expect(planSecret({ ...base(), stdoutIsTTY: true })).toEqual({ sinks: [], fallback: 'tty' });
    const msg = usage(() => planSecret(base()));
    expect(msg).toContain('--secret-to');
    expect(msg).toContain('--secret-file');
    expect(msg).toContain('--json');
  });
  it('refuses an existing path unless --force, a directory always, a missing folder', () => {
    const p = join(dir, 'exists');
    writeFileSync(p, 'old');
    expect(usage(() => planSecret({ ...base(), secretFile: p }))).toContain('--force');
    expect(planSecret({ ...base(), secretFile: p, force: true })).toEqual({ sinks: [fileSink(p, true)] });
    usage(() => planSecret({ ...base(), secretFile: dir, force: true }));
    usage(() => planSecret({ ...base(), secretFile: join(dir, 'no', 'such') }));
    usage(() => planSecret({ ...base(), force: true }));
    const link = join(dir, 'dangling');
    symlinkSync(join(dir, 'nowhere'), link);
    usage(() => planSecret({ ...base(), secretFile: link })); // a dangling link still "exists"
  });
});

describe('writing the secret', () => {
  it('creates 0600 exclusively, holding exactly the secret', async () => {
    const p = join(dir, 's');
    await writeSecretFile(p, 'whsec_abc', false);
    expect(readFileSync(p, 'utf8')).toBe('whsec_abc');
    expect(statSync(p).mode & 0o777).toBe(0o600);
    await expect(writeSecretFile(p, 'whsec_other', false)).rejects.toThrow();
    expect(readFileSync(p, 'utf8')).toBe('whsec_abc');
  });
  it('off the event loop (rotate --from): the same file, the same refusal of an existing one', async () => {
    const p = join(dir, 's');
    await writeSecretFile(p, 'whsec_abc', false, true);
    expect(readFileSync(p, 'utf8')).toBe('whsec_abc');
    expect(statSync(p).mode & 0o777).toBe(0o600);
    await expect(writeSecretFile(p, 'whsec_other', false, true)).rejects.toMatchObject({ code: 'EEXIST' });
    await writeSecretFile(p, 'whsec_new', true, true);
    expect(readFileSync(p, 'utf8')).toBe('whsec_new');
    expect(readdirSync(dir)).toEqual(['s']);
  });
  it('--force replaces atomically and leaves no temp file', async () => {
    const p = join(dir, 's');
    writeFileSync(p, 'old', { mode: 0o644 });
    await writeSecretFile(p, 'whsec_new', true);
    expect(readFileSync(p, 'utf8')).toBe('whsec_new');
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['s']);
  });
});

describe('deliverSecretResult', () => {
  const body = (secret: string | null, secretAvailable = secret !== null) => ({
    data: { endpoint: { id: 'we_1', version: 2 }, secret, secretAvailable },
    meta: { requestId: 'req_1' },
  });

  it('on a TTY prints the secret once, framed, on stdout only', async () => {
    const io = fakeIO({ stdout: true, stderr: true });
    await deliverSecretResult(fakeContext({ io }), {}, { sinks: [], fallback: 'tty' }, body('whsec_printed_once'), 'Created.');
    expect(io.out().split('whsec_printed_once')).toHaveLength(2);
    expect(io.out()).toMatch(/will not be shown again/);
    expect(io.err()).not.toContain('whsec_printed_once');
  });

  it('with --json puts the envelope, secret included, on stdout', async () => {
    const io = fakeIO();
    await deliverSecretResult(fakeContext({ io }), { json: true }, { sinks: [], fallback: 'json' }, body('whsec_json'), 'x');
    expect(JSON.parse(io.out())).toEqual(body('whsec_json'));
  });

  it('with a file: JSON output has secret null and secretFile, the file has the secret', async () => {
    const io = fakeIO();
    const p = join(dir, 'out');
    await deliverSecretResult(fakeContext({ io }), { json: true }, { sinks: [fileSink(p)] as never }, body('whsec_to_file'), 'x');
    expect(JSON.parse(io.out()).data).toMatchObject({ secret: null, secretFile: p });
    expect(readFileSync(p, 'utf8')).toBe('whsec_to_file');
    expect(io.out() + io.err()).not.toContain('whsec_to_file');
  });

  it.each([
    [null, false],
    [null, true],
    ['whsec_but_unavailable', false],
  ] as const)('secret %j / secretAvailable %j is exit 13 with a way out', async (secret, available) => {
    const io = fakeIO();
    try {
      await deliverSecretResult(fakeContext({ io }), {}, { sinks: [], fallback: 'tty' }, body(secret, available), 'x');
      throw new Error('expected exit 13');
    } catch (e) {
      expect((e as CliError).exitCode).toBe(13);
      // the id shell-quoted: it came from the server
      expect((e as CliError).hint).toContain("chatctl webhooks rotate 'we_1' --expected-version 2");
    }
  });

  it('a file that cannot be written after the change: recovered copy, path on stderr, exit 13', async () => {
    const io = fakeIO();
    const cfg = join(dir, 'cfg');
    mkdirSync(cfg);
    const target = join(dir, 'gone', 'secret'); // folder vanished after the plan
    let error: CliError | undefined;
    try {
      await deliverSecretResult(fakeContext({ io, configDir: cfg }), {}, { sinks: [fileSink(target)] as never }, body('whsec_saved_anyway'), 'x');
      throw new Error('expected exit 13');
    } catch (e) {
      error = e as CliError;
      expect(error.exitCode).toBe(13);
    }
    const files = readdirSync(join(cfg, 'recovered'));
    expect(files).toHaveLength(1);
    expect(readFileSync(join(cfg, 'recovered', files[0]!), 'utf8')).toBe('whsec_saved_anyway');
    // The error (printed once, on stderr, by the reporter) names the copy, the endpoint and the fingerprint.
    expect(error!.message).toContain(join(cfg, 'recovered', files[0]!));
    expect(error!.message).toContain('we_1');
    expect(error!.message).toMatch(/sha256:[0-9a-f]{16}/);
    expect(error!.message + io.err() + io.out()).not.toContain('whsec_saved_anyway');
  });
});
