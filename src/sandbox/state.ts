// Everything one running sandbox remembers, in memory, behind one clock.
import { createHash } from 'node:crypto';
import type { ClientRequest, IncomingHttpHeaders } from 'node:http';
import type { CreateRequest, EventType, RotationMode, Scope } from '../api/schemas.js';
import type { Clock } from '../system/clock.js';
import { Faults, type FaultSettings } from './faults.js';
import { ApiFailure, newEndpointId, newSecret, type DeliveryReport, type RandomBytes } from './protocol.js';

export const SANDBOX_SCOPE: Readonly<Scope> = Object.freeze({ organizationId: 'org_sandbox', applicationId: 'app_sandbox', environmentKey: 'sandbox' });
export const OVERLAP_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What the API returns as `endpoint` (WebhookEndpointDto). Never holds a secret. */
export interface EndpointRecord {
  id: string;
  name: string;
  destinationUrl: string;
  eventTypes: EventType[];
  status: 'active' | 'inactive';
  version: number;
  createdAt: string;
  updatedAt: string;
  previousSecretExpiresAt: string | null;
}

type Endpoint = Omit<EndpointRecord, 'previousSecretExpiresAt'> & { secret: string; previous: { secret: string; expiresAt: number } | null };

/** `expiresAt`: the previous secret's end. */
type ValidSecret = { secret: string; role: 'current' | 'previous'; expiresAt?: string };

const iso = (ms: number) => new Date(ms).toISOString();

/** The endpoints of the one environment, and the moves the spec leaves to the implementer: statuses, versions, the two rotation modes. */
export class EndpointStore {
  private readonly endpoints = new Map<string, Endpoint>();
  /** Two URLs that parse to the same href are the same destination (a map, so thousands of endpoints stay fast). */
  private readonly byDestination = new Map<string, string>();

  constructor(private readonly deps: { now: Clock['now']; randomBytes: RandomBytes; limit: number }) {}

  create(input: CreateRequest): { endpoint: EndpointRecord; secret: string } {
    const { limit, now, randomBytes } = this.deps;
    const destination = new URL(input.destinationUrl).href;
    const other = this.byDestination.get(destination);
    if (other !== undefined) throw new ApiFailure(409, 'webhook_endpoint_conflict', 'an endpoint with this destinationUrl already exists', { field: 'destinationUrl', endpointId: other });
    if (this.endpoints.size >= limit)
      throw new ApiFailure(409, 'webhook_endpoint_limit_reached', `the environment already has ${limit} endpoints, this sandbox's limit (start it with --endpoint-limit N to allow more)`, { limit });
    let id: string;
    do id = newEndpointId(randomBytes);
    while (this.endpoints.has(id));
    const at = iso(now());
    const { name, destinationUrl, eventTypes } = input;
    const endpoint: Endpoint = { id, name, destinationUrl, eventTypes: [...eventTypes], status: 'active', version: 1, createdAt: at, updatedAt: at, secret: newSecret(randomBytes), previous: null };
    this.endpoints.set(id, endpoint);
    this.byDestination.set(destination, id);
    return { endpoint: this.record(endpoint), secret: endpoint.secret };
  }

  rotate(id: string, expectedVersion: number, mode: RotationMode): { endpoint: EndpointRecord; secret: string } {
    const endpoint = this.find(id, expectedVersion);
    const now = this.deps.now();
    const overlapping = this.overlapEnd(endpoint);
    if (mode === 'overlap' && overlapping !== null)
      throw new ApiFailure(409, 'webhook_secret_rotation_conflict', 'an overlap rotation is still running', { previousSecretExpiresAt: iso(overlapping) });
    endpoint.previous = mode === 'overlap' ? { secret: endpoint.secret, expiresAt: now + OVERLAP_MS } : null;
    endpoint.secret = newSecret(this.deps.randomBytes);
    this.touch(endpoint, now);
    return { endpoint: this.record(endpoint), secret: endpoint.secret };
  }

  setStatus(id: string, expectedVersion: number, status: EndpointRecord['status']): { endpoint: EndpointRecord; changed: boolean } {
    const endpoint = this.find(id, expectedVersion);
    const changed = endpoint.status !== status;
    if (changed) {
      endpoint.status = status;
      this.touch(endpoint, this.deps.now());
    }
    return { endpoint: this.record(endpoint), changed };
  }

  /** Every endpoint with the secrets that currently verify its deliveries (newest first). */
  inspect(): Array<EndpointRecord & { validSecrets: string[] }> {
    return [...this.endpoints.values()].map((e) => ({ ...this.record(e), validSecrets: this.validSecrets(e).map((v) => v.secret) }));
  }

  deliveryTarget(id: string): { endpoint: EndpointRecord; secrets: ValidSecret[] } {
    const endpoint = this.find(id);
    return { endpoint: this.record(endpoint), secrets: this.validSecrets(endpoint) };
  }

  private find(id: string, expectedVersion?: number): Endpoint {
    const endpoint = this.endpoints.get(id);
    if (!endpoint) throw new ApiFailure(404, 'resource_not_found', 'no such webhook endpoint', { endpointId: id });
    if (expectedVersion !== undefined && endpoint.version !== expectedVersion)
      throw new ApiFailure(409, 'webhook_endpoint_version_conflict', 'expectedVersion does not match the current version', { expectedVersion, currentVersion: endpoint.version });
    return endpoint;
  }

