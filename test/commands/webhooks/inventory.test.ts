// docs/inventory.md: every answer chatctl gets is noted in the config
// folder's facts; `webhooks list` and `show` are a view of them; rotate and
// reactivate fill in the expected version from them at a terminal, or with
// `--expected-version last`; a version conflict that names the current
// version is noted too. In-process, against the in-process sandbox.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { cleanupTempDirs, runCli, workspace, type RunOptions } from '../../support/run.js';
import { sandbox } from '../../support/sandbox.js';
import { knownEndpoints } from '../../../src/secret/inventory.js';

afterAll(cleanupTempDirs);

const at = (iso: string) => ({ now: () => Date.parse(iso) });

async function setUp() {
  const sb = await sandbox();
  const ws = workspace();
  const env = { ...sb.scopeEnv };
  const scope = `${sb.sb.organizationId}/${sb.sb.applicationId}/${sb.sb.environmentKey}`;
  const cli = (args: string[], opts: Omit<RunOptions, 'ws'> = {}) => runCli(args, { ...opts, ws, env: { ...env, ...opts.env } });
  const serverVersion = async (id: string) => (await sb.control('endpoints')).body.data.endpoints.find((e: { id: string }) => e.id === id).version as number;
  /** A webhook created through chatctl (--json, the secret in the answer), at the given time. */
  const create = async (when = '2030-01-01T00:00:00.000Z', url = 'https://hooks.example.com/a') => {
    const r = await cli(['webhooks', 'create', '--name', 'billing', '--url', url, '--event', 'chat.message.created.v1', '--json'], { inject: at(when) });
    expect(r.exitCode, r.stderr).toBe(0);
    return JSON.parse(r.stdout).data.endpoint.id as string;
  };
  const list = async (...more: string[]) => {
    const r = await cli(['webhooks', 'list', '--json', ...more]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as any[];
  };
  return { sb, ws, cli, scope, serverVersion, create, list };
}

const TERMINAL = { stdin: true, stdout: true, stderr: true };

describe('the expected version this machine last saw', () => {
  test('at a terminal, rotate without --expected-version uses the last-seen version and says where it came from', async () => {
    const { cli, create, serverVersion } = await setUp();
    const id = await create('2030-01-01T00:00:00.000Z');
    const r = await cli(['webhooks', 'rotate', id, '--mode', 'overlap'], { tty: TERMINAL });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('chatctl: expected version 1, as this machine last saw it at 2030-01-01T00:00:00.000Z; pass --expected-version to set it\n');
    expect(r.stdout).toContain('Rotated the signing secret');
    expect(await serverVersion(id)).toBe(2);
  });

  test('under --no-input (and CI) the flag stays required: exit 2 naming --expected-version last, nothing sent', async () => {
    const { cli, create, serverVersion } = await setUp();
    const id = await create();
    for (const how of [
      { args: ['--no-input'], env: {} },
      { args: [], env: { CI: 'true' } },
    ]) {
      const r = await cli(['webhooks', 'rotate', id, '--mode', 'overlap', '--secret-to', 'stdout', ...how.args], { tty: TERMINAL, env: how.env });
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain('chatctl: error: missing --expected-version\n');
      expect(r.stderr).toContain('this machine last saw version 1 of endpoint');
      expect(r.stderr).toContain('--expected-version last');
    }
    expect(await serverVersion(id)).toBe(1);
  });

  test('nothing seen of the endpoint and no terminal: the error names where versions are found', async () => {
    const { cli } = await setUp();
    const r = await cli(['webhooks', 'rotate', 'we_never', '--mode', 'overlap', '--no-input']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('missing --expected-version');
    expect(r.stderr).toContain('data.endpoint.version in the --json answer of its create');
    expect(r.stderr).toContain('chatctl webhooks list shows the version this machine last saw');
  });

  test('--expected-version last under CI uses the last-seen version; with nothing seen it is exit 2 naming the places', async () => {
    const { cli, create, serverVersion } = await setUp();
    const id = await create('2030-01-02T03:04:05.000Z');
    const file = 'new.whsec';
    const r = await cli(['webhooks', 'rotate', id, '--expected-version', 'last', '--mode', 'overlap', '--secret-to', `file:${file}`], { env: { CI: 'true' } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('chatctl: expected version 1 (--expected-version last), as this machine last saw it at 2030-01-02T03:04:05.000Z\n');
    expect(await serverVersion(id)).toBe(2);

    const none = await cli(['webhooks', 'reactivate', 'we_unseen', '--expected-version', 'last'], { env: { CI: 'true' } });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('--expected-version last: this machine has seen no version of endpoint we_unseen in ');
    expect(none.stderr).toContain('the current version an exit 7 names');
  });

  test('a 7 notes the current version it names: the error gives the re-run, and --expected-version last then uses it', async () => {
    const { sb, cli, create, serverVersion, list } = await setUp();
    const id = await create();
    // Changed elsewhere (not through this machine): versions 2 and 3.
    expect((await sb.rotate(id, { expectedVersion: 1, mode: 'immediate' })).status).toBe(200);
    expect((await sb.deactivate(id, { expectedVersion: 2 })).status).toBe(200);
    const stale = await cli(['webhooks', 'rotate', id, '--expected-version', 'last', '--mode', 'immediate', '--yes', '--secret-to', 'file:a.whsec'], { env: { CI: 'true' } });
    expect(stale.exitCode).toBe(7);
    expect(stale.stderr).toContain('current version: 3');
    expect(stale.stderr).toContain(`re-run: chatctl webhooks rotate '${id}' --expected-version 3 --mode immediate --secret-to file:a.whsec --yes`);
    const [seen] = await list();
    expect(seen).toMatchObject({ id, version: 3, lastChange: { op: 'seen', version: 3 }, status: 'active' });

    // Reactivate with what the 7 taught: an `applied` reactivate fact, no secret.
    const re = await cli(['webhooks', 'reactivate', id, '--expected-version', 'last', '--json'], { env: { CI: 'true' } });
    expect(re.exitCode, re.stderr).toBe(0);
    expect(await serverVersion(id)).toBe(4);
    const [after] = await list();
    expect(after).toMatchObject({ id, version: 4, status: 'active', lastChange: { op: 'reactivate', version: 4 } });
  });

  test('a --from item answered 7 notes the current version as well', async () => {
    const { sb, ws, cli, create, list } = await setUp();
    const id = await create();
    expect((await sb.rotate(id, { expectedVersion: 1, mode: 'immediate' })).status).toBe(200);
    mkdirSync(join(ws.cwd, 'secrets'));
    writeFileSync(join(ws.cwd, 'fleet.ndjson'), `${JSON.stringify({ endpointId: id, expectedVersion: 1 })}\n`);
    const r = await cli(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'file:secrets/{id}.whsec', '--json']);
    expect(r.exitCode, r.stderr).not.toBe(0);
    expect(r.stdout).toContain('"exitCode":7');
    expect((await list())[0]).toMatchObject({ id, version: 2, lastChange: { op: 'seen', version: 2 } });
  });

  test('a reactivate 7 is noted as well', async () => {
    const { sb, cli, create, list } = await setUp();
    const id = await create();
    expect((await sb.deactivate(id, { expectedVersion: 1 })).status).toBe(200);
    expect((await sb.reactivate(id, { expectedVersion: 2 })).status).toBe(200);
    const r = await cli(['webhooks', 'reactivate', id, '--expected-version', '1']);
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toContain(`re-run: chatctl webhooks reactivate '${id}' --expected-version 3`);
    expect((await list())[0]).toMatchObject({ version: 3, lastChange: { op: 'seen' } });
  });
});

describe('webhooks list and show', () => {
  test('a fresh config folder saw nothing, and says how versions are found', async () => {
    const { cli, list } = await setUp();
    const r = await cli(['webhooks', 'list']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^chatctl: this machine saw no webhook endpoint in \S+ yet: create, rotate and reactivate note here what each answer says\. The API cannot list or read endpoints; an endpoint's version is in data\.endpoint\.version in the --json answer of its create/,
    );
    expect(await list()).toEqual([]);
    // No scope at all: every scope is shown (none), and why.
    const bare = await runCli(['webhooks', 'list'], {});
    expect(bare.exitCode).toBe(0);
    expect(bare.stderr).toContain('showing every scope this machine saw');
    expect(bare.stderr).toContain('this machine saw no webhook endpoint yet');
  });

  test('--json after create, rotate and a 7: the fields of each endpoint; the table says it is what this machine saw', async () => {
    const { sb, cli, create, list, scope, ws } = await setUp();
    const id = await create('2030-01-01T00:00:00.000Z');
    const secretFile = join(ws.cwd, 'new.whsec');
    const rotated = await cli(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-to', `file:${secretFile}`], { inject: at('2030-01-01T01:00:00.000Z') });
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    const fp = /Signing secret (sha256:[0-9a-f]{16}) delivered to/.exec(rotated.stdout)?.[1];
    expect(fp).toBeDefined();
    const other = await create(undefined, 'https://hooks.example.com/b');
    expect((await sb.rotate(other, { expectedVersion: 1, mode: 'immediate' })).status).toBe(200);
    expect((await cli(['webhooks', 'rotate', other, '--expected-version', '1', '--mode', 'overlap', '--secret-to', 'file:x.whsec'])).exitCode).toBe(7);

    const views = await list();
    expect(views.map((v) => v.id).sort()).toEqual([id, other].sort());
    const mine = views.find((v) => v.id === id);
    const endpoint = (await sb.control('endpoints')).body.data.endpoints.find((e: { id: string }) => e.id === id);
    expect(mine).toEqual({
      id,
      scope,
      name: 'billing',
      url: 'https://hooks.example.com/a',
      events: ['chat.message.created.v1'],
      version: 2,
      status: 'active',
      lastChange: { at: '2030-01-01T01:00:00.000Z', op: 'rotate', version: 2, mode: 'overlap' },
      fingerprint: fp,
      deliveredTo: [`file:${secretFile}`],
      keptAt: null,
      overlapEndsAt: endpoint.previousSecretExpiresAt,
    });
    expect(mine.overlapEndsAt).toMatch(/^\d{4}-/);
    const theOther = views.find((v) => v.id === other);
    expect(theOther).toMatchObject({ version: 2, lastChange: { op: 'seen', version: 2 }, deliveredTo: ['stdout (--json)'] });
    // Never a secret: neither the listing nor the facts hold one.
    const secret = readFileSync(secretFile, 'utf8');
    expect(JSON.stringify(views)).not.toContain(secret.slice(6));
    const factsDir = join(ws.configDir, 'facts');
    for (const name of readdirSync(factsDir)) expect(readFileSync(join(factsDir, name), 'utf8')).not.toContain(secret.slice(6));

    const table = await cli(['webhooks', 'list']);
    expect(table.exitCode).toBe(0);
    expect(table.stdout).toContain(`Scope ${scope}:`);
    expect(table.stdout).toMatch(/ID\s+NAME\s+URL\s+VERSION\s+STATUS\s+LAST CHANGE\s+FINGERPRINT\s+DELIVERED TO\s+OVERLAP ENDS/);
    expect(table.stdout).toContain('rotate overlap 2030-01-01T01:00:00.000Z');
    expect(table.stdout).toContain('seen in exit 7');
    expect(table.stderr).toContain("chatctl: this is what this machine saw (its facts under the config folder's facts/), not the server's state");

    // Completion's view: ids with names, cheap.
    expect(knownEndpoints(ws.configDir, scope).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id, name: 'billing' },
        { id: other, name: 'billing' },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(knownEndpoints(ws.configDir, 'org_x/app_x/env_x')).toEqual([]);
  });

  test('show ID: the endpoint and its history (keys, no secret); --json; an id never seen is exit 2', async () => {
    const { cli, create, ws, scope } = await setUp();
    const id = await create('2030-01-01T00:00:00.000Z');
    const rotated = await cli(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--idempotency-key', 'nightly-1', '--secret-to', 'file:s.whsec'], {
      inject: at('2030-01-01T02:00:00.000Z'),
    });
    expect(rotated.exitCode, rotated.stderr).toBe(0);

    const shown = await cli(['webhooks', 'show', id, '--json']);
    expect(shown.exitCode, shown.stderr).toBe(0);
    const doc = JSON.parse(shown.stdout);
    expect(doc).toMatchObject({ id, scope, version: 2, deliveredTo: [`file:${join(ws.cwd, 's.whsec')}`] });
    expect(doc.facts.map((f: { f: string; op?: string }) => [f.f, f.op ?? null])).toEqual([
      ['applied', 'create'],
      ['delivered', null],
      ['applied', 'rotate'],
      ['delivered', null],
    ]);
    expect(doc.facts[2]).toMatchObject({ key: 'nightly-1', version: 2, mode: 'overlap', at: '2030-01-01T02:00:00.000Z' });
    expect(doc.facts[0]).not.toHaveProperty('id');
    const secret = readFileSync(join(ws.cwd, 's.whsec'), 'utf8');
    expect(shown.stdout).not.toContain(secret.slice(6));

    const human = await cli(['webhooks', 'show', id]);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toContain('History (oldest first):');
    expect(human.stdout).toMatch(/2030-01-01T02:00:00\.000Z\s+applied\s+2\s+nightly-1\s+rotate overlap sha256:/);
    expect(human.stderr).toContain('not the server');

    const unknown = await cli(['webhooks', 'show', 'we_nope']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('this machine saw nothing of endpoint we_nope in');
  });
});
