// The one-time secret's custody (docs/secrets.md, "Custody"): one Custody per create or rotate request
// (single or `rotate --from` item), and the exit 13s: the change was applied, the secret is not where asked.
import { overlapEndOf, sameRequestCommand } from '../errors/explain.js';
import { escapeInline, shellQuote, shellWord } from '../output/json.js';
import { type CliError, CliError as Err, configError, EXIT, isCliError, localError } from '../errors/cli-error.js';
import { type OddSecretAnswer, oddSecretHint, oddSecretText, type SecretAnswer, type SecretResponse } from '../api/schemas.js';
import { type Delivered, type DeliveryFailure, describeKeepFailure } from './deliver.js';
import type { escrowHook } from './escrow.js';
import { type Applied, EndpointFacts, factsPath, fingerprint, seenOf } from './facts.js';
import { findLeft, type Left, markSuperseded, pruneSuperseded, type RecordedRequest, removeLeft, WriteAheadRecord } from './record.js';
import { acquireLock, systemLockHost, type HeldLock, type LockSubject } from '../system/lock.js';
import { makeFolders, attempt } from '../system/files.js';
import { join } from 'node:path';
import type { Clock } from '../system/clock.js';
import type { Context } from '../context.js';

const versionOf = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined);
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

type Maybe = string | null | undefined;

/** `details` of an exit 13: endpointId, version (only when known), fingerprint, recoveredPath, then anything else. */
export function exit13Details(facts: { endpointId: Maybe; version?: unknown; fingerprint: Maybe; recoveredPath: Maybe }, more: Record<string, unknown> = {}): Record<string, unknown> {
  const version = versionOf(facts.version);
  return { endpointId: facts.endpointId ?? null, ...(version !== undefined ? { version } : {}), fingerprint: facts.fingerprint ?? null, recoveredPath: facts.recoveredPath ?? null, ...more };
}

/** What a job gave for its secret's destinations: the same flags again in a hint. */
export type GivenDestinations = { secretTo?: readonly string[] | undefined; secretFile?: string | undefined; force?: boolean | undefined };

/** The destinations as flags for the hint's rotate command, `{id}` (rotate --from) replaced in file:, env-file: and github-*:; undefined when none was given. */
export function destinationFlags(given: GivenDestinations, endpointId: string): string | undefined {
  const words: string[] = [];
  if (given.secretFile !== undefined) words.push('--secret-file', shellWord(given.secretFile));
  for (const spec of given.secretTo ?? []) words.push('--secret-to', shellWord(/^(file|env-file|github-output|github-env):/.test(spec) ? spec.replaceAll('{id}', endpointId) : spec));
  if (words.length === 0) return undefined;
  if (given.force) words.push('--force');
  return words.join(' ');
}

/** The command that gets a new secret: while an overlap runs (`answer` names its end) another is refused (exit 8), so the hint offers `--mode immediate`. */
export function newSecretHint(t: { endpointId: Maybe; version?: unknown; answer?: unknown; now: number; destination?: string | Holder['destination'] }): string {
  const id = t.endpointId ? shellQuote(t.endpointId) : 'ENDPOINT_ID';
  const version = versionOf(t.version) ?? 'CURRENT_VERSION';
  const to = (typeof t.destination === 'function' ? t.destination(t.endpointId ?? '') : t.destination) ?? '--secret-to file:PATH';
  const rotate = (mode: string) => `chatctl webhooks rotate ${id} --expected-version ${version} --mode ${mode}${mode === 'immediate' ? ' --yes' : ''} ${to}`;
  const data = t.answer !== null && typeof t.answer === 'object' ? (t.answer as Record<string, unknown>) : undefined;
  const end = data ? overlapEndOf(data) : undefined;
  if (end && end.getTime() > t.now) {
    return `to get a new secret: the overlap of this rotation runs until ${end.toISOString()}, and a rotation with --mode overlap is refused until then; after it: ${rotate('overlap')}; or now, which ends the old secrets at once: ${rotate('immediate')}`;
  }
  const told = data && ('previousSecretExpiresAt' in data || (isRecord(data.endpoint) && 'previousSecretExpiresAt' in data.endpoint));
  if (end || told) return `to get a new secret, rotate it: ${rotate('overlap')}`;
  return `to get a new secret, rotate it: ${rotate('overlap')} (while an overlap rotation still runs that is refused with exit 8; then wait for its end, or replace the secret at once: ${rotate('immediate')})`;
}

