// The four operations the sandbox serves (the spec's three and deactivate),
// matched on decoded path segments. Anything else is resource_not_found.
import type { Scope } from '../api/schemas.js';

export type Operation = 'create' | 'rotate' | 'reactivate' | 'deactivate';

export interface ApiRoute {
  operation: Operation;
  endpointId: string | null;
  /** Method and decoded path: the route part of an idempotency key. */
  key: string;
}

function decodeSegments(pathname: string): string[] | null {
  try {
    return pathname.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
}

export function matchApiRoute(method: string, pathname: string, scope: Scope): ApiRoute | null {
  if (method !== 'POST') return null;
  const s = decodeSegments(pathname);
  if (!s || s.length < 8) return null;
  const [v1, orgs, org, apps, app, envs, env, collection, endpointId, ...action] = s;
  if (
    v1 !== 'v1' ||
    orgs !== 'organizations' ||
    apps !== 'applications' ||
    envs !== 'environments' ||
    collection !== 'webhook-endpoints' ||
    org !== scope.organizationId ||
    app !== scope.applicationId ||
    env !== scope.environmentKey
  )
    return null;
  const key = `${method} ${JSON.stringify(s)}`;
  if (endpointId === undefined) return { operation: 'create', endpointId: null, key };
  if (endpointId === '') return null;
  const verb = action.join('/');
  const operation = verb === 'secret/rotate' ? 'rotate' : verb === 'reactivate' || verb === 'deactivate' ? verb : null;
  return operation ? { operation, endpointId, key } : null;
}
