// Black box: `chatctl webhooks rotate --from` (docs/fleet.md), the real
// bin/chatctl.js against a real `chatctl sandbox --json` child process.
// Hundreds of endpoints are created, rotated from a manifest with file: and
// exec: destinations, a run is killed with SIGKILL half-way and resumed from
// its journal; the server's versions, the secret at every destination, the
// NDJSON lines and the exit codes (0, 14, 2, 130) are checked. Runs that
// are killed (SIGKILL) or timed (the rate limit) are child processes; the
// others run in-process, through execute(), against the same sandbox.
import { execFileSync, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BIN } from '../../../support/fixtures.js';
import { makeTempRoot, startSandbox, type Sandbox } from '../../../support/sandbox.js';
import { assertJsonStderr, runInProcess } from '../../../support/in-process.js';
import { SHARED_CACHE_DIR } from '../../../support/run.js';
import { scaled } from '../../../support/slowdown.js';

const NODE = process.execPath;
const fp = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex').slice(0, 16)}`;

const tmp = makeTempRoot();
let sandbox: Sandbox;
let created = 0;

beforeAll(async () => {
  sandbox = await startSandbox(['--json', '--endpoint-limit', '5000'], tmp.dir('sandbox-home'), tmp.dir('sandbox-config'));
});
afterAll(async () => {
  agent.destroy();
  await sandbox?.stop();
  tmp.cleanup();
});

// The test's own calls to the sandbox (hundreds of creates) go through
// node:http on kept-alive connections: fetch costs several times the CPU per
// request.
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
// A kept-alive connection the sandbox closed as idle just as it was reused
// ends in ECONNRESET before the request was read; sent again, as Node's
// documentation advises (`request.reusedSocket`). More likely on a loaded
// machine, where the test's calls come further apart.
function call(method: string, url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
      res.on('error', reject);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET') call(method, url, headers, body).then(resolve, reject);
      else reject(err);
    });
    req.end(body);
  });
}

