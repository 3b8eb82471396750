// The webhook endpoints this machine knows, for completing ENDPOINT_ID
// (`webhooks rotate`, `reactivate`, `trigger`). This function is the one
// seam between completion and what the config folder keeps: today it reads
// the rotation notes under <config>/rotations/ (one per endpoint rotated
// through chatctl here, src/secret/superseded.ts), which give the id, the
// last version and when, but no name; a store that knows names (an
// inventory of the endpoints seen) takes its place here, and nothing else
// in completion changes.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { endpointStem } from '../secret/record.js';
import type { Rotation } from '../secret/superseded.js';

export interface KnownEndpoint {
  id: string;
  /** The endpoint's name, where this machine saw it; null when it did not. */
  name: string | null;
  /** What else is known, for the shells that show a description. */
  detail?: string | undefined;
}

/** Notes read at most, whatever the fleet: a TAB press stays quick. */
const MAX_NOTES = 500;

/**
 * The endpoints known in `scope` ("org/app/env") whose id starts with
 * `idPrefix`, by id. A note's name is its endpoint's stem in its scope
 * (endpointStem), so the notes of other scopes are passed over; a note
 * that cannot be read is too.
 */
export function knownEndpoints(configDir: string, scope: string, idPrefix = ''): KnownEndpoint[] {
  const dir = join(configDir, 'rotations');
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const found: KnownEndpoint[] = [];
  for (const name of names.slice(0, MAX_NOTES)) {
    try {
      const r = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Partial<Rotation>;
      if (typeof r.endpointId !== 'string' || !r.endpointId.startsWith(idPrefix) || `${endpointStem(scope, r.endpointId)}.json` !== name) continue;
      found.push({ id: r.endpointId, name: null, detail: `version ${r.version}, rotated ${r.at}` });
    } catch {
      /* a note being written, or not a note */
    }
  }
  return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
