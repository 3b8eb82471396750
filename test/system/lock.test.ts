// The config lock's rules with an injected machine: pids, start times, boot,
// host, clock and sleep are fakes, the files are real (a temporary folder).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LEFTOVER_MS, LOCK_WAIT_MS, UNREADABLE_STALE_MS, breakStale, inspectLock, judge, parseRecord, procStartTime, withLock, type LockHost } from '../../src/system/lock.js';
import { CliError } from '../../src/errors/cli-error.js';

let dir: string;
let lockPath: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-lock-'));
  lockPath = join(dir, 'config.json.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface FakeHost extends LockHost {
  clock: number;
  alive: Map<number, string | undefined>; // pid → start time
  slept: number[];
  boot: string | undefined;
  ns: string | undefined;
  onSleep?: () => void;
}

function fakeHost(pid = 100): FakeHost {
  let n = 0;
  const h: FakeHost = {
    pid,
    hostname: 'host-a',
    clock: Date.now(), // file mtimes are real: the fake clock starts at the real time
    alive: new Map([[pid, 's100']]),
    slept: [],
    boot: 'boot-1',
    ns: 'pid:[1]',
    startTime: (p) => h.alive.get(p),
    bootId: () => h.boot,
    pidNamespace: () => h.ns,
    isAlive: (p) => h.alive.has(p),
    now: () => h.clock,
    sleep: async (ms, signal) => {
      h.slept.push(ms);
      h.clock += ms;
      h.onSleep?.();
      if (signal.aborted) throw signal.reason;
    },
    random: () => 0.5,
    nonce: () => `n${pid}x${++n}`.padEnd(8, '0'),
  };
  return h;
}

const record = (r: Record<string, unknown>) => JSON.stringify(r) + '\n';
const signal = () => new AbortController().signal;
const files = () => readdirSync(dir).sort();

async function failure(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    return err as CliError;
  }
  throw new Error('expected a failure');
}

describe('taking and releasing', () => {
  it('holds the lock with its record while fn runs, removes it after, leaves nothing', async () => {
    const host = fakeHost();
    const seen = await withLock(lockPath, { host, signal: signal() }, (lock) => {
      expect(lock.stillHeld()).toBe(true);
      return parseRecord(readFileSync(lockPath, 'utf8'));
    });
    expect(seen).toMatchObject({ pid: 100, start: 's100', boot: 'boot-1', ns: 'pid:[1]', host: 'host-a' });
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(files()).toEqual([]);
    expect(host.slept).toEqual([]);
  });

  it('the lock file is 0600', async () => {
    await withLock(lockPath, { host: fakeHost(), signal: signal() }, () => {
      expect(statSync(lockPath).mode & 0o777).toBe(0o600);
    });
  });

  it('an error in fn releases the lock', async () => {
    const e = await failure(
      withLock(lockPath, { host: fakeHost(), signal: signal() }, () => {
        throw new CliError('x', 'boom', 3);
      }),
    );
    expect(e.message).toBe('boom');
    expect(files()).toEqual([]);
  });

  it('a lock replaced while held is not ours: stillHeld is false and release leaves the new one', async () => {
    await withLock(lockPath, { host: fakeHost(), signal: signal() }, (lock) => {
      rmSync(lockPath);
      writeFileSync(lockPath, record({ pid: 7, nonce: 'someoneelse' }));
      expect(lock.stillHeld()).toBe(false);
    });
    expect(readFileSync(lockPath, 'utf8')).toContain('someoneelse');
  });
});

