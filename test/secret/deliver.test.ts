// deliverAll and deliverSecretResult with injected streams (docs/secrets.md):
// one delivery path, every outcome recorded, the secret kept under
// recovered/ whenever any destination fails. exec: sinks run real /bin/sh
// commands, with a short injected time limit.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { deliverAll, type DeliverDeps, parseSinks, sinkHolds } from '../../src/secret/deliver.js';
import { fingerprint } from '../../src/secret/facts.js';
import { deliverAnswer as deliverSecretResult, sent } from '../support/secret-answer.js';
import { prepareRecoveryFolder, recordPaths } from '../../src/secret/record.js';
import { Scrubber } from '../../src/output/scrub.js';
import { wrapOutStream, type OutStream } from '../../src/output/io.js';
import { Writable } from 'node:stream';
import type { CliError } from '../../src/errors/cli-error.js';
import { fakeContext, fakeIO, type FakeIO } from '../support/fakes.js';
import { waitFor } from '../support/run.js';

const SECRET = 'whsec_unit_c2VjcmV0LXZhbHVlLWZvci10ZXN0cw==';
const FP = fingerprint(SECRET);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-deliver-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A stream that records what it accepted, or refuses confirmed writes with `fail`. */
function stream(opts: { isTTY?: boolean; fail?: string; scrubber?: Scrubber } = {}): OutStream & { text: () => string } {
  let text = '';
  const scrub = (s: string) => (opts.scrubber ? opts.scrubber.scrub(s) : s);
  return {
    isTTY: Boolean(opts.isTTY),
    write: (s) => void (text += scrub(s)),
    writeConfirmed: async (s) => {
      if (opts.fail) throw Object.assign(new Error(`write ${opts.fail}`), { code: opts.fail });
      text += scrub(s);
    },
    text: () => text,
  };
}

function deps(over: Partial<DeliverDeps> = {}): DeliverDeps & { out: ReturnType<typeof stream>; err: ReturnType<typeof stream> } {
  const scrubber = new Scrubber();
  const out = stream();
  const err = stream({ scrubber });
  return {
    cwd: dir,
    env: { PATH: process.env.PATH, CHATCTL_TOKEN: 'tok_must_not_reach_the_sink', CHATCTL_CSRF_TOKEN: 'csrf_must_not_reach_the_sink' },
    stdout: out,
    stderr: err,
    scrubber,
    execTimeoutMs: 5_000,
    out,
    err,
    ...over,
  } as never;
}

/** Alive and not a zombie waiting to be reaped. */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const sinks = (...specs: string[]) => parseSinks(specs, { cwd: dir, env: { PATH: process.env.PATH }, json: false, stdoutIsTTY: false, force: false });

describe('sinkHolds: a destination read back', () => {
  it('file: holds the secret only as exactly its bytes, in a regular file reached without a link', () => {
    const [file] = sinks('file:s.whsec');
    expect(sinkHolds(file!, FP)).toBe(false); // absent
    writeFileSync(join(dir, 's.whsec'), SECRET);
    expect(sinkHolds(file!, FP)).toBe(true);
    writeFileSync(join(dir, 's.whsec'), `${SECRET}\n`);
    expect(sinkHolds(file!, FP)).toBe(false);
    rmSync(join(dir, 's.whsec'));
    writeFileSync(join(dir, 'real'), SECRET);
    symlinkSync(join(dir, 'real'), join(dir, 's.whsec'));
    expect(sinkHolds(file!, FP)).toBe(false);
    rmSync(join(dir, 's.whsec'));
    execFileSync('mkfifo', [join(dir, 's.whsec')]); // would block a plain read for ever
    expect(sinkHolds(file!, FP)).toBe(false);
    rmSync(join(dir, 's.whsec'));
    mkdirSync(join(dir, 's.whsec'));
    expect(sinkHolds(file!, FP)).toBe(false);
  });

  it('env-file: holds it when every NAME line has it as its value (plain or single-quoted, as written)', () => {
    const [env] = sinks('env-file:.env#WEBHOOK_SECRET');
    const at = join(dir, '.env');
    writeFileSync(at, `A=1\nWEBHOOK_SECRET=${SECRET}\nB=2\n`);
    expect(sinkHolds(env!, FP)).toBe(true);
    const odd = 'whsec a b';
    writeFileSync(at, `export WEBHOOK_SECRET='${odd}'\r\n`);
    expect(sinkHolds(env!, fingerprint(odd))).toBe(true);
    writeFileSync(at, `WEBHOOK_SECRET=${SECRET}\nWEBHOOK_SECRET=older\n`);
    expect(sinkHolds(env!, FP)).toBe(false);
    writeFileSync(at, `OTHER=${SECRET}\n`);
    expect(sinkHolds(env!, FP)).toBe(false);
    expect(sinkHolds(sinks('exec:cat')[0]!, FP)).toBe(false); // an exec: store cannot be asked
  });
});