async function control(path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<any> {
  const res = await call(method, `${sandbox.info.baseUrl}/_sandbox/${path}`, { authorization: `Bearer ${sandbox.info.token}` }, body === undefined ? undefined : JSON.stringify(body));
  return (JSON.parse(res.text) as { data: unknown }).data;
}

/** Creates n endpoints through the API; their ids. */
async function createEndpoints(n: number): Promise<string[]> {
  const { baseUrl, token, organizationId, applicationId, environmentKey } = sandbox.info;
  const url = `${baseUrl}/v1/organizations/${organizationId}/applications/${applicationId}/environments/${environmentKey}/webhook-endpoints`;
  const ids: string[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const k = ++created;
      const res = await call(
        'POST',
        url,
        { authorization: `Bearer ${token}`, origin: 'https://fleet.example', 'x-service-csrf': '1', 'content-type': 'application/json', 'idempotency-key': `fleet-create-${k}` },
        JSON.stringify({ name: `fleet ${k}`, destinationUrl: `https://hooks.example.com/fleet/${k}`, eventTypes: ['chat.message.created.v1'] }),
      );
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
      ids[i] = (JSON.parse(res.text) as { data: { endpoint: { id: string } } }).data.endpoint.id;
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return ids;
}

/** Every endpoint's version and current secret, by id. */
async function serverState(): Promise<Map<string, { version: number; secret: string }>> {
  const { endpoints } = await control('endpoints');
  return new Map((endpoints as Array<{ id: string; version: number; validSecrets: string[] }>).map((e) => [e.id, { version: e.version, secret: e.validSecrets[0]! }]));
}

const manifest = (ids: string[], ev = 1) => '# fleet rotation\n' + ids.map((id) => JSON.stringify({ endpointId: id, expectedVersion: ev })).join('\n') + '\n';

interface Run {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs chatctl with the sandbox's scope. `killAfterLines`: SIGKILL once that
 * many lines are on stdout (a child process); `interruptAfterLines`: Ctrl-C
 * then, in-process: the seam's signal aborted with reason SIGINT, as
 * src/app/main.ts turns a real SIGINT into (`spawn`: a real SIGINT to a child).
 */
async function chatctl(
  args: string[],
  o: {
    cwd: string;
    env?: Record<string, string>;
    input?: string | Buffer;
    killAfterLines?: number;
    interruptAfterLines?: number;
    spawn?: boolean;
    killWhenExists?: string;
    killAfterMs?: number;
    killOnStderr?: { text: string; times: number };
  },
): Promise<Run> {
  const env = {
    PATH: `${join(NODE, '..')}:/usr/local/bin:/usr/bin:/bin`,
    HOME: o.cwd,
    CHATCTL_CONFIG_DIR: join(o.cwd, 'config'),
    CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
    NO_COLOR: '1',
    CHATCTL_BASE_URL: sandbox.info.baseUrl,
    CHATCTL_TOKEN: sandbox.info.token,
    CHATCTL_ORG: sandbox.info.organizationId,
    CHATCTL_APP: sandbox.info.applicationId,
    CHATCTL_ENV: sandbox.info.environmentKey,
    ...o.env,
  };
  // A run nobody kills needs no process of its own: in-process, through execute().
  if (!o.spawn && o.killAfterLines === undefined && o.killWhenExists === undefined && o.killAfterMs === undefined && o.killOnStderr === undefined) {
    const ctrlC = new AbortController();
    const interruptAt = o.interruptAfterLines;
    const onStdout =
      interruptAt === undefined
        ? undefined
        : (text: string) => {
            // Delivered later, as a signal is, not inside chatctl's own write.
            if (!ctrlC.signal.aborted && text.split('\n').length - 1 >= interruptAt) setImmediate(() => ctrlC.abort('SIGINT'));
          };
    const r = await runInProcess(args, { env, cwd: o.cwd, input: o.input, signal: ctrlC.signal, onStdout });
    return { exitCode: r.exitCode, signal: null, stdout: r.stdout, stderr: r.stderr };
  }
  const child = spawn(NODE, [BIN, ...args], {
    cwd: o.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let lines = 0;
  let signalled = false;
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
    lines = stdout.split('\n').length - 1;
    if (signalled) return;
    if (o.killAfterLines !== undefined && lines >= o.killAfterLines) {
      signalled = true;
      child.kill('SIGKILL');
    }
    if (o.interruptAfterLines !== undefined && lines >= o.interruptAfterLines) {
      signalled = true;
      child.kill('SIGINT');
    }
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
    if (!signalled && o.killOnStderr && stderr.split(o.killOnStderr.text).length - 1 >= o.killOnStderr.times) {
      signalled = true;
      child.kill('SIGKILL');
    }
  });
  child.stdin.end(o.input ?? '');
  // SIGKILL once a file exists (polled), or after a time (a run that hangs).
  const timers: NodeJS.Timeout[] = [];
  if (o.killWhenExists !== undefined) timers.push(setInterval(() => existsSync(o.killWhenExists!) && child.kill('SIGKILL'), 20));
  if (o.killAfterMs !== undefined) timers.push(setTimeout(() => child.kill('SIGKILL'), o.killAfterMs));
  return new Promise((resolve, reject) =>
    child.on('close', (exitCode, signal) => {
      for (const t of timers) clearTimeout(t);
      try {
        assertJsonStderr(args, env, stderr);
      } catch (err) {
        reject(err as Error);
        return;
      }
      resolve({ exitCode, signal, stdout, stderr });
    }),
  );
}

type Line = {
  endpointId: string;
  ok: boolean;
  skipped?: boolean;
  version?: number;
  fingerprint?: string;
  delivery?: Array<{ to: string; fingerprint: string }>;
  requestId?: string | null;
  error?: { code: string; message: string };
  exitCode?: number;
  idempotencyKey?: string;
  doneAt?: string;
};

/** NDJSON: every complete line parses; the last complete one may be the summary. */
function parseLines(stdout: string): { items: Line[]; summary?: { ok: number; failed: number; skipped: number; notStarted?: number } } {
  const complete = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
  const parsed = complete
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const last = parsed.at(-1);
  if (last && 'summary' in last) return { items: parsed.slice(0, -1) as unknown as Line[], summary: last.summary as never };
  return { items: parsed as unknown as Line[] };
}

describe('rotate --from: a fleet, killed half-way and resumed from its journal', () => {
  test("100 endpoints, file: and exec: destinations, SIGKILL after 40 lines, re-run: each rotated exactly once, every delivered secret the server's", { timeout: scaled(120_000) }, async () => {
    const ids = await createEndpoints(100);
    const cwd = tmp.dir('fleet-1');
    const files = tmp.dir('fleet-1/files');
    const store = tmp.dir('fleet-1/store');
    writeFileSync(join(cwd, 'fleet.ndjson'), manifest(ids));
    const args = [
      'webhooks',
      'rotate',
      '--from',
      'fleet.ndjson',
      '--mode',
      'overlap',
      '--journal',
      'fleet.journal',
      '--json',
      '--secret-to',
      `file:${files}/{id}.whsec`,
      // Stores exactly its standard input, with shell builtins only (no `cat` to
      // start per item): `read` answers 1 when input ends before a newline, so
      // input with a newline in it (or none at all) stores nothing and fails.
      '--secret-to',
      `exec:IFS= read -r s; [ $? = 1 ] && [ -n "$s" ] && printf %s "$s" > "${store}/$CHATCTL_ENDPOINT_ID" && echo "stored $CHATCTL_ENDPOINT_ID $CHATCTL_SECRET_FINGERPRINT"`,
    ];

    const first = await chatctl(args, { cwd, killAfterLines: 40 });
    expect(first.signal).toBe('SIGKILL');
    const killed = parseLines(first.stdout);
    expect(killed.items.length).toBeGreaterThanOrEqual(40);
    expect(killed.summary).toBeUndefined();
    expect(statSync(join(cwd, 'fleet.journal')).mode & 0o777).toBe(0o600);
    // The killed run left its lock; the re-run takes it over (its pid is gone).
    expect(existsSync(join(cwd, 'fleet.journal.lock'))).toBe(true);

    const second = await chatctl(args, { cwd });
    const resumed = parseLines(second.stdout);
    expect(Object.keys(resumed.summary ?? {}), second.stderr).toEqual(['ok', 'failed', 'skipped']);
    const { ok, failed, skipped } = resumed.summary!;
    expect(ok + failed + skipped).toBe(100);
    expect(resumed.items).toHaveLength(100);
    expect(second.exitCode).toBe(failed > 0 ? 14 : 0);

    // Exactly once: every endpoint is at version 2.
    const state = await serverState();
    for (const id of ids) expect(state.get(id)!.version, id).toBe(2);

    // Every item done (now or by the killed run) has the server's secret at both destinations.
    for (const line of resumed.items) {
      const { secret } = state.get(line.endpointId)!;
      if (line.ok) {
        expect(Object.keys(line).filter((k) => k !== 'skipped' && k !== 'doneAt')).toEqual(['endpointId', 'ok', 'version', 'fingerprint', 'delivery', 'requestId']);
        // Done by the killed run: the line says when that run started.
        if (line.skipped) expect(line.doneAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(line.fingerprint).toBe(fp(secret));
        expect(readFileSync(join(files, `${line.endpointId}.whsec`), 'utf8')).toBe(secret);
        expect(statSync(join(files, `${line.endpointId}.whsec`)).mode & 0o777).toBe(0o600);
        expect(readFileSync(join(store, line.endpointId), 'utf8')).toBe(secret);
      } else {
        // Only a secret the killed run had in hand before it could keep a copy
        // (the server returns it once): reported, never rotated again. A kept
        // copy is delivered by the re-run, never reported, and the copy stays
        // until the item's "ok" is on disk.
        expect(line.exitCode).toBe(13);
        expect(line.error!.message).toContain('does not return a secret twice');
        expect(line.error!.code).toBe('secret_not_delivered');
        expect(line.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
      }
    }
    // Only items in flight at the kill can be in that state: per worker (4), one
    // request on the wire and one delivered item whose "ok" was not yet on disk
    // (an exec: store cannot be read back to confirm it).
    expect(failed).toBeLessThanOrEqual(8);
    // What the killed run printed as done is skipped, not redone.
    const doneBefore = killed.items.filter((l) => l.ok).map((l) => l.endpointId);
    for (const id of doneBefore) expect(resumed.items.find((l) => l.endpointId === id)).toMatchObject({ ok: true, skipped: true });
    // No secret on stderr; with --json, not the exec: command's output either (it succeeded: nothing to report).
    for (const { secret } of state.values()) expect(second.stderr).not.toContain(secret);
    expect(second.stderr).not.toContain('stored we_');

    // A third run: nothing left to send.
    await control('stats', undefined);
    const before = (await control('stats')).stats.requests;
    const third = await chatctl(args, { cwd });
    expect(parseLines(third.stdout).summary).toEqual({ ok: 0, failed, skipped: 100 - failed });
    expect((await control('stats')).stats.requests).toBe(before);
  });
});

describe('rotate --from: a resumed item whose destinations are read back', () => {
  /** One endpoint rotated by a run killed (SIGKILL) while its exec: destination ran, after its file: and env-file: ones: the journal holds it as applied, delivery unconfirmed. */
  async function appliedThenKilled(name: string) {
    const [id] = await createEndpoints(1);
    const cwd = tmp.dir(name);
    writeFileSync(join(cwd, 'm.ndjson'), manifest([id!]));
    const started = join(cwd, 'exec-started');
    const base = ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--journal', 'j.journal', '--json'];
    const sinks = ['--secret-to', 'file:{id}.whsec', '--secret-to', 'env-file:{id}.env#WEBHOOK_SECRET'];
    const killed = await chatctl([...base, ...sinks, '--secret-to', `exec:cat >/dev/null; touch ${started}; sleep 30`], { cwd, killWhenExists: started });
    expect(killed.signal).toBe('SIGKILL');
    const { secret } = (await serverState()).get(id!)!;
    expect(readFileSync(join(cwd, `${id}.whsec`), 'utf8')).toBe(secret);
    return { id: id!, cwd, base, sinks, secret };
  }

  test('file: and env-file: destinations that hold that exact secret count as delivered: exit 0, not sent again', { timeout: scaled(30_000) }, async () => {
    const { id, cwd, base, sinks, secret } = await appliedThenKilled('readback-env');
    expect(readFileSync(join(cwd, `${id}.env`), 'utf8')).toBe(`WEBHOOK_SECRET=${secret}\n`);
    const before = (await control('stats')).stats.requests;
    const r = await chatctl([...base, ...sinks], { cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const { items } = parseLines(r.stdout);
    expect(items).toEqual([expect.objectContaining({ endpointId: id, ok: true, skipped: true, fingerprint: fp(secret) })]);
    expect(items[0]!.delivery!.map((d) => d.to)).toEqual([`file:${join(cwd, `${id}.whsec`)}`, `env-file:${join(cwd, `${id}.env`)}#WEBHOOK_SECRET`]);
    expect((await control('stats')).stats.requests).toBe(before);
    expect((await serverState()).get(id)!.version).toBe(2);
  });

  test('a file: destination that became a FIFO (or a link to the secret) is not read: the resume ends at once with 13, it does not hang', { timeout: scaled(60_000) }, async () => {
    const { id, cwd, base, secret } = await appliedThenKilled('readback-fifo');
    const file = join(cwd, `${id}.whsec`);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    // A process of its own, killed if it hangs (an open of the FIFO would wait
    // for a writer that never comes): not killed is not hung.
    const r = await chatctl([...base, '--secret-to', 'file:{id}.whsec'], { cwd, killAfterMs: 20_000 });
    expect(r.signal).toBeNull();
    expect(r.exitCode, r.stderr).toBe(14);
    expect(parseLines(r.stdout).items).toEqual([expect.objectContaining({ endpointId: id, ok: false, exitCode: 13 })]);
    // A link to a file that holds the secret is not followed either.
    rmSync(file);
    writeFileSync(join(cwd, 'elsewhere'), secret);
    symlinkSync(join(cwd, 'elsewhere'), file);
    const linked = await chatctl([...base, '--secret-to', 'file:{id}.whsec'], { cwd });
    expect(linked.exitCode, linked.stderr).toBe(14);
    // Three processes and a sandbox on a loaded machine; the 20 s is only a hang's bound.
  });
});

describe('rotate --from: killed during a delivery and resumed', () => {
  // SIGKILL while the n-th item's exec: destination runs: its secret is in
  // hand and kept under recovered/ (named after its key), so the re-run
  // delivers it from there; nothing is lost and nothing rotated twice.
  for (const nth of [1, 4, 9]) {
    test(`killed in the exec: destination of item ${nth} of 12: the re-run delivers every secret, none lost, none rotated twice`, { timeout: scaled(60_000) }, async () => {
      const ids = await createEndpoints(12);
      const cwd = tmp.dir(`kill-delivery-${nth}`);
      const files = tmp.dir(`kill-delivery-${nth}/files`);
      const store = tmp.dir(`kill-delivery-${nth}/store`);
      writeFileSync(join(cwd, 'fleet.ndjson'), manifest(ids));
      const args = [
        // Human mode: the exec: command's output reaches stderr, where the kill waits for it.
        'webhooks',
        'rotate',
        '--from',
        'fleet.ndjson',
        '--mode',
        'overlap',
        '--journal',
        'j',
        '--concurrency',
        '1',
        '--secret-to',
        // In the killed run, the n-th item's command holds on after storing (one item at a time, in manifest order), so the kill lands inside it, not after it (exec: output reaches stderr through a worker thread).
        `exec:echo "storing $CHATCTL_ENDPOINT_ID" >&2; IFS= read -r s; [ $? = 1 ] && [ -n "$s" ] && printf %s "$s" > "${store}/$CHATCTL_ENDPOINT_ID" && { [ "$CHATCTL_ENDPOINT_ID" != "$HOLD_IN" ] || exec sleep 20; }`,
        '--secret-to',
        `file:${files}/{id}.whsec`,
      ];
      const first = await chatctl(args, { cwd, env: { HOLD_IN: ids[nth - 1]! }, killOnStderr: { text: 'storing we_', times: nth } });
      expect(first.signal).toBe('SIGKILL');
      const second = await chatctl(args, { cwd });
      expect(second.exitCode, second.stdout + second.stderr).toBe(0);
      const state = await serverState();
      for (const id of ids) {
        const { version, secret } = state.get(id)!;
        expect(version, id).toBe(2);
        expect(readFileSync(join(files, `${id}.whsec`), 'utf8'), id).toBe(secret);
        expect(readFileSync(join(store, id), 'utf8'), id).toBe(secret);
        expect(second.stderr).not.toContain(secret);
      }
      // The kept copies were delivered and removed.
      expect(existsSync(join(cwd, 'config', 'recovered')) ? readdirSync(join(cwd, 'config', 'recovered')) : []).toEqual([]);
    });
  }
});

describe('rotate --from: exit codes', () => {
  test('0: all rotated, from standard input, human summary', async () => {
    const ids = await createEndpoints(20);
    const cwd = tmp.dir('stdin');
    const r = await chatctl(['webhooks', 'rotate', '--from', '-', '--mode', 'overlap', '--secret-to', `file:${cwd}/{id}.whsec`], { cwd, input: manifest(ids) });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('Rotated 20 of 20 endpoints');
    expect(readdirSync(cwd).filter((f) => f.endsWith('.whsec'))).toHaveLength(20);
  });

  test('14: some items refused by the server (each with its own code), the rest rotated', async () => {
    const ids = await createEndpoints(10);
    const cwd = tmp.dir('partial');
    const lines = ids.map((id, i) => JSON.stringify({ endpointId: id, expectedVersion: i % 3 === 0 ? 5 : 1 }));
    writeFileSync(join(cwd, 'm.ndjson'), lines.join('\n') + '\n');
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'immediate', '--yes', '--json', '--secret-to', `file:${cwd}/{id}.whsec`], { cwd });
    expect(r.exitCode).toBe(14);
    const { items, summary } = parseLines(r.stdout);
    expect(summary).toEqual({ ok: 6, failed: 4, skipped: 0 });
    for (const line of items.filter((l) => !l.ok)) {
      expect(line).toMatchObject({ ok: false, exitCode: 7, error: { code: 'webhook_endpoint_version_conflict' } });
      expect(Object.keys(line)).toEqual(['endpointId', 'ok', 'error', 'exitCode']);
    }
    expect(r.stderr).toBe('');
  });

  test('14: a destination that fails keeps the secret in recovered/ and fails that item with 13', async () => {
    const ids = await createEndpoints(5);
    const cwd = tmp.dir('recover');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const bad = ids[2]!;
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', '--secret-to', `exec:cat >/dev/null; test "$CHATCTL_ENDPOINT_ID" != "${bad}"`], { cwd });
    expect(r.exitCode).toBe(14);
    const { items } = parseLines(r.stdout);
    const line = items.find((l) => l.endpointId === bad)!;
    expect(line).toMatchObject({ ok: false, exitCode: 13, error: { code: 'secret_not_delivered' } });
    const kept = readdirSync(join(cwd, 'config', 'recovered'));
    expect(kept).toHaveLength(1);
    const secret = readFileSync(join(cwd, 'config', 'recovered', kept[0]!), 'utf8');
    expect(secret).toBe((await serverState()).get(bad)!.secret);
    expect(line.error!.message).toContain(join(cwd, 'config', 'recovered'));
  });

  test('2: a bad line is named, and nothing is sent', async () => {
    const ids = await createEndpoints(3);
    const cwd = tmp.dir('bad-line');
    writeFileSync(join(cwd, 'm.ndjson'), `${JSON.stringify({ endpointId: ids[0], expectedVersion: 1 })}\n\n# ok\n{"endpointId":"${ids[1]}","expectedVersion":"two"}\n`);
    const before = (await control('stats')).stats.requests;
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', '--secret-to', `file:${cwd}/{id}`], { cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'usage_error' }, exitCode: 2 });
    expect(r.stderr).toContain('manifest line 4');
    expect((await control('stats')).stats.requests).toBe(before);
  });

  test.each([
    ['ids made safe for a GitHub name', ['--secret-to', 'github-output:SECRET_{id}'], ['we-1', 'we_1'], 'github-output:SECRET_we_1'],
    ['two patterns meeting (--force would replace the first)', ['--force', '--secret-to', 'file:s/{id}.a', '--secret-to', 'file:s/{id}'], ['x', 'x.a'], '/s/x.a'],
  ])('2: two endpoints whose {id} lead to one destination (%s) are refused before anything is sent', async (_why, extra, ids, place) => {
    const cwd = tmp.dir(`collide-${created++}`);
    execFileSync('mkdir', ['-p', join(cwd, 's')]);
    writeFileSync(join(cwd, 'out'), '');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const before = (await control('stats')).stats.requests;
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', ...extra], { cwd, env: { GITHUB_OUTPUT: join(cwd, 'out') } });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'usage_error' }, exitCode: 2 });
    const { message } = (JSON.parse(r.stderr) as { error: { message: string } }).error;
    expect(message).toContain(place);
    expect(message).toContain(`"${ids[0]}" and "${ids[1]}"`);
    expect((await control('stats')).stats.requests).toBe(before);
  });

  test('2: a journal re-run whose done items are now sent elsewhere (another path, or stdout) is refused; the same or a holding destination is skipped, exit 0', async () => {
    const ids = await createEndpoints(2);
    const cwd = tmp.dir(`moved-${created++}`);
    execFileSync('mkdir', ['-p', join(cwd, 'a'), join(cwd, 'b')]);
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const base = ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', '--journal', 'j'];
    const first = await chatctl([...base, '--secret-to', 'file:a/{id}.s'], { cwd });
    expect(first.exitCode, first.stderr).toBe(0);
    const before = (await control('stats')).stats.requests;
    const moved = await chatctl([...base, '--secret-to', 'file:b/{id}.s'], { cwd });
    expect(moved.exitCode, moved.stdout).toBe(2);
    expect((JSON.parse(moved.stderr) as { error: { message: string } }).error.message).toContain(`${cwd}/b/${ids[0]}.s`);
    expect(readdirSync(join(cwd, 'b'))).toEqual([]);
    expect((await control('stats')).stats.requests).toBe(before);
    // The same destinations: done, skipped.
    const again = await chatctl([...base, '--secret-to', 'file:a/{id}.s'], { cwd });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(parseLines(again.stdout).summary).toMatchObject({ skipped: 2 });
    // A destination that holds the secret already (copied there) counts.
    for (const id of ids) writeFileSync(join(cwd, 'b', `${id}.s`), readFileSync(join(cwd, 'a', `${id}.s`)));
    const copied = await chatctl([...base, '--secret-to', 'file:b/{id}.s'], { cwd });
    expect(copied.exitCode, copied.stderr).toBe(0);
    expect((await control('stats')).stats.requests).toBe(before);
    // stdout holds a secret for its own run only: a re-run that captures it again would get nothing, with 0.
    const [one] = await createEndpoints(1);
    writeFileSync(join(cwd, 'one.ndjson'), manifest([one!]));
    const single = ['webhooks', 'rotate', '--from', 'one.ndjson', '--mode', 'overlap', '--journal', 'j1', '--secret-to', 'stdout'];
    const captured = await chatctl(single, { cwd });
    expect(captured.exitCode, captured.stderr).toBe(0);
    expect(captured.stdout.trim()).toBe((await serverState()).get(one!)!.secret);
    const recaptured = await chatctl(single, { cwd });
    expect(recaptured.exitCode).toBe(2);
    expect(recaptured.stdout).toBe('');
    expect(recaptured.stderr).toContain('not kept to deliver to stdout');
  });

  test('2: a manifest on standard input is decoded as strictly as a file: invalid UTF-8 is refused, not turned into U+FFFD and sent', async () => {
    const ids = await createEndpoints(2);
    const cwd = tmp.dir('stdin-bad-utf8');
    // Line 2 names an endpoint with a byte that is not UTF-8 (the second id, its last character replaced by 0xff).
    const bytes = Buffer.concat([
      Buffer.from(`${JSON.stringify({ endpointId: ids[0], expectedVersion: 1 })}\n{"endpointId":"${ids[1]!.slice(0, -1)}`),
      Buffer.from([0xff]),
      Buffer.from('","expectedVersion":1}\n'),
    ]);
    writeFileSync(join(cwd, 'm.ndjson'), bytes);
    const before = (await control('stats')).stats.requests;
    const args = ['webhooks', 'rotate', '--mode', 'overlap', '--json', '--secret-to', `file:${cwd}/{id}.whsec`];
    const fromFile = await chatctl([...args, '--from', 'm.ndjson'], { cwd });
    const fromStdin = await chatctl([...args, '--from', '-'], { cwd, input: bytes });
    for (const r of [fromFile, fromStdin]) {
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'usage_error', message: 'manifest line 2: not valid UTF-8' }, exitCode: 2 });
    }
    expect((await control('stats')).stats.requests).toBe(before);
    expect(readdirSync(cwd).filter((f) => f.endsWith('.whsec'))).toEqual([]);
  });

  test.each([
    [['--secret-to', 'file:shared.whsec'], 'one destination for 2 endpoints'],
    [[], 'needs --secret-to'],
    [['--secret-to', 'file:{id}', 'we_x'], 'not both'],
    [['--secret-to', 'file:{id}', '--expected-version', '3'], '--expected-version cannot be used with --from'],
    [['--secret-to', 'file:{id}', '--concurrency', '0'], 'invalid --concurrency'],
    [['--secret-to', 'exec:no-such-program-xyz'], 'not found on PATH'],
  ])('2: %j is refused before anything is sent', async (extra, message) => {
    const ids = await createEndpoints(2);
    const cwd = tmp.dir(`refuse-${created}`);
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', ...extra], { cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(message);
    const state = await serverState();
    for (const id of ids) expect(state.get(id)!.version).toBe(1);
  });

  test('2: mode immediate needs --yes when not interactive; an existing destination needs --force', async () => {
    const ids = await createEndpoints(2);
    const cwd = tmp.dir('immediate');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    let r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'immediate', '--secret-to', 'file:{id}.whsec'], { cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--yes is required');
    writeFileSync(join(cwd, `${ids[1]}.whsec`), 'old');
    r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--secret-to', 'file:{id}.whsec'], { cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('already exists');
    r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--force', '--secret-to', 'file:{id}.whsec'], { cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(cwd, `${ids[1]}.whsec`), 'utf8')).toBe((await serverState()).get(ids[1]!)!.secret);
  });

  test("an earlier item's secret printed by a later item's exec: command is still kept off stderr", async () => {
    const ids = await createEndpoints(2);
    const cwd = tmp.dir('retired');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const store = join(cwd, 'store');
    const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--concurrency', '1', '--secret-to', `exec:cat >> '${store}'; echo >> '${store}'; cat '${store}' >&2`], {
      cwd,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    const state = await serverState();
    const secrets = ids.map((id) => state.get(id)!.secret);
    expect(readFileSync(store, 'utf8')).toBe(secrets.map((x) => `${x}\n`).join(''));
    for (const x of secrets) expect(r.stderr).not.toContain(x);
    expect(r.stderr.split('[REDACTED]').length - 1).toBe(3); // item 1: its own; item 2: both
  });

  test('--concurrency 16: no Node warning about abort listeners on stderr (every item in flight listens on the one signal)', async () => {
    const ids = await createEndpoints(32);
    const cwd = tmp.dir('wide');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    // Slow answers keep all sixteen in flight at once.
    await control('faults', { delayMs: 40 });
    try {
      const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--concurrency', '16', '--json', '--secret-to', `file:${cwd}/{id}.whsec`], { cwd });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(parseLines(r.stdout).summary).toEqual({ ok: 32, failed: 0, skipped: 0 });
    } finally {
      await control('faults', { delayMs: 0 });
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });

  test('130: Ctrl-C lets the items in flight finish and deliver, writes the journal; a re-run finishes the rest', { timeout: scaled(60_000) }, async () => {
    const ids = await createEndpoints(80);
    const cwd = tmp.dir('sigint');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    await control('faults', { delayMs: 40 });
    try {
      const args = ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', '--journal', 'j', '--secret-to', `file:${cwd}/{id}.whsec`];
      const r = await chatctl(args, { cwd, interruptAfterLines: 10 });
      expect(r.exitCode).toBe(130);
      const { items, summary } = parseLines(r.stdout);
      expect(summary!.notStarted).toBeGreaterThan(0);
      expect(summary!.notStarted).toBe(ids.length - summary!.ok - summary!.failed - summary!.skipped);
      expect(summary!.ok).toBe(items.length);
      expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'interrupted' }, exitCode: 130 });
      // Every item it finished is delivered; nothing is half done.
      const state = await serverState();
      for (const l of items) expect(readFileSync(join(cwd, `${l.endpointId}.whsec`), 'utf8')).toBe(state.get(l.endpointId)!.secret);
      const rotated = ids.filter((id) => state.get(id)!.version === 2);
      expect(rotated.sort()).toEqual(items.map((l) => l.endpointId).sort());

      // The re-run needs no slow server (the delay only kept items in flight for the Ctrl-C).
      await control('faults', { delayMs: 0 });
      const again = await chatctl(args, { cwd });
      expect(again.exitCode, again.stderr).toBe(0);
      expect(parseLines(again.stdout).summary).toEqual({ ok: 80 - items.length, failed: 0, skipped: items.length });
      const after = await serverState();
      for (const id of ids) expect(after.get(id)!.version).toBe(2);
    } finally {
      await control('faults', { delayMs: 0 });
    }
  });
});

