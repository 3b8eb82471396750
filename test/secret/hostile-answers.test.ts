// A hostile second look at docs/secrets.md: servers that answer in ways
// that are legal HTTP but unusual (compressed bodies, a byte-order mark,
// response headers that echo the secret, a secret that holds the token).
// Once the server has applied the change the secret must be whole at every
// destination (exit 0) or kept under recovered/ (exit 13), and never on
// stderr or in --debug output.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BIN, NODE, SECRET, TOKEN, scopeEnv, secretBody } from '../support/fixtures.js';
import { buildEnv, cleanupTempDirs, fileMode as mode, runCli, signalPending, waitFor, workspace, type RunResult, type Workspace } from '../support/run.js';
import { parseErrorLine } from '../support/json.js';

/** What the next request is answered with: status, headers and the raw body bytes. */
let reply: () => { status: number; headers: Record<string, string>; body: Buffer } = () => ({ status: 500, headers: {}, body: Buffer.alloc(0) });
let server: http.Server;
let baseUrl = '';
/** How many requests the server has answered. */
let requests = 0;
const received = () => requests;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      const r = reply();
      res.writeHead(r.status, { ...r.headers, 'Content-Length': String(r.body.length) });
      res.end(r.body);
    });
  });
  server.keepAliveTimeout = 500;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  cleanupTempDirs();
});

const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '2', '--mode', 'overlap'];
const json = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
const FP = `sha256:${createHash('sha256').update(SECRET).digest('hex').slice(0, 16)}`;
const answer = (body: Buffer, headers: Record<string, string> = {}, status = 200) => {
  reply = () => ({ status, headers: { 'Content-Type': 'application/json', ...headers }, body });
};

const recovered = (r: RunResult) => {
  try {
    return readdirSync(join(r.ws.configDir, 'recovered')).map((n) => join(r.ws.configDir, 'recovered', n));
  } catch {
    return [];
  }
};

async function rotateToFile(extra: string[] = []) {
  const r = await runCli([...ROTATE, '--secret-to', 'file:s.txt', ...extra], { env: scopeEnv(baseUrl) });
  return { r, file: join(r.ws.cwd, 's.txt') };
}