/** Whose secret it is: what every message and hint names. `version`: after the change, when the server gave it; `answer`: its data (a running overlap's end). */
export interface Holder {
  endpointId: string;
  idempotencyKey?: string | undefined;
  version?: number | null | undefined;
  answer?: unknown;
  serverRequestId?: string | null | undefined;
  /** The re-run that delivers a kept record. */
  rerun?: string | undefined;
  destination?: ((endpointId: string) => string | undefined) | undefined;
}

/** A delivery under way (started at `now`): what a second signal's message names; keepNow() keeps the secret alone as the process ends. */
export type InDelivery = { holder: Holder; fp: string; kept: string | null; keepNow?(): void; keepFailure?: string | undefined; now: number };

const keyText = (holder: Holder) => (holder.idempotencyKey ? ` (Idempotency-Key ${holder.idempotencyKey})` : '');

const thirteen = (message: string, details: Record<string, unknown>, hint: string, idempotencyKey?: string) => localError('secret_not_delivered', message, { details, idempotencyKey, hint });

const putItHint = (holder: Holder, path: string) => `${holder.rerun ? `${holder.rerun}; or ` : ''}put it where it belongs, then delete ${path}`;

/** A later rotation of the endpoint went through chatctl here: what an earlier run left (or a replay of its request) is never delivered. */
function supersededError(req: Pick<RecordedRequest, 'endpointId' | 'idempotencyKey'>, marked: string | null, newer: Pick<Applied, 'version' | 'at' | 'key'>): CliError {
  const id = escapeInline(req.endpointId ?? '');
  const what = marked ? `the secret of endpoint ${id} that an earlier run kept` : `the rotation of endpoint ${id} that an earlier request applied`;
  const kept = marked ? ` (its file is marked superseded: ${marked}; it is removed after 30 days)` : '';
  return thirteen(
    `${what} (Idempotency-Key ${req.idempotencyKey}) is superseded by the rotation to version ${newer.version} at ${newer.at}; it was not delivered, and the destinations were left as they are${kept}`,
    exit13Details(
      { endpointId: req.endpointId, version: newer.version, fingerprint: null, recoveredPath: null },
      { supersededBy: { version: newer.version, at: newer.at, idempotencyKey: newer.key } },
    ),
    `the destinations hold what the rotation to version ${newer.version} put there; the next rotation takes --expected-version ${newer.version}`,
    req.idempotencyKey,
  );
}

/** The change was applied but a destination lacks the secret: exit 13, where the secret is (or that it is lost). */
function notDelivered(holder: Holder, n: { fp: string; failures: DeliveryFailure[]; delivered: Delivered[]; where: string | undefined; keepFailure: string | undefined; now: number }): CliError {
  const why = n.failures.map((f) => `${f.to}: ${f.reason}`).join('; ');
  const got = n.delivered.length > 0 ? ` (it did reach ${n.delivered.map((d) => d.to).join(', ')})` : '';
  const more = { delivered: n.delivered, failed: n.failures, ...(holder.serverRequestId ? { serverRequestId: holder.serverRequestId } : {}) };
  const details = exit13Details({ ...holder, fingerprint: n.fp, recoveredPath: n.where ?? null }, more);
  const head = `the change was applied to endpoint ${escapeInline(holder.endpointId)}${keyText(holder)}, but the signing secret ${n.fp} was not delivered to ${why}${got}`;
  const hint = newSecretHint({ ...holder, now: n.now });
  const key = holder.idempotencyKey;
  if (n.where !== undefined) return thirteen(`${head}; it is kept in ${n.where} (mode 0600)`, details, `${putItHint(holder, n.where)}; or, ${hint}`, key);
  // No recovery copy either: the secret goes only where it was asked to go, never to stderr or a terminal that was not a destination.
  const withCause = { ...details, recoveryError: n.keepFailure ?? null };
  const holders = n.delivered.map((d) => d.to).join(', ');
  if (n.delivered.length > 0) {
    return thirteen(
      `${head}; no recovery copy could be written either (${n.keepFailure}), so only ${holders} holds it`,
      withCause,
      `copy it from ${holders} to the other destinations; or, ${hint}`,
      key,
    );
  }
  return thirteen(`${head}; no recovery copy could be written either (${n.keepFailure}), so nothing holds it: the secret is lost`, withCause, hint, key);
}

