// The endpoints of the one sandbox environment, and the moves the spec leaves
// to the implementer: statuses, versions and the two rotation modes.
import type { CreateRequest, EventType, RotationMode } from '../api/schemas.js';
import { ApiFailure } from './envelopes.js';
import { newEndpointId, newSecret, type RandomBytes } from './ids.js';
import type { Clock } from '../system/clock.js';

export const OVERLAP_MS = 24 * 60 * 60 * 1000;

export type EndpointStatus = 'active' | 'inactive';

/** What the API returns as `endpoint` (WebhookEndpointDto). Never holds a secret. */
export interface EndpointRecord {
  id: string;
  name: string;
  destinationUrl: string;
  eventTypes: EventType[];
  status: EndpointStatus;
  version: number;
  createdAt: string;
  updatedAt: string;
  previousSecretExpiresAt: string | null;
}

/** What the store holds: times in ms, and the secrets. */
interface Endpoint extends Omit<EndpointRecord, 'createdAt' | 'updatedAt' | 'previousSecretExpiresAt'> {
  createdAt: number;
  updatedAt: number;
  secret: string;
  previous: { secret: string; expiresAt: number } | null;
}

export interface SecretResult {
  endpoint: EndpointRecord;
  secret: string;
}

export interface ValidSecret {
  secret: string;
  role: 'current' | 'previous';
  /** The previous secret's end. */
  expiresAt?: string;
}

export interface StatusResult {
  endpoint: EndpointRecord;
  changed: boolean;
}

export interface EndpointStoreDeps {
  now: Clock['now'];
  randomBytes: RandomBytes;
  limit: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class EndpointStore {
  private readonly endpoints = new Map<string, Endpoint>();
  /** Two URLs that parse to the same href are the same destination (a map, so thousands of endpoints stay fast). */
  private readonly byDestination = new Map<string, string>();

  constructor(private readonly deps: EndpointStoreDeps) {}

  create(input: CreateRequest): SecretResult {
    const destination = new URL(input.destinationUrl).href;
    const other = this.byDestination.get(destination);
    if (other !== undefined)
      throw new ApiFailure(409, 'webhook_endpoint_conflict', 'an endpoint with this destinationUrl already exists', {
        field: 'destinationUrl',
        endpointId: other,
      });
    if (this.endpoints.size >= this.deps.limit)
      // The sandbox's own limit, which its user set (or left at 10): the message says how to raise it.
      throw new ApiFailure(409, 'webhook_endpoint_limit_reached', `the environment already has ${this.deps.limit} endpoints, this sandbox's limit (start it with --endpoint-limit N to allow more)`, {
        limit: this.deps.limit,
      });
    let id: string;
    do id = newEndpointId(this.deps.randomBytes);
    while (this.endpoints.has(id));
    const now = this.deps.now();
    const endpoint: Endpoint = {
      id,
      name: input.name,
      destinationUrl: input.destinationUrl,
      eventTypes: [...input.eventTypes],
      status: 'active',
      version: 1,
      createdAt: now,
      updatedAt: now,
      secret: newSecret(this.deps.randomBytes),
      previous: null,
    };
    this.endpoints.set(id, endpoint);
    this.byDestination.set(destination, id);
    return { endpoint: this.record(endpoint), secret: endpoint.secret };
  }

  rotate(id: string, expectedVersion: number, mode: RotationMode): SecretResult {
    const endpoint = this.current(id, expectedVersion);
    const now = this.deps.now();
    const overlapping = this.overlapEnd(endpoint);
    if (mode === 'overlap') {
      if (overlapping !== null)
        throw new ApiFailure(409, 'webhook_secret_rotation_conflict', 'an overlap rotation is still running', {
          previousSecretExpiresAt: iso(overlapping),
        });
      endpoint.previous = { secret: endpoint.secret, expiresAt: now + OVERLAP_MS };
    } else {
      endpoint.previous = null;
    }
    endpoint.secret = newSecret(this.deps.randomBytes);
    this.touch(endpoint, now);
    return { endpoint: this.record(endpoint), secret: endpoint.secret };
  }

  setStatus(id: string, expectedVersion: number, status: EndpointStatus): StatusResult {
    const endpoint = this.current(id, expectedVersion);
    if (endpoint.status === status) return { endpoint: this.record(endpoint), changed: false };
    endpoint.status = status;
    this.touch(endpoint, this.deps.now());
    return { endpoint: this.record(endpoint), changed: true };
  }

  /** Every endpoint with the secrets that currently verify its deliveries (newest first). */
  inspect(): Array<EndpointRecord & { validSecrets: string[] }> {
    return [...this.endpoints.values()].map((e) => ({
      ...this.record(e),
      validSecrets: this.validSecrets(e).map((v) => v.secret),
    }));
  }

  /** What a delivery needs: the endpoint and the secrets that sign it now, newest first. */
  deliveryTarget(id: string): { endpoint: EndpointRecord; secrets: ValidSecret[] } {
    const endpoint = this.find(id);
    return { endpoint: this.record(endpoint), secrets: this.validSecrets(endpoint) };
  }

  clear(): void {
    this.endpoints.clear();
    this.byDestination.clear();
  }

  private find(id: string): Endpoint {
    const endpoint = this.endpoints.get(id);
    if (!endpoint) throw new ApiFailure(404, 'resource_not_found', 'no such webhook endpoint', { endpointId: id });
    return endpoint;
  }

  private current(id: string, expectedVersion: number): Endpoint {
    const endpoint = this.find(id);
    if (endpoint.version !== expectedVersion)
      throw new ApiFailure(409, 'webhook_endpoint_version_conflict', 'expectedVersion does not match the current version', {
        expectedVersion,
        currentVersion: endpoint.version,
      });
    return endpoint;
  }

  private touch(endpoint: Endpoint, now: number): void {
    endpoint.version += 1;
    endpoint.updatedAt = now;
  }

  /** The secrets that verify the endpoint's deliveries now: the current one, and the previous one until its overlap ends. */
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

  private record(e: Endpoint): EndpointRecord {
    const overlapEnd = this.overlapEnd(e);
    return {
      id: e.id,
      name: e.name,
      destinationUrl: e.destinationUrl,
      eventTypes: [...e.eventTypes],
      status: e.status,
      version: e.version,
      createdAt: iso(e.createdAt),
      updatedAt: iso(e.updatedAt),
      previousSecretExpiresAt: overlapEnd === null ? null : iso(overlapEnd),
    };
  }
}
