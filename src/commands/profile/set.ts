// chatctl profile set NAME: creates or updates a profile from the scope
// flags (the global --base-url, --org, --app, --env), --origin,
// --csrf-token and --token-command; an empty value clears a field.
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { PROFILE_FIELDS, profileMap, profileOf, type ConfigData, type Profile } from '../../config/schema.js';
import { usageError } from '../../errors/cli-error.js';
import { checkBaseUrl } from '../../http/wire-checks.js';
import { checkProfileName } from './stored.js';

export interface ProfileSetOptions {
  origin?: string;
  csrfToken?: string;
  /** A credential helper: run by /bin/sh -c for the token (credentials/helper.ts); empty clears it. */
  tokenCommand?: string;
}

type Values = Partial<Record<(typeof PROFILE_FIELDS)[number], string | undefined>>;

export async function runProfileSet(name: string, opts: ProfileSetOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  checkProfileName(name);
  // --base-url, --org, --app and --env are the global options: here they say what to store.
  const values: Values = {
    baseUrl: state.given.baseUrl,
    organizationId: state.given.org,
    applicationId: state.given.app,
    environmentKey: state.given.env,
    origin: opts.origin,
    csrfToken: opts.csrfToken,
  };
  if (values.baseUrl) values.baseUrl = checkBaseUrl(values.baseUrl, usageError).href;
  if (values.origin) checkPrintable(values.origin, '--origin');
  if (values.csrfToken) checkPrintable(values.csrfToken, '--csrf-token');
  if (opts.tokenCommand?.includes('\0')) throw usageError('--token-command cannot contain a NUL character');
  let first = false;
  await store(ctx).update((data) => {
    const profiles = profileMap(data.profiles);
    // The first profile becomes the current one: a later `auth login` or
    // command then uses it, not a hidden "default".
    first = Object.keys(profiles).length === 0;
    profiles[name] = updated(profileOf(data, name) ?? {}, values, opts.tokenCommand);
    const out: ConfigData = { ...data, profiles };
    if (first) out.currentProfile = name;
    return out;
  });
  ctx.io.notice(first ? `profile "${name}" saved; it is the current profile (the first one)` : `profile "${name}" saved`);
}

/** The profile with the given values set, and those given empty removed. */
function updated(before: Profile, values: Values, tokenCommand: string | undefined): Profile {
  const next: Profile = { ...before };
  for (const field of PROFILE_FIELDS) {
    const v = values[field];
    if (v === undefined) continue;
    if (v === '') delete next[field];
    else next[field] = v;
  }
  if (tokenCommand === '') delete next.tokenCommand;
  else if (tokenCommand !== undefined) next.tokenCommand = tokenCommand;
  return next;
}

function checkPrintable(value: string, flag: string): void {
  if (!/^[\x20-\x7e]*$/.test(value)) throw usageError(`${flag} must be printable ASCII`);
}