/** What a second signal during delivery says before the process ends: exit 13, where the secret is (or that it may be lost), the key. */
export function deliveryCutShort(d: InDelivery): CliError {
  // The process ends next: the secret is kept alone (what a person can copy), not only in its record.
  d.keepNow?.();
  const head = `interrupted: the change was applied to endpoint ${escapeInline(d.holder.endpointId)}${keyText(d.holder)}, and delivery of the signing secret ${d.fp} was cut short`;
  const details = exit13Details({ ...d.holder, fingerprint: d.fp, recoveredPath: d.kept });
  if (d.kept !== null) return thirteen(`${head}; it is kept in ${d.kept} (mode 0600)`, details, putItHint(d.holder, d.kept), d.holder.idempotencyKey);
  return thirteen(
    `${head}; no recovery copy could be written (${d.keepFailure ?? 'unknown error'}): it may not have reached every destination`,
    { ...details, recoveryError: d.keepFailure ?? null },
    `if a destination lacks it, ${newSecretHint({ ...d.holder, now: d.now })}`,
    d.holder.idempotencyKey,
  );
}

/** An answer that is not the spec's envelope but carries a secret: kept under recovered/ as received (`kept.path`), or lost (`kept.cause`); 13 either way. */
function oddAnswerError(odd: OddSecretAnswer, holder: Holder, kept: { path: string } | { cause: string }, now: number): CliError {
  const fp = fingerprint(odd.kept);
  const head = `the server's answer is not the expected response, but the change was applied${keyText(holder)} and it carries ${oddSecretText(odd, fp)} of endpoint ${escapeInline(holder.endpointId)}`;
  if ('cause' in kept) {
    const details = exit13Details({ ...holder, fingerprint: fp, recoveredPath: null }, { recoveryError: kept.cause });
    return thirteen(`${head}; no recovery copy could be written (${kept.cause}), so nothing holds it: the secret is lost`, details, newSecretHint({ ...holder, now }), holder.idempotencyKey);
  }
  const details = exit13Details({ ...holder, fingerprint: fp, recoveredPath: kept.path });
  return thirteen(`${head}; it is kept in ${kept.path} (mode 0600), not delivered`, details, oddSecretHint(odd, kept.path), holder.idempotencyKey);
}

/** The server applied the change but sent no usable secret: exit 13, with the way to a new one. 'maybe': a key the user gave, of which this machine keeps no record. */
function secretWithheld(holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, now: number, replayed: boolean | 'maybe', appliedAt: string | undefined): CliError {
  const what = answer.secret === null || answer.secret === undefined ? 'secret: null' : answer.secret === '' ? 'an empty secret' : 'a secret';
  const said = `(it answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`;
  const when = appliedAt ? ` at ${appliedAt}` : '';
  const message =
    replayed === true
      ? `the change was applied by an earlier run's request${keyText(holder)}${when}, and the server does not return a secret twice ${said}`
      : replayed === 'maybe'
        ? `the change was applied, but the signing secret is not available ${said}: if an earlier run sent this Idempotency-Key (${holder.idempotencyKey}), the change is that run's, and the server does not return a secret twice; no record of it is kept here`
        : `the change was applied, but the signing secret is not available (the server answered ${what} and secretAvailable: ${String(answer.secretAvailable)})`;
  return thirteen(message, exit13Details({ ...holder, fingerprint: null, recoveredPath: null }), newSecretHint({ ...holder, now }), holder.idempotencyKey);
}

/** An earlier run of a --from item rotated it, and nothing is left to deliver: superseded by a later rotation here, or lost. */
export function notConfirmed(endpointId: string, prior: { key: string; version: number | null; fp: string | null }, last: Applied | undefined, now: number): CliError {
  const what = `rotated by an earlier run (Idempotency-Key ${prior.key}, version ${prior.version ?? '?'}, fingerprint ${prior.fp ?? 'unknown'})`;
  const details = exit13Details({ endpointId, version: prior.version, fingerprint: prior.fp, recoveredPath: null });
  if (last && last.key !== prior.key && (prior.version === null || last.version > prior.version)) {
    return thirteen(
      `${what}: superseded by the rotation to version ${last.version} at ${last.at}; not delivered, and the destinations were left as they are`,
      // The endpoint's version now (the next expectedVersion), not the superseded one's.
      { ...details, version: last.version, supersededBy: { version: last.version, at: last.at, idempotencyKey: last.key } },
      `the destinations hold what the rotation to version ${last.version} put there; the next rotation takes "expectedVersion":${last.version}`,
    );
  }
  return thirteen(
    `${what}: delivery not confirmed, and no kept copy of its secret is left to deliver again`,
    details,
    `compare each destination with the fingerprint (chatctl webhooks fingerprint FILE); or, ${newSecretHint({ endpointId, version: prior.version, now })}`,
  );
}