describe('waiting for a live lock', () => {
  it('polls with backoff, says who holds it once after a second, and gives up after the wait with exit 3 naming the lock', async () => {
    const host = fakeHost();
    host.alive.set(200, 's200');
    writeFileSync(lockPath, record({ pid: 200, start: 's200', boot: 'boot-1', ns: 'pid:[1]', host: 'host-a', nonce: 'holder200' }));
    const told: string[] = [];
    const e = await failure(withLock(lockPath, { host, signal: signal(), onWait: (h) => told.push(h) }, () => 'never'));
    expect(e.exitCode).toBe(3);
    expect(e.message).toContain(lockPath);
    expect(e.message).toContain('pid 200');
    expect(told).toEqual(['chatctl (pid 200)']);
    const waited = host.slept.reduce((a, b) => a + b, 0);
    expect(waited).toBeGreaterThanOrEqual(LOCK_WAIT_MS);
    expect(waited).toBeLessThan(LOCK_WAIT_MS + 200);
    expect(Math.max(...host.slept)).toBeLessThanOrEqual(150);
    expect(host.slept[0]).toBeLessThan(host.slept[3]!);
    expect(readFileSync(lockPath, 'utf8')).toContain('holder200'); // untouched
    expect(files()).toEqual(['config.json.lock']);
  });

  it('takes the lock as soon as the holder releases it', async () => {
    const host = fakeHost();
    host.alive.set(200, 's200');
    writeFileSync(lockPath, record({ pid: 200, start: 's200', nonce: 'holder200' }));
    host.onSleep = () => host.slept.length === 3 && rmSync(lockPath);
    expect(await withLock(lockPath, { host, signal: signal() }, () => 'ran')).toBe('ran');
    expect(host.slept).toHaveLength(3);
    expect(files()).toEqual([]);
  });

  it('an abort (Ctrl-C) ends the wait with exit 130; no temporary file, the holder untouched', async () => {
    const host = fakeHost();
    host.alive.set(200, 's200');
    writeFileSync(lockPath, record({ pid: 200, start: 's200', nonce: 'holder200' }));
    const ac = new AbortController();
    host.onSleep = () => host.slept.length === 2 && ac.abort();
    const e = await failure(withLock(lockPath, { host, signal: ac.signal }, () => 'never'));
    expect(e.exitCode).toBe(130);
    expect(files()).toEqual(['config.json.lock']);
    expect(host.slept).toHaveLength(2);
  });

  it('an abort before the lock is taken ends at once', async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await failure(withLock(lockPath, { host: fakeHost(), signal: ac.signal }, () => 1))).exitCode).toBe(130);
    expect(files()).toEqual([]);
  });
});

describe('judging a lock', () => {
  const base = { boot: 'boot-1', ns: 'pid:[1]', host: 'host-a', nonce: 'abcdef12' };
  const verdict = (host: FakeHost, text: string, ageMs = 0) => judge({ text, mtimeMs: host.now() - ageMs }, host).stale;

  it.each([
    ['owner alive, same start time', { pid: 200, start: 's200' }, false],
    ['owner dead', { pid: 201, start: 's201' }, true],
    ['pid reused: alive with another start time', { pid: 200, start: 's-earlier' }, true],
    ['owner alive, start time not recorded', { pid: 200 }, false],
    ['another boot', { pid: 200, start: 's200', boot: 'boot-0' }, true],
    ['another host (cannot be judged)', { pid: 201, host: 'host-b' }, false],
    ['another pid namespace (cannot be judged)', { pid: 201, ns: 'pid:[2]' }, false],
  ])('%s → stale: %s', (_label, rec, stale) => {
    const host = fakeHost();
    host.alive.set(200, 's200');
    expect(verdict(host, record({ ...base, ...rec }))).toBe(stale);
  });

  it('an old lock of a live owner is not stale: age alone never breaks a chatctl lock', () => {
    const host = fakeHost();
    host.alive.set(200, 's200');
    expect(verdict(host, record({ ...base, pid: 200, start: 's200' }), 10 * 60_000)).toBe(false);
  });

  it.each([
    ['empty', ''],
    ['garbage', 'x\u0000y'],
    ['JSON without a pid', '{"owner":"me"}'],
    ['pid 0 (would signal the process group)', '{"pid":0}'],
    ['negative pid', '-1'],
    ['a bare pid, no record', '200'],
    ['a JSON array', '[200]'],
  ])('no readable record (%s): live for 2 s, then stale', (_label, text) => {
    const host = fakeHost();
    expect(verdict(host, text, 0)).toBe(false);
    expect(verdict(host, text, UNREADABLE_STALE_MS + 1)).toBe(true);
  });

  it('procStartTime reads field 22, whatever the command name holds', () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3)); // field 3 is at index 0
    expect(procStartTime(`4242 (we ird) name)) ${fields.join(' ')}`)).toBe('22');
    expect(procStartTime('garbage')).toBeUndefined();
  });
});

