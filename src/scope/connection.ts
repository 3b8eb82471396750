// The scope a command addresses (organization, application, environment)
// and the base URL, Origin and x-service-csrf value it addresses it with:
// each from the first of flag, environment, selected profile, default.
// Pure: the caller hands in flags, env and the selected profile, so every
// precedence rule is a table test.
import type { Scope } from '../api/schemas.js';
import { requireSelected, type SelectedProfile } from '../config/profile.js';
import { configError } from '../errors/cli-error.js';
import { checkBaseUrl, checkHeaderValue } from '../http/wire-checks.js';
import { nonEmpty } from '../input/values.js';

/** The global options that name the scope and the base URL, as commander parses them. */
export interface ScopeFlags {
  baseUrl?: string | undefined;
  org?: string | undefined;
  app?: string | undefined;
  env?: string | undefined;
}

export interface Connection {
  baseUrl: string; // no trailing slash
  origin: string;
  csrfToken: string;
  scope: Scope;
}

export function resolveConnection(flags: ScopeFlags, env: NodeJS.ProcessEnv, sel: SelectedProfile): Connection {
  requireSelected(sel);
  const p = sel.profile ?? {};
  const rawBase = nonEmpty(flags.baseUrl) ?? nonEmpty(env.CHATCTL_BASE_URL) ?? nonEmpty(p.baseUrl);
  if (!rawBase) {
    throw configError('no base URL', 'pass --base-url, set CHATCTL_BASE_URL, or store one with: chatctl profile set NAME --base-url URL');
  }
  const base = checkBaseUrl(rawBase, configError);
  const missing: string[] = [];
  const pick = (flag: string | undefined, envName: string, stored: string | undefined, label: string) => {
    const v = nonEmpty(flag) ?? nonEmpty(env[envName]) ?? nonEmpty(stored);
    if (v === undefined) missing.push(label);
    return v ?? '';
  };
  const scope: Scope = {
    organizationId: pick(flags.org, 'CHATCTL_ORG', p.organizationId, '--org (CHATCTL_ORG)'),
    applicationId: pick(flags.app, 'CHATCTL_APP', p.applicationId, '--app (CHATCTL_APP)'),
    environmentKey: pick(flags.env, 'CHATCTL_ENV', p.environmentKey, '--env (CHATCTL_ENV)'),
  };
  if (missing.length) {
    throw configError(`missing scope: ${missing.join(', ')}`, 'pass the flags, set the variables, or store them in a profile with: chatctl profile set');
  }
  for (const [label, v] of Object.entries(scope)) {
    if (v === '.' || v === '..') throw configError(`${label} cannot be "${v}"`);
  }
  const origin = nonEmpty(env.CHATCTL_ORIGIN) ?? nonEmpty(p.origin) ?? base.origin;
  const csrfToken = nonEmpty(env.CHATCTL_CSRF_TOKEN) ?? nonEmpty(p.csrfToken) ?? '1';
  checkHeaderValue(origin, 'Origin');
  checkHeaderValue(csrfToken, 'x-service-csrf value');
  return { baseUrl: base.href, origin, csrfToken, scope };
}