/** Every destination holds the secret of a --from item, but the journal could not say so: not done as far as a re-run knows (exit 1). */
export function okNotRecorded(endpointId: string, o: { fp: string; version: number | null; delivered: Delivered[]; held: string }): CliError {
  return new Err(
    'internal_error',
    `the signing secret ${o.fp} of endpoint ${endpointId} reached ${o.delivered.map((d) => d.to).join(', ') || 'every destination'}, but the journal could not record it (the run stops)`,
    EXIT.unexpected,
    {
      details: exit13Details({ endpointId, version: o.version, fingerprint: o.fp, recoveredPath: o.held }, { delivered: o.delivered }),
      hint: `free space for the journal, then re-run with the same --journal: it delivers the secret again from ${o.held}, without rotating`,
    },
  );
}

/** A new rotation refused with 7 because an earlier run's rotation was applied and its secret never delivered: 13 naming the kept copy and the re-run that delivers it, not a 7 whose hint would rotate again. */
export function keptByEarlierRunError(k: NonNullable<ReturnType<typeof keptByEarlierRun>>, conflict: CliError): CliError {
  const rerun = sameRequestCommand({ words: ['webhooks', 'rotate', k.endpointId], expectedVersion: k.expectedVersion, flags: k.mode ? [['--mode', k.mode]] : [] }, k.key);
  return thirteen(
    `endpoint ${escapeInline(k.endpointId)} is at version ${k.version} because an earlier run's rotation (Idempotency-Key ${k.key}) was applied; its signing secret was not delivered and is kept in ${k.path} (mode 0600)`,
    exit13Details({ endpointId: k.endpointId, version: k.version, fingerprint: null, recoveredPath: k.path }, { conflict: { code: conflict.code, message: conflict.message } }),
    `deliver it without rotating again: ${rerun} with this command's destinations; only then rotate again with --expected-version ${k.version}`,
    k.key,
  );
}

/** How long a delivery waits for another process's delivery of the same endpoint (an exec: destination may take a minute). */
const DELIVERY_LOCK_WAIT_MS = 150_000;

const DELIVERY: LockSubject = {
  name: "the endpoint's delivery",
  error: configError,
  busy: (v, lockPath) => configError(`the endpoint's secret is being delivered by ${v.holder} (${lockPath})`),
};

/** The run's custody: its config folder and scope ("org/app/env"), its clock, what must never be shown, how a re-run delivers a kept record (`rerun`), where notices go (`warn`: what custody could not note; the change goes on). */
export interface CustodyRun extends Pick<Clock, 'now'> {
  configDir: string;
  scope: string;
  scrubber?: { addSecret(value: string): void; retireSecret?(value: string): void; scrub?(text: string): string } | undefined;
  rerun(idempotencyKey: string): string;
  warn?(text: string): void;
  destination?: ((endpointId: string) => string | undefined) | undefined;
  /** The endpoint's delivery lock, one delivery at a time across processes, so an older secret cannot land after a newer one; none without it (tests of parts). */
  locking?: { sleep: Clock['sleep']; random(): number; signal: AbortSignal } | undefined;
  /** --escrow: a secret kept after a failed destination is also written encrypted; amends the error. */
  escrow?: ReturnType<typeof escrowHook> | undefined;
}

export type DeliveryResult = { delivered: Delivered[]; failures: DeliveryFailure[] };

/** What an earlier run's answer gave, or this run's: the answer, or the secret a failed delivery kept. */
export type Got = { answer: SecretAnswer } | { kept: string; path: string };

/** A recorded answer read (recordedSecretAnswer in http/api-client.ts), undefined when it is not a usable 2xx. */
type ReadAnswer = (status: number, contentEncoding: string | null, body: Buffer) => Promise<SecretAnswer | undefined>;

/** Beyond the record: whether the request was sent before ('maybe': a key the user gave, no record here), what a journal kept of its answer. */
type Known = { resent: boolean | 'maybe'; version?: number | null | undefined; serverRequestId?: string | null | undefined };

/** The answer accepted: a secret to deliver, or an outcome already final (an odd answer kept, a withheld secret). */
export type Accepted = { ok: true; secret: string; holder: Holder; body: SecretResponse | undefined; delivery: InDelivery } | { ok: false; outcome: Failed };

