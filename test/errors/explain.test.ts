// Conflict explanations (errors/explain.ts) and the reporter's use of them:
// the current version and the exact command to re-run on exit 7, the end of
// the running overlap on a rotation conflict, and no crash on any details.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CliError, type RerunContext } from '../../src/errors/cli-error.js';
import { currentVersionOf, explainError, overlapEndOf, reportError, rerunCommand, withRerun } from '../../src/errors/explain.js';
import { fakeIO } from '../support/fakes.js';

const rotateCtx = (extra: Partial<RerunContext> = {}): RerunContext => ({
  words: ['webhooks', 'rotate', 'we_1'],
  expectedVersion: 3,
  flags: [['--mode', 'overlap']],
  ...extra,
});
const versionConflict = (details: unknown) => new CliError('webhook_endpoint_version_conflict', 'expectedVersion does not match the current version', 7, { status: 409, requestId: 'req_1', details });
const rotationConflict = (details: unknown) => new CliError('webhook_secret_rotation_conflict', 'an overlap rotation is still running', 8, { status: 409, requestId: 'req_2', details });

function reported(e: CliError, json = false): string {
  const io = fakeIO();
  reportError(e, io, json, false);
  return io.err();
}

describe('version conflict (exit 7)', () => {
  it('gives the current version and the exact rotate command to re-run', () => {
    const e = withRerun(versionConflict({ expectedVersion: 3, currentVersion: 5 }), rotateCtx()) as CliError;
    expect(explainError(e)).toEqual(['current version: 5', "re-run: chatctl webhooks rotate 'we_1' --expected-version 5 --mode overlap"]);
    expect(reported(e)).toBe(
      [
        'chatctl: error: expectedVersion does not match the current version',
        '  current version: 5',
        "  re-run: chatctl webhooks rotate 'we_1' --expected-version 5 --mode overlap",
        '  code: webhook_endpoint_version_conflict, status: 409, request id: req_1',
        '',
      ].join('\n'),
    );
  });

  it('reads `version` too, and a decimal string; reactivate has no mode', () => {
    const e = withRerun(versionConflict({ version: '12' }), { words: ['webhooks', 'reactivate', 'we_9'], expectedVersion: 2, flags: [] }) as CliError;
    expect(explainError(e)).toEqual(['current version: 12', "re-run: chatctl webhooks reactivate 'we_9' --expected-version 12"]);
  });

  it('shell-quotes the id and every flag value that needs it', () => {
    const ctx = rotateCtx({ words: ['webhooks', 'rotate', "we 1'x"], flags: [['--mode', 'immediate'], ['--secret-file', './my secret'], ['--yes']] });
    expect(rerunCommand(ctx, 4)).toBe("chatctl webhooks rotate 'we 1'\\''x' --expected-version 4 --mode immediate --secret-file './my secret' --yes");
  });

  it('without a version in the details, says so and still gives the command shape', () => {
    const e = withRerun(versionConflict({}), rotateCtx()) as CliError;
    expect(explainError(e)).toEqual(["the server did not say the endpoint's current version; re-run with it:", "  chatctl webhooks rotate 'we_1' --expected-version N --mode overlap"]);
  });

  it('the current version without a re-run context (another command) is still shown', () => {
    expect(explainError(versionConflict({ currentVersion: 8 }))).toEqual(['current version: 8']);
  });

  it('--json output is unchanged: no extra text, details as the server sent them', () => {
    const e = withRerun(versionConflict({ currentVersion: 5 }), rotateCtx()) as CliError;
    const line = JSON.parse(reported(e, true));
    expect(line).toEqual({
      error: { code: 'webhook_endpoint_version_conflict', message: 'expectedVersion does not match the current version', requestId: 'req_1', status: 409, details: { currentVersion: 5 } },
      exitCode: 7,
    });
  });

  it('ignores versions that are not whole numbers from 1', () => {
    for (const v of [0, -1, 1.5, '05', 'five', '1e3', Number.MAX_SAFE_INTEGER + 2, true, null, { n: 1 }, [3]]) {
      expect(currentVersionOf({ currentVersion: v }), JSON.stringify(v)).toBeUndefined();
    }
    expect(currentVersionOf({ endpoint: { version: 6 } })).toBe(6);
  });
});

describe('rotation conflict', () => {
  it('gives when the running overlap ends, how long that is, and the immediate alternative', () => {
    const now = Date.parse('2030-01-01T00:00:00.000Z');
    const e = withRerun(rotationConflict({ previousSecretExpiresAt: '2030-01-01T23:59:00.000Z' }), rotateCtx({ now })) as CliError;
    expect(explainError(e)).toEqual([
      'the running overlap ends at 2030-01-01T23:59:00.000Z (in 23 h 59 min); rotate again with --mode overlap after that',
      "to replace both secrets now: chatctl webhooks rotate 'we_1' --expected-version 3 --mode immediate --yes",
    ]);
    expect(reported(e)).toContain('  the running overlap ends at 2030-01-01T23:59:00.000Z');
  });

  it('finds the end under other plausible names', () => {
    for (const field of ['overlapEndsAt', 'expiresAt', 'endsAt']) {
      expect(overlapEndOf({ [field]: '2031-05-06T07:08:09Z' })?.toISOString()).toBe('2031-05-06T07:08:09.000Z');
    }
    expect(overlapEndOf({ endpoint: { previousSecretExpiresAt: '2031-05-06T07:08:09Z' } })?.toISOString()).toBe('2031-05-06T07:08:09.000Z');
    expect(overlapEndOf({ previousSecretExpiresAt: 'tomorrow' })).toBeUndefined();
    expect(overlapEndOf({ previousSecretExpiresAt: 1893456000000 })).toBeUndefined();
  });

  it('without an end in the details, still says what to do', () => {
    expect(explainError(withRerun(rotationConflict(null), rotateCtx()) as CliError)[0]).toBe('an overlap rotation is still running; rotate again with --mode overlap once it ends');
  });
});

