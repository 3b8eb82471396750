// The journal of a `--from` run (docs/fleet.md): append-only NDJSON, mode
// 0600, of keys, versions and fingerprints (never a secret), so that a re-run
// goes on where a killed run stopped without rotating any endpoint twice.
import { closeSync, lstatSync, openSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { RotationMode, Scope } from '../../../api/schemas.js';
import { CliError, EXIT, usageError } from '../../../errors/cli-error.js';
import type { Context } from '../../../context.js';
import { acquireLock, systemLockHost, type LockSubject } from '../../../system/lock.js';
import { writeFileAtomic } from '../../../system/files.js';
import { escapeInline } from '../../../output/json.js';
import { scopeKey } from '../../../secret/record.js';
import { fileChunks, splitLines, type ManifestItem } from './manifest.js';

export type JournalScope = { baseUrl: string } & Scope;
export type DeliveryRecord = { to: string; fingerprint: string };

/** runAt: in a compacted journal, the start of the run that wrote the record (its runs are merged). */
type Item = { runAt?: string };

export type JournalRecord =
  | { t: 'run'; v: 1; at: string; scope: JournalScope }
  | ({ t: 'send'; id: string; key: string; ev: number; mode: RotationMode } & Item)
  /** recovered: the copy kept while it is delivered. */
  | ({ t: 'applied'; id: string; key: string; version: number | null; fp: string; recovered?: string | null; at?: string } & Item)
  | ({ t: 'ok'; id: string; key: string; version: number | null; fp: string; delivery: DeliveryRecord[]; requestId: string; at?: string } & Item)
  /** whole: the copy kept is a whole odd answer, not a secret to deliver again. */
  | ({ t: 'fail'; id: string; key: string; applied: boolean | null; exitCode: number; code: string; recovered?: string | null; whole?: boolean } & Item)
  | { t: 'end'; at: string; clean: boolean };

/**
 * What earlier runs left for one endpoint. at: when the run that wrote its
 * latest record started; appliedAt: what --every measures from; run: that
 * run's place among the "run" lines; settled: the endpoint's applied rotation
 * with the highest version, when an earlier key made it.
 */
export interface Prior {
  state: 'sent' | 'applied' | 'ok' | 'refused';
  key: string;
  ev: number;
  mode: RotationMode;
  version: number | null;
  fp: string | null;
  delivery: DeliveryRecord[] | null;
  requestId: string | null;
  recovered: string | null;
  whole: boolean;
  at?: string;
  appliedAt?: string;
  run?: number;
  settled?: Prior;
}

/** unreadable: lines cut short by a crash; openFrom: the first run whose work is not known finished; runAts: when each run started. */
export type LoadedJournal = { scope: JournalScope | null; priors: Map<string, Prior>; unreadable: number; openFrom: number; runAts: string[]; lastEnd?: Extract<JournalRecord, { t: 'end' }> };

/** The first run whose work the coming run finishes (actFor's openFrom): those since the last clean one, if the last began less than withinMs (--every, else a day) ago. */
export function continuing(journal: Pick<LoadedJournal, 'openFrom' | 'runAts'>, nowMs: number, withinMs = 24 * 3600 * 1000): number {
  const lastRunAt = journal.runAts.at(-1);
  if (journal.openFrom >= journal.runAts.length || lastRunAt === undefined) return Number.POSITIVE_INFINITY;
  const at = Date.parse(lastRunAt);
  return Number.isFinite(at) && nowMs - at < withinMs ? journal.openFrom : Number.POSITIVE_INFINITY;
}

/** The endpoint's applied rotation with the highest version: this attempt's, or an earlier key's. */
export function settledOf(p: Prior): Prior | undefined {
  const own = p.state === 'applied' || p.state === 'ok' ? p : undefined;
  const earlier = p.settled;
  if (!own) return earlier;
  if (!earlier) return own;
  return (earlier.version ?? -1) > (own.version ?? -1) ? earlier : own;
}

/** Folds one record into the map. Facts only add up: a later refusal never erases that an earlier key was applied. */
export function foldRecord(priors: Map<string, Prior>, r: JournalRecord, runAt?: string, run = 0): void {
  if (r.t === 'run' || r.t === 'end') return;
  const started = r.runAt ?? runAt;
  const at = started !== undefined ? { at: started } : {};
  if (r.t === 'send') {
    const before = priors.get(r.id);
    // Another key: what the earlier ones applied stays known.
    const settled = before && before.key !== r.key ? settledOf(before) : before?.settled;
    const fresh = { version: null, fp: null, delivery: null, requestId: null, recovered: null, whole: false };
    priors.set(r.id, { state: 'sent', key: r.key, ev: r.ev, mode: r.mode, ...fresh, ...at, run, ...(settled ? { settled } : {}) });
    return;
  }
  const latest = priors.get(r.id);
  // A record of the latest request, or of the applied one before it (webhooks recover --journal settles that one).
  const p = latest?.key === r.key ? latest : latest?.settled?.key === r.key ? latest.settled : undefined;
  if (!p) return;
  Object.assign(p, at, { run });
  if (r.t === 'applied') {
    Object.assign(p, { state: 'applied', version: r.version, fp: r.fp });
    if (r.recovered) p.recovered = r.recovered;
    if (r.at) p.appliedAt = r.at;
  } else if (r.t === 'ok') {
    Object.assign(p, { state: 'ok', version: r.version, fp: r.fp, delivery: r.delivery, requestId: r.requestId });
    if (r.at) p.appliedAt ??= r.at;
  } else if (p.state !== 'applied' || r.applied === true) {
    // An applied change is not undone by what is said of it later.
    p.state = r.applied === true ? 'applied' : r.applied === null ? 'sent' : 'refused';
    if (r.recovered) p.recovered = r.recovered;
    if (r.whole === true) p.whole = true;
  }
}

type ItemAct = { act: 'send' } | { act: 'skip' | 'redeliver' | 'resend'; prior: Prior };

/**
 * The journal's rules: a record counts only for the same endpoint, expected
 * version and mode. Refused (exit 2): an earlier rotation whose outcome is
 * unknown (only its manifest's re-run collects it), a pending one's new mode.
 */
export function actFor(priors: ReadonlyMap<string, Prior>, item: Pick<ManifestItem, 'line' | 'endpointId' | 'expectedVersion' | 'mode'>, openFrom = Number.POSITIVE_INFINITY): ItemAct {
  const p = priors.get(item.endpointId);
  if (!p) return { act: 'send' };
  const s = settledOf(p);
  const done = (x: Prior): ItemAct => (x.state === 'ok' ? { act: 'skip', prior: x } : { act: 'redeliver', prior: x });
  // This very rotation was applied by an earlier key, whatever came after it.
  if (s && s !== p && s.ev === item.expectedVersion && s.mode === item.mode) return done(s);
  // The work of runs not known finished, the manifest replaced by their next manifest: finished, not repeated.
  if (s && s.version === item.expectedVersion && (s.run ?? 0) >= openFrom && (p === s || p.state === 'refused')) return done(s);
  if (p.state === 'refused') return { act: 'send' };
  if (p.ev !== item.expectedVersion) {
    if (p.state === 'sent')
      throw usageError(
        `line ${item.line}: endpoint ${item.endpointId} has an earlier rotation in the journal whose outcome is unknown (expected version ${p.ev}, mode ${p.mode}, Idempotency-Key ${p.key})`,
        'run the earlier manifest again with this journal first, so that a secret the server may have issued for it is collected, then this one',
      );
    return { act: 'send' };
  }
  if (p.mode !== item.mode) {
    if (p.state === 'sent' || p.state === 'applied')
      throw usageError(
        `line ${item.line}: endpoint ${item.endpointId} (expected version ${p.ev}) is pending in the journal as a rotation with mode ${p.mode}, not ${item.mode} (Idempotency-Key ${p.key})`,
        `give that line "mode":"${p.mode}" to finish it; a request already sent cannot change its mode`,
      );
    return { act: 'send' };
  }
  if (p.state === 'ok') return { act: 'skip', prior: p };
  if (p.state === 'applied') return { act: 'redeliver', prior: p };
  return { act: 'resend', prior: p };
}

/** A line to send is refused (exit 2) when the journal shows the endpoint rotated past it: a job re-running an old manifest would only get 7s. */
export function refuseStale(latest: Prior | undefined, item: Pick<ManifestItem, 'line' | 'endpointId' | 'expectedVersion'>): void {
  const prior = latest && settledOf(latest);
  if (!prior || prior.version === null || item.expectedVersion >= prior.version) return;
  const when = prior.at !== undefined ? ` by the run of ${prior.at}` : ' by an earlier run';
  throw usageError(
    `manifest line ${item.line}: endpoint ${item.endpointId} is at version ${prior.version} now (the journal shows it rotated from version ${prior.ev} to ${prior.version}${when}), but the line expects version ${item.expectedVersion}`,
    `give that line "expectedVersion":${prior.version}; --next-manifest FILE writes each endpoint's version after a run, for the next one`,
  );
}

const isRecord = (v: unknown): v is JournalRecord => {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  if (r.t === 'run') return typeof r.scope === 'object' && r.scope !== null;
  if (r.t === 'end') return typeof r.clean === 'boolean';
  if (typeof r.id !== 'string' || typeof r.key !== 'string') return false;
  if (r.t === 'send') return typeof r.ev === 'number' && (r.mode === 'overlap' || r.mode === 'immediate');
  if (r.t === 'applied') return typeof r.fp === 'string';
  if (r.t === 'ok') return typeof r.fp === 'string' && Array.isArray(r.delivery);
  return r.t === 'fail' && (r.applied === true || r.applied === false || r.applied === null);
};

const errnoOf = (err: unknown) => (err as NodeJS.ErrnoException).code ?? String(err);

export function loadJournal(path: string): LoadedJournal {
  const journal: LoadedJournal = { scope: null, priors: new Map(), unreadable: 0, openFrom: 0, runAts: [] };
  let runAt: string | undefined;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return journal;
    throw usageError(`cannot read the journal ${path}: ${errnoOf(err)}`);
  }
  try {
    // Journal lines are short; a very long one is damage.
    const lines = splitLines(fileChunks(fd), 1 << 20, () => {
      throw usageError(`the journal ${path} has a line longer than 1 MiB: it is not a chatctl journal`);
    });
    for (const { text } of lines) {
      if (text !== null && text.trim() === '') continue;
      let value: unknown;
      try {
        value = text === null ? undefined : JSON.parse(text);
      } catch {}
      if (!isRecord(value)) {
        journal.unreadable += 1;
        continue;
      }
      if (value.t === 'run') {
        journal.scope ??= value.scope;
        runAt = typeof value.at === 'string' ? value.at : undefined;
        journal.runAts.push(runAt ?? '');
        journal.lastEnd = undefined;
      } else if (value.t === 'end') {
        journal.lastEnd = value;
        if (value.clean === true) journal.openFrom = journal.runAts.length;
      } else foldRecord(journal.priors, value, runAt, Math.max(0, journal.runAts.length - 1));
    }
  } finally {
    closeSync(fd);
  }
  return journal;
}