export type Failed = { ok: false; error: CliError; holder: Holder; body: SecretResponse | undefined; fp: string | null; delivered: Delivered[]; kept: string | null };
/** Final before any delivery: nothing delivered, no fingerprint to name. */
const failure = (error: CliError, holder: Holder, body: SecretResponse | undefined, kept: string | null = null): Failed => ({ ok: false, error, holder, body, fp: null, delivered: [], kept });

export type Settled = { ok: true; fp: string; delivered: Delivered[]; holder: Holder; body: SecretResponse | undefined } | Failed;

/** What holds a request's secret on disk until every destination does: its record, or what an earlier run kept. */
type Held = { readonly path: string; retire(): void; keep(secret: string | Buffer, whole: boolean): { path: string } | { error: unknown }; close(): void };

export function runCustody(ctx: Pick<Context, 'configDir' | 'now' | 'sleep' | 'random' | 'signal' | 'io'>, scope: string, rerun: CustodyRun['rerun']): CustodyRun {
  return {
    configDir: ctx.configDir,
    now: ctx.now,
    locking: { sleep: ctx.sleep, random: ctx.random, signal: ctx.signal },
    warn: (text) => ctx.io.notice(text),
    scope,
    scrubber: ctx.io.scrubber,
    rerun,
  };
}

/** begin → (send) → accept → (deliver) → finish → retire; docs/secrets.md, "Custody", says what each step guarantees. */
export class Custody {
  private endpointLock: HeldLock | undefined;

  private constructor(
    private readonly run: CustodyRun,
    readonly req: RecordedRequest,
    /** What begin() found: send the request, deliver what an earlier run left (`got`), or nothing (superseded: `error`). */
    readonly next: 'send' | 'deliver' | 'superseded',
    private facts: EndpointFacts | undefined,
    private held: Held | undefined,
    readonly got?: Got,
    readonly error?: CliError,
    /** A record of this request existed, or a journal says it was sent (an earlier run may have been applied). */
    public resent = false,
  ) {}

  /** Before a create or rotate is sent. Throws (exit 3) when recovered/ cannot hold a record: then nothing may be sent. */
  static async begin(run: CustodyRun, req: RecordedRequest, answerOf: ReadAnswer): Promise<Custody> {
    pruneSuperseded(run.configDir, run.now());
    const facts = req.endpointId !== null ? EndpointFacts.read(run.configDir, req.scope, req.endpointId) : undefined;
    const left = findLeft(run.configDir, req);
    if (left) {
      const got = await gotFrom(left, answerOf);
      const version = got && 'answer' in got && got.answer.ok && typeof got.answer.body.data.endpoint.version === 'number' ? got.answer.body.data.endpoint.version : null;
      const newer = facts?.supersedes(req.idempotencyKey, version);
      if (newer) return new Custody(run, req, 'superseded', facts, undefined, undefined, supersede(run, req, facts, newer));
      // What an earlier run kept after a failed delivery, held as a record is.
      const kept: Held = { path: left.path, retire: () => removeLeft(run.configDir, req), keep: () => ({ path: left.path }), close: () => {} };
      if (got) return new Custody(run, req, 'deliver', facts, left.kind === 'record' ? openRecord(run, req) : kept, got);
    }
    return new Custody(run, req, 'send', facts, openRecord(run, req), undefined, undefined, left !== undefined);
  }

  /** The record's tap for the transport: the answer's bytes on disk as they arrive. */
  get tap(): WriteAheadRecord['tap'] | undefined {
    return this.held instanceof WriteAheadRecord ? this.held.tap : undefined;
  }

  get heldAt(): string | undefined {
    return this.held?.path;
  }

  /** The send failed: a request known not applied retires its record, else it stays for a re-run. `nothingToKeep`: an answer read whole holding nothing that may be a secret. */
  failed(err: unknown, nothingToKeep: boolean): void {
    if (nothingToKeep || knownNotApplied(err, this.resent)) this.held?.retire();
    else this.held?.close();
  }

  /** The answer (or what an earlier run kept), read: a usable secret comes back to be delivered; an odd answer or a withheld secret is final (13). */
  async accept(got: Got, known: Known): Promise<Accepted> {
    const base: Holder = {
      endpointId: this.req.endpointId ?? 'endpoint',
      idempotencyKey: this.req.idempotencyKey,
      rerun: this.run.rerun(this.req.idempotencyKey),
      // A kept secret comes without its answer: its version is what the journal or this request's own fact says.
      version: known.version ?? this.facts?.versionOf(this.req.idempotencyKey) ?? null,
      serverRequestId: known.serverRequestId ?? null,
      destination: this.run.destination,
    };
    if ('kept' in got) return this.toDeliver(got.kept, base, undefined);
    return this.acceptAnswer(got.answer, base, known);
  }

