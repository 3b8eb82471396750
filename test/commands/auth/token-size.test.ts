// A token over 64 KiB (of bytes) is refused wherever chatctl takes one:
// exit 2 from `auth login`, exit 3 from CHATCTL_TOKEN, a token command, or a
// file token; nothing is sent, and config.json stays readable. A 6 MB token
// stored by `auth login` once made config.json too large to read, for every
// profile.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { MAX_TOKEN_BYTES } from '../../../src/credentials/source.js';
import { REACTIVATE, mutationBody } from '../../support/fixtures.js';
import { buildEnv, cleanupTempDirs, runInProcess, workspace, type Workspace } from '../../support/run.js';

/** A server that takes headers as large as a 64 KiB token (Node's default stops at 16 KiB), answers every request with success, and records each Authorization. */
const server = { url: '', authorizations: [] as string[], http: undefined as Server | undefined };
beforeAll(async () => {
  server.http = createServer({ maxHeaderSize: 4 * MAX_TOKEN_BYTES }, (req, res) => {
    server.authorizations.push(req.headers.authorization ?? '');
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(mutationBody())));
  });
  await new Promise<void>((resolve) => server.http!.listen(0, '127.0.0.1', resolve));
  server.url = `http://127.0.0.1:${(server.http.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.http!.close(resolve));
  cleanupTempDirs();
});
beforeEach(() => void (server.authorizations = []));

/** A workspace with profiles "prod" (the current one) and "other", both pointing at the server. */
function configured(prod: Record<string, string> = {}): Workspace {
  const ws = workspace();
  mkdirSync(ws.configDir, { mode: 0o700 });
  const base = { baseUrl: server.url, organizationId: 'org_1', applicationId: 'app_1', environmentKey: 'prod' };
  const profiles = { prod: { ...base, ...prod }, other: { ...base, token: 'tok_other_b3RoZXItdG9rZW4' } };
  writeFileSync(join(ws.configDir, 'config.json'), JSON.stringify({ version: 1, currentProfile: 'prod', profiles }, null, 2) + '\n', { mode: 0o600 });
  return ws;
}

const run = (ws: Workspace, argv: string[], extra: Record<string, string | undefined> = {}, input?: string) =>
  runInProcess(argv, { env: buildEnv(ws, { DBUS_SESSION_BUS_ADDRESS: undefined, ...extra }), cwd: ws.cwd, input });

describe('a token over 64 KiB', () => {
  test('auth login refuses it (exit 2, before anything is stored); 64 KiB exactly is stored, and config.json stays readable for every profile', async () => {
    const ws = configured();
    const before = readFileSync(join(ws.configDir, 'config.json'), 'utf8');
    for (const token of ['t'.repeat(6 * 1024 * 1024), 't'.repeat(MAX_TOKEN_BYTES + 1), 'é'.repeat(MAX_TOKEN_BYTES / 2 + 1)]) {
      const r = await run(ws, ['auth', 'login', '--with-token', '--insecure-storage'], {}, `${token}\n`);
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain(`the token is ${Buffer.byteLength(token)} bytes; a token over 64 KiB (65536 bytes) is refused`);
      expect(r.stderr.length).toBeLessThan(1000);
      expect(readFileSync(join(ws.configDir, 'config.json'), 'utf8')).toBe(before);
    }
    const r = await run(ws, ['auth', 'login', '--with-token', '--insecure-storage'], {}, `${'t'.repeat(MAX_TOKEN_BYTES)}\n`);
    expect(r.exitCode, r.stderr).toBe(0);
    const other = await run(ws, [...REACTIVATE, '--profile', 'other']);
    expect(other.exitCode, other.stderr).toBe(0);
    expect(server.authorizations).toEqual(['Bearer tok_other_b3RoZXItdG9rZW4']);
  });

  test('CHATCTL_TOKEN: exit 3 naming it, nothing sent, with --dry-run too', async () => {
    const ws = configured({ token: 'tok_file_ZmlsZS10b2tlbg' });
    for (const argv of [REACTIVATE, [...REACTIVATE, '--dry-run']]) {
      const r = await run(ws, argv, { CHATCTL_TOKEN: 'e'.repeat(MAX_TOKEN_BYTES + 1) });
      expect(r.exitCode, r.stderr).toBe(3);
      expect(r.stderr).toContain(`the token from CHATCTL_TOKEN is ${MAX_TOKEN_BYTES + 1} bytes; a token over 64 KiB (65536 bytes) is refused`);
      expect(r.stderr).not.toContain('eeeeeeee');
    }
    expect(server.authorizations).toEqual([]);
    const fits = await run(ws, REACTIVATE, { CHATCTL_TOKEN: 'e'.repeat(MAX_TOKEN_BYTES) });
    expect(fits.exitCode, fits.stderr).toBe(0);
    expect(server.authorizations).toEqual([`Bearer ${'e'.repeat(MAX_TOKEN_BYTES)}`]);
  });

  test('a token command: exit 3 whether it prints a little over 64 KiB or far more; 64 KiB and a newline is a token', async () => {
    for (const [count, exitCode] of [
      [MAX_TOKEN_BYTES + 1, 3],
      [10 * MAX_TOKEN_BYTES, 3],
      [MAX_TOKEN_BYTES, 0],
    ] as const) {
      const ws = configured({ tokenCommand: `head -c ${count} /dev/zero | tr '\\0' k; echo` });
      const r = await run(ws, REACTIVATE);
      expect(r.exitCode, r.stderr).toBe(exitCode);
      if (exitCode === 3) expect(r.stderr).toMatch(/token over 64 KiB \(65536 bytes\) is refused/);
      expect(r.stderr).not.toContain('kkkkkkkk');
    }
    expect(server.authorizations).toEqual([`Bearer ${'k'.repeat(MAX_TOKEN_BYTES)}`]);
  });

  test('a file token written by hand: exit 3, with the way to store it again', async () => {
    const ws = configured({ token: 'f'.repeat(MAX_TOKEN_BYTES + 1) });
    const r = await run(ws, REACTIVATE);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.stderr).toContain(`the token from profile "prod"'s file token (config.json) is ${MAX_TOKEN_BYTES + 1} bytes`);
    expect(r.stderr).toContain('chatctl auth login --profile prod');
    expect(server.authorizations).toEqual([]);
  });
});
