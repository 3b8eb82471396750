// The webhook endpoints this machine knows, for completing ENDPOINT_ID
// (`webhooks rotate`, `reactivate`, `show`, `trigger`): the inventory's view
// of the facts under <config>/facts/ (src/secret/inventory.ts), the one
// store of what this machine saw, with each endpoint's name where an answer
// gave one.
import { knownEndpoints as inventory } from '../secret/inventory.js';

export interface KnownEndpoint {
  id: string;
  /** The endpoint's name, where this machine saw it; null when it did not. */
  name: string | null;
  /** What else is known, for the shells that show a description. */
  detail?: string | undefined;
}

/** The endpoints known in `scope` ("org/app/env") whose id starts with `idPrefix`, by id. */
export function knownEndpoints(configDir: string, scope: string, idPrefix = ''): KnownEndpoint[] {
  return inventory(configDir, scope)
    .filter((e) => e.id.startsWith(idPrefix))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
