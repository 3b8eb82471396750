// The webhook endpoints this machine knows, for completing ENDPOINT_ID
// (`webhooks rotate`, `reactivate`, `trigger`). Today they are the rotations
// chatctl noted under <config>/rotations/ (src/secret/superseded.ts): the
// endpoints rotated from this config folder, in the scope of the line being
// completed, with their last version; a note carries no name. This function
// is the one seam: once the config folder keeps an inventory of endpoints
// (ids, names, versions), it reads that instead, and nothing else changes.
import { notedRotations } from '../secret/superseded.js';

export interface KnownEndpoint {
  id: string;
  /** The endpoint's name, where this machine saw it; null when it did not. */
  name: string | null;
  /** What else is known, for the shells that show a description. */
  detail: string;
}

/** The endpoints known in `scope` (organizationId/applicationId/environmentKey) whose id starts with `idPrefix`. */
export function knownEndpoints(configDir: string, scope: string, idPrefix = ''): KnownEndpoint[] {
  return notedRotations(configDir, scope, idPrefix).map((r) => ({ id: r.endpointId, name: null, detail: `version ${r.version}, rotated ${r.at}` }));
}
