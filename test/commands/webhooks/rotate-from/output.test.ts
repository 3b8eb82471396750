import { describe, expect, it } from 'vitest';
import { humanOutput, jsonOutput } from '../../../../src/commands/webhooks/rotate-from/output.js';
import type { ManifestItem } from '../../../../src/commands/webhooks/rotate-from/manifest.js';
import type { ItemResult, RunSummary } from '../../../../src/commands/webhooks/rotate-from/runner.js';
import type { ItemLine } from '../../../../src/commands/webhooks/rotate-from/output.js';
import { fakeIO } from '../../../support/fakes.js';

const item = (n: number): ManifestItem => ({ line: n, endpointId: `we_${n}`, expectedVersion: 1, mode: 'overlap' });
const ok = (n: number): ItemResult => ({
  endpointId: `we_${n}`,
  ok: true,
  version: 2,
  fingerprint: 'sha256:0123456789abcdef',
  delivery: [{ to: `file:/s/we_${n}`, fingerprint: 'sha256:0123456789abcdef' }],
  requestId: `req_${n}`,
});
const failed = (n: number, message = 'expectedVersion does not match'): ItemResult => ({
  endpointId: `we_${n}`,
  ok: false,
  error: { code: 'webhook_endpoint_version_conflict', message, requestId: 'r', status: 409, details: {} },
  exitCode: 7,
});
const summary = (s: Partial<RunSummary>): RunSummary => ({
  ok: 0,
  failed: 0,
  skipped: 0,
  notDue: 0,
  notStarted: 0,
  interrupted: false,
  stopped: null,
  requests: 0,
  throttled: 0,
  elapsedMs: 4200,
  ...s,
});

describe('--json output', () => {
  it('one line per item as given, then the summary line; notStarted only when some were not', async () => {
    const io = fakeIO();
    const out = jsonOutput(io);
    out.emit(ok(1), item(1));
    out.emit(failed(2), item(2));
    await out.finish(summary({ ok: 1, failed: 1 }), 2);
    const lines = io
      .out()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([ok(1), failed(2), { summary: { ok: 1, failed: 1, skipped: 0 } }]);
    const io2 = fakeIO();
    await jsonOutput(io2).finish(summary({ ok: 3, notStarted: 7 }), 10);
    expect(JSON.parse(io2.out())).toEqual({ summary: { ok: 3, failed: 0, skipped: 0, notStarted: 7 } });
    expect(io.err() + io2.err()).toBe('');
  });
});

