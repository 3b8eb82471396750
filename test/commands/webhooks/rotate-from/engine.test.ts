// rotate --from sends each item through the same request engine as a single
// rotate: the same retries, Retry-After (and Retry-After-Ms), --deadline,
// "may have been applied" on a 503 or a lost answer, the same exit codes for a
// malformed answer, and the same --debug trace with secrets blanked. And no
// output stream shows a secret of the run that a server echoes later.
import { loadJournal } from '../../../../src/commands/webhooks/rotate-from/journal.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { errorBody, scopeEnv, secretBody } from '../../../support/fixtures.js';
import { parseErrorLine } from '../../../support/json.js';
import { runCli, workspace, type Workspace } from '../../../support/run.js';
import { useRecordingServer } from '../../../support/server.js';
import { virtualClock } from '../../../support/fakes.js';

const server = useRecordingServer();

const SECRET_1 = 'whsec_Zmlyc3Qtc2VjcmV0/of+the/run+AAAAAAAAAA=';
const SECRET_2 = 'whsec_c2Vjb25kLXNlY3JldA/of+the/run+BBBBBBBBB=';

function manifest(ws: Workspace, ids: string[]): string[] {
  writeFileSync(join(ws.cwd, 'm.ndjson'), ids.map((endpointId) => JSON.stringify({ endpointId, expectedVersion: 1 })).join('\n') + '\n');
  return ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--concurrency', '1', '--secret-to', 'file:{id}.whsec'];
}

const lines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown> & { ok?: boolean; exitCode?: number; idempotencyKey?: string; error?: { code: string; message: string } });

