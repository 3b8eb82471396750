// Idempotency keys: one stored result per (token, route, key), with a
// fingerprint of the body it answered, kept for 24 hours by the injected clock.
import { createHash } from 'node:crypto';
import type { Clock } from '../system/clock.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredResult {
  status: number;
  data: unknown;
}

export type Lookup = { kind: 'miss' } | { kind: 'replay'; result: StoredResult } | { kind: 'conflict' };

export interface KeyScope {
  token: string;
  method: string;
  path: string;
  key: string;
}

interface Entry {
  fingerprint: string;
  result: StoredResult;
  expiresAt: number;
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

export function fingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

export class IdempotencyStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: Clock['now']) {}

  lookup(scope: KeyScope, bodyFingerprint: string): Lookup {
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

  clear(): void {
    this.entries.clear();
  }

  /**
   * Entries are kept in the order they were saved, which is the order they
   * expire in (the clock only moves forward), so sweeping stops at the first
   * live one: a lookup costs the same with ten keys or ten thousand.
   */
  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > now) break;
      this.entries.delete(key);
    }
  }
}

const mapKey = (s: KeyScope) => JSON.stringify([s.token, s.method, s.path, s.key]);
