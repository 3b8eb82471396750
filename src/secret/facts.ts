// A secret's fingerprint, and the facts (docs/secrets.md, "The facts"): what this
// config folder saw happen to each endpoint, an append-only log per endpoint.
import { closeSync, constants, fchmodSync, openSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { makeFolders, readRegularFile, attempt, works } from '../system/files.js';
import { endpointStem } from './record.js';
import { EXIT, isCliError } from '../errors/cli-error.js';
import { currentVersionOf } from '../errors/explain.js';

/** `sha256:` + the first 16 lowercase hex digits of the SHA-256 of the UTF-8 bytes (or of the bytes given): names a secret without showing it. */
export function fingerprint(secret: string | Buffer): string {
  // node:crypto is loaded when a secret is in hand, not at start-up.
  const { createHash } = process.getBuiltinModule('node:crypto');
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** What an answer said of the endpoint (never its secret): what `webhooks list` shows. */
type EndpointSeen = { name?: string | null; url?: string | null; events?: string[] | null; status?: string | null; previousSecretExpiresAt?: string | null };

/** Every line also names its endpoint and scope (the file's name is a hash of them); `ev`: the rotation's --expected-version, which a re-run with its key sends again. */
export type Fact = { id?: string; scope?: string } & (
  | {
      f: 'applied';
      at: string;
      key: string;
      op: 'create' | 'rotate';
      version: number | null;
      ev?: number | undefined;
      mode?: string | undefined;
      fp?: string | undefined;
      endpoint?: EndpointSeen | undefined;
    }
  | { f: 'applied'; at: string; key?: undefined; op: 'reactivate'; version: number | null; changed?: boolean | undefined; endpoint?: EndpointSeen | undefined }
  | { f: 'delivered'; at: string; key: string; version: number | null; to: string[]; fp?: string | undefined }
  | { f: 'kept'; at: string; key: string; version: number | null; path: string }
  | { f: 'superseded'; at: string; key: string; by: number }
  | { f: 'seen'; at: string; version: number; via: string }
);

/** An applied change of the secret (a create or rotate) whose version is known. */
export type Applied = Extract<Fact, { f: 'applied'; op: 'create' | 'rotate' }> & { version: number };

/** A log holds a few lines per change; one over this size is not read (it is damage). */
const MAX_LOG_BYTES = 8 * 1024 * 1024;

const factsFolder = (configDir: string) => join(configDir, 'facts');

export const factsPath = (configDir: string, scope: string, endpointId: string) => join(factsFolder(configDir), `${endpointStem(scope, endpointId)}.ndjson`);

/** The facts of one endpoint, read once; `add` appends and keeps the view current. */
export class EndpointFacts {
  private constructor(
    private readonly configDir: string,
    readonly scope: string,
    readonly endpointId: string,
    private readonly facts: Fact[],
  ) {}

  static read(configDir: string, scope: string, endpointId: string): EndpointFacts {
    return new EndpointFacts(configDir, scope, endpointId, parseFacts(readRegularFile(factsPath(configDir, scope, endpointId), MAX_LOG_BYTES)));
  }

  /** The facts in a file found by factFiles(), with the endpoint and scope its lines name; undefined when it names none. */
  static fromFile(configDir: string, path: string): EndpointFacts | undefined {
    const facts = parseFacts(readRegularFile(path, MAX_LOG_BYTES));
    const named = facts.find((f) => typeof f.id === 'string' && typeof f.scope === 'string');
    return named ? new EndpointFacts(configDir, named.scope!, named.id!, facts) : undefined;
  }

  get path(): string {
    return factsPath(this.configDir, this.scope, this.endpointId);
  }

  get all(): readonly Fact[] {
    return this.facts;
  }

  /** Appends a fact in one O_APPEND write (concurrent writers never tear lines). Best effort: on a full disk the change goes on, only what it tells later runs is lost. */
  add(fact: Fact): boolean {
    this.facts.push(fact);
    return works(() => {
      makeFolders(factsFolder(this.configDir), 0o700);
      const fd = openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NOFOLLOW, 0o600);
      try {
        fchmodSync(fd, 0o600);
        writeSync(fd, Buffer.from(`${JSON.stringify({ ...fact, id: this.endpointId, scope: this.scope })}\n`, 'utf8'));
      } finally {
        closeSync(fd);
      }
    });
  }

  /** The applied create or rotate with the highest version. A reactivate raises the version but keeps the secret, so it supersedes no record. */
  lastApplied(): Applied | undefined {
    let best: Applied | undefined;
    for (const f of this.facts) if (f.f === 'applied' && f.op !== 'reactivate' && typeof f.version === 'number' && (!best || f.version >= best.version)) best = f as Applied;
    return best;
  }

  /** The highest version this machine saw of the endpoint, from any fact. */
  lastVersion(): { version: number; at: string } | undefined {
    let best: { version: number; at: string } | undefined;
    for (const f of this.facts) {
      const v = f.f === 'applied' || f.f === 'seen' ? f.version : null;
      if (typeof v === 'number' && (!best || v >= best.version)) best = { version: v, at: f.at };
    }
    return best;
  }

  versionOf(key: string): number | null {
    for (const f of this.facts) if (f.f === 'applied' && f.key === key && typeof f.version === 'number') return f.version;
    return null;
  }

  delivered(key: string): boolean {
    return this.facts.some((f) => f.f === 'delivered' && f.key === key);
  }

  /** Another key's change at a higher version than this key's (from its answer, else its own fact); none when that is unknown (the server's replay decides). */
  supersedes(key: string, version: number | null): Applied | undefined {
    const mine = version ?? this.versionOf(key);
    if (mine === null) return undefined;
    const last = this.lastApplied();
    return last && last.key !== key && last.version > mine ? last : undefined;
  }
}

/** What an answer says of the endpoint (the sandbox's names first), each string scrubbed and cut so no answer grows the log past what is read back. */
export function seenOf(endpoint: Record<string, unknown>, scrub: (text: string) => string): EndpointSeen {
  const text = (v: unknown, max = 2048) => (typeof v === 'string' ? scrub(v).slice(0, max) : null);
  const events = Array.isArray(endpoint.eventTypes) ? endpoint.eventTypes : Array.isArray(endpoint.events) ? endpoint.events : null;
  return {
    name: text(endpoint.name, 200),
    url: text(endpoint.destinationUrl) ?? text(endpoint.url),
    events: events
      ? events
          .filter((e): e is string => typeof e === 'string')
          .slice(0, 64)
          .map((e) => scrub(e).slice(0, 200))
      : null,
    status: text(endpoint.status, 200),
    previousSecretExpiresAt: text(endpoint.previousSecretExpiresAt, 200),
  };
}

function parseFacts(bytes: Buffer | undefined): Fact[] {
  if (!bytes) return [];
  const out: Fact[] = [];
  for (const line of bytes.toString('utf8').split('\n')) {
    if (line === '') continue;
    // A line cut short by a crash does not parse: the facts before and after it stand.
    const f = attempt(() => JSON.parse(line) as Fact | null);
    if (typeof f === 'object' && f !== null && typeof f.f === 'string' && typeof f.at === 'string') out.push(f);
  }
  return out;
}

/** Every endpoint this config folder has facts of (its files), for `webhooks list` and completion. */
export function factFiles(configDir: string): string[] {
  const names = attempt(() => readdirSync(factsFolder(configDir))) ?? [];
  return names.filter((n) => n.endsWith('.ndjson')).map((n) => join(factsFolder(configDir), n));
}

/** Where the answers that carry no secret note their facts; `scrub` blanks the token and known secrets in a server string. */
type FactsRun = { configDir: string; scope: string; now(): number; scrub?(text: string): string };

/** A version conflict (exit 7) that names the current version: noted as `seen`. Anything else passes unnoted. Returns whether a fact was written. */
export function noteConflict(run: FactsRun, endpointId: string, err: unknown, via: string): boolean {
  if (!isCliError(err) || err.exitCode !== EXIT.versionConflict) return false;
  const version = currentVersionOf(err.details);
  if (version === undefined) return false;
  return EndpointFacts.read(run.configDir, run.scope, endpointId).add({ f: 'seen', at: new Date(run.now()).toISOString(), version, via });
}

/** A reactivate the server applied (2xx): the endpoint's version and status as it answered them. */
export function noteReactivated(run: FactsRun, endpointId: string, data: { endpoint: Record<string, unknown>; changed: boolean }): boolean {
  const version = data.endpoint.version;
  return EndpointFacts.read(run.configDir, run.scope, endpointId).add({
    f: 'applied',
    at: new Date(run.now()).toISOString(),
    op: 'reactivate',
    version: typeof version === 'number' && Number.isSafeInteger(version) ? version : null,
    changed: data.changed,
    endpoint: seenOf(data.endpoint, (t) => run.scrub?.(t) ?? t),
  });
}
