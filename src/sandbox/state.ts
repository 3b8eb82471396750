// Everything one running sandbox remembers, in memory, behind one clock.
import type { Scope } from '../api/schemas.js';
import { Deliverer, type DeliveryReport } from './deliverer.js';
import { EndpointStore } from './endpoints.js';
import { Faults, type FaultSettings } from './faults.js';
import { IdempotencyStore } from './idempotency.js';
import type { RandomBytes } from './ids.js';
import { RequestLog } from './request-log.js';
import { Stats } from './stats.js';
import type { Clock } from '../system/clock.js';

export const SANDBOX_SCOPE: Readonly<Scope> = Object.freeze({
  organizationId: 'org_sandbox',
  applicationId: 'app_sandbox',
  environmentKey: 'sandbox',
});

export interface StateOptions {
  token: string;
  endpointLimit: number;
  faults: FaultSettings;
  now: Clock['now'];
  randomBytes: RandomBytes;
  onDelivery?: ((report: DeliveryReport, at: string) => void) | undefined;
}

export class SandboxState {
  readonly token: string;
  readonly scope = SANDBOX_SCOPE;
  readonly randomBytes: RandomBytes;
  readonly endpoints: EndpointStore;
  readonly idempotency: IdempotencyStore;
  readonly faults: Faults;
  readonly requests = new RequestLog();
  readonly stats = new Stats();
  readonly deliverer = new Deliverer();
  readonly onDelivery: ((report: DeliveryReport, at: string) => void) | undefined;
  private offsetMs = 0;

  constructor(private readonly options: StateOptions) {
    this.token = options.token;
    this.randomBytes = options.randomBytes;
    this.onDelivery = options.onDelivery;
    this.endpoints = new EndpointStore({ now: this.now, randomBytes: options.randomBytes, limit: options.endpointLimit });
    this.idempotency = new IdempotencyStore(this.now);
    this.faults = new Faults(options.faults, this.now);
  }

  /** The injected clock plus whatever POST /_sandbox/clock added. */
  readonly now = (): number => this.options.now() + this.offsetMs;

  /** The injected clock alone: the real time of sending, for the timestamps of deliveries. */
  readonly baseNow = (): number => this.options.now();

  advanceClock(ms: number): void {
    this.offsetMs += ms;
  }

  /** Back to the state at start-up: no endpoints, keys, requests, counts, faults or clock offset. */
  reset(): void {
    this.endpoints.clear();
    this.idempotency.clear();
    this.requests.clear();
    this.stats.clear();
    this.faults.reset();
    this.offsetMs = 0;
  }
}
