// The record: what chatctl keeps under <config>/recovered/ of one create or
// rotate request, written before it is sent (docs/secrets.md, "The record").
import { chmodSync, closeSync, constants, fchmodSync, ftruncateSync, lstatSync, openSync, readdirSync, renameSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type AnswerTap, parseRawAnswer } from '../http/transport.js';
import { kindOf, makeFolders, readRegularFile, syncPath, writeFileAtomic, attempt, works } from '../system/files.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** Which request a record is of: its identity (scope "org/app/env", endpoint, null for a create, whole key) and what was asked. */
export type RecordedRequest = { op: 'create' | 'rotate'; scope: string; endpointId: string | null; idempotencyKey: string; mode?: string | undefined; expectedVersion?: number | undefined };

/** `startedAt`: when the request was first sent. */
type RecordHeader = RecordedRequest & { record: 1; startedAt: string };

/** The answer as it arrived (not decoded); `contentLength` and `whole` tell a whole body from a cut one. */
type RecordedAnswer = { status: number; contentEncoding: string | null; contentLength: number | null; body: Buffer; whole?: boolean };

export const scopeKey = (s: { organizationId: string; applicationId: string; environmentKey: string }) => `${s.organizationId}/${s.applicationId}/${s.environmentKey}`;

export const recoveryFolder = (configDir: string): string => join(configDir, 'recovered');

const sha256 = (text: string) => process.getBuiltinModule('node:crypto').createHash('sha256').update(text).digest('hex');

/** Readable and safe in a file name: a hint for people, never the identity. */
const label = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'endpoint';

/** The part of every file name that is one endpoint's (its records, its kept secrets, its facts). */
export function endpointStem(scope: string, endpointId: string): string {
  return `${label(endpointId)}-${sha256(`endpoint\0${scope}\0${endpointId}`).slice(0, 16)}`;
}

/** The record, and where its secret (or a whole odd answer) is kept after a failed delivery: named by a hash of the whole identity, so two keys never share one. */
export function recordPaths(configDir: string, req: RecordedRequest): { record: string; secret: string; answer: string } {
  const endpoint = req.endpointId === null ? `new-${sha256(`create\0${req.scope}`).slice(0, 16)}` : endpointStem(req.scope, req.endpointId);
  const base = join(recoveryFolder(configDir), `${endpoint}-${sha256(`${req.op}\0${req.scope}\0${req.endpointId ?? ''}\0${req.idempotencyKey}`).slice(0, 32)}`);
  return { record: `${base}.record`, secret: `${base}.secret`, answer: `${base}.answer` };
}

