// `chatctl webhooks sign` and `chatctl webhooks verify`, in-process with an
// injected clock and id source. Signatures are computed here with
// node:crypto, independently of src/signing/.
import { afterAll, describe, expect, it } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, cleanupTempDirs, runInProcess, workspace } from '../../support/run.js';
import { leaks, parseErrorLine, stackTrace } from '../../support/json.js';

afterAll(cleanupTempDirs);

const KEY = Buffer.from('chatctl-test-signing-key-32bytes');
const SECRET = `whsec_${KEY.toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const NOW = Date.parse('2030-01-01T00:00:00Z');
const T = NOW / 1000;
/** The fingerprint as the docs define it: sha256: and the first 16 hex digits of the SHA-256 of the secret. */
const fp = (secret: string) => `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
const UUID = '0b6f3c1e-5d2a-4c8e-9f01-23456789abcd';
const BODY = '{"type":"chat.message.created.v1","data":{"text":"héllo"}}\n';

/** The reference computation: HMAC-SHA256 over id.timestamp.body, base64. */
const sig = (key: Buffer, id: string, ts: number | string, body: string | Buffer) =>
  'v1,' +
  createHmac('sha256', key)
    .update(Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(body)]))
    .digest('base64');

function setup() {
  const ws = workspace();
  writeFileSync(join(ws.cwd, 'secret'), SECRET + '\n');
  writeFileSync(join(ws.cwd, 'other'), OTHER);
  writeFileSync(join(ws.cwd, 'body.json'), BODY);
  const run = async (args: string[], opts: { input?: string; now?: number } = {}) => {
    const r = await runInProcess(args, {
      env: baseEnv(ws),
      cwd: ws.cwd,
      input: opts.input,
      inject: { now: () => opts.now ?? NOW, randomUUID: () => UUID },
    });
    expect(stackTrace(r.stderr)).toBeUndefined();
    // The secret never shows, whole or as its base64 key.
    expect(leaks(r.stdout + r.stderr, [SECRET, OTHER, KEY.toString('base64'), OTHER.slice(6)])).toEqual([]);
    return r;
  };
  return { ws, run };
}

const headerArgs = (h: { id: string; ts: number | string; sig: string }) => ['--header', `webhook-id: ${h.id}`, '--header', `webhook-timestamp: ${h.ts}`, '--header', `webhook-signature: ${h.sig}`];

