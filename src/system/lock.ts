// The one lock: `config.json.lock`, a journal's `FILE.lock`, an endpoint's delivery. Taken by creating the owner's
// record (pid, start time, boot, pid namespace, host, nonce) exclusively at its name. Stale only when its owner is dead
// (pid gone or reused, or a reboot since); another host's or pid namespace's counts as held; one with no readable
// record is stale after 2 s. Breaking it is itself exclusive: the breaker takes a token (`NAME.lock.break-<id>.<n>`; a
// dead taker's is passed over by taking n+1, never removed while its lock exists), checks the lock is still the one
// judged stale, renames it aside and checks again before removing it.
import { closeSync, constants, linkSync, lstatSync, openSync, readdirSync, readlinkSync, readFileSync, readSync, renameSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { type CliError, configError, interrupted } from '../errors/cli-error.js';
import { isTempOf, attempt, randomBytes, writeFileAtomic } from './files.js';
import type { Clock } from './clock.js';

export const LOCK_WAIT_MS = 10_000;
const WAIT_NOTICE_MS = 1_000;
/** A lock with no record: a crash between creating and writing it (only where link() is unsupported). */
export const UNREADABLE_STALE_MS = 2_000;
/** Temporary files of a killed writer (they live for microseconds otherwise). */
export const LEFTOVER_MS = 60_000;
const MAX_TOKENS = 64;

/** What the lock needs from the machine (tests hand in fakes); undefined where unknown. */
export interface LockHost extends Clock {
  readonly pid: number;
  readonly hostname: string;
  startTime(pid: number): string | undefined;
  bootId(): string | undefined;
  pidNamespace(): string | undefined;
  isAlive(pid: number): boolean;
  random(): number;
  nonce(): string;
}

type LockRecord = { pid: number } & Partial<Record<'start' | 'boot' | 'ns' | 'host' | 'nonce', string | undefined>>;

/** What is locked ('the journal'), its error when the lock cannot be taken, and when a live owner holds it past the wait. */
export interface LockSubject {
  name: string;
  error: (message: string, hint?: string) => CliError;
  busy: (verdict: Verdict, lockPath: string) => CliError;
}

const CONFIG_FILE: LockSubject = {
  name: 'the config file',
  error: configError,
  busy: (v, lockPath) => configError(`the config file is locked by ${v.holder} (${lockPath})`, 'wait for it to finish; if no chatctl is running, remove the lock file'),
};

interface LockOptions {
  host: LockHost;
  signal: AbortSignal;
  /** How long a live owner is waited for (Ctrl-C ends the wait): LOCK_WAIT_MS unless said; 0 refuses at once. */
  waitMs?: number | undefined;
  /** Called once, when the wait has lasted WAIT_NOTICE_MS, with who holds the lock. */
  onWait?: (holder: string) => void;
  subject?: LockSubject;
  /** Names of another writer's temporary files for the locked file (swept like system/files.ts's). */
  leftover?: ((name: string) => boolean) | undefined;
}

/** stillHeld: whether the lock file is still this owner's (checked before committing a write). */
export type HeldLock = { stillHeld(): boolean; release(): void };

/** Runs `fn` holding the lock; `fn` is synchronous, so no signal lands in the middle of it. */
export async function withLock<T>(lockPath: string, opts: LockOptions, fn: (lock: HeldLock) => T): Promise<T> {
  const lock = await acquireLock(lockPath, opts);
  try {
    return fn(lock);
  } finally {
    lock.release();
  }
}

type Seen = { ino: number; size: number; mtimeMs: number; text: string };

export async function acquireLock(lockPath: string, opts: LockOptions): Promise<HeldLock> {
  const { host, subject = CONFIG_FILE, waitMs = LOCK_WAIT_MS } = opts;
  const nonce = host.nonce();
  const rec: LockRecord = { pid: host.pid, start: host.startTime(host.pid), boot: host.bootId(), ns: host.pidNamespace(), host: host.hostname, nonce };
  const text = JSON.stringify(rec) + '\n';
  const started = host.now();
  let delay = 4;
  let told = false;
  let spins = 0;
  for (;;) {
    if (opts.signal.aborted) throw interrupted();
    const ino = publish(lockPath, text, subject);
    if (ino !== undefined) {
      const owned = { ino, text };
      sweep(lockPath, host, nonce, opts.leftover);
      return {
        stillHeld: () => isOurs(lockPath, owned),
        release: () => {
          if (isOurs(lockPath, owned)) rmSync(lockPath, { force: true });
        },
      };
    }
    const seen = inspectLock(lockPath, subject);
    if (seen === undefined) continue;
    const verdict = judge(seen, host);
    // Broken: take it at once (a hundred times in a row at most, then wait like the others).
    if (verdict.stale && breakStale(lockPath, seen, text, host, subject) && ++spins <= 100) continue;
    spins = 0;
    const waited = host.now() - started;
    // A stale lock not broken here is being broken by another process: its lock answers soon.
    if (waited >= (verdict.stale ? Math.max(waitMs, LOCK_WAIT_MS) : waitMs)) throw subject.busy(verdict, lockPath);
    if (!told && waited >= WAIT_NOTICE_MS) {
      told = true;
      opts.onWait?.(verdict.holder);
    }
    try {
      await host.sleep(delay + Math.floor(host.random() * delay), opts.signal);
    } catch (err) {
      if (opts.signal.aborted) throw interrupted();
      throw err;
    }
    delay = Math.min(delay * 2, 100);
  }
}

/** `act`'s answer, or undefined when it fails with `expected`; any other failure is the subject's error. */
function expecting<T>(path: string, subject: LockSubject, expected: 'EEXIST' | 'ENOENT', act: () => T): T | undefined {
  try {
    return act();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === expected) return undefined;
    throw subject.error(`cannot lock ${subject.name} (${path}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** Its inode, or undefined when the name exists. */
const publish = (target: string, text: string, subject: LockSubject) => expecting(target, subject, 'EEXIST', () => writeFileAtomic(target, text, { how: 'exclusive', durable: false }));

/** The lock file as it is now; undefined when there is none. Never follows a link or opens a FIFO. */
export function inspectLock(path: string, subject: LockSubject = CONFIG_FILE): Seen | undefined {
  const st = expecting(path, subject, 'ENOENT', () => lstatSync(path));
  if (st === undefined) return undefined;
  if (!st.isFile()) throw subject.error(`the lock file ${path} is not a regular file`, `remove it: rm ${path}`);
  const fd = expecting(path, subject, 'ENOENT', () => openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)));
  if (fd === undefined) return undefined;
  try {
    const buf = Buffer.alloc(1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, text: buf.subarray(0, n).toString('utf8') };
  } finally {
    closeSync(fd);
  }
}

const sameLock = (a: Seen, b: Seen) => a.ino === b.ino && a.size === b.size && a.text === b.text;

function isOurs(lockPath: string, owned: { ino: number; text: string }): boolean {
  const now = attempt(() => inspectLock(lockPath));
  return now !== undefined && now.ino === owned.ino && now.text === owned.text;
}

export function parseRecord(text: string): LockRecord | undefined {
  const r: Record<string, unknown> | null | undefined = attempt(() => JSON.parse(text));
  if (typeof r !== 'object' || r === null || Array.isArray(r) || typeof r.pid !== 'number' || !Number.isSafeInteger(r.pid) || r.pid <= 0) return undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { pid: r.pid, start: str(r.start), boot: str(r.boot), ns: str(r.ns), host: str(r.host), nonce: str(r.nonce) };
}

export interface Verdict {
  stale: boolean;
  /** Who holds it, for messages: `chatctl (pid 42)`, `chatctl (pid 42 on build-7)`, `an unknown process`. */
  holder: string;
  /** `pid 42`, `pid 42 on build-7`; undefined when the record cannot be read. */
  owner?: string;
}

/** Whether a lock (or a breaker's token) was left by a process that no longer runs. */
export function judge(seen: Pick<Seen, 'text' | 'mtimeMs'>, host: LockHost): Verdict {
  const rec = parseRecord(seen.text);
  const age = host.now() - seen.mtimeMs;
  if (rec === undefined) return { stale: age > UNREADABLE_STALE_MS, holder: 'an unknown process' };
  const elsewhere = rec.host !== undefined && rec.host !== host.hostname;
  const owner = `pid ${rec.pid}${elsewhere ? ` on ${rec.host}` : ''}`;
  const held = (stale: boolean): Verdict => ({ stale, holder: `chatctl (${owner})`, owner });
  if (elsewhere) return held(false);
  const boot = host.bootId();
  if (rec.boot !== undefined && boot !== undefined && rec.boot !== boot) return held(true);
  const ns = host.pidNamespace();
  if (rec.ns !== undefined && ns !== undefined && rec.ns !== ns) return held(false);
  if (!host.isAlive(rec.pid)) return held(true);
  const start = rec.start === undefined ? undefined : host.startTime(rec.pid);
  return held(start !== undefined && start !== rec.start);
}

/** Removes the stale lock `seen` if this process wins the right to: true when it is gone, false when a live breaker is at it or it changed. */
export function breakStale(lockPath: string, seen: Seen, myText: string, host: LockHost, subject: LockSubject = CONFIG_FILE): boolean {
  const nonce = parseRecord(seen.text)?.nonce;
  const id = nonce !== undefined && /^[A-Za-z0-9_-]{6,64}$/.test(nonce) ? nonce : `i${seen.ino}-m${Math.floor(seen.mtimeMs)}-s${seen.size}`;
  const passed: string[] = [];
  let token: string | undefined;
  let vanished = 0;
  for (let n = 0; n < MAX_TOKENS; n++) {
    const name = `${lockPath}.break-${id}.${n}`;
    if (publish(name, myText, subject) !== undefined) {
      token = name;
      break;
    }
    const other = inspectLock(name, subject);
    if (other === undefined) {
      // Removed meanwhile, so its lock is gone: try the same number again.
      if (inspectLock(lockPath, subject) === undefined) return true;
      if (++vanished > MAX_TOKENS) return false;
      n--;
      continue;
    }
    if (!judge(other, host).stale) return false; // a live breaker is at it
    passed.push(name);
  }
  if (token === undefined) return false;
  let gone = false;
  try {
    const now = inspectLock(lockPath, subject);
    if (now === undefined || !sameLock(now, seen)) {
      gone = true; // broken by someone else already
      return now === undefined;
    }
    const moved = `${lockPath}.stale-${host.nonce()}`;
    if (expecting(lockPath, subject, 'ENOENT', () => renameSync(lockPath, moved) ?? true) === undefined) return false;
    const got = inspectLock(moved, subject);
    if (got !== undefined && sameLock(got, seen)) {
      gone = true;
      rmSync(moved, { force: true });
      return true;
    }
    // Not the lock judged stale (cannot happen while the token is held): put it back, and wait.
    attempt(() => linkSync(moved, lockPath)); // failing when someone took the free name: their lock stands
    rmSync(moved, { force: true });
    return false;
  } finally {
    // Tokens of a lock that is gone can go; while it exists, only ours.
    rmSync(token, { force: true });
    if (gone) for (const t of passed) rmSync(t, { force: true });
  }
}

/** Holding the lock, removes what killed lockers left: others' tokens; temporary files (the locked file's, the lock's) and moved-aside locks older than a minute. */
function sweep(lockPath: string, host: LockHost, ownNonce: string, leftover?: (name: string) => boolean): void {
  const dir = dirname(lockPath);
  const lockName = basename(lockPath);
  const fileName = lockName.replace(/\.lock$/, '');
  for (const name of attempt(() => readdirSync(dir)) ?? []) {
    const p = join(dir, name);
    attempt(() => {
      if (name.startsWith(`${lockName}.break-`)) {
        if (!name.startsWith(`${lockName}.break-${ownNonce}.`)) rmSync(p, { force: true });
      } else if (isTempOf(name, fileName) || name.startsWith(`${lockName}.stale-`) || leftover?.(name)) {
        if (host.now() - lstatSync(p).mtimeMs > LEFTOVER_MS) rmSync(p, { force: true });
      }
    });
  }
}

/** /proc/<pid>/stat field 22: the start time in clock ticks after boot. */
export function procStartTime(statText: string): string | undefined {
  const close = statText.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = statText.slice(close + 2).split(' ');
  const v = fields[22 - 3];
  return v !== undefined && /^\d+$/.test(v) ? v : undefined;
}

export function systemLockHost(ctx: Clock & { random(): number }): LockHost {
  const proc = <T>(read: () => T): T | undefined => (process.platform === 'linux' ? attempt(read) : undefined);
  let machine: { boot: string | undefined; ns: string | undefined } | undefined;
  const ids = () => (machine ??= { boot: proc(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined), ns: proc(() => readlinkSync('/proc/self/ns/pid')) });
  return {
    pid: process.pid,
    hostname: hostname(),
    startTime: (pid) => proc(() => procStartTime(readFileSync(`/proc/${pid}/stat`, 'utf8'))),
    bootId: () => ids().boot,
    pidNamespace: () => ids().ns,
    isAlive(pid) {
      if (!Number.isSafeInteger(pid) || pid <= 0) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch (err) {
        return (err as NodeJS.ErrnoException).code !== 'ESRCH';
      }
    },
    now: () => ctx.now(),
    sleep: (ms, signal) => ctx.sleep(ms, signal),
    random: () => ctx.random(),
    nonce: () => randomBytes(9).toString('hex'),
  };
}