/** recovered/, made 0700 or checked as the config folder is (EUNSAFE says why not), before any request is sent rather than after a change applied. */
export function prepareRecoveryFolder(configDir: string): { dir: string; made: string | undefined } {
  const dir = recoveryFolder(configDir);
  const made = makeFolders(dir, 0o700);
  const refuse = (why: string) => Object.assign(new Error(why), { code: 'EUNSAFE' });
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw refuse('is a symbolic link; secrets are kept only in a folder of its own (remove the link)');
  if (!st.isDirectory()) throw refuse(`is ${kindOf(st)}, not a folder`);
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : undefined;
  if (uid === undefined) return { dir, made }; // Windows: no owner to check
  const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
  if (st.uid !== uid) throw refuse(`belongs to another user (uid ${st.uid}), not to you (uid ${uid})`);
  if ((st.mode & 0o022) !== 0) throw refuse(`can be written by group or others (mode ${mode}); check its contents, then chmod 700 it`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return { dir, made };
}

/**
 * A record being written before the request goes out; the transport appends
 * each answer through `tap`. Appends are not fsync'd: the kernel keeps what a
 * killed process wrote; keep() makes the secret durable when it is the one place left.
 */
export class WriteAheadRecord {
  /** Why an append failed (a full disk): then the record may not hold the whole answer. */
  private damaged: unknown;
  /** Where keep() put the secret alone, once it did. */
  private keptAlone: string | undefined;
  readonly tap: AnswerTap = {
    head: (status, headers) => {
      const encoding = headers['content-encoding'];
      const length = Number(headers['content-length']);
      const line = JSON.stringify({ status, contentEncoding: encoding === undefined ? null : String(encoding), contentLength: Number.isSafeInteger(length) ? length : null });
      // An earlier attempt's answer (a 429, a 503) is no part of this one.
      if (this.size > this.headerBytes) this.truncate(this.headerBytes);
      this.append(Buffer.from(`${line}\n`, 'utf8'));
    },
    chunk: (bytes) => this.append(bytes),
    // The bytes as the socket delivered them, at their place in this attempt's answer: a new attempt's first bytes replace an earlier attempt's.
    raw: (bytes, at) => {
      if (at === 0 && this.size > this.headerBytes) this.truncate(this.headerBytes);
      this.append(bytes, this.headerBytes + at);
    },
  };

  private constructor(
    readonly path: string,
    readonly paths: { record: string; secret: string; answer: string },
    readonly header: RecordHeader,
    private fd: number | undefined,
    private readonly headerBytes: number,
    private size: number,
  ) {}

  /** A new record (0600) holding the header, or the existing one of the same request (a re-sent key). Throws what the file system said: nothing may be sent then. */
  static open(configDir: string, req: RecordedRequest, startedAt: Date): WriteAheadRecord {
    prepareRecoveryFolder(configDir);
    const paths = recordPaths(configDir, req);
    const header: RecordHeader = { record: 1, ...req, startedAt: startedAt.toISOString() };
    const bytes = Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
    let fd: number;
    try {
      fd = openSync(paths.record, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const found = readRecord(paths.record);
      if (found && !sameRequest(found.header, req)) throw Object.assign(new Error(`${paths.record} is not a record of this request`), { code: 'EEXIST' });
      if (found) {
        const size = lstatSync(paths.record).size;
        fd = openSync(paths.record, constants.O_WRONLY | NOFOLLOW);
        return new WriteAheadRecord(paths.record, paths, found.header, fd, found.headerBytes, size);
      }
      // No readable header: a run killed between creating it and writing that, before sending. "Sent, outcome unknown" at worst: written again, the key sent.
      if (!lstatSync(paths.record).isFile()) throw Object.assign(new Error(`${paths.record} is not a regular file`), { code: 'EEXIST' });
      fd = openSync(paths.record, constants.O_WRONLY | constants.O_TRUNC | NOFOLLOW);
    }
    try {
      fchmodSync(fd, 0o600);
      writeAll(fd, bytes, 0);
    } catch (err) {
      closeSync(fd);
      removeFile(paths.record);
      throw err;
    }
    return new WriteAheadRecord(paths.record, paths, header, fd, bytes.length, bytes.length);
  }

  /** What this record holds of the answer so far (a re-sent key's record may hold an earlier run's). */
  answer(): RecordedAnswer | undefined {
    return readRecord(this.path)?.answer;
  }

  /** Closes the file; the record stays (its request's outcome is not known, or its secret not delivered). */
  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    attempt(() => closeSync(fd)); // written already
  }

  /** Every destination holds the secret, or the request is known not applied: the record goes (and the secret it kept, if it did). */
  retire(): void {
    this.close();
    removeFile(this.path);
    if (this.keptAlone) removeFile(this.keptAlone);
  }

  /** The secret (or an odd answer) kept alone, durable, before the record goes; failing that, the record if it holds the whole answer; else the error. */
  keep(secret: string | Buffer, whole = false): { path: string } | { error: unknown } {
    const target = whole ? this.paths.answer : this.paths.secret;
    try {
      writeFileAtomic(target, secret, { how: 'replace', durable: true });
    } catch (err) {
      this.close();
      if (this.damaged !== undefined) return { error: err };
      syncPath(this.path);
      syncPath(dirname(this.path));
      return { path: this.path };
    }
    this.close();
    removeFile(this.path);
    this.keptAlone = target;
    syncPath(dirname(this.path));
    return { path: target };
  }

  private append(bytes: Uint8Array, at = this.size): void {
    if (this.fd === undefined) return;
    try {
      writeAll(this.fd, bytes, at);
      this.size = Math.max(this.size, at + bytes.length);
    } catch (err) {
      // A record that cannot grow (a full disk) keeps what it has; the answer goes on, and keep() tries again after a failure.
      this.damaged ??= err;
    }
  }

  private truncate(to: number): void {
    const fd = this.fd;
    // If it fails, an older answer stays in front: readRecord takes the last.
    if (fd !== undefined && works(() => ftruncateSync(fd, to))) this.size = to;
  }
}

function writeAll(fd: number, bytes: Uint8Array, at: number): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
}

function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

const sameRequest = (h: RecordedRequest, req: RecordedRequest) => h.op === req.op && h.scope === req.scope && h.endpointId === req.endpointId && h.idempotencyKey === req.idempotencyKey;