describe('deliverAll', () => {
  it('every kind of sink gets exactly the secret; the outcome names each with the fingerprint', async () => {
    const d = deps();
    const got = join(dir, 'exec.out');
    const outcome = await deliverAll(
      sinks(
        'file:a.whsec',
        'env-file:.env#WEBHOOK_SECRET',
        `exec:cat > ${got}; printf '%s %s %s %s' "$CHATCTL_ENDPOINT_ID" "$CHATCTL_SECRET_FINGERPRINT" "\${CHATCTL_TOKEN-unset}" "\${CHATCTL_CSRF_TOKEN-unset}" > ${got}.env`,
        'stdout',
      ),
      { endpointId: 'we_1', secret: SECRET },
      d,
    );
    expect(outcome.failures).toEqual([]);
    expect(outcome.fingerprint).toBe(FP);
    expect(outcome.delivered).toEqual([
      { to: `file:${join(dir, 'a.whsec')}`, fingerprint: FP },
      { to: `env-file:${join(dir, '.env')}#WEBHOOK_SECRET`, fingerprint: FP },
      { to: expect.stringMatching(/^exec:cat > /), fingerprint: FP },
      { to: 'stdout', fingerprint: FP },
    ]);
    expect(readFileSync(join(dir, 'a.whsec'), 'utf8')).toBe(SECRET);
    expect(statSync(join(dir, 'a.whsec')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, '.env'), 'utf8')).toBe(`WEBHOOK_SECRET=${SECRET}\n`);
    expect(statSync(join(dir, '.env')).mode & 0o777).toBe(0o600);
    expect(readFileSync(got, 'utf8')).toBe(SECRET); // stdin: the secret, no newline
    expect(readFileSync(`${got}.env`, 'utf8')).toBe(`we_1 ${FP} unset unset`); // no credential variable
    expect(d.out.text()).toBe(`${SECRET}\n`);
    expect(d.err.text()).toBe('');
  });

  it('an exec: command can open /dev/stdin by path (a pipe, as kubectl --from-file=/dev/stdin needs), and sees SIGTERM on a timeout', async () => {
    const d = deps();
    const got = join(dir, 'by-path.out');
    const outcome = await deliverAll(sinks(`exec:cat /dev/stdin > ${got}; test -p /dev/stdin`), { endpointId: 'we_1', secret: SECRET }, d);
    expect(outcome.failures).toEqual([]);
    expect(readFileSync(got, 'utf8')).toBe(SECRET);
    // The command itself gets the SIGTERM (its trap runs), within the limit's grace.
    const marker = join(dir, 'termed');
    const slow = await deliverAll(sinks(`exec:cat >/dev/null; trap 'echo term > ${marker}; exit 7' TERM; sleep 5 & wait`), { endpointId: 'we_1', secret: SECRET }, deps({ execTimeoutMs: 300 }));
    expect(slow.failures).toEqual([{ to: expect.stringMatching(/^exec:/), reason: 'did not finish within 0.3 s' }]);
    expect(readFileSync(marker, 'utf8')).toBe('term\n');
  });

  it("an exec: command's output goes to stderr, with the secret scrubbed in any form", async () => {
    const d = deps();
    const cmd = `exec:cat; echo; printf '%s' "$(cat /dev/null)"; echo '"${SECRET.replace(/\//g, '\\/')}"' >&2; echo done`;
    const outcome = await deliverAll(sinks(cmd), { endpointId: 'we_1', secret: SECRET }, d);
    expect(outcome.failures).toEqual([]);
    expect(d.err.text()).not.toContain(SECRET.slice(6, 20));
    expect(d.err.text()).toContain('[REDACTED]');
    expect(d.err.text()).toContain('done');
    expect(d.out.text()).toBe('');
  });

  it("a secret under 6 characters (which a server should never send) never reaches stderr through an exec: command's output", async () => {
    for (const short of ['x', 'k3y!5']) {
      const d = deps();
      const outcome = await deliverAll(sinks(`exec:printf 'got: '; cat; printf '\\nstatus ok\\n'; cat >&2 </dev/null; echo "id $CHATCTL_ENDPOINT_ID"`), { endpointId: 'we_1', secret: short }, d);
      expect(outcome.failures).toEqual([]);
      expect(d.err.text()).toBe('[REDACTED: a line of output that held the secret]\nstatus ok\nid we_1\n');
    }
  });

  it('a failing exec: command is a failure with its status; the other sinks still get the secret', async () => {
    const d = deps();
    const outcome = await deliverAll(sinks('exec:cat >/dev/null; echo nope >&2; exit 3', 'file:b.whsec'), { endpointId: 'we_1', secret: SECRET }, d);
    expect(outcome.failures).toEqual([{ to: 'exec:cat >/dev/null; echo nope >&2; exit 3', reason: 'exited with status 3' }]);
    expect(outcome.delivered.map((x) => x.to)).toEqual([`file:${join(dir, 'b.whsec')}`]);
    expect(d.err.text()).toBe('nope\n');
  });

  it('an exec: command that exits 0 without reading all of its input is a failure, not a delivery', async () => {
    const d = deps();
    const got = join(dir, 'head.out');
    const bytes = Buffer.byteLength(SECRET);
    const outcome = await deliverAll(sinks('exec:true', `exec:head -c 3 > ${got}`, 'exec:cat >/dev/null', 'file:d.whsec'), { endpointId: 'we_1', secret: SECRET }, d);
    expect(outcome.failures).toEqual([
      { to: 'exec:true', reason: `exited 0 without reading all of its input (${bytes} of ${bytes} bytes left unread)` },
      { to: `exec:head -c 3 > ${got}`, reason: `exited 0 without reading all of its input (${bytes - 3} of ${bytes} bytes left unread)` },
    ]);
    expect(readFileSync(got, 'utf8')).toBe(SECRET.slice(0, 3));
    expect(outcome.delivered.map((x) => x.to)).toEqual(['exec:cat >/dev/null', `file:${join(dir, 'd.whsec')}`]);
  });

  // Not timed: the commands sleep an hour, so only the limit can end the
  // first, and a delivery that waited for the second's leftover would never
  // end. The limit is short, but long enough for a loaded machine to start
  // the shell and its background sleep.
  it('an exec: command past its time limit is ended, with whatever it started, and is a failure', async () => {
    const d = deps({ execTimeoutMs: 1_000 });
    const pidFile = join(dir, 'bg.pid');
    const outcome = await deliverAll(sinks(`exec:sleep 3600 & echo $! > ${pidFile}; sleep 3600`), { endpointId: 'we_1', secret: SECRET }, d);
    expect(outcome.failures).toEqual([{ to: expect.any(String), reason: 'did not finish within 1 s' }]);
    const bg = Number(readFileSync(pidFile, 'utf8'));
    try {
      // The background sleep was in its process group: it ends too (a
      // zombie until reaped), not in an hour.
      await waitFor(() => !running(bg), 20_000, 'the background sleep to be ended');
    } finally {
      if (running(bg)) process.kill(bg, 'SIGKILL');
    }
  });

  it('a command that exits 0 but leaves a process holding its output does not hang delivery', async () => {
    const d = deps();
    const pidFile = join(dir, 'holder.pid');
    const outcome = await deliverAll(sinks(`exec:cat >/dev/null; (sleep 3600 & echo $! > ${pidFile}); echo ok`), { endpointId: 'we_1', secret: SECRET }, d);
    const holder = Number(readFileSync(pidFile, 'utf8'));
    try {
      expect(outcome.failures).toEqual([]);
      expect(d.err.text()).toContain('ok');
      // Delivery ended while the process holding the command's output still runs.
      expect(running(holder)).toBe(true);
    } finally {
      process.kill(holder, 'SIGKILL');
    }
  });

  it('an abort (Ctrl-C) stops a running command and skips the rest', async () => {
    const controller = new AbortController();
    const d = deps({ signal: controller.signal });
    const started = join(dir, 'started');
    const delivering = deliverAll(sinks(`exec:cat >/dev/null; touch ${started}; sleep 30`, 'file:c.whsec'), { endpointId: 'we_1', secret: SECRET }, d);
    await waitFor(() => existsSync(started), 10_000, 'the command to run');
    controller.abort();
    const outcome = await delivering;
    expect(outcome.delivered).toEqual([]);
    expect(outcome.failures.map((f) => f.reason)).toEqual(['was stopped: chatctl was interrupted', 'not attempted: chatctl was interrupted']);
    expect(existsSync(join(dir, 'c.whsec'))).toBe(false);
  });

  it('stdout that fails (EPIPE, ENOSPC) is a failure, never a success', async () => {
    for (const code of ['EPIPE', 'ENOSPC']) {
      const d = deps({ stdout: stream({ fail: code }) });
      const outcome = await deliverAll(sinks('stdout'), { endpointId: 'we_1', secret: SECRET }, d);
      expect(outcome.failures).toEqual([{ to: 'stdout', reason: expect.stringContaining(code) }]);
    }
  });

  it('a folder gone since the check: a failure naming why, and nothing left behind', async () => {
    mkdirSync(join(dir, 'gone'));
    const planned = sinks('file:gone/x.whsec', 'env-file:gone/.env#S');
    rmSync(join(dir, 'gone'), { recursive: true });
    const outcome = await deliverAll(planned, { endpointId: 'we_1', secret: SECRET }, deps());
    expect(outcome.delivered).toEqual([]);
    expect(outcome.failures.map((f) => f.reason)).toEqual([expect.stringContaining('ENOENT'), expect.stringContaining('ENOENT')]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('{id} is substituted when asked (rotate --from)', async () => {
    const planned = parseSinks(['file:{id}.whsec'], { cwd: dir, env: {}, json: false, stdoutIsTTY: false, force: false, idPlaceholder: true });
    const outcome = await deliverAll(planned, { endpointId: 'we_9', secret: SECRET }, deps({ idPlaceholder: true }));
    expect(outcome.delivered).toEqual([{ to: `file:${join(dir, 'we_9.whsec')}`, fingerprint: FP }]);
    expect(readFileSync(join(dir, 'we_9.whsec'), 'utf8')).toBe(SECRET);
  });
});

// ---------------------------------------------------------------- deliverSecretResult

const body = (secret: string | null = SECRET, secretAvailable = secret !== null, endpoint: Record<string, unknown> = { id: 'we_1', version: 2 }) => ({
  data: { endpoint, secret, secretAvailable },
  meta: { requestId: 'req_1' },
});

function ctxWith(io: FakeIO, over: { stdout?: OutStream } = {}) {
  const cfg = join(dir, 'config');
  const ioWith = over.stdout ? { ...io, stdout: over.stdout } : io;
  return { ctx: fakeContext({ io: ioWith, configDir: cfg, cwd: dir, env: { PATH: process.env.PATH } }), cfg };
}

async function expectExit(code: number, p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (e) {
    expect((e as CliError).exitCode, (e as Error).message).toBe(code);
    return e as CliError;
  }
  throw new Error(`expected exit ${code}`);
}

async function expect13(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (e) {
    expect((e as CliError).exitCode, (e as Error).message).toBe(13);
    return e as CliError;
  }
  throw new Error('expected exit 13');
}

const recovered = (cfg: string) => {
  try {
    return readdirSync(join(cfg, 'recovered')).map((f) => join(cfg, 'recovered', f));
  } catch {
    return [];
  }
};

describe('deliverSecretResult', () => {
  it('success: the record made before the request is gone', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    await deliverSecretResult(ctx, {}, { sinks: sinks('file:ok.whsec') }, body(), 'Created.');
    expect(recovered(cfg)).toEqual([]);
    expect(io.out()).toContain(`Signing secret ${FP} delivered to:`);
    expect(io.out()).toContain(`file:${join(dir, 'ok.whsec')} (mode 0600)`);
    expect(io.out() + io.err()).not.toContain(SECRET);
  });

  it('--json with sinks: secret null, secretDelivery, secretFile for the file: sink', async () => {
    const io = fakeIO();
    const { ctx } = ctxWith(io);
    await deliverSecretResult(ctx, { json: true }, { sinks: sinks('env-file:.env#S', 'file:f.whsec') }, body(), 'x');
    expect(JSON.parse(io.out()).data).toEqual({
      endpoint: { id: 'we_1', version: 2 },
      secret: null,
      secretAvailable: true,
      secretFile: join(dir, 'f.whsec'),
      secretDelivery: [
        { to: `env-file:${join(dir, '.env')}#S`, fingerprint: FP },
        { to: `file:${join(dir, 'f.whsec')}`, fingerprint: FP },
      ],
    });
  });

  it('with `stdout` as a sink, the human result goes to stderr and stdout holds the secret line only', async () => {
    const io = fakeIO();
    const { ctx } = ctxWith(io);
    await deliverSecretResult(ctx, {}, { sinks: sinks('stdout') }, body(), 'Created.');
    expect(io.out()).toBe(`${SECRET}\n`);
    expect(io.err()).toContain('Created.');
    expect(io.err()).toContain(FP);
    expect(io.err()).not.toContain(SECRET);
  });

  it('--json alone onto a failing stdout (EPIPE): exit 13, the secret kept, the message names the file, endpoint and fingerprint', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io, { stdout: stream({ fail: 'EPIPE' }) });
    const e = await expect13(deliverSecretResult(ctx, { json: true }, { sinks: [], fallback: 'json' }, body(), 'x'));
    const [kept] = recovered(cfg);
    expect(readFileSync(kept!, 'utf8')).toContain(SECRET);
    expect(statSync(kept!).mode & 0o777).toBe(0o600);
    expect(e.message).toContain(kept!);
    expect(e.message).toContain('we_1');
    expect(e.message).toContain(FP);
    expect(e.details).toMatchObject({ recoveredPath: kept, endpointId: 'we_1', fingerprint: FP, failed: [{ to: 'stdout' }] });
    expect(JSON.stringify(e.toJSON()) + io.err()).not.toContain(SECRET);
  });

  it('a terminal that fails while the secret is shown: exit 13, kept', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io, { stdout: stream({ isTTY: true, fail: 'EIO' }) });
    await expect13(deliverSecretResult(ctx, {}, { sinks: [], fallback: 'tty' }, body(), 'x'));
    expect(readFileSync(recovered(cfg)[0]!, 'utf8')).toBe(SECRET);
  });

  it('an answer nested 5000 levels deep: --json prints it whole; a terminal shows the table and the secret once', async () => {
    const deep = JSON.parse('{"n":'.repeat(5000) + '1' + '}'.repeat(5000));
    const b = body(SECRET, true, { id: 'we_1', version: 2, deep });
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    await deliverSecretResult(ctx, { json: true }, { sinks: [], fallback: 'json' }, b, 'x');
    expect(io.out()).toBe(
      `{"data":{"endpoint":{"id":"we_1","version":2,"deep":${'{"n":'.repeat(5000)}1${'}'.repeat(5000)}},"secret":"${SECRET}","secretAvailable":true},"meta":{"requestId":"req_1"}}\n`,
    );
    const tty = fakeIO({ stdout: true });
    await deliverSecretResult(ctxWith(tty).ctx, {}, { sinks: [], fallback: 'tty' }, b, 'Created.');
    expect(tty.out().split(SECRET)).toHaveLength(2);
    expect(tty.out()).toContain('Created.');
    expect(tty.out()).toContain(FP);
    expect(recovered(cfg)).toEqual([]);
  });

  it.each([
    ['secret null', null, false],
    ['an empty secret', '', true],
    ['secretAvailable false', SECRET, false],
  ] as const)('%s: exit 13, nothing delivered, the way to a new one with the id shell-quoted', async (_l, secret, available) => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    const e = await expect13(deliverSecretResult(ctx, {}, { sinks: sinks('file:w.whsec') }, body(secret, available, { id: "we_'1", version: 7 }), 'x'));
    expect(e.message).toContain('the change was applied');
    expect(e.message).toContain('not available');
    expect(e.hint).toContain(`chatctl webhooks rotate 'we_'\\''1' --expected-version 7`);
    expect(existsSync(join(dir, 'w.whsec'))).toBe(false);
    expect(recovered(cfg)).toEqual([]);
  });

  it('no config folder to keep a record in: exit 3 before anything is sent, the folder and the reason named', async () => {
    const blocked = join(dir, 'not-a-folder');
    writeFileSync(blocked, '');
    const before = sent.count;
    for (const io of [fakeIO({ stdout: true }), fakeIO()]) {
      const e = await expectExit(3, deliverSecretResult(fakeContext({ io, configDir: blocked, cwd: dir, env: { PATH: process.env.PATH } }), {}, { sinks: sinks('exec:exit 1') }, body(), 'x'));
      expect(e.message).toContain(`${join(blocked, 'recovered')}: a file stands where a folder should be (ENOTDIR)`);
      expect(e.hint).toContain('nothing was sent');
      expect(io.out() + io.err()).not.toContain(SECRET);
    }
    expect(sent.count).toBe(before);
  });

  // A recovered/ folder that cannot be used (here a link to one on /proc,
  // which recovered/ must never be): found before the request, not after the
  // server applied a change whose secret would then have nowhere to go.
  it('recovered/ a link, or a config folder under /proc: exit 3 before anything is sent, the real reason named', async () => {
    const cfg = join(dir, 'config');
    mkdirSync(cfg, { mode: 0o700 });
    symlinkSync('/proc/self/fdinfo', join(cfg, 'recovered'));
    const before = sent.count;
    for (const [io, json] of [
      [fakeIO({ stdout: true }), false],
      [fakeIO(), true],
    ] as const) {
      const ctx = fakeContext({ io, configDir: cfg, cwd: dir, env: { PATH: process.env.PATH } });
      const e = await expectExit(3, deliverSecretResult(ctx, { json }, { sinks: sinks('exec:cat >/dev/null; exit 3') }, body(), 'x', { idempotencyKey: 'idem-123' }));
      expect(e.message).toContain(`${join(cfg, 'recovered')}: is a symbolic link; secrets are kept only in a folder of its own (remove the link)`);
    }
    const bad = '/proc/self/nonexistent/x';
    const e = await expectExit(3, deliverSecretResult(fakeContext({ io: fakeIO(), configDir: bad, cwd: dir, env: { PATH: process.env.PATH } }), {}, { sinks: sinks('exec:exit 4') }, body(), 'x'));
    expect(e.message).toContain(`${bad}/recovered: no such file or directory (ENOENT)`);
    expect(sent.count).toBe(before);
  });

  // The copy comes before the first byte goes to stdout, however quickly
  // stdout takes it: a terminal that is not reading (Ctrl-S) blocks the write
  // where no signal handler runs, a nearly full disk can take its last block
  // for the document, and a large document goes out in pieces (a hostile
  // review lost a secret each way when the copy was made after the write).
  it('--json: the record, holding the answer, exists before the document reaches stdout, and is gone after', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    const seen: string[][] = [];
    let text = '';
    const taking = new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        seen.push(recovered(cfg).map((f) => readFileSync(f, 'utf8')));
        done();
      },
    });
    await deliverSecretResult({ ...ctx, io: { ...ctx.io, stdout: wrapOutStream(taking, (s) => s) } }, { json: true }, { sinks: [], fallback: 'json' }, body(), 'x');
    expect(JSON.parse(text).data.secret).toBe(SECRET);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toHaveLength(1);
    expect(seen[0]![0]).toContain(SECRET);
    expect(recovered(cfg)).toEqual([]);
  });

  // A reader that does not read: the document waits in the stream, so a copy
  // is kept from the moment the write is made until the reader has it; a
  // second signal meanwhile names it (exit 13).
  it('--json into a stream that holds the document: the copy is kept while it waits, named by a second signal, removed once it is out', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    let release: (() => void) | undefined;
    let text = '';
    const slow = new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        release = done;
      },
    });
    let lastWords: (() => number) | undefined;
    ctx.setLastWords = (w) => void (lastWords = w ?? lastWords);
    const wrapped = wrapOutStream(slow, (s) => s);
    const run = deliverSecretResult({ ...ctx, io: { ...ctx.io, stdout: wrapped } }, { json: true }, { sinks: [], fallback: 'json' }, body(), 'x', { idempotencyKey: 'idem-w' });
    await new Promise((r) => setImmediate(r));
    const [kept] = recovered(cfg);
    expect(readFileSync(kept!, 'utf8')).toContain(SECRET);
    expect(statSync(kept!).mode & 0o777).toBe(0o600);
    // What a second signal says now: the kept copy, the endpoint, the key; exit 13.
    expect(lastWords!()).toBe(13);
    // The process would end now: the secret is kept alone, and that file is named.
    const [alone] = recovered(cfg);
    expect(alone).toMatch(/\.secret$/);
    expect(readFileSync(alone!, 'utf8')).toBe(SECRET);
    expect(io.err()).toContain(alone!);
    expect(io.err()).toContain('idem-w');
    expect(io.err()).not.toContain(SECRET);
    release!();
    await run;
    expect(JSON.parse(text).data.secret).toBe(SECRET);
    expect(recovered(cfg)).toEqual([]);
  });

  // A double Ctrl-C: the first stops a hanging destination, the second lands
  // while the outcome (13) is rendered, before it is reported.
  it('a second signal after a failed delivery, while the result is shown, still says 13 and where the copy is', async () => {
    const io = fakeIO();
    let words: (() => number) | undefined;
    let atRender: (() => number) | undefined | 'unseen' = 'unseen';
    const stdout: OutStream = { isTTY: false, write: () => void (atRender === 'unseen' && (atRender = words)) };
    const { ctx, cfg } = ctxWith(io, { stdout });
    ctx.setLastWords = (w) => void (words = w);
    const e = await expect13(deliverSecretResult(ctx, {}, { sinks: sinks('exec:exit 3') }, body(), 'x', { idempotencyKey: 'idem-2nd' }));
    expect(atRender).not.toBe('unseen');
    expect(typeof atRender, 'no last words while the result was shown').toBe('function');
    expect((atRender as unknown as () => number)()).toBe(13);
    const [kept] = recovered(cfg);
    expect(io.err()).toContain(kept!);
    expect(io.err()).toContain('idem-2nd');
    expect(io.err()).not.toContain(SECRET);
    // Once the error is thrown (and reported by the caller), nothing is said twice.
    expect(words).toBeUndefined();
    expect(e.message).toContain(kept!);
  });

  // Killed after an odd answer was kept whole (data.secret an object), then
  // re-run with the same key: the server replays it without a secret. The
  // whole answer is not a secret to deliver.
  it('a re-run whose replay has no secret does not deliver a whole odd answer kept under its key as if it were the secret', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    const whole = JSON.stringify({ data: { endpoint: { id: 'we_1' }, secret: { value: SECRET } } });
    const keptAt = recordPaths(cfg, { op: 'rotate', scope: 'org_1/app_1/env_1', endpointId: 'we_1', idempotencyKey: 'idem-odd' }).answer;
    prepareRecoveryFolder(cfg);
    writeFileSync(keptAt, whole, { mode: 0o600 });
    const e = await expect13(deliverSecretResult(ctx, {}, { sinks: sinks('file:odd.whsec') }, body(null, false), 'x', { endpointId: 'we_1', idempotencyKey: 'idem-odd' }));
    expect(e.message).toContain("applied by an earlier run's request");
    expect(existsSync(join(dir, 'odd.whsec'))).toBe(false);
    // The whole answer is still kept, named after the key.
    expect(recovered(cfg)).toEqual([keptAt]);
    expect(readFileSync(keptAt, 'utf8')).toBe(whole);
  });

  it("a destination that is the kept copy's own name (--force): the copy is not removed from under it once delivered", async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    const target = recordPaths(cfg, { op: 'rotate', scope: 'org_1/app_1/env_1', endpointId: 'we_1', idempotencyKey: 'idem-same' }).secret;
    mkdirSync(join(cfg, 'recovered'), { recursive: true, mode: 0o700 });
    const forced = parseSinks([`file:${target}`], { cwd: dir, env: { PATH: process.env.PATH }, json: false, stdoutIsTTY: false, force: true });
    await deliverSecretResult(ctx, {}, { sinks: forced }, body(), 'x', { idempotencyKey: 'idem-same' });
    expect(readFileSync(target, 'utf8')).toBe(SECRET);
  });

  it('an exec: sink that times out (short limit injected): exit 13, kept, the stderr of the command scrubbed', async () => {
    const io = fakeIO();
    const { ctx, cfg } = ctxWith(io);
    const e = await expect13(deliverSecretResult(ctx, {}, { sinks: sinks('exec:cat >&2; sleep 30') }, body(), 'x', { execTimeoutMs: 300 }));
    expect(e.message).toContain('did not finish within 0.3 s');
    expect(readFileSync(recovered(cfg)[0]!, 'utf8')).toBe(SECRET);
    expect(io.err()).toContain('[REDACTED]');
    expect(io.err() + io.out() + e.message).not.toContain(SECRET);
  });
});