describe('compressed and BOM-prefixed success bodies', () => {
  // Without Accept-Encoding any content coding is acceptable (RFC 9110
  // 12.5.3), so a server or gateway may compress the 2xx that carries the secret.
  for (const [coding, compress] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const) {
    test(`Content-Encoding: ${coding}: the secret is delivered whole, exit 0`, async () => {
      answer(compress(json(secretBody())), { 'Content-Encoding': coding });
      const { r, file } = await rotateToFile();
      expect(r.exitCode, r.stderr).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(SECRET);
      expect(recovered(r)).toEqual([]);
    });
  }

  test('a UTF-8 byte-order mark before the JSON: delivered whole, exit 0', async () => {
    answer(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json(secretBody())]));
    const { r, file } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(SECRET);
  });

  test('a body that claims gzip but is not: an invalid response naming the Idempotency-Key, no stack trace', async () => {
    answer(json(secretBody()).subarray(0, 20), { 'Content-Encoding': 'gzip' });
    const { r } = await rotateToFile();
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/Idempotency-Key/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('--debug never shows the secret, wherever the server echoes it', () => {
  test('a response header carrying the secret is blanked in the trace', async () => {
    answer(json(secretBody()), { 'X-Echo': SECRET, 'X-Token': TOKEN });
    const { r, file } = await rotateToFile(['--debug']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(SECRET);
    expect(r.stderr).toMatch(/x-echo: \[REDACTED\]/i);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stderr).not.toContain(TOKEN);
  });
});

describe('what the facts keep of an answer that echoes the token or the secret', () => {
  test("the endpoint's name, URL and status echoing them are stored blanked, and webhooks show prints them blanked", async () => {
    answer(json(secretBody(SECRET, true, 'we_1', { name: TOKEN, destinationUrl: `https://h.example/?s=${encodeURIComponent(SECRET)}`, status: SECRET })));
    const { r } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(0);
    const factsDir = join(r.ws.configDir, 'facts');
    const stored = readdirSync(factsDir)
      .map((n) => readFileSync(join(factsDir, n), 'utf8'))
      .join('');
    expect(stored).toContain('"f":"applied"');
    expect(stored).not.toContain(TOKEN);
    expect(stored).not.toContain(SECRET);
    expect(stored).not.toContain(encodeURIComponent(SECRET));
    const show = await runCli(['webhooks', 'show', 'we_1'], { env: scopeEnv(baseUrl), ws: r.ws });
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout + show.stderr).not.toContain(TOKEN);
    expect(show.stdout + show.stderr).not.toContain(SECRET);
  });
});

describe("a rotation answered with another endpoint's record", () => {
  // Whose secret is it? Delivered to we_1's destination with exit 0 it would
  // leave we_1 without its own; it is kept whole instead (13), in both paths.
  test('rotate: nothing delivered, the whole answer kept, exit 13 naming both endpoints', async () => {
    const body = json(secretBody(SECRET, true, 'we_other'));
    answer(body);
    const { r, file } = await rotateToFile(['--json']);
    expect(r.exitCode, r.stderr).toBe(13);
    expect(existsSync(file)).toBe(false);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!)).toEqual(body);
    const line = parseErrorLine(r.stderr);
    expect(line.error.message).toContain('we_other');
    expect(line.error.message).toContain('we_1');
    expect(r.stderr).not.toContain(SECRET);
  });

  test('rotate --from: the item fails with 13, its destination untouched', async () => {
    answer(json(secretBody(SECRET, true, 'we_other')));
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'm.ndjson'), '{"endpointId":"we_1","expectedVersion":2}\n');
    const r = await runCli(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--secret-to', 'file:{id}.whsec', '--json'], { env: scopeEnv(baseUrl), ws });
    expect(r.exitCode, r.stderr).toBe(14);
    expect(existsSync(join(ws.cwd, 'we_1.whsec'))).toBe(false);
    expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ endpointId: 'we_1', ok: false, exitCode: 13 });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expect(recovered(r)).toHaveLength(1);
  });
});

describe('--debug and a 2xx body that is not JSON but names a secret', () => {
  // Kept whole under recovered/ (13) as a body that may carry the secret: the
  // trace printed it as received, so the secret reached stderr in clear.
  test.each([
    ['text', `secret=${SECRET}\n`],
    ['JSON with junk after it', `{"data":{"secret":"${SECRET}"}} trailing`],
  ])('%s: the trace does not show it; the body is kept, exit 13', async (_what, text) => {
    answer(Buffer.from(text, 'utf8'), { 'Content-Type': 'text/plain' });
    const { r } = await rotateToFile(['--debug']);
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stderr).toContain('[debug] <');
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!, 'utf8')).toBe(text);
  });
});