describe('human output', () => {
  const run = async (tty: boolean, results: Array<[ItemLine, ManifestItem]>, s: RunSummary) => {
    const io = fakeIO({ stdout: tty, stderr: tty });
    let t = 0;
    const out = humanOutput(io, () => (t += 50), ['file:/s/{id}.whsec']);
    for (const [r, i] of results) {
      out.emit(r, i);
      out.progress({ total: results.length, ok: 1, failed: 0, skipped: 0, requests: 1, throttled: 0, rate: 90, pausedMs: 0 });
    }
    await out.finish(s, results.length);
    return io;
  };

  it('on a terminal: a progress line on stderr, cleared at the end; a summary and a table of failures on stdout', async () => {
    const io = await run(
      true,
      [
        [ok(1), item(1)],
        [failed(2), item(2)],
      ],
      summary({ ok: 1, failed: 1, throttled: 2, requests: 4 }),
    );
    expect(io.err()).toContain('rotating: 1/2 · ok 1 · 90/s allowed');
    expect(io.err().endsWith('\r\x1b[2K')).toBe(true);
    expect(io.out()).toContain('Rotated 1 of 2 endpoints in 4.2 s: 1 failed, 0 skipped');
    expect(io.out()).toContain('New secrets went to: file:/s/{id}.whsec');
    expect(io.out()).toContain('The server asked to slow down 2 times; 4 requests in all.');
    expect(io.out()).toMatch(/┌.*\n.*endpoint.*line.*exit.*error/);
    expect(io.out()).toMatch(/we_2 +│ 2 +│ 7 +│ expectedVersion does not match/);
  });

  it('not on a terminal: no progress line, plain lines, and server text escaped', async () => {
    const io = await run(false, [[failed(3, 'bad\x1b[31mred'), item(3)]], summary({ failed: 1 }));
    expect(io.err()).toBe('');
    expect(io.out()).toContain('we_3\tline 3\texit 7\tbad\\e[31mred');
    expect(io.out()).not.toContain('\x1b');
    expect(io.out()).not.toContain('┌');
  });

  it("a failure message echoing a finished item's secret is scrubbed before the table wraps it across lines", async () => {
    const secret = 'whsec_' + 'Q2hhdGN0bFNlY3JldEZvckFXcmFwcGVkVGFibGVDZWxs';
    const io = fakeIO({ stdout: true, stderr: true });
    io.columns = 80; // the error column is 30 wide: the secret does not fit one line
    io.scrubber.addSecret(secret);
    io.scrubber.retireSecret(secret); // its item finished before the summary
    const out = humanOutput(io, () => 0, ['file:/s/{id}.whsec']);
    out.emit(failed(2, `the endpoint changed; its current secret is ${secret} (version 3)`), item(2));
    await out.finish(summary({ failed: 1 }), 1);
    expect(io.out()).toContain('[REDACTED]');
    for (let i = 0; i + 8 <= secret.length; i++) expect(io.out()).not.toContain(secret.slice(i, i + 8));
  });

  it('keeps the first 50 failures for the table and counts the rest', async () => {
    const results: Array<[ItemResult, ManifestItem]> = Array.from({ length: 60 }, (_, i) => [failed(i + 1), item(i + 1)]);
    const io = await run(false, results, summary({ failed: 60 }));
    expect(
      io
        .out()
        .split('\n')
        .filter((l) => l.startsWith('we_')),
    ).toHaveLength(50);
    expect(io.out()).toContain('… and 10 more (--json lists every item)');
  });

  it("names each item skipped as done by an earlier run, with its version and that run's time; the first 50, then a count", async () => {
    const skipped = (n: number, doneAt?: string): ItemLine => ({ ...(ok(n) as Extract<ItemResult, { ok: true }>), skipped: true, ...(doneAt ? { doneAt } : {}) });
    const io = await run(
      false,
      [
        [ok(1), item(1)],
        [skipped(2, '2030-01-01T04:00:00.000Z'), item(2)],
        [skipped(3), item(3)],
      ],
      summary({ ok: 1, skipped: 2 }),
    );
    expect(io.out()).toContain('Rotated 1 of 3 endpoints in 4.2 s: 0 failed, 2 skipped (done by an earlier run).');
    expect(io.out()).toContain(
      '\nSkipped, done by an earlier run (a line left at its old version, or a re-run):\n  we_2  version 2, rotated by the run of 2030-01-01T04:00:00.000Z\n  we_3  version 2, rotated by an earlier run\n',
    );
    const many = await run(
      false,
      Array.from({ length: 55 }, (_, i): [ItemLine, ManifestItem] => [skipped(i + 1, '2030-01-01T04:00:00.000Z'), item(i + 1)]),
      summary({ skipped: 55 }),
    );
    expect(
      many
        .out()
        .split('\n')
        .filter((l) => l.startsWith('  we_')),
    ).toHaveLength(50);
    expect(many.out()).toContain('… and 5 more (--json lists every item)');
    // The JSON line carries it as given.
    const io2 = fakeIO();
    jsonOutput(io2).emit(skipped(2, '2030-01-01T04:00:00.000Z'), item(2));
    expect(JSON.parse(io2.out())).toMatchObject({ endpointId: 'we_2', skipped: true, doneAt: '2030-01-01T04:00:00.000Z' });
  });
});