describe("rotate --from: each item follows the single rotate's request rules", () => {
  test('a 503 may have been applied: the item names its key, the journal keeps it unknown, and a re-run re-sends that key', async () => {
    const ws = workspace();
    server.enqueue({ status: 503, headers: { 'Retry-After': '0' }, body: errorBody('service_unavailable') });
    const first = await runCli([...manifest(ws, ['we_1']), '--journal', 'j', '--json', '--max-retries', '0'], { ws, env: scopeEnv(server.url), inject: virtualClock() });
    expect(first.exitCode, first.stderr).toBe(14);
    const [item] = lines(first.stdout);
    expect(item).toMatchObject({ ok: false, exitCode: 12 });
    const key = server.requests[0]!.headers['idempotency-key'];
    expect(item!.idempotencyKey).toBe(key);
    // Unknown, as the journal (compacted at the run's end) reads it: a re-run re-sends that key.
    expect(loadJournal(join(ws.cwd, 'j')).priors.get('we_1')).toMatchObject({ state: 'sent', key });

    server.enqueue({ status: 200, body: secretBody(SECRET_1, true, 'we_1') });
    const second = await runCli([...manifest(ws, ['we_1']), '--journal', 'j', '--json'], { ws, env: scopeEnv(server.url), inject: virtualClock() });
    expect(second.exitCode, second.stderr).toBe(0);
    expect(server.requests[1]!.headers['idempotency-key']).toBe(key);
    expect(readFileSync(join(ws.cwd, 'we_1.whsec'), 'utf8')).toBe(SECRET_1);
  });

  test('--deadline: no attempt starts past it; the item it cut ends 12 naming --deadline, the rest are not started', async () => {
    const ws = workspace();
    server.setHandler(() => ({ status: 503, headers: { 'Retry-After': '2' }, body: errorBody('service_unavailable') }));
    const clock = virtualClock();
    const r = await runCli([...manifest(ws, ['we_1', 'we_2', 'we_3']), '--json', '--deadline', '5', '--max-retries', '10'], { ws, env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(14);
    const out = lines(r.stdout);
    expect(out[0]).toMatchObject({ endpointId: 'we_1', ok: false, exitCode: 12, error: { code: 'timeout' } });
    expect(out[0]!.error!.message).toContain('deadline');
    expect(out.at(-1)).toMatchObject({ summary: { ok: 0, failed: 1, notStarted: 2 } });
    // 0 s, 2 s, 4 s: the next turn (6 s) would pass the deadline.
    expect(server.requests).toHaveLength(3);
    expect(parseErrorLine(r.stderr).error.message).toContain('deadline');
  });

  test('Retry-After-Ms is honoured by single rotate as by the fleet: the finer wait, not the whole seconds', async () => {
    server.enqueue({ status: 429, headers: { 'Retry-After': '5', 'Retry-After-Ms': '250' }, body: errorBody('rate_limit_exceeded') }, { status: 200, body: secretBody(SECRET_1) });
    const clock = virtualClock();
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'overlap', '--json'], { env: scopeEnv(server.url), inject: clock });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(clock.waits).toEqual([250]);
  });

  test('a 2xx that is not the expected response and carries no secret is 1 (invalid_response) in a fleet, as in a single rotate, with its key', async () => {
    const ws = workspace();
    server.enqueue({ status: 200, body: { nothing: 'here' } });
    const r = await runCli([...manifest(ws, ['we_1']), '--json'], { ws, env: scopeEnv(server.url), inject: virtualClock() });
    expect(lines(r.stdout)[0]).toMatchObject({ ok: false, exitCode: 1, error: { code: 'invalid_response' } });
    expect(lines(r.stdout)[0]!.idempotencyKey).toBe(server.requests[0]!.headers['idempotency-key']);
    server.enqueue({ status: 200, body: { nothing: 'here' } });
    const single = await runCli(['webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'overlap', '--json'], { env: scopeEnv(server.url), inject: virtualClock() });
    expect(single.exitCode).toBe(1);
    expect(parseErrorLine(single.stderr).error.code).toBe('invalid_response');
  });
});

describe("rotate --from: a server that echoes an earlier item's secret", () => {
  const half = SECRET_1.length / 2;
  const url = (s: string, upper: boolean) => [...s].map((c) => `%${c.charCodeAt(0).toString(16)[upper ? 'toUpperCase' : 'toLowerCase']()}`).join('');
  const unicode = (s: string) => [...s].map((c, i) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')[i % 2 ? 'toUpperCase' : 'toLowerCase']()}`).join('');
  /** How the echo is written inside the JSON string of the answer (so `\\n` is a line break once parsed). */
  const forms: [string, string][] = [
    ['as it is', SECRET_1],
    ['with \\/ escapes', SECRET_1.replaceAll('/', '\\/')],
    ['split by a line break', `${SECRET_1.slice(0, half)}\\n${SECRET_1.slice(half)}`],
    ['split by a space and a tab', `${SECRET_1.slice(0, 9)} ${SECRET_1.slice(9, 20)}\\t${SECRET_1.slice(20)}`],
    ['split by \\u000A (any case)', `${SECRET_1.slice(0, half)}\\u000A${SECRET_1.slice(half)}`],
    ['URL-encoded', url(SECRET_1, true)],
    ['a mix: URL-encoded (lower case), a line break escaped twice, \\u escapes', `${url(SECRET_1.slice(0, half), false)}\\\\n${unicode(SECRET_1.slice(half))}`],
  ];
  // Item 1 gets SECRET_1; item 2's refusal echoes it (and SECRET_2 is never issued).
  const script = (echoed: string) => (_req: unknown, index: number) =>
    index === 0
      ? { status: 200, body: secretBody(SECRET_1, true, 'we_1') }
      : {
          status: 409,
          headers: { 'Content-Type': 'application/json' },
          // Raw text, so the escape reaches the client as sent.
          body: `{"error":{"code":"conflict","message":"endpoint busy; last secret was ${echoed}","requestId":"req_x","details":{"echo":"${echoed}"}}}`,
        };
  /** Whether text shows any of five stretches of SECRET_1 (none holding a split above) as it is, with \\/, URL-encoded or \\u-escaped, in any case. */
  const shows = (text: string) => {
    const lower = text.toLowerCase();
    return [0, 10, 24, 32, 38].some((at) => {
      const w = SECRET_1.slice(at, at + 8);
      return [w, w.replaceAll('/', '\\/'), url(w, false), unicode(w)].some((form) => lower.includes(form.toLowerCase()));
    });
  };

  for (const [name, echoed] of forms) {
    test(`--json lines, the human failure table and --debug never show it (echoed ${name})`, async () => {
      const ws = workspace();
      server.setHandler(script(echoed));
      const json = await runCli([...manifest(ws, ['we_1', 'we_2']), '--json', '--debug'], { ws, env: scopeEnv(server.url), inject: virtualClock() });
      expect(json.exitCode, json.stderr).toBe(14);
      expect(lines(json.stdout)[1]).toMatchObject({ endpointId: 'we_2', ok: false, exitCode: 8 });
      expect(shows(json.stdout), json.stdout).toBe(false);
      expect(shows(json.stderr), json.stderr).toBe(false);
      // The trace is there, each line naming its item.
      expect(json.stderr).toContain('[debug] we_2: < 409');

      server.reset();
      server.setHandler(script(echoed));
      const ws2 = workspace();
      const human = await runCli(manifest(ws2, ['we_1', 'we_2']), { ws: ws2, env: scopeEnv(server.url), inject: virtualClock() });
      expect(human.exitCode, human.stderr).toBe(14);
      expect(human.stdout).toContain('Failed:');
      expect(shows(human.stdout + human.stderr), human.stdout + human.stderr).toBe(false);
      expect(readFileSync(join(ws2.cwd, 'we_1.whsec'), 'utf8')).toBe(SECRET_1);
    });
  }
  void SECRET_2;
});