describe('a secret wrapped in an object ({"secret":{"value":"…"}})', () => {
  // Found by hostile reviews: --debug traced it in clear and the run ended 1
  // (invalid_response) with nothing kept, though the change was applied; then
  // a copy re-serialised from the parsed value lost digits, repeated keys and
  // "__proto__", and 20,000 levels of nesting crashed it. The whole answer,
  // as the server sent it, is what is kept.
  const answerWith = (secretJson: string) => Buffer.from(`{"data":{"endpoint":{"id":"we_1","version":3},"secret":${secretJson},"secretAvailable":true},"meta":{"requestId":"r"}}`, 'utf8');

  test('--debug: the trace blanks it; the whole answer is kept under recovered/, exit 13', async () => {
    const body = answerWith(`{"value":"${SECRET}"}`);
    answer(body);
    const { r, file } = await rotateToFile(['--debug']);
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stderr).toContain('"secret":"[REDACTED]"');
    expect(existsSync(file)).toBe(false);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!)).toEqual(body);
    expect(mode(kept[0]!)).toBe(0o600);
    expect(r.stderr).toContain(kept[0]!);
    expect(r.stderr).toContain('something under data.secret');
    expect(r.stderr).toContain('take the secret from its data.secret');
  });

  test.each([
    ['20,000 levels deep', `${'['.repeat(20000)}"${SECRET}"${']'.repeat(20000)}`],
    ['under a "__proto__" key', `{"__proto__":{"value":"${SECRET}"}}`],
    ['a number too big for a double, and a repeated key', `{"n":123456789012345678901234567890,"v":"A","v":"${SECRET}"}`],
    ['a bare number', '123456789012345678901234567890'],
  ])('%s: kept byte for byte, exit 13 naming the Idempotency-Key, no stack trace', async (_label, secretJson) => {
    const body = answerWith(secretJson);
    answer(body);
    const r = await runCli([...ROTATE, '--secret-to', 'file:s.txt', '--json'], { env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(13);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!)).toEqual(body);
    const line = parseErrorLine(r.stderr);
    expect(line.error.code).toBe('secret_not_delivered');
    expect(line.error.message).toContain('Idempotency-Key');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr).not.toContain(SECRET);
  });

  test('--debug: a bare number there is blanked in the trace as a string would be', async () => {
    answer(answerWith('987654321098765432109876543210'));
    const { r } = await rotateToFile(['--debug']);
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stderr).toContain('"secret":"[REDACTED]"');
    expect(r.stderr).not.toContain('98765432109876');
  });

  test('rotate --from: the same, exit 14 with the item kept', async () => {
    const body = answerWith(`{"value":"${SECRET}"}`);
    answer(body);
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'm.ndjson'), '{"endpointId":"we_1","expectedVersion":2}\n');
    const r = await runCli(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--secret-to', 'file:{id}.whsec', '--debug'], { env: scopeEnv(baseUrl), ws });
    expect(r.exitCode, r.stderr).toBe(14);
    expect(r.stderr + r.stdout).not.toContain(SECRET);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!)).toEqual(body);
    // Human mode says what the file holds.
    expect(r.stderr).toContain('the whole answer that carries its signing secret');
  });
});

