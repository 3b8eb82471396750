// What the answers that carry no secret tell the facts (facts.ts): a
// reactivate's 2xx (the endpoint's new version and status), and a version
// conflict (exit 7) that names the endpoint's current version. Create and
// rotate answers are noted by custody.ts as their secret is settled.
import { isCliError } from '../errors/cli-error.js';
import { EXIT } from '../errors/exit-codes.js';
import { currentVersionOf } from '../errors/explain.js';
import { EndpointFacts, seenOf } from './facts.js';

/** Where the facts go: the config folder, the scope ("org/app/env") and the clock. */
export interface FactsRun {
  configDir: string;
  scope: string;
  now(): number;
  /** Blanks the token and known secrets in a server string before it is stored. */
  scrub?(text: string): string;
}

/**
 * A version conflict that names the current version: noted as `seen`, so the
 * next run (and `webhooks list`) knows it. Anything else passes unnoted.
 * Best effort, as every fact: returns whether a fact was written.
 */
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