describe('details of any shape', () => {
  it('never crash the explanation or the reporter, and never print server text beyond numbers and dates', () => {
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }),
        fc.boolean(),
        (details, rotation) => {
          const base = rotation ? rotationConflict(details) : versionConflict(details);
          const e = withRerun(base, rotateCtx({ now: 0 })) as CliError;
          const lines = explainError(e);
          const text = reported(e);
          expect(text.startsWith('chatctl: error: ')).toBe(true);
          for (const l of lines)
            expect(l).toMatch(
              /^(current version: \d+|re-run: chatctl .*|the server did not say.*| {2}chatctl .*|the running overlap ends at \d{4}-.*|an overlap rotation is still running.*|to replace both secrets now: chatctl .*)$/,
            );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('other errors get no explanation', () => {
    expect(explainError(new CliError('resource_not_found', 'no such endpoint', 6, { details: { currentVersion: 4 } }))).toEqual([]);
  });
});

describe('limit, rate limit, unavailable (exits 10, 11, 12) end with a next step', () => {
  it('10: the endpoint limit says to reuse an endpoint or have the limit raised; another limit says what to do', () => {
    const e = new CliError('webhook_endpoint_limit_reached', 'limit reached', 10, { status: 409 });
    expect(explainError(e)).toEqual([expect.stringMatching(/^next: .*reuse one \(rotate or reactivate it\), or ask the service to raise the limit$/)]);
    expect(explainError(new CliError('channel_limit_reached', 'x', 10))[0]).toMatch(/^next: a limit of the service was reached/);
  });

  it('11: wait and re-run the same request, with its key when it may have been applied; how to wait longer', () => {
    const e = withRerun(new CliError('rate_limit_exceeded', 'too many requests', 11, { status: 429, idempotencyKey: 'k-1' }), rotateCtx()) as CliError;
    expect(explainError(e)).toEqual([
      "next: wait a minute, then re-run: chatctl webhooks rotate 'we_1' --expected-version 3 --mode overlap --idempotency-key 'k-1'",
      'to wait through more refusals in one run: --max-retries N (default 4); for rotate --from: a lower --concurrency',
    ]);
    expect(explainError(new CliError('rate_limit_exceeded', 'x', 11))[0]).toBe('next: wait a minute, then re-run the same command');
    expect(reported(e)).toContain('\n  next: wait a minute, then re-run: chatctl webhooks rotate');
    expect(reported(e, true)).not.toContain('next:'); // the JSON line stays the error alone
  });

  it('12: a network failure points at doctor; a timeout at --timeout and --deadline; each says to re-run', () => {
    const net = withRerun(new CliError('network_error', 'connection refused', 12), rotateCtx()) as CliError;
    expect(explainError(net)).toEqual(['next: check the base URL, proxy and network with: chatctl doctor', "then re-run: chatctl webhooks rotate 'we_1' --expected-version 3 --mode overlap"]);
    const slow = new CliError('timeout', 'timed out', 12, { idempotencyKey: 'k 2' });
    expect(explainError(slow)).toEqual([
      "next: once the service answers again, re-run the same command with --idempotency-key 'k 2'",
      'a slow service: allow more time with --timeout SECONDS (one attempt) or --deadline SECONDS (the whole command)',
    ]);
    expect(explainError(new CliError('service_unavailable', 'down', 12, { status: 503 }))).toEqual(['next: once the service answers again, re-run the same command']);
  });

  it('other exits are unchanged', () => {
    for (const [code, exit] of [
      ['validation_failed', 9],
      ['conflict', 8],
      ['permission_denied', 5],
    ] as const)
      expect(explainError(new CliError(code, 'x', exit))).toEqual([]);
  });
});

describe('authentication refused (exit 4)', () => {
  it('says how to see which token was sent and how to store another', () => {
    const e = new CliError('authentication_failed', 'the bearer token is not valid', 4, { status: 401, requestId: 'req_3', details: {} });
    expect(explainError(e)).toEqual(['next: chatctl auth status shows which token is used and where it comes from (CHATCTL_TOKEN wins over a stored one); store another with chatctl auth login']);
    expect(reported(e)).toContain('\n  next: chatctl auth status shows which token is used');
  });

  it('adds nothing to a 4 that is not a refused token, nor under --json', () => {
    expect(explainError(new CliError('authentication_required', 'no token sent', 4))).toEqual([]);
    const e = new CliError('authentication_failed', 'the bearer token is not valid', 4, { status: 401, requestId: 'req_3', details: {} });
    expect(reported(e, true)).not.toContain('auth status');
  });
});
