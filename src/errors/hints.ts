// The next step of an error, decided where errors are classified: a profile
// that is not stored (the nearest stored name, as `profile use` and
// `--profile` both suggest it), and what to check on a refusal for
// permission (5), an unknown resource or scope (6) or a destination already
// registered (8). Server details may have any shape: read defensively.
import { configError, usageError, type CliError, type ScopeOrigin, type ScopeValue } from './cli-error.js';
import { nearest } from './suggest.js';
import { escapeInline } from '../output/sanitize.js';
import { isJsonObject } from '../output/json.js';

const LIST_PROFILES = 'list profiles with: chatctl profile list';

/** How the missing profile was asked for: the suggestion is worded for the same place. */
export type ProfileAsk = 'flag' | 'env' | 'current' | 'default' | ((near: string) => string);

/**
 * A profile that is not stored: the error (exit 3), with the stored name
 * nearest to it (`sbxx` → sbx) in the words of the place it was asked for.
 */
export function unknownProfileError(name: string, stored: readonly string[], asked: ProfileAsk, otherwise = LIST_PROFILES): CliError {
  const near = nearest(name, stored);
  let hint = otherwise;
  if (near !== undefined) {
    const instead =
      typeof asked === 'function' ? asked(near) : asked === 'flag' ? `--profile ${near}; ${LIST_PROFILES}` : asked === 'env' ? `CHATCTL_PROFILE=${near}; ${LIST_PROFILES}` : LIST_PROFILES;
    hint = `did you mean ${near}?  (${instead})`;
  }
  return configError(`profile "${escapeInline(name)}" does not exist`, hint);
}

const FROM = { organizationId: '--org', applicationId: '--app', environmentKey: '--env' } as const;
const VARIABLE = { organizationId: 'CHATCTL_ORG', applicationId: 'CHATCTL_APP', environmentKey: 'CHATCTL_ENV' } as const;

/** "organization org_1 (from --org), application app_1 (from profile "prod"), environment prod (from CHATCTL_ENV)". */
function scopeWords(s: ScopeOrigin): string {
  const one = (key: keyof typeof FROM, label: string) => {
    const v = s[key];
    const from = v.source === 'flag' ? FROM[key] : v.source === 'env' ? VARIABLE[key] : `profile "${s.profile}"`;
    return `${label} ${v.value ?? '-'} (from ${from})`;
  };
  return `${one('organizationId', 'organization')}, ${one('applicationId', 'application')}, ${one('environmentKey', 'environment')}`;
}

const asRecord = (v: unknown) => (isJsonObject(v) ? v : undefined);

/** An id the server named in details of any shape: a short plain word, else nothing. */
function idIn(details: unknown, ...fields: string[]): string | undefined {
  const d = asRecord(details);
  for (const source of [d, asRecord(d?.endpoint), asRecord(d?.existing)]) {
    for (const field of fields) {
      const v = source?.[field];
      if (typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,100}$/.test(v)) return v;
    }
  }
  return undefined;
}

/** Exit 5: the token was accepted, but may not do this here. */
export function permissionHint(e: CliError): string[] {
  const headers = asRecord(e.details)?.missingHeaders;
  if (Array.isArray(headers) && headers.length > 0) {
    return ['next: the server wants the Origin and x-service-csrf headers it names: set them with chatctl profile set NAME --origin ORIGIN --csrf-token VALUE (or CHATCTL_ORIGIN, CHATCTL_CSRF_TOKEN)'];
  }
  const lines = e.scope ? [`the request was for ${scopeWords(e.scope)}`] : [];
  lines.push(
    'next: the token may lack the permission for this, or for this scope: chatctl auth status shows which token is used and where it comes from; check --org, --app and --env, or use a token allowed to manage webhooks there',
  );
  return lines;
}

/** Exit 6: an endpoint id, or a scope, the server does not know. */
export function notFoundHint(e: CliError): string[] {
  const lines = e.scope ? [`the request was for ${scopeWords(e.scope)}`] : [];
  const profile = e.scope ? ` (chatctl profile show ${e.scope.profile})` : '';
  lines.push(`next: check the endpoint id, and --org, --app and --env or the profile's scope${profile}; chatctl doctor checks the set-up`);
  return lines;
}

/** Exit 8 on create: the destination is registered already (the API has no read or delete). */
export function duplicateHint(e: CliError): string[] {
  const existing = idIn(e.details, 'endpointId', 'existingEndpointId', 'id');
  const which = existing ? `endpoint ${existing} already has this destination URL` : 'an endpoint already has this destination URL';
  return [`next: ${which}: rotate or reactivate ${existing ?? 'that endpoint'} instead (chatctl webhooks rotate ${existing ?? 'ENDPOINT_ID'} --expected-version N), or create with another --url`];
}

/** The scope of a run for the hints above, from its description (auth status's); undefined when it cannot be had. */
export function scopeOriginOf(describe: (() => { profile: { name: string }; organizationId: ScopeValue; applicationId: ScopeValue; environmentKey: ScopeValue }) | undefined): ScopeOrigin | undefined {
  try {
    const d = describe?.();
    return d && { profile: d.profile.name, organizationId: d.organizationId, applicationId: d.applicationId, environmentKey: d.environmentKey };
  } catch {
    return undefined;
  }
}

/** The places an endpoint's version can be found (the API cannot read an endpoint). */
export const VERSION_PLACES =
  'data.endpoint.version in the --json answer of its create (1) or of its last rotate or reactivate, the version the previous run printed, the current version an exit 7 names, or the journal or --next-manifest file of rotate --from';

export const VERSION_SOURCES = `pass the endpoint's current version: the API cannot read it, so take it from the last change made to the endpoint: ${VERSION_PLACES}; chatctl webhooks list shows the version this machine last saw, and --expected-version last uses it (at a terminal it is used without the flag)`;

/** A value that was neither given nor asked for (no terminal to ask on): exit 2, with where it comes from. */
export function missingFlagError(flag: string): CliError {
  if (flag === '--expected-version') return usageError(`missing ${flag}`, VERSION_SOURCES);
  const choices = flag === '--mode' ? ' (--mode overlap: the old secret keeps working for a while; --mode immediate --yes: it stops at once)' : '';
  return usageError(`missing ${flag}`, `pass it as a flag${choices}; chatctl asks only at a terminal, and never when CI, CHATCTL_NO_INPUT or --no-input is set`);
}