describe('an answer whose bytes are not valid UTF-8', () => {
  // Decoding turns each invalid byte into U+FFFD: a secret read that way is
  // not the server's, and was delivered garbled with exit 0.
  const envelope = (secret: Buffer, name = Buffer.from('billing')) =>
    Buffer.concat([
      Buffer.from('{"data":{"endpoint":{"id":"we_1","version":3,"name":"'),
      name,
      Buffer.from('"},"secret":"'),
      secret,
      Buffer.from('","secretAvailable":true},"meta":{"requestId":"r"}}'),
    ]);

  test('in the secret: not delivered; the answer kept byte for byte under recovered/, exit 13', async () => {
    const body = envelope(Buffer.concat([Buffer.from('whsec_'), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from('_tail_of_the_secret')]));
    for (const extra of [['--secret-to', 'file:s.txt'], ['--json']]) {
      answer(body);
      const r = await runCli([...ROTATE, ...extra], { env: scopeEnv(baseUrl) });
      expect(r.exitCode, r.stderr).toBe(13);
      expect(r.stdout).toBe('');
      expect(existsSync(join(r.ws.cwd, 's.txt'))).toBe(false);
      const kept = recovered(r);
      expect(kept).toHaveLength(1);
      expect(readFileSync(kept[0]!)).toEqual(body);
      expect(r.stderr).toContain('not valid UTF-8');
      expect(r.stderr).toContain(kept[0]!);
      expect(r.stderr).not.toContain('_tail_of_the_secret');
    }
  });

  test('elsewhere only (the endpoint name): the secret is whole, delivered, exit 0', async () => {
    answer(envelope(Buffer.from(SECRET), Buffer.from([0x62, 0xff, 0x6c])));
    const { r, file } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(SECRET);
    expect(recovered(r)).toEqual([]);
  });

  // A third review: a lone surrogate escape is valid UTF-8 on the wire, but
  // no destination can hold it (U+FFFD is written in its place).
  test('a lone surrogate escape in the secret (\\ud800): not delivered, kept as received, exit 13', async () => {
    const body = envelope(Buffer.from('whsec_AB\\ud800CD_and_more'));
    answer(body);
    const { r, file } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(13);
    expect(existsSync(file)).toBe(false);
    const kept = recovered(r);
    expect(readFileSync(kept[0]!)).toEqual(body);
    expect(r.stderr).toContain('lone surrogate');
  });

  test('--debug: a header echoing a secret beyond ASCII (valid or not) is blanked as the bytes Node shows', async () => {
    for (const bytes of [Buffer.from('whsec_LONGSECRETVALUE\u00e91234'), Buffer.concat([Buffer.from('whsec_LONGSECRETVALUE'), Buffer.from([0xff]), Buffer.from('1234')])]) {
      answer(envelope(bytes), { 'X-Secret-Echo': bytes.toString('latin1') });
      const { r } = await rotateToFile(['--debug']);
      expect(r.stderr).toMatch(/x-secret-echo: \[REDACTED\]/i);
      expect(r.stderr).not.toContain('LONGSECRETVALUE');
    }
  });

  // A third review: a 2xx that is not JSON at all, with the secret in plain sight.
  test.each([
    ['a UTF-16 byte-order mark before the JSON', Buffer.concat([Buffer.from([0xff, 0xfe]), json(secretBody())])],
    ['a bad byte after a backslash in the secret', envelope(Buffer.concat([Buffer.from('whsec_AB\\'), Buffer.from([0xff]), Buffer.from('CD')]))],
  ])('%s: not JSON, but it names a secret: kept as received, exit 13', async (_label, body) => {
    answer(body);
    const { r, file } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(13);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(recovered(r)[0]!)).toEqual(body);
    expect(r.stderr).toContain('not JSON but names a secret');
  });

  test('a 2xx that is not JSON and names no secret: invalid_response (exit 1) naming the Idempotency-Key, nothing kept', async () => {
    answer(Buffer.from('<html>upstream says hello</html>'));
    const r = await runCli([...ROTATE, '--secret-to', 'file:s.txt', '--json'], { env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(1);
    expect(parseErrorLine(r.stderr).error.code).toBe('invalid_response');
    expect(recovered(r)).toEqual([]);
  });

  test('rotate --from: kept the same way, exit 14', async () => {
    const body = envelope(Buffer.concat([Buffer.from('whsec_'), Buffer.from([0xc3, 0x28]), Buffer.from('_rest')]));
    answer(body);
    const ws = workspace();
    writeFileSync(join(ws.cwd, 'm.ndjson'), '{"endpointId":"we_1","expectedVersion":2}\n');
    const r = await runCli(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--secret-to', 'file:{id}.whsec', '--json'], { env: scopeEnv(baseUrl), ws });
    expect(r.exitCode, r.stderr).toBe(14);
    expect(existsSync(join(ws.cwd, 'we_1.whsec'))).toBe(false);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!)).toEqual(body);
  });
});

describe('a secret that holds the bearer token', () => {
  // Stdout scrubs credentials; the secret must not go there mangled with exit 0.
  const tokenSecret = `whsec_${TOKEN}_tail`;
  const body = () => json(secretBody(tokenSecret));

  test('--secret-to stdout: not written there mangled; kept whole under recovered/, exit 13', async () => {
    answer(body());
    const r = await runCli([...ROTATE, '--secret-to', 'stdout'], { env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stdout).not.toContain('[REDACTED]');
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!, 'utf8')).toBe(tokenSecret);
    expect(mode(kept[0]!)).toBe(0o600);
    expect(r.stderr).toContain(kept[0]!);
    expect(r.stderr).not.toContain(TOKEN);
  });

  test('--json alone: not written there mangled; kept whole under recovered/, exit 13', async () => {
    answer(body());
    const r = await runCli([...ROTATE, '--json'], { env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(13);
    expect(r.stdout).not.toContain('[REDACTED]');
    expect(parseErrorLine(r.stderr).error.code).toBe('secret_not_delivered');
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!, 'utf8')).toBe(tokenSecret);
  });

  test('a file: destination still gets it whole, exit 0', async () => {
    answer(body());
    const { r, file } = await rotateToFile();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(tokenSecret);
  });
});

/**
 * chatctl (a process) with a slow exec: destination that ignores SIGTERM:
 * once the destination has the secret, Ctrl-C, then `second` once chatctl
 * has taken the first (and, with `terms`, has sent the destination the
 * SIGTERM it sends on Ctrl-C), while the destination still waits. Its exit code, stderr, and the one copy it kept in
 * recovered/ (which must hold the whole secret).
 */
