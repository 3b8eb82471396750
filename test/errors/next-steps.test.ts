// What a failure says next, end to end: chatctl in-process against the
// in-process sandbox on 127.0.0.1 (a real HTTP server). A wrong scope (6),
// a refused permission (5), a destination registered already (8), retries
// run out on 429 (11: the message and its next: line give one command), a
// missing --expected-version off a terminal, and a mistyped --profile or
// CHATCTL_PROFILE (the stored name nearest to it, as `profile use` says).
import { afterAll, describe, expect, it } from 'vitest';
import { sandbox } from '../support/sandbox.js';
import { baseEnv, cleanupTempDirs, runInProcess, workspace } from '../support/run.js';
import { parseErrorLine, stackTrace } from '../support/json.js';

afterAll(cleanupTempDirs);

const EVENT = 'chat.message.created.v1';

async function setup() {
  const sb = await sandbox();
  const ws = workspace();
  const env = { ...baseEnv(ws), ...sb.scopeEnv };
  const run = async (args: string[], extra: Record<string, string | undefined> = {}) => {
    const r = await runInProcess(args, { env: { ...env, ...extra }, cwd: ws.cwd, timeoutMs: 15_000 });
    expect(stackTrace(r.stderr)).toBeUndefined();
    return r;
  };
  const created = await sb.create({ name: 'a', destinationUrl: 'https://hooks.example.com/a', eventTypes: [EVENT] });
  const id = created.body.data.endpoint.id as string;
  return { sb, ws, run, id };
}

/** The lines of a human error report, each trimmed. */
const reportLines = (stderr: string) => stderr.split('\n').map((l) => l.trim());

describe('what to do next', () => {
  it('6 for a scope the server does not know: names the scope sent, where each value came from, and what to check', async () => {
    const { run, id } = await setup();
    const r = await run(['--org', 'org_other', 'webhooks', 'reactivate', id, '--expected-version', '1']);
    expect(r.exitCode).toBe(6);
    expect(reportLines(r.stderr)).toEqual(
      expect.arrayContaining([
        'the request was for organization org_other (from --org), application app_sandbox (from CHATCTL_APP), environment sandbox (from CHATCTL_ENV)',
        "next: check the endpoint id, and --org, --app and --env or the profile's scope (chatctl profile show default); chatctl doctor checks the set-up",
      ]),
    );
    // --json keeps its one line.
    const json = await run(['--org', 'org_other', 'webhooks', 'reactivate', id, '--expected-version', '1', '--json']);
    expect(parseErrorLine(json.stderr)).toMatchObject({ error: { code: 'resource_not_found' }, exitCode: 6 });
  });

  it('5: the token may lack the permission here; auth status shows which token is used', async () => {
    const { sb, run, id } = await setup();
    await sb.control('faults', { body: { failNext: 1, status: 403 } });
    const r = await run(['webhooks', 'reactivate', id, '--expected-version', '1']);
    expect(r.exitCode).toBe(5);
    expect(r.stderr).toContain('next: the token may lack the permission for this, or for this scope: chatctl auth status shows which token is used');
    expect(r.stderr).toContain('the request was for organization org_sandbox (from CHATCTL_ORG)');
  });

  it('8 on create with a destination registered already: names the endpoint the server names', async () => {
    const { run, id } = await setup();
    const r = await run(['webhooks', 'create', '--name', 'b', '--url', 'https://hooks.example.com/a', '--event', EVENT, '--secret-file', 'b.whsec']);
    expect(r.exitCode).toBe(8);
    expect(reportLines(r.stderr)).toContain(
      `next: endpoint ${id} already has this destination URL: rotate or reactivate ${id} instead (chatctl webhooks rotate ${id} --expected-version N), or create with another --url`,
    );
  });

  it.each([
    ['rotate', (id: string) => ['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'overlap', '--secret-file', 'n.whsec', '--idempotency-key', 'key-1']],
    ['create', () => ['webhooks', 'create', '--name', 'c', '--url', 'https://hooks.example.com/c', '--event', EVENT, '--secret-file', 'c.whsec', '--idempotency-key', 'key-1']],
  ])('11 on %s: the message and its next: line give one and the same re-run command, with the key', async (_verb, args) => {
    const { sb, run, id } = await setup();
    await sb.control('faults', { body: { failNext: 1, status: 429 } });
    const r = await run(['--max-retries', '0', ...args(id)]);
    expect(r.exitCode).toBe(11);
    const inMessage = /re-run (chatctl webhooks .*) so the change cannot be applied twice/.exec(r.stderr)?.[1];
    const inNext = /next: wait a minute, then re-run: (chatctl webhooks .*)\n/.exec(r.stderr)?.[1];
    expect(inMessage).toBeDefined();
    expect(inNext).toBe(inMessage);
    expect(inNext).toContain("--idempotency-key 'key-1'");
    // The command works once the server lets it through: the same key, applied once.
    const again = await run(
      inNext!
        .split(' ')
        .slice(1)
        .map((w) => w.replace(/^'(.*)'$/, '$1')),
    );
    expect(again.exitCode, again.stderr).toBe(0);
  });

  it('a missing --expected-version off a terminal says where the version comes from', async () => {
    const { run, id } = await setup();
    const r = await run(['webhooks', 'rotate', id, '--mode', 'overlap', '--secret-file', 'n.whsec']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('chatctl: error: missing --expected-version');
    for (const where of ['data.endpoint.version in the --json answer of its create (1) or of its last rotate or reactivate', 'the current version an exit 7 names', 'the journal']) {
      expect(r.stderr).toContain(where);
    }
  });

  it('a mistyped --profile or CHATCTL_PROFILE gets the stored name nearest to it, as profile use does', async () => {
    const { run, id } = await setup();
    expect((await run(['profile', 'set', 'sbx', '--env', 'sandbox'])).exitCode).toBe(0);
    const flag = await run(['--profile', 'sbxx', 'webhooks', 'reactivate', id, '--expected-version', '1']);
    expect(flag.exitCode).toBe(3);
    expect(flag.stderr).toBe('chatctl: error: profile "sbxx" does not exist\n  hint: did you mean sbx?  (--profile sbx; list profiles with: chatctl profile list)\n');
    const variable = await run(['auth', 'status'], { CHATCTL_PROFILE: 'sbxx' });
    expect(variable.exitCode).toBe(3);
    expect(variable.stderr).toContain('hint: did you mean sbx?  (CHATCTL_PROFILE=sbx; list profiles with: chatctl profile list)');
    const use = await run(['profile', 'use', 'sbxx']);
    expect(use.stderr).toContain('hint: did you mean sbx?  (chatctl profile use sbx)');
  });
});