  private touch(endpoint: Endpoint, now: number): void {
    endpoint.version += 1;
    endpoint.updatedAt = iso(now);
  }

  private validSecrets(endpoint: Endpoint): ValidSecret[] {
    const end = this.overlapEnd(endpoint);
    const current: ValidSecret = { secret: endpoint.secret, role: 'current' };
    return end !== null && endpoint.previous ? [current, { secret: endpoint.previous.secret, role: 'previous', expiresAt: iso(end) }] : [current];
  }

  /** When the running overlap ends, or null if none is running. */
  private overlapEnd(endpoint: Endpoint): number | null {
    const end = endpoint.previous?.expiresAt;
    return end !== undefined && end > this.deps.now() ? end : null;
  }

  private record(endpoint: Endpoint): EndpointRecord {
    const { secret, previous, ...e } = endpoint;
    const end = this.overlapEnd(endpoint);
    return { ...e, eventTypes: [...e.eventTypes], previousSecretExpiresAt: end === null ? null : iso(end) };
  }
}

/** JSON with object keys sorted, so that key order does not change a fingerprint. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const fingerprint = (body: unknown) => createHash('sha256').update(canonicalJson(body)).digest('hex');

export type KeyScope = { token: string; method: string; path: string; key: string };

type StoredResult = { status: number; data: unknown };

/** One stored result per (token, route, key) with the fingerprint of the body it answered, for 24 hours of the injected clock. */
export class IdempotencyStore {
  private readonly entries = new Map<string, { fingerprint: string; result: StoredResult; expiresAt: number }>();

  constructor(private readonly now: Clock['now']) {}

  lookup(scope: KeyScope, bodyFingerprint: string): { kind: 'miss' } | { kind: 'replay'; result: StoredResult } | { kind: 'conflict' } {
    this.sweep();
    const entry = this.entries.get(mapKey(scope));
    if (!entry) return { kind: 'miss' };
    return entry.fingerprint === bodyFingerprint ? { kind: 'replay', result: entry.result } : { kind: 'conflict' };
  }

  save(scope: KeyScope, bodyFingerprint: string, result: StoredResult): void {
    const key = mapKey(scope);
    this.entries.delete(key); // re-inserted last: the map stays in expiry order
    this.entries.set(key, { fingerprint: bodyFingerprint, result, expiresAt: this.now() + IDEMPOTENCY_TTL_MS });
  }

  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  /** Saved order is expiry order (the clock only moves forward), so a sweep stops at the first live entry. */
  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > now) break;
      this.entries.delete(key);
    }
  }
}

const mapKey = (s: KeyScope) => JSON.stringify([s.token, s.method, s.path, s.key]);

/** GET /_sandbox/requests: `path` is the target as received (query included), `body` its first 64 KiB as UTF-8, `status` null when dropped. */
export type RecordedRequest = { at: string; requestId: string; method: string; path: string; headers: IncomingHttpHeaders; body: string; status: number | null };

/** GET /_sandbox/stats, so a benchmark reads its 429s without keeping every request: answers by status ("dropped" when closed unanswered), and the rate limiter's 429s (not injected ones). */
export const noStats = () => ({ requests: 0, statuses: {} as Record<string, number>, rateLimited: 0 });

type StateOptions = { token: string; endpointLimit: number; faults: FaultSettings; now: Clock['now']; randomBytes: RandomBytes; onDelivery?: (report: DeliveryReport, at: string) => void };

export class SandboxState {
  readonly scope = SANDBOX_SCOPE;
  endpoints!: EndpointStore;
  idempotency!: IdempotencyStore;
  faults!: Faults;
  /** API requests, newest last; bounded, so a long-running sandbox stays small. */
  requests!: RecordedRequest[];
  stats!: ReturnType<typeof noStats>;
  /** Deliveries waiting for their receiver, ended when the sandbox stops. */
  readonly deliveries = new Set<ClientRequest>();
  /** What POST /_sandbox/clock added to the injected clock: it moves the sandbox's deadlines, not the time its deliveries are sent at. */
  offsetMs = 0;

  constructor(readonly options: StateOptions) {
    this.reset();
  }

  readonly now = (): number => this.options.now() + this.offsetMs;

  logRequest(entry: RecordedRequest): void {
    this.requests.push(entry);
    if (this.requests.length > 1000) this.requests.shift();
    const key = entry.status === null ? 'dropped' : String(entry.status);
    this.stats.requests += 1;
    this.stats.statuses[key] = (this.stats.statuses[key] ?? 0) + 1;
  }

  /** Also the start: no endpoints, keys, requests, counts, faults or clock offset. */
  reset(): void {
    const { now, options } = this;
    this.endpoints = new EndpointStore({ now, randomBytes: options.randomBytes, limit: options.endpointLimit });
    this.idempotency = new IdempotencyStore(now);
    this.faults = new Faults(options.faults, now);
    this.requests = [];
    this.stats = noStats();
    this.offsetMs = 0;
  }
}