export const sameScope = (a: JournalScope, b: JournalScope) =>
  a.baseUrl === b.baseUrl && a.organizationId === b.organizationId && a.applicationId === b.applicationId && a.environmentKey === b.environmentKey;

export type JournalSink = { append(record: JournalRecord): Promise<void> };

/** Every append resolves once its line is on disk (fdatasync); appends that arrive during a sync share the next one. */
export class JournalWriter implements JournalSink {
  private queue: string[] = [];
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private busy = false;
  private broken: unknown = null;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private readonly releaseLock: () => void,
    /** The file's length after the last record known to be whole on disk. */
    private size: number,
  ) {}

  /** Opens (creating, mode 0600) the journal for appending; `release` frees lockJournal()'s lock on close. */
  static async open(path: string, release: () => void): Promise<JournalWriter> {
    try {
      const handle = await open(path, 'a+', 0o600);
      const { size } = await handle.stat();
      // A line cut short by a crash is closed off, so the next record starts a line of its own.
      if (size > 0 && (await handle.read(Buffer.alloc(1), 0, 1, size - 1)).buffer[0] !== 0x0a) await handle.write('\n');
      await handle.chmod(0o600);
      return new JournalWriter(path, handle, release, (await handle.stat()).size);
    } catch (err) {
      release();
      throw usageError(`cannot open the journal ${path}: ${errnoOf(err)}`);
    }
  }

  append(record: JournalRecord): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      this.queue.push(JSON.stringify(record) + '\n');
      this.waiters.push({ resolve, reject });
      if (!this.busy) void this.drain();
    });
  }

  /** A write or flush that fails cuts the file back to its last whole record and breaks the writer: nothing is sent unrecorded. */
  private async drain(): Promise<void> {
    this.busy = true;
    while (this.queue.length) {
      const bytes = Buffer.from(this.queue.join(''));
      const waiters = this.waiters;
      this.queue = [];
      this.waiters = [];
      try {
        for (let done = 0; done < bytes.length; ) {
          const { bytesWritten } = await this.handle.write(bytes, done, bytes.length - done);
          if (bytesWritten <= 0) throw Object.assign(new Error('the file took no more bytes'), { code: 'EIO' });
          done += bytesWritten;
        }
        await this.handle.datasync();
        this.size += bytes.length;
        for (const w of waiters) w.resolve();
      } catch (err) {
        await this.handle.truncate(this.size).catch(() => {});
        this.broken = new CliError('internal_error', `cannot write the journal ${this.path}: ${errnoOf(err)}`, EXIT.unexpected);
        for (const w of [...waiters, ...this.waiters]) w.reject(this.broken);
        this.queue = [];
        this.waiters = [];
      }
    }
    this.busy = false;
  }

  async close(): Promise<void> {
    try {
      await this.handle.close();
    } finally {
      this.releaseLock();
    }
  }
}

