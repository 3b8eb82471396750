// docs/secrets.md, "Superseded records", for a single rotate: a key whose
// rotation a later one superseded is never delivered, also once its record
// is gone and the server only replays it; a replay of a rotation an earlier
// run here applied says so. In-process, against the in-process sandbox.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { recordPaths } from '../../src/secret/record.js';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runCli, workspace } from '../support/run.js';
import { endpointBody, sandbox } from '../support/sandbox.js';

async function setUp() {
  const sb = await sandbox();
  const created = await sb.create(endpointBody(1));
  const id = created.body.data.endpoint.id as string;
  const env = { ...sb.scopeEnv };
  const ws = workspace();
  const rotate = (ev: number, key: string, ...to: string[]) =>
    runCli(['webhooks', 'rotate', id, '--expected-version', String(ev), '--mode', 'immediate', '--yes', '--idempotency-key', key, ...to], { env, ws });
  const current = async () => {
    const e = (await sb.control('endpoints')).body.data.endpoints.find((x: { id: string }) => x.id === id);
    return { version: e.version as number, secret: e.validSecrets[0] as string };
  };
  const scope = `${sb.sb.organizationId}/${sb.sb.applicationId}/${sb.sb.environmentKey}`;
  return { id, ws, rotate, current, scope };
}

describe('a single rotate whose key a later rotation superseded', () => {
  test("'job:42' kept after a failed destination, 'job_42' rotates by hand, 'job:42' again: 13 superseded, the destination left as the newer rotation put it", async () => {
    const { ws, rotate, current } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'job:42', '--secret-to', 'exec:false')).exitCode).toBe(13);
    const byHand = await rotate(2, 'job_42', '--secret-to', `file:${file}`);
    expect(byHand.exitCode, byHand.stderr).toBe(0);
    const now = await current();
    expect(now.version).toBe(3);
    expect(readFileSync(file, 'utf8')).toBe(now.secret);

    const again = await rotate(1, 'job:42', '--secret-to', `file:${file}`, '--force');
    expect(again.exitCode).toBe(13);
    expect(again.stderr).toMatch(/superseded by the rotation to version 3 at \d{4}-\d\d-\d\dT/);
    expect(again.stderr).toContain('the destinations were left as they are');
    expect(again.stderr).toMatch(/hint: .*--expected-version 3/);
    expect(again.stderr).not.toContain('--expected-version 2');
    expect(readFileSync(file, 'utf8')).toBe(now.secret);
    expect((await current()).version).toBe(3);
  });

  test('a key an earlier run here applied and delivered, sent again: 13 that says an earlier run applied it, and when', async () => {
    const { ws, rotate } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'nightly-7', '--secret-to', `file:${file}`)).exitCode).toBe(0);
    const again = await rotate(1, 'nightly-7', '--secret-to', `file:${file}`, '--force');
    expect(again.exitCode).toBe(13);
    expect(again.stderr).toMatch(/applied by an earlier run's request \(Idempotency-Key nightly-7\) at \d{4}-/);
    expect(again.stderr).toMatch(/hint: .*--expected-version 2/);
  });
});

describe('what custody decides from the facts, for a single rotate', () => {
  test('a record file without a readable header (a kill between creating it and writing it) is re-sent with its key, never a wedged exit 3', async () => {
    const { id, ws, rotate, current, scope } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'warm-up', '--secret-to', `file:${file}`)).exitCode).toBe(0);
    // A run with key cut-1 was killed right after creating its record, before its header.
    const paths = recordPaths(ws.configDir, { op: 'rotate', scope, endpointId: id, idempotencyKey: 'cut-1' });
    writeFileSync(paths.record, '', { mode: 0o600 });
    const r = await rotate(2, 'cut-1', '--secret-to', `file:${file}`, '--force');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe((await current()).secret);
    expect(existsSync(paths.record)).toBe(false);
  });

  test('a restored older facts file (a backup copied back, a newer mtime) never refuses a newer kept secret', async () => {
    const { ws, rotate, current } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'month-1', '--secret-to', `file:${file}`)).exitCode).toBe(0);
    const facts = readdirSync(join(ws.configDir, 'facts')).map((n) => join(ws.configDir, 'facts', n));
    expect(facts).toHaveLength(1);
    const backup = readFileSync(facts[0]!);
    // Month 2's store fails: its secret (version 3) is kept.
    expect((await rotate(2, 'month-2', '--secret-to', 'exec:false')).exitCode).toBe(13);
    writeFileSync(facts[0]!, backup); // the older log, written last
    const again = await rotate(2, 'month-2', '--secret-to', `file:${file}`, '--force');
    expect(again.exitCode, again.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe((await current()).secret);
  });

  test("a kept secret delivered by the re-run reports the endpoint's version from the request's own fact, not null", async () => {
    const { ws, rotate, current } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'kept-1', '--secret-to', 'exec:false')).exitCode).toBe(13);
    const again = await rotate(1, 'kept-1', '--secret-to', `file:${file}`, '--json');
    expect(again.exitCode, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).data.endpoint).toMatchObject({ version: 2 });
    expect((await current()).version).toBe(2);
  });

  test('a new rotation refused with 7 because an earlier run here applied one whose secret is kept: 13 naming the kept copy and the re-run with its key, not a 7 that would rotate again', async () => {
    const { ws, rotate, current } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    expect((await rotate(1, 'first', '--secret-to', 'exec:false')).exitCode).toBe(13);
    const again = await rotate(1, 'second', '--secret-to', `file:${file}`);
    expect(again.exitCode, again.stderr).toBe(13);
    expect(again.stderr).toMatch(/is at version 2 because an earlier run's rotation \(Idempotency-Key first\) was applied/);
    expect(again.stderr).toMatch(/hint: deliver it without rotating again: chatctl webhooks rotate \S+ --expected-version 1 --mode immediate --idempotency-key 'first'/);
    // The re-run it names delivers the kept secret.
    const rerun = await rotate(1, 'first', '--secret-to', `file:${file}`);
    expect(rerun.exitCode, rerun.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe((await current()).secret);
  });

  test('a change custody cannot note in the facts (facts/ not a folder) is still delivered, and the run says what was not noted', async () => {
    const { ws, rotate, current } = await setUp();
    const file = join(ws.cwd, 'hook.whsec');
    mkdirSync(ws.configDir, { recursive: true });
    writeFileSync(join(ws.configDir, 'facts'), 'not a folder');
    const r = await rotate(1, 'unnoted', '--secret-to', `file:${file}`);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe((await current()).secret);
    expect(r.stderr).toMatch(/could not note this change of endpoint \S+ under .*facts/);
  });
});