describe('breaking a stale lock', () => {
  const stale = () => record({ pid: 999, start: 's999', boot: 'boot-1', host: 'host-a', nonce: 'dead0999' });

  it('a dead owner’s lock is broken and taken; nothing is left behind', async () => {
    const host = fakeHost();
    writeFileSync(lockPath, stale());
    const inside = await withLock(lockPath, { host, signal: signal() }, () => parseRecord(readFileSync(lockPath, 'utf8'))?.pid);
    expect(inside).toBe(100);
    expect(host.slept).toEqual([]);
    expect(files()).toEqual([]);
  });

  it('a breaker that finds a live breaker’s token does not touch the lock', () => {
    const host = fakeHost();
    host.alive.set(300, 's300');
    writeFileSync(lockPath, stale());
    const token = `${lockPath}.break-dead0999.0`;
    writeFileSync(token, record({ pid: 300, start: 's300', host: 'host-a', nonce: 'breaker3' }));
    const seen = inspectLock(lockPath)!;
    expect(breakStale(lockPath, seen, record({ pid: 100 }), host)).toBe(false);
    expect(readFileSync(lockPath, 'utf8')).toBe(stale());
    expect(existsSync(token)).toBe(true);
  });

  it('a token left by a dead breaker is passed over (next number), then all tokens go with the lock', () => {
    const host = fakeHost();
    writeFileSync(lockPath, stale());
    writeFileSync(`${lockPath}.break-dead0999.0`, record({ pid: 301, start: 's301', host: 'host-a' }));
    writeFileSync(`${lockPath}.break-dead0999.1`, record({ pid: 302, start: 's302', host: 'host-a' }));
    expect(breakStale(lockPath, inspectLock(lockPath)!, record({ pid: 100 }), host)).toBe(true);
    expect(files()).toEqual([]);
  });

  it('a late breaker, whose stale lock was already replaced by a live one, leaves the live one alone', () => {
    const host = fakeHost();
    writeFileSync(lockPath, stale());
    const seen = inspectLock(lockPath)!;
    // Someone else broke it and a live writer took the lock meanwhile.
    rmSync(lockPath);
    host.alive.set(400, 's400');
    writeFileSync(lockPath, record({ pid: 400, start: 's400', host: 'host-a', nonce: 'live0400' }));
    expect(breakStale(lockPath, seen, record({ pid: 100 }), host)).toBe(false);
    expect(readFileSync(lockPath, 'utf8')).toContain('live0400');
    expect(files()).toEqual(['config.json.lock']);
  });

  it('a lock of unknown content is named by inode, mtime and size for its token', () => {
    const host = fakeHost();
    writeFileSync(lockPath, '');
    const old = (host.now() - UNREADABLE_STALE_MS - 1000) / 1000;
    utimesSync(lockPath, old, old);
    const seen = inspectLock(lockPath)!;
    expect(judge(seen, host).stale).toBe(true);
    expect(breakStale(lockPath, seen, record({ pid: 100 }), host)).toBe(true);
    expect(files()).toEqual([]);
  });

  it('a hard link of the lock (another name for the same stale lock) is not confused with a new lock', () => {
    const host = fakeHost();
    writeFileSync(lockPath, stale());
    linkSync(lockPath, join(dir, 'elsewhere'));
    expect(breakStale(lockPath, inspectLock(lockPath)!, record({ pid: 100 }), host)).toBe(true);
    expect(files()).toEqual(['elsewhere']);
  });
});

describe('leftovers of killed writers', () => {
  it('holding the lock, removes tokens of gone locks and temporary files older than a minute; keeps fresh ones', async () => {
    const host = fakeHost();
    const old = (host.now() - LEFTOVER_MS - 1000) / 1000;
    for (const name of ['.config.json.lock.0123456789abcdef.tmp', '.config.json.0123456789abcdef.tmp', 'config.json.lock.stale-abc']) {
      writeFileSync(join(dir, name), 'x');
      utimesSync(join(dir, name), old, old);
    }
    writeFileSync(join(dir, '.config.json.fedcba9876543210.tmp'), 'x');
    writeFileSync(join(dir, 'config.json.lock.break-gone1234.0'), record({ pid: 5 }));
    writeFileSync(join(dir, 'config.json'), '{}');
    await withLock(lockPath, { host, signal: signal() }, () => undefined);
    expect(files()).toEqual(['.config.json.fedcba9876543210.tmp', 'config.json']);
  });
});