  private async acceptAnswer(answer: SecretAnswer, base: Holder, known: Known): Promise<Accepted> {
    if (!answer.ok) return { ok: false, outcome: this.keepOdd(answer.odd, base) };
    const body = answer.body;
    const { endpoint, secret, secretAvailable } = body.data;
    const rawId = typeof endpoint.id === 'string' || typeof endpoint.id === 'number' ? String(endpoint.id) : undefined;
    const holder: Holder = {
      ...base,
      endpointId: rawId ?? base.endpointId,
      version: typeof endpoint.version === 'number' ? endpoint.version : null,
      answer: body.data,
      serverRequestId: body.meta.requestId,
    };
    // A create's facts are known only from its answer; `before` is read before this change is added.
    if (!this.facts && rawId !== undefined) this.facts = EndpointFacts.read(this.run.configDir, this.req.scope, rawId);
    const before = this.facts?.lastApplied();
    const usable = typeof secret === 'string' && secret !== '' && secretAvailable !== false;
    // Known to the scrubber before anything of the answer is stored.
    if (usable) this.run.scrubber?.addSecret(secret);
    const scrub = (t: string) => this.run.scrubber?.scrub?.(t) ?? t;
    const noted = this.facts?.add({
      f: 'applied',
      at: this.at(),
      key: this.req.idempotencyKey,
      op: this.req.op,
      version: holder.version ?? null,
      ...(this.req.expectedVersion !== undefined ? { ev: this.req.expectedVersion } : {}),
      mode: this.req.mode,
      ...(usable ? { fp: fingerprint(secret) } : {}),
      endpoint: seenOf(endpoint, scrub),
    });
    if (noted === false)
      this.run.warn?.(
        `could not note this change of endpoint ${holder.endpointId} under ${this.run.configDir}/facts (a full disk, or a folder it cannot write): a later run cannot tell that it supersedes what older runs kept of the endpoint`,
      );
    if (!usable) {
      // Applied, but no secret in the answer (a replay of an earlier request with this key, or withheld): nothing to keep.
      this.held?.retire();
      const error = this.withheld({ ...holder, endpointId: rawId ?? this.req.endpointId ?? 'ENDPOINT_ID' }, { secret, secretAvailable }, before, known.resent);
      return { ok: false, outcome: failure(error, holder, body) };
    }
    return this.toDeliver(secret, holder, body);
  }

  /** The secret to deliver, once this process holds the endpoint's delivery lock and the facts, read again under it, show no later change (that supersedes it: 13). */
  private async toDeliver(secret: string, holder: Holder, body: SecretResponse | undefined): Promise<Accepted> {
    this.run.scrubber?.addSecret(secret);
    await this.holdEndpoint(holder.endpointId);
    const now = EndpointFacts.read(this.run.configDir, this.req.scope, holder.endpointId);
    const newer = now.supersedes(this.req.idempotencyKey, typeof holder.version === 'number' ? holder.version : null);
    if (newer) {
      this.releaseEndpoint();
      return { ok: false, outcome: failure(supersede(this.run, this.req, now, newer), holder, body) };
    }
    const held = this.held!;
    const delivery: InDelivery = {
      holder,
      fp: fingerprint(secret),
      kept: held.path,
      now: this.run.now(),
      keepNow: () => {
        const kept = held.keep(secret, false);
        if ('path' in kept) delivery.kept = kept.path;
        else delivery.keepFailure = describeKeepFailure(kept.error, this.run.configDir);
        delivery.keepNow = undefined;
      },
    };
    return { ok: true, secret, holder, body, delivery };
  }