/**
 * Rewrites the journal (atomically, under its lock) to what later runs decide
 * by, so that its size follows the fleet, not the months: per endpoint its
 * highest applied rotation and its latest request when still pending.
 */
export function compactJournal(path: string, scope: JournalScope): void {
  const { priors, openFrom, runAts, lastEnd } = loadJournal(path);
  const closed: JournalRecord[] = [];
  const open: JournalRecord[] = [];
  for (const [id, p] of priors) {
    const s = settledOf(p);
    for (const a of s && s !== p ? [s, p] : [p]) if (a.state !== 'refused') ((a.run ?? 0) >= openFrom ? open : closed).push(...recordsOf(id, a));
  }
  const line = (r: JournalRecord) => `${JSON.stringify(r)}\n`;
  const epoch = new Date(0).toISOString();
  let text = '';
  if (closed.length > 0) text += line({ t: 'run', v: 1, at: runAts[0] ?? epoch, scope }) + closed.map(line).join('') + line({ t: 'end', at: runAts[openFrom - 1] ?? epoch, clean: true });
  // The last run's start: how long ago the unfinished work was last taken up (continuing()).
  if (openFrom < runAts.length) text += line({ t: 'run', v: 1, at: runAts.at(-1) ?? epoch, scope }) + open.map(line).join('') + (lastEnd ? line(lastEnd) : '');
  // Nothing pending and nothing applied: the journal still names its scope.
  if (text === '') text = line({ t: 'run', v: 1, at: runAts.at(-1) ?? epoch, scope }) + line({ t: 'end', at: runAts.at(-1) ?? epoch, clean: true });
  writeFileAtomic(path, text, { mode: 0o600 });
}