async function twoSignalsDuringExec(ws: Workspace, argsWith: (command: string) => string[], second: NodeJS.Signals, terms: boolean): Promise<{ code: number | null; stderr: string; kept: string }> {
  const marker = join(ws.home, 'started');
  const termed = join(ws.home, 'termed');
  // Outlives the SIGTERM chatctl's first Ctrl-C sends its group (the sleep
  // ignores it; the shell notes it in `termed` and waits on), so the second
  // signal lands while it waits.
  const command = `exec:trap "touch '${termed}'" TERM; cat >/dev/null; touch '${marker}'; (trap '' TERM; exec sleep 3) & p=$!; wait $p; wait $p`;
  const child = spawn(NODE, [BIN, ...argsWith(command)], { cwd: ws.cwd, env: buildEnv(ws, scopeEnv(baseUrl)), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.resume();
  const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  await waitFor(() => existsSync(marker), 10_000, 'the destination to have the secret');
  child.kill('SIGINT');
  await waitFor(() => !signalPending(child.pid!, 'SIGINT'), 10_000, 'chatctl to take the first SIGINT');
  if (terms) await waitFor(() => existsSync(termed), 10_000, "the destination to be sent the first Ctrl-C's SIGTERM");
  child.kill(second);
  const code = await closed;
  const kept = readdirSync(join(ws.configDir, 'recovered')).map((n) => join(ws.configDir, 'recovered', n));
  expect(kept).toHaveLength(1);
  expect(readFileSync(kept[0]!, 'utf8')).toBe(SECRET);
  return { code, stderr, kept: kept[0]! };
}

describe('a second signal while a destination is being served', () => {
  // The second signal ends the process at once; the secret is already kept
  // under recovered/, and the user must still be told where, and which
  // Idempotency-Key was used, or a re-run rotates again.
  for (const jsonMode of [false, true]) {
    test(`SIGINT twice during a slow exec: destination${jsonMode ? ' (--json)' : ''}: exit 13, the kept file, endpoint, fingerprint and key named`, async () => {
      answer(json(secretBody()));
      const ws = workspace();
      const { code, stderr, kept } = await twoSignalsDuringExec(
        ws,
        (command) => [...ROTATE, '--idempotency-key', 'key-twice-1', '--secret-to', command, ...(jsonMode ? ['--json'] : [])],
        'SIGINT',
        true,
      );
      expect(code, stderr).toBe(13);
      expect(stderr).toContain(kept);
      expect(stderr).toContain('we_1');
      expect(stderr).toContain(FP);
      expect(stderr).toContain('key-twice-1');
      expect(stderr).not.toContain(SECRET);
      if (jsonMode) expect(parseErrorLine(stderr).error.code).toBe('secret_not_delivered');
    });
  }
});

describe('rotate --from keeps each secret as a single rotate does', () => {
  const manifest = (ws: { cwd: string }) => {
    writeFileSync(join(ws.cwd, 'm.ndjson'), JSON.stringify({ endpointId: 'we_1', expectedVersion: 2 }) + '\n');
    return ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap'];
  };

  // A CI job cancelled mid-run gets SIGINT, then SIGTERM: the second signal ends the process at once.
  test('SIGINT, then SIGTERM during a slow exec: destination: exit 13, the copy kept in recovered/ and named with the key; a re-run with the journal delivers it from there', async () => {
    answer(json(secretBody()));
    const ws = workspace();
    const base = manifest(ws);
    const { code, stderr, kept } = await twoSignalsDuringExec(ws, (command) => [...base, '--journal', 'j', '--secret-to', command, '--secret-to', 'file:{id}.whsec'], 'SIGTERM', false);
    expect(code, stderr).toBe(13);
    expect(stderr).toContain(kept);
    expect(stderr).toContain(FP);
    expect(stderr).not.toContain(SECRET);
    // The re-run sends nothing again: it delivers the kept copy and removes it.
    const before = received();
    const again = await runCli([...base, '--journal', 'j', '--secret-to', 'file:{id}.whsec', '--json'], { ws, env: scopeEnv(baseUrl) });
    expect(again.exitCode, again.stderr).toBe(0);
    const line = JSON.parse(again.stdout.split('\n')[0]!) as { ok: boolean; fingerprint: string };
    expect(line).toMatchObject({ ok: true, fingerprint: FP });
    expect(readFileSync(join(ws.cwd, 'we_1.whsec'), 'utf8')).toBe(SECRET);
    expect(existsSync(kept)).toBe(false);
    expect(received()).toBe(before);
  });

  test('an answer that is not the expected response but carries a secret: the item exits 13 with the secret kept, not 1 with it dropped', async () => {
    const { meta: _meta, ...noMeta } = secretBody();
    answer(json(noMeta));
    const ws = workspace();
    const r = await runCli([...manifest(ws), '--secret-to', 'file:{id}.whsec', '--json'], { ws, env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(14);
    const line = JSON.parse(r.stdout.split('\n')[0]!) as { ok: boolean; exitCode: number; error: { code: string; details: { recoveredPath: string } } };
    expect(line).toMatchObject({ ok: false, exitCode: 13, error: { code: 'secret_not_delivered' } });
    expect(readFileSync(line.error.details.recoveredPath, 'utf8')).toBe(SECRET);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  test('no room for records in recovered/ (a file where the folder should be): exit 3 before anything is sent, the folder and why named', async () => {
    answer(json(secretBody()));
    const ws = workspace();
    mkdirSync(ws.configDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(ws.configDir, 'recovered'), 'a file where the folder should be');
    const before = received();
    const r = await runCli([...manifest(ws), '--secret-to', 'file:{id}.whsec', '--secret-to', 'exec:cat >/dev/null; exit 3', '--json'], { ws, env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.stderr).toContain(`${join(ws.configDir, 'recovered')}: a file stands where a folder should be (ENOTDIR)`);
    expect(received()).toBe(before);
    expect(existsSync(join(ws.cwd, 'we_1.whsec'))).toBe(false);
  });

  test('--secret-to stdout: stdout holds the secret and one newline, nothing else; the summary goes to stderr; no copy is left', async () => {
    answer(json(secretBody()));
    const ws = workspace();
    const r = await runCli([...manifest(ws), '--secret-to', 'stdout'], { ws, env: scopeEnv(baseUrl) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${SECRET}\n`);
    expect(r.stderr).toContain('Rotated 1 of 1 endpoint');
    expect(readdirSync(join(ws.configDir, 'recovered'))).toEqual([]);
  });
});

describe('a destination that changes between the check and delivery', () => {
  // Destinations are served in order, so an exec: destination given first
  // changes a later one after the pre-send check, deterministically.
  test('env-file: whose NAME became a multi-line quoted value: kept (exit 13), the file left as it was', async () => {
    answer(json(secretBody()));
    const ws = workspace();
    const env = join(ws.cwd, '.env');
    writeFileSync(env, 'S=old\nA=1\n', { mode: 0o600 });
    const multi = "S='line one\nline two'\nA=1\n";
    const r = await runCli([...ROTATE, '--secret-to', `exec:cat >/dev/null; printf '%s' "$MULTI" > .env`, '--secret-to', 'env-file:.env#S'], {
      env: scopeEnv(baseUrl, { MULTI: multi }),
      ws,
    });
    expect(r.exitCode, r.stderr).toBe(13);
    expect(readFileSync(env, 'utf8')).toBe(multi);
    const kept = recovered(r);
    expect(kept).toHaveLength(1);
    expect(readFileSync(kept[0]!, 'utf8')).toBe(SECRET);
    expect(r.stderr).toContain('several lines');
  });

  test('file: created by someone else meanwhile: not overwritten; kept (exit 13)', async () => {
    answer(json(secretBody()));
    const ws = workspace();
    const r = await runCli([...ROTATE, '--secret-to', 'exec:cat >/dev/null; echo theirs > s.txt', '--secret-to', 'file:s.txt'], { env: scopeEnv(baseUrl), ws });
    expect(r.exitCode, r.stderr).toBe(13);
    expect(readFileSync(join(ws.cwd, 's.txt'), 'utf8')).toBe('theirs\n');
    expect(readFileSync(recovered(r)[0]!, 'utf8')).toBe(SECRET);
  });
});
