// The inventory (docs/inventory.md): what this config folder saw of each
// endpoint, a view of the facts (facts.ts), never a second store. Light to
// load: completion reads it.
import { attempt } from '../system/files.js';
import { EndpointFacts, factFiles, type Fact } from './facts.js';

/** One endpoint as `webhooks list --json` gives it; docs/inventory.md says what each field means. */
export interface EndpointView {
  id: string;
  scope: string;
  name: string | null;
  url: string | null;
  events: string[] | null;
  version: number | null;
  status: string | null;
  lastChange: { at: string; op: 'create' | 'rotate' | 'reactivate' | 'seen'; version: number | null; mode?: string } | null;
  fingerprint: string | null;
  deliveredTo: string[];
  keptAt: string | null;
  overlapEndsAt: string | null;
}

/** The endpoint's view from its facts, in the order they were written; ties of version go to the later fact. */
export function viewOf(facts: EndpointFacts): EndpointView {
  const all = facts.all;
  let top: Fact | undefined;
  let topVersion = -1;
  let described: Extract<Fact, { f: 'applied' }> | undefined;
  let describedVersion = -1;
  for (const f of all) {
    if (f.f !== 'applied' && f.f !== 'seen') continue;
    const v = typeof f.version === 'number' ? f.version : 0;
    if (v >= topVersion) [top, topVersion] = [f, v];
    if (f.f === 'applied' && f.endpoint && v >= describedVersion) [described, describedVersion] = [f, v];
  }
  // Else a create or rotate whose version the answer did not give: the last one written.
  const secret = facts.lastApplied() ?? all.findLast((f): f is Extract<Fact, { f: 'applied'; op: 'create' | 'rotate' }> => f.f === 'applied' && f.op !== 'reactivate');
  const key = secret?.key;
  const delivered = all.filter((f): f is Extract<Fact, { f: 'delivered' }> => f.f === 'delivered' && key !== undefined && f.key === key);
  const kept = delivered.length === 0 ? all.findLast((f): f is Extract<Fact, { f: 'kept' }> => f.f === 'kept' && key !== undefined && f.key === key) : undefined;
  const e = described?.endpoint;
  return {
    id: facts.endpointId,
    scope: facts.scope,
    name: e?.name ?? null,
    url: e?.url ?? null,
    events: e?.events ?? null,
    version: topVersion > 0 ? topVersion : null,
    status: e?.status ?? null,
    lastChange: top ? changeOf(top) : null,
    fingerprint: (secret?.fp ?? delivered.find((d) => d.fp)?.fp) || null,
    // A delivery with no destination named: the secret was in the --json answer on stdout.
    deliveredTo: [...new Set(delivered.flatMap((d) => (d.to.length > 0 ? d.to : ['stdout (--json)'])))],
    keptAt: kept?.path ?? null,
    overlapEndsAt: e?.previousSecretExpiresAt ?? null,
  };
}

function changeOf(f: Fact): EndpointView['lastChange'] {
  if (f.f === 'seen') return { at: f.at, op: 'seen', version: f.version };
  if (f.f !== 'applied') return null;
  return { at: f.at, op: f.op, version: f.version, ...(f.op !== 'reactivate' && f.mode ? { mode: f.mode } : {}) };
}

/** The facts of every endpoint seen here, of one scope ("org/app/env") or of all; by scope, then id. */
export function endpointFacts(configDir: string, scope?: string): EndpointFacts[] {
  // A file that is not regular, or unreadable, is not one of ours to show.
  const found = factFiles(configDir).map((path) => attempt(() => EndpointFacts.fromFile(configDir, path)));
  return found
    .filter((f): f is EndpointFacts => f !== undefined && (scope === undefined || f.scope === scope))
    .sort((a, b) => a.scope.localeCompare(b.scope) || a.endpointId.localeCompare(b.endpointId));
}

/** Every endpoint of the scope this machine saw, with its name when an answer gave one: what completion offers. */
export function knownEndpoints(configDir: string, scope: string): Array<{ id: string; name: string | null }> {
  return endpointFacts(configDir, scope).map((facts) => {
    const named = facts.all.findLast((f) => f.f === 'applied' && typeof f.endpoint?.name === 'string');
    return { id: facts.endpointId, name: named?.f === 'applied' ? (named.endpoint?.name ?? null) : null };
  });
}