  /** After delivery: every destination holds the secret (the record stays until retire()), or it is kept alone, durable, and the 13 says where. */
  async finish(accepted: Extract<Accepted, { ok: true }>, result: DeliveryResult): Promise<Settled> {
    const { secret, holder, body, delivery } = accepted;
    try {
      if (result.failures.length === 0) {
        this.facts?.add({ f: 'delivered', at: this.at(), key: this.req.idempotencyKey, version: holder.version ?? null, to: result.delivered.map((d) => d.to), fp: delivery.fp });
        return { ok: true, fp: delivery.fp, delivered: result.delivered, holder, body };
      }
      const fp = delivery.fp;
      const kept = this.held!.keep(secret, false);
      const where = 'path' in kept ? kept.path : undefined;
      const keepFailure = 'error' in kept ? describeKeepFailure(kept.error, this.run.configDir) : undefined;
      if (where !== undefined) this.facts?.add({ f: 'kept', at: this.at(), key: this.req.idempotencyKey, version: holder.version ?? null, path: where });
      delivery.kept = where ?? null;
      delivery.keepFailure = keepFailure;
      const error = notDelivered(holder, { fp, failures: result.failures, delivered: result.delivered, where, keepFailure, now: this.run.now() });
      await this.run.escrow?.(error, { scope: this.req.scope, endpointId: holder.endpointId, version: holder.version ?? null, secret, fingerprint: fp });
      return { ok: false, error, holder, body, fp, delivered: result.delivered, kept: where ?? null };
    } finally {
      this.releaseEndpoint();
    }
  }

  /** Not sent after all, or nothing to deliver from it: the record stays (outcome unknown). */
  leave(): void {
    this.held?.close();
  }

  /** Every destination holds the secret (and a --from run has recorded so): the record goes. Never throws: a record left behind is untidy, not a failure. */
  retire(): void {
    this.releaseEndpoint();
    attempt(() => this.held?.retire());
  }

  /** An odd answer that carries a secret: kept whole under recovered/, 13. */
  private keepOdd(odd: OddSecretAnswer, base: Holder): Failed {
    if (odd.read !== undefined) this.run.scrubber?.addSecret(odd.read);
    const endpointId = (odd.whole === 'endpoint' ? this.req.endpointId : undefined) ?? odd.endpointId ?? this.req.endpointId ?? 'endpoint';
    const holder = { ...base, endpointId };
    const kept = this.held!.keep(odd.kept, odd.whole !== false);
    const path = 'path' in kept ? kept.path : null;
    const error = oddAnswerError(odd, holder, path !== null ? { path } : { cause: describeKeepFailure((kept as { error: unknown }).error, this.run.configDir) }, this.run.now());
    return failure(error, holder, undefined, path);
  }

  /** A replay without its secret, said as this machine knows it: superseded by a later change seen here, or applied by an earlier run here. */
  private withheld(holder: Holder, answer: { secret: unknown; secretAvailable: boolean }, before: Applied | undefined, resent: boolean | 'maybe'): CliError {
    if (before && before.key !== this.req.idempotencyKey && typeof holder.version === 'number' && before.version > holder.version) return supersededError(this.req, null, before);
    const earlier = before?.key === this.req.idempotencyKey ? before : undefined;
    return secretWithheld(holder, answer, this.run.now(), resent === true || earlier !== undefined ? true : resent, earlier?.at);
  }

  private at(): string {
    return new Date(this.run.now()).toISOString();
  }

  /** Takes the endpoint's delivery lock (waiting for another process's delivery); without one, delivery goes on. */
  private async holdEndpoint(endpointId: string): Promise<void> {
    const l = this.run.locking;
    if (!l || this.endpointLock) return;
    try {
      makeFolders(join(this.run.configDir, 'facts'), 0o700);
      this.endpointLock = await acquireLock(`${factsPath(this.run.configDir, this.req.scope, endpointId)}.lock`, {
        host: systemLockHost({ now: this.run.now, sleep: l.sleep, random: l.random }),
        signal: l.signal.aborted ? new AbortController().signal : l.signal,
        waitMs: DELIVERY_LOCK_WAIT_MS,
        subject: DELIVERY,
      });
    } catch {
      /* the secret is in hand: it is delivered rather than held back for a lock */
    }
  }

  private releaseEndpoint(): void {
    this.endpointLock?.release();
    this.endpointLock = undefined;
  }
}

/** A later change of the endpoint went through chatctl here: what the request left is marked superseded (never delivered), the fact noted, and the 13 says so. */
function supersede(run: CustodyRun, req: RecordedRequest, facts: EndpointFacts | undefined, newer: Applied): CliError {
  const marked = markSuperseded(run.configDir, req);
  facts?.add({ f: 'superseded', at: new Date(run.now()).toISOString(), key: req.idempotencyKey, by: newer.version });
  return supersededError(req, marked[0] ?? null, newer);
}