/** Records hold an answer of at most the transport's body limit, plus their header. */
const MAX_RECORD_BYTES = 2 * 1024 * 1024;

/** A record read back: its header and the answer it holds (if one began); undefined if absent, not a regular file, or not a record. */
export function readRecord(path: string): { header: RecordHeader; headerBytes: number; answer: RecordedAnswer | undefined } | undefined {
  const bytes = readRegularFile(path, MAX_RECORD_BYTES);
  if (!bytes) return undefined;
  const end = bytes.indexOf(0x0a);
  if (end < 0) return undefined;
  const header = attempt(() => JSON.parse(bytes.subarray(0, end).toString('utf8')) as RecordHeader | null);
  if (header?.record !== 1 || typeof header.idempotencyKey !== 'string') return undefined;
  const headerBytes = end + 1;
  // The answer as the socket delivered it (status line first), read as HTTP.
  if (bytes.subarray(headerBytes, headerBytes + 1).toString('latin1') === 'H') {
    const a = parseRawAnswer(bytes.subarray(headerBytes));
    return { header, headerBytes, answer: a && { status: a.status, contentEncoding: a.contentEncoding, contentLength: a.contentLength, body: a.body, whole: a.whole } };
  }
  const headEnd = bytes.indexOf(0x0a, headerBytes);
  if (headEnd < 0) return { header, headerBytes, answer: undefined };
  try {
    const head = JSON.parse(bytes.subarray(headerBytes, headEnd).toString('utf8')) as Omit<RecordedAnswer, 'body'>;
    return { header, headerBytes, answer: { status: head.status, contentEncoding: head.contentEncoding, contentLength: head.contentLength, body: bytes.subarray(headEnd + 1) } };
  } catch {
    return { header, headerBytes, answer: undefined };
  }
}

/** What an earlier run left of one request: its record, or its secret (or odd answer) kept after a failed delivery. */
export type Left =
  | { kind: 'record'; path: string; record: NonNullable<ReturnType<typeof readRecord>> }
  | { kind: 'secret'; path: string; secret: Buffer }
  | { kind: 'answer'; path: string; answer: Buffer };

export function findLeft(configDir: string, req: RecordedRequest): Left | undefined {
  const paths = recordPaths(configDir, req);
  const secret = readRegularFile(paths.secret);
  if (secret && secret.length > 0) return { kind: 'secret', path: paths.secret, secret };
  const answer = readRegularFile(paths.answer);
  if (answer && answer.length > 0) return { kind: 'answer', path: paths.answer, answer };
  const record = readRecord(paths.record);
  if (record && sameRequest(record.header, req)) return { kind: 'record', path: paths.record, record };
  return undefined;
}

/** Removes what is left of a request: its secret is where it belongs, or it was superseded. */
export function removeLeft(configDir: string, req: RecordedRequest): void {
  const paths = recordPaths(configDir, req);
  for (const p of [paths.record, paths.secret, paths.answer]) removeFile(p);
}

/** How long a superseded record is kept (marked, never delivered) before a later run removes it. */
export const SUPERSEDED_KEPT_MS = 30 * 24 * 3600 * 1000;

const SUPERSEDED = '.superseded';

/** Renames what is left of a request with a `.superseded` ending: never delivered, removed by age or by hand. Only the run of its own key marks it. */
export function markSuperseded(configDir: string, req: RecordedRequest): string[] {
  const marked: string[] = [];
  for (const p of Object.values(recordPaths(configDir, req))) {
    const to = `${p}${SUPERSEDED}`;
    // Its age counts from the marking: a rename keeps the time it was last written. An absent file is not marked.
    const now = new Date();
    if (works(() => renameSync(p, to)) && works(() => utimesSync(to, now, now))) marked.push(to);
  }
  return marked;
}

/** Config folders pruned by this process, by the hour: once an hour is enough (a fleet starts thousands of requests). */
const pruned = new Set<string>();

/** Removes superseded files older than SUPERSEDED_KEPT_MS (by the time they were last written). */
export function pruneSuperseded(configDir: string, nowMs: number): void {
  const key = `${configDir}\0${Math.floor(nowMs / 3_600_000)}`;
  if (pruned.has(key)) return;
  pruned.add(key);
  const dir = recoveryFolder(configDir);
  for (const n of attempt(() => readdirSync(dir)) ?? []) {
    const path = join(dir, n);
    if (n.endsWith(SUPERSEDED)) attempt(() => nowMs - lstatSync(path).mtimeMs > SUPERSEDED_KEPT_MS && unlinkSync(path)); // or gone already
  }
}