function recordsOf(id: string, a: Prior): JournalRecord[] {
  const runAt = a.at !== undefined ? { runAt: a.at } : {};
  const out: JournalRecord[] = [{ t: 'send', id, key: a.key, ev: a.ev, mode: a.mode, ...runAt }];
  const at = { ...(a.appliedAt !== undefined ? { at: a.appliedAt } : {}), ...runAt };
  if (a.state === 'ok') out.push({ t: 'ok', id, key: a.key, version: a.version, fp: a.fp ?? '', delivery: a.delivery ?? [], requestId: a.requestId ?? '', ...at });
  else if (a.state === 'applied') {
    if (a.fp !== null) out.push({ t: 'applied', id, key: a.key, version: a.version, fp: a.fp, recovered: a.recovered, ...at });
    if (a.fp === null || a.whole)
      out.push({ t: 'fail', id, key: a.key, applied: true, exitCode: EXIT.secretNotDelivered, code: 'secret_not_delivered', recovered: a.recovered, ...(a.whole ? { whole: true } : {}), ...runAt });
  }
  return out;
}

const JOURNAL: LockSubject = {
  name: 'the journal',
  error: usageError,
  busy: (v, lockPath) =>
    usageError(`the journal is in use by another chatctl run (${v.owner ? `${v.owner}; ` : ''}lock file ${lockPath})`, 'wait for it to finish, or remove the lock file if that process is not chatctl'),
};

/** One run at a time per journal (a regular file, or none yet): `FILE.lock`, refused at once (exit 2) while its owner lives. */
export async function lockJournal(path: string, ctx: Pick<Context, 'now' | 'sleep' | 'random' | 'signal'>): Promise<() => void> {
  try {
    if (!lstatSync(path).isFile()) throw usageError(`the journal ${path} is not a regular file`);
  } catch (err) {
    if (err instanceof CliError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw usageError(`cannot use the journal ${path}: ${errnoOf(err)}`);
  }
  const lock = await acquireLock(`${path}.lock`, { host: systemLockHost(ctx), signal: ctx.signal, waitMs: 0, subject: JOURNAL });
  return lock.release;
}

/** `webhooks recover --journal FILE`: each recovered secret that is the journal's applied, undelivered rotation (same fingerprint) is recorded "ok". */
export async function settleRecovered(
  path: string,
  recovered: { endpointId: string; scope: string; fingerprint: string; delivery: DeliveryRecord[] }[],
  ctx: Pick<Context, 'now' | 'sleep' | 'random' | 'signal'> & { io: { notice(text: string): void } },
): Promise<void> {
  const writer = await JournalWriter.open(path, await lockJournal(path, ctx));
  try {
    const { priors, scope } = loadJournal(path);
    for (const r of recovered) {
      const p = priors.get(r.endpointId);
      const s = p && settledOf(p);
      const inScope = !scope || scopeKey(scope) === r.scope;
      if (!inScope || !s || s.state !== 'applied' || s.fp !== r.fingerprint) {
        ctx.io.notice(`${escapeInline(r.endpointId)}: the journal ${escapeInline(path)} holds no undelivered rotation with the fingerprint ${r.fingerprint}; it is left as it is`);
        continue;
      }
      await writer.append({ t: 'ok', id: r.endpointId, key: s.key, version: s.version, fp: r.fingerprint, delivery: r.delivery, requestId: '', at: new Date(ctx.now()).toISOString() });
    }
  } finally {
    await writer.close();
  }
}