describe('webhooks sign', () => {
  it('prints the three headers: the id from the random source, the time from the clock, the HMAC of the body file byte for byte', async () => {
    const { run } = setup();
    const r = await run(['webhooks', 'sign', '--secret-file', 'secret', 'body.json']);
    const id = 'msg_0b6f3c1e5d2a4c8e9f0123456789abcd';
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`webhook-id: ${id}\nwebhook-timestamp: ${T}\nwebhook-signature: ${sig(KEY, id, T, BODY)}\n`);
    expect(r.stderr).toBe('');
  });

  it('in GitHub Actions the secret is masked on stderr: stdout holds the headers alone (> headers.txt, curl -H @headers.txt)', async () => {
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'secret'), SECRET + '\n');
    writeFileSync(join(ws.cwd, 'body.json'), BODY);
    const r = await runInProcess(['webhooks', 'sign', '--secret-file', 'secret', '--id', 'msg_1', '--timestamp', String(T), 'body.json'], {
      env: { ...baseEnv(ws), GITHUB_ACTIONS: 'true' },
      cwd: ws.cwd,
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`webhook-id: msg_1\nwebhook-timestamp: ${T}\nwebhook-signature: ${sig(KEY, 'msg_1', T, BODY)}\n`);
    expect(r.stderr).toBe(`::add-mask::${SECRET}\n`);
  });

  it('--id, --timestamp and --json: one JSON document of the headers; the body from standard input', async () => {
    const { run } = setup();
    const r = await run(['webhooks', 'sign', '--secret-file', 'secret', '--id', 'msg_1', '--timestamp', '1700000000', '--json', '-'], { input: BODY });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': sig(KEY, 'msg_1', 1700000000, BODY) });
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it.each([
    [['--timestamp', '12.5'], /invalid --timestamp "12\.5"/],
    [['--timestamp', '-1'], /invalid --timestamp/],
    [['--id', 'has space'], /invalid --id/],
  ])('refuses %j with exit 2', async (flags, message) => {
    const { run } = setup();
    const r = await run(['webhooks', 'sign', '--secret-file', 'secret', ...flags, 'body.json']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});

describe('webhooks verify', () => {
  const good = (body = BODY, ts = T) => ({ id: 'msg_1', ts, sig: sig(KEY, 'msg_1', ts, body) });

  it('accepts what sign printed (a round trip through the command line)', async () => {
    const { run } = setup();
    const signed = await run(['webhooks', 'sign', '--secret-file', 'secret', 'body.json']);
    const headers = signed.stdout
      .trimEnd()
      .split('\n')
      .flatMap((l) => ['--header', l]);
    const r = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headers, 'body.json']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`verified: signature 1 of 1 matches secret (${fp(SECRET)}); webhook-id msg_0b6f3c1e5d2a4c8e9f0123456789abcd, timestamp 0 s old (tolerance 300 s)\n`);
  });

  it('accepts a matching signature that comes second (an overlap: the old secret signs second)', async () => {
    const { run } = setup();
    const h = good();
    const r = await run(['webhooks', 'verify', '--secret-file', 'secret', '--json', ...headerArgs({ ...h, sig: `${sig(Buffer.alloc(32, 7), 'msg_1', T, BODY)} ${h.sig}` }), 'body.json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      verified: true,
      matched: 2,
      webhookId: 'msg_1',
      timestamp: T,
      skewSeconds: 0,
      toleranceSeconds: 300,
      signatures: 2,
      matchedBy: [{ file: 'secret', fingerprint: fp(SECRET), signature: 2 }],
    });
    // And the other secret matches the first.
    const o = await run(['webhooks', 'verify', '--secret-file', 'other', '--json', ...headerArgs({ ...h, sig: `${sig(Buffer.alloc(32, 7), 'msg_1', T, BODY)} ${h.sig}` }), 'body.json']);
    expect(JSON.parse(o.stdout)).toMatchObject({ verified: true, matched: 1 });
  });

  it('--secret-file more than once: every secret is tried, and each that matches is named by file and fingerprint', async () => {
    const { run } = setup();
    const h = good();
    // An overlap: the new secret (OTHER) signs first, the old (SECRET) second.
    const overlap = headerArgs({ ...h, sig: `${sig(Buffer.alloc(32, 7), 'msg_1', T, BODY)} ${h.sig}` });
    const both = await run(['webhooks', 'verify', '--secret-file', 'secret', '--secret-file', 'other', ...overlap, 'body.json']);
    expect(both.exitCode).toBe(0);
    expect(both.stdout).toBe(`verified: signature 2 of 2 matches secret (${fp(SECRET)}); signature 1 of 2 matches other (${fp(OTHER)}); webhook-id msg_1, timestamp 0 s old (tolerance 300 s)\n`);
    const json = await run(['webhooks', 'verify', '--secret-file', 'other', '--secret-file', 'secret', '--json', ...headerArgs(h), 'body.json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ verified: true, matched: 1, matchedBy: [{ file: 'secret', fingerprint: fp(SECRET), signature: 1 }] });
    // Standard input as one of them.
    const stdin = await run(['webhooks', 'verify', '--secret-file', 'other', '--secret-file', '-', '--json', ...headerArgs(h), 'body.json'], { input: SECRET });
    expect(JSON.parse(stdin.stdout).matchedBy).toEqual([{ file: '-', fingerprint: fp(SECRET), signature: 1 }]);
    // Neither matches: exit 9 naming both by file and fingerprint.
    const none = await run(['webhooks', 'verify', '--secret-file', 'other', '--secret-file', 'other', '--json', ...headerArgs(h), 'body.json']);
    expect(none.exitCode).toBe(9);
    expect(parseErrorLine(none.stderr).error).toMatchObject({
      code: 'signature_mismatch',
      message: expect.stringContaining(`signed with any of the 2 secrets (other (${fp(OTHER)}), other (${fp(OTHER)}))`),
      details: { matchedBy: [] },
    });
    const twice = await run(['webhooks', 'verify', '--secret-file', '-', '--secret-file', '-', ...headerArgs(h), 'body.json'], { input: SECRET });
    expect([twice.exitCode, twice.stderr]).toEqual([2, expect.stringContaining('--secret-file - is given more than once')]);
  });

  it('signs over the timestamp header as received: webhook-timestamp 0<ts> does not pass with the signature of <ts>, and is refused as not a plain integer', async () => {
    const { run } = setup();
    const h = good();
    const padded = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs({ ...h, ts: `0${T}` }), 'body.json']);
    expect(padded.exitCode).toBe(2);
    expect(padded.stderr).toContain('webhook-timestamp must be Unix seconds: a plain decimal integer (digits only, no sign, no leading zero)');
    // Even signed over the padded text, it is not a timestamp a sender makes.
    const signedPadded = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs({ ...h, ts: `0${T}`, sig: sig(KEY, 'msg_1', `0${T}`, BODY) }), 'body.json']);
    expect(signedPadded.exitCode).toBe(2);
    for (const ts of [`+${T}`, `${T}.0`, ` ${T}x`]) {
      const r = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs({ ...h, ts }), 'body.json']);
      expect(r.exitCode, ts).toBe(2);
    }
  });

  it('a tampered body, another secret, a changed id: exit 9, signature_mismatch', async () => {
    const { run, ws } = setup();
    writeFileSync(join(ws.cwd, 'tampered.json'), BODY.replace('héllo', 'hello'));
    writeFileSync(join(ws.cwd, 'no-newline.json'), BODY.trimEnd());
    for (const [file, secret, id] of [
      ['tampered.json', 'secret', 'msg_1'],
      ['no-newline.json', 'secret', 'msg_1'],
      ['body.json', 'other', 'msg_1'],
      ['body.json', 'secret', 'msg_2'],
    ] as const) {
      const r = await run(['webhooks', 'verify', '--secret-file', secret, '--json', ...headerArgs({ ...good(), id }), file]);
      expect(r.exitCode, file).toBe(9);
      expect(r.stdout).toBe('');
      const line = parseErrorLine(r.stderr);
      expect(line.error.code).toBe('signature_mismatch');
      expect(line.error.message).toMatch(/^no signature matches/);
      expect(line.error.details).toMatchObject({ reason: 'no_matching_signature', signatures: 1 });
    }
  });

  it('a stale and a future timestamp: exit 9, timestamp_out_of_tolerance, saying which; --tolerance widens it', async () => {
    const { run } = setup();
    const stale = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs(good(BODY, T - 301)), 'body.json']);
    expect(stale.exitCode).toBe(9);
    expect(stale.stderr).toContain('the signature matches, but the timestamp is 301 s old, beyond the tolerance of 300 s');
    expect(stale.stderr).toContain('code: timestamp_out_of_tolerance');
    const future = await run(['webhooks', 'verify', '--secret-file', 'secret', '--json', ...headerArgs(good(BODY, T + 400)), 'body.json']);
    expect(future.exitCode).toBe(9);
    expect(parseErrorLine(future.stderr).error).toMatchObject({
      code: 'timestamp_out_of_tolerance',
      message: expect.stringContaining('400 s in the future'),
      details: { reason: 'timestamp_too_new', skewSeconds: -400 },
    });
    const edge = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs(good(BODY, T - 300)), 'body.json']);
    expect(edge.exitCode).toBe(0);
    const wide = await run(['webhooks', 'verify', '--secret-file', 'secret', '--tolerance', '3600', ...headerArgs(good(BODY, T - 3000)), 'body.json']);
    expect(wide.exitCode).toBe(0);
    // The injected clock, not the machine's, is "now".
    const later = await run(['webhooks', 'verify', '--secret-file', 'secret', ...headerArgs(good()), 'body.json'], { now: NOW + 301_000 });
    expect(later.exitCode).toBe(9);
    // Both wrong: the signature is reported, the timestamp mentioned.
    const both = await run(['webhooks', 'verify', '--secret-file', 'other', ...headerArgs(good(BODY, T - 1000)), 'body.json']);
    expect(both.exitCode).toBe(9);
    expect(both.stderr).toContain('the timestamp is also 1000 s old');
  });

  it.each([
    ['no webhook-id', ['--header', `webhook-timestamp: ${T}`, '--header', 'webhook-signature: v1,abc'], /malformed headers: missing header: webhook-id/],
    ['no headers at all', [], /missing headers: webhook-id, webhook-timestamp, webhook-signature/],
    ['a timestamp that is not seconds', headerArgs({ id: 'm', ts: '2030-01-01', sig: 'v1,abc' }), /webhook-timestamp must be Unix seconds/],
    ['a timestamp with a leading zero', headerArgs({ id: 'm', ts: `0${T}`, sig: 'v1,abc' }), /webhook-timestamp must be Unix seconds/],
    ['an empty signature value', headerArgs({ id: 'm', ts: T, sig: 'v1,' }), /entry 1 is not of the form v1,<base64>/],
    ['a line without a colon', ['--header', 'webhook-id msg_1'], /malformed --header "webhook-id msg_1": expected NAME: VALUE/],
    ['a repeated header', [...headerArgs({ id: 'm', ts: T, sig: 'v1,abc' }), '--header', 'Webhook-Id: n'], /webhook-id is given more than once/],
  ])('%s: exit 2', async (_, args, message) => {
    const { run } = setup();
    const r = await run(['webhooks', 'verify', '--secret-file', 'secret', ...args, 'body.json']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(message);
    const json = await run(['webhooks', 'verify', '--secret-file', 'secret', '--json', ...args, 'body.json']);
    expect(parseErrorLine(json.stderr)).toMatchObject({ error: { code: 'usage_error' }, exitCode: 2 });
    expect(json.stdout).toBe('');
  });

  it('a malformed or missing secret: exit 2, the file named, the secret not shown', async () => {
    const { run, ws } = setup();
    const bad = 'whsec_this is not base64 at all!';
    writeFileSync(join(ws.cwd, 'bad'), bad);
    writeFileSync(join(ws.cwd, 'bare'), KEY.toString('base64'));
    const r = await run(['webhooks', 'verify', '--secret-file', 'bad', ...headerArgs(good()), 'body.json']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('bad does not hold a signing secret: the part after whsec_ is not base64');
    expect(leaks(r.stderr, [bad, 'not base64 at all'])).toEqual([]);
    const bare = await run(['webhooks', 'verify', '--secret-file', 'bare', ...headerArgs(good()), 'body.json']);
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr).toContain('the secret does not start with whsec_');
    const none = await run(['webhooks', 'verify', ...headerArgs(good()), 'body.json']);
    expect([none.exitCode, none.stderr]).toEqual([2, expect.stringContaining('--secret-file is required')]);
    const missing = await run(['webhooks', 'verify', '--secret-file', 'nope', ...headerArgs(good()), 'body.json']);
    expect([missing.exitCode, missing.stderr]).toEqual([2, expect.stringContaining('nope: no such file')]);
  });

  it('--secret-file - reads the secret from standard input when the body is a file; not both from it', async () => {
    const { run } = setup();
    const r = await run(['webhooks', 'verify', '--secret-file', '-', ...headerArgs(good()), 'body.json'], { input: SECRET });
    expect(r.exitCode).toBe(0);
    const both = await run(['webhooks', 'verify', '--secret-file', '-', ...headerArgs(good()), '-'], { input: SECRET });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain('--secret-file - and the body cannot both come from standard input');
  });

  it('--help has examples', async () => {
    const { run } = setup();
    for (const cmd of ['sign', 'verify']) {
      const r = await run(['webhooks', cmd, '--help']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`Examples:\\n  \\$ chatctl webhooks ${cmd} --secret-file`));
    }
  });
});