function openRecord(run: CustodyRun, req: RecordedRequest): WriteAheadRecord {
  try {
    return WriteAheadRecord.open(run.configDir, req, new Date(run.now()));
  } catch (err) {
    throw localError('config_error', `cannot keep a record of the request before sending it: ${describeKeepFailure(err, run.configDir)}`, {
      hint: 'nothing was sent; chatctl keeps the answer that carries the secret there until every destination holds it (docs/secrets.md)',
    });
  }
}

/** The answer or secret an earlier run left, when it can be delivered (an odd answer kept whole is for the user to read). */
async function gotFrom(left: Left, answerOf: ReadAnswer): Promise<Got | undefined> {
  if (left.kind === 'secret') return { kept: left.secret.toString('utf8'), path: left.path };
  if (left.kind === 'answer') return undefined;
  const a = left.record.answer;
  if (!a || a.status < 200 || a.status >= 300) return undefined;
  const answer = await answerOf(a.status, a.contentEncoding, a.body).catch(() => undefined);
  return answer ? { answer } : undefined;
}

/** A delivery that threw instead of answering (a destination's own bug, a journal refused first): every destination lacks the secret. */
export function notAttempted(err: unknown): DeliveryResult {
  const reason = err instanceof Error ? err.message : String(err);
  return { delivered: [], failures: [{ to: 'every destination', reason: `not attempted: ${reason}` }] };
}

/** Whether a failed request is known not to have been applied (its record can go). */
export function knownNotApplied(err: unknown, resent: boolean): boolean {
  if (!isCliError(err)) return false;
  if (err.code === 'interrupted' && err.idempotencyKey === undefined && !resent) return true;
  const s = err.status;
  if (s !== null && s >= 400 && s < 500 && s !== 429 && err.code !== 'idempotency_conflict') return !(resent && (s === 401 || s === 403 || s === 404));
  return err.idempotencyKey === undefined && !resent;
}

export const hasLeft = (run: CustodyRun, req: RecordedRequest) => findLeft(run.configDir, req) !== undefined;

/** Every destination holds this request's secret (a --from run read them back): what is left of it goes. */
export const retireLeft = (run: CustodyRun, req: RecordedRequest) => removeLeft(run.configDir, req);

/** A request known done (every destination holds the secret `fp`) whose run was killed before it removed what it left: that goes only when it holds that very secret. */
export async function retireIfHeld(run: CustodyRun, req: RecordedRequest, fp: string, answerOf: ReadAnswer): Promise<void> {
  const left = findLeft(run.configDir, req);
  if (!left) return;
  const got = await gotFrom(left, answerOf);
  const secret = got === undefined ? undefined : 'kept' in got ? got.kept : got.answer.ok && typeof got.answer.body.data.secret === 'string' ? got.answer.body.data.secret : undefined;
  if (secret !== undefined && fingerprint(secret) === fp) removeLeft(run.configDir, req);
}

/** The endpoint's last applied change as this machine saw it: what a superseded item names, and what --every measures from. */
export function lastApplied(run: CustodyRun, endpointId: string): Applied | undefined {
  return EndpointFacts.read(run.configDir, run.scope, endpointId).lastApplied();
}

/** The change that supersedes an escrowed secret (endpoint, version, fingerprint): a higher version applied here, or, with no version, a later change with another secret. */
export function supersedingChange(configDir: string, scope: string, secret: { endpointId: string; version: number | null; fingerprint: string }): Applied | undefined {
  const last = EndpointFacts.read(configDir, scope, secret.endpointId).lastApplied();
  if (!last) return undefined;
  if (secret.version !== null) return last.version > secret.version ? last : undefined;
  return last.fp !== undefined && last.fp !== secret.fingerprint ? last : undefined;
}

/** An earlier run's rotation of this endpoint whose secret is kept here, not delivered: why a new rotation gets a 7. */
export function keptByEarlierRun(configDir: string, scope: string, endpointId: string) {
  const facts = EndpointFacts.read(configDir, scope, endpointId);
  const last = facts.lastApplied();
  if (last?.op !== 'rotate' || facts.delivered(last.key)) return undefined;
  const left = findLeft(configDir, { op: 'rotate', scope, endpointId, idempotencyKey: last.key });
  if (!left) return undefined;
  const header = left.kind === 'record' ? left.record.header : undefined;
  return { endpointId, key: last.key, path: left.path, version: last.version, expectedVersion: header?.expectedVersion ?? last.ev, mode: header?.mode ?? last.mode };
}

export const deliveredHere = (run: CustodyRun, endpointId: string, key: string) => EndpointFacts.read(run.configDir, run.scope, endpointId).delivered(key);
