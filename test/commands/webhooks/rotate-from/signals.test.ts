// rotate --from and a signal while requests already sent wait for their
// answers (docs/fleet.md, "Each item's record"): SIGTERM waits its grace,
// then the run ends as terminated (143), naming the abandoned keys; the
// records of those requests stay for the re-run.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { scopeEnv } from '../../../support/fixtures.js';
import { runCli, workspace } from '../../../support/run.js';
import { useRecordingServer } from '../../../support/server.js';

const server = useRecordingServer();

describe('rotate --from: SIGTERM while the answers of sent requests are awaited', () => {
  test('the grace passes (injected clock), the run ends 143 (not 14), each item names its key, and its record stays', async () => {
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'm.ndjson'), ['we_1', 'we_2'].map((id) => JSON.stringify({ endpointId: id, expectedVersion: 1 })).join('\n') + '\n');
    const sigterm = new AbortController();
    // Both requests arrive and are never answered; SIGTERM once both are in.
    server.setHandler(() => {
      if (server.requests.length >= 2) sigterm.abort('SIGTERM');
      return { hang: true };
    });
    const slept: number[] = [];
    const r = await runCli(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--journal', 'j', '--secret-to', 'file:{id}.whsec', '--json', '--concurrency', '2'], {
      ws,
      env: scopeEnv(server.url),
      signal: sigterm.signal,
      inject: { sleep: async (ms: number) => void slept.push(ms) },
    });
    expect(r.exitCode, r.stderr).toBe(143);
    expect(slept).toEqual([5000, 5000]);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { endpointId?: string; idempotencyKey?: string; error?: { code: string } });
    const items = lines.filter((l) => l.endpointId !== undefined);
    expect(items.map((l) => l.endpointId).sort()).toEqual(['we_1', 'we_2']);
    for (const l of items) {
      expect(l.error?.code).toBe('interrupted');
      expect(l.idempotencyKey).toBe(server.requests.find((q) => q.url.includes(`/${l.endpointId}/`))!.headers['idempotency-key']);
    }
    // The records of both requests stay, for the re-run with the journal.
    expect(readdirSync(join(ws.configDir, 'recovered')).filter((n) => n.endsWith('.record'))).toHaveLength(2);
    expect(readdirSync(ws.cwd).filter((n) => n.endsWith('.whsec'))).toEqual([]);
  });
});
