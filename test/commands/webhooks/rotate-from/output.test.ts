import { describe, expect, it } from 'vitest';
import { humanOutput, jsonOutput } from '../../../../src/commands/webhooks/rotate-from/output.js';
import type { ManifestItem } from '../../../../src/commands/webhooks/rotate-from/manifest.js';
import type { ItemResult, RunSummary } from '../../../../src/commands/webhooks/rotate-from/runner.js';
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
const summary = (s: Partial<RunSummary>): RunSummary => ({ ok: 0, failed: 0, skipped: 0, notStarted: 0, interrupted: false, stopped: null, requests: 0, throttled: 0, elapsedMs: 4200, ...s });

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
  const run = async (tty: boolean, results: Array<[ItemResult, ManifestItem]>, s: RunSummary) => {
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
});