describe('rotate --from: against a rate limit', () => {
  // 20 per second, well below what the program can do even on a loaded
  // machine (at 50 per second a starved run under the full suite sometimes
  // never reached the limit, so no 429 showed that it was met). How close
  // to the ideal time a run comes is not asserted here, where load decides
  // it: the pace is checked on a virtual clock (runner.test.ts, against the
  // sandbox's own bucket), and a real run's time against the ideal is
  // measured by `npm run bench -- --fleet`.
  test('100 endpoints at 20 requests per second (latency 20 ms): no failure, few 429s, each request once in the log', { timeout: scaled(60_000) }, async () => {
    const ids = await createEndpoints(100);
    const cwd = tmp.dir('rate');
    writeFileSync(join(cwd, 'm.ndjson'), manifest(ids));
    await control('stats', undefined);
    await control('stats', undefined, 'DELETE');
    await control('requests', undefined, 'DELETE');
    await control('faults', { rateLimit: 20, delayMs: 20 });
    try {
      // Throughput is the real program's: a process of its own, as a CI job runs it.
      const r = await chatctl(['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--json', '--journal', 'j', '--secret-to', `file:${cwd}/{id}.whsec`], { cwd, spawn: true });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(parseLines(r.stdout).summary).toEqual({ ok: 100, failed: 0, skipped: 0 });
      const { stats } = await control('stats');
      // Whether the run met the limit (a 429) depends on how fast this machine
      // lets it go: a starved process under the full suite may stay just
      // under it. What the limit asks is checked either way: few 429s.
      // Few: each time the run meets the limit, the requests already in flight
      // (up to --concurrency, 4) come back 429 together, and it meets it again
      // every second or so as it probes upwards. 5% failed once in CI under
      // full load (6 of 106, a starved process sending its queued requests
      // at once); a storm would be several times this.
      expect(stats.rateLimited).toBeLessThanOrEqual(0.1 * stats.requests);
      // Every request the server counted is a rotation, and every endpoint
      // was rotated once more than the 429s it got: nothing was sent twice
      // after it succeeded.
      const { requests } = (await control('requests')) as { requests: Array<{ path: string; status: number | null }> };
      const rotations = requests.filter((q) => q.path.endsWith('/secret/rotate'));
      expect(rotations.length).toBe(stats.requests);
      expect(rotations.filter((q) => q.status === 200)).toHaveLength(100);
      expect(rotations.length).toBe(100 + stats.rateLimited);
    } finally {
      await control('faults', { rateLimit: 0, delayMs: 0 });
    }
  });
});
