// chatctl profile list|show|set|use|remove. Tokens are never shown: only
// whether one is stored.
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { nearest } from '../../input/suggest.js';
import { KEYRING_STORAGE, PROFILE_FIELDS, PROFILE_NAME, profileMap, profileOf, type ConfigData, type Profile } from '../../config/schema.js';
import { configError, usageError } from '../../errors/cli-error.js';
import { checkBaseUrl } from '../../http/wire-checks.js';
import { selectProfile } from '../../config/profile.js';
import { storedTokenSource } from '../../credentials/source.js';
import { escapeInline } from '../../output/sanitize.js';

export function checkProfileName(name: string): string {
  if (!PROFILE_NAME.test(name)) {
    throw usageError(`invalid profile name "${escapeInline(name)}"`, 'use letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64 characters');
  }
  return name;
}

/** What `profile show` and `profile list --json` print: no token, only whether one is stored. */
export function publicProfile(name: string, p: Profile, current: boolean) {
  return {
    name,
    current,
    baseUrl: p.baseUrl ?? null,
    organizationId: p.organizationId ?? null,
    applicationId: p.applicationId ?? null,
    environmentKey: p.environmentKey ?? null,
    origin: p.origin ?? null,
    csrfToken: p.csrfToken === undefined ? null : '[set]',
    tokenStored: Boolean(p.token) || p.tokenStorage === KEYRING_STORAGE,
    /** Where this profile's own token comes from (CHATCTL_TOKEN aside): "command", "keyring", "file" or null. */
    tokenSource: storedTokenSource(p) ?? null,
    tokenCommand: p.tokenCommand ?? null,
  };
}

export async function runProfileList(f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const data = store(ctx).read();
  const current = selectProfile({ profile: g.profile }, ctx.env, data).name;
  const rows = Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => publicProfile(name, p, name === current));
  if (g.json) {
    ctx.io.stdout.write(JSON.stringify({ current, profiles: rows }) + '\n');
    return;
  }
  if (rows.length === 0) {
    ctx.io.notice('no profiles yet; create one with: chatctl profile set NAME --base-url URL --org ID --app ID --env KEY');
    return;
  }
  const { default: Table } = await import('cli-table3');
  const { PLAIN_TABLE, tableText } = await import('../../output/render.js');
  const table = new Table({ head: ['', 'PROFILE', 'BASE URL', 'ORG', 'APP', 'ENV', 'TOKEN'], style: { head: [], border: [] }, ...(ctx.io.stdout.isTTY ? {} : PLAIN_TABLE) });
  for (const r of rows) {
    table.push([r.current ? '*' : '', r.name, r.baseUrl ?? '-', r.organizationId ?? '-', r.applicationId ?? '-', r.environmentKey ?? '-', r.tokenSource ?? '-'].map((v) => escapeInline(v)));
  }
  ctx.io.stdout.write(tableText(table.toString(), ctx.io.stdout.isTTY) + '\n');
}

export async function runProfileShow(name: string | undefined, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const data = store(ctx).read();
  const current = selectProfile({ profile: g.profile }, ctx.env, data).name;
  const target = name ?? current;
  const p = profileOf(data, target);
  if (!p) {
    const near = storedNear(data, target);
    throw missing(target, near !== undefined ? `did you mean ${near}?  (list profiles with: chatctl profile list)` : 'list profiles with: chatctl profile list');
  }
  const shown = publicProfile(target, p, target === current);
  if (g.json) {
    ctx.io.stdout.write(JSON.stringify(shown) + '\n');
    return;
  }
  const lines = Object.entries(shown).map(([k, v]) => `${k.padEnd(15)} ${escapeInline(v === null ? '-' : String(v))}`);
  ctx.io.stdout.write(lines.join('\n') + '\n');
}

export interface ProfileSetOptions {
  origin?: string;
  csrfToken?: string;
  /** A credential helper: run by /bin/sh -c for the token (credentials/helper.ts); empty clears it. */
  tokenCommand?: string;
}

export async function runProfileSet(name: string, opts: ProfileSetOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  checkProfileName(name);
  // --base-url, --org, --app and --env are the global options: here they say what to store.
  const values: Partial<Record<(typeof PROFILE_FIELDS)[number], string | undefined>> = {
    baseUrl: g.baseUrl,
    organizationId: g.org,
    applicationId: g.app,
    environmentKey: g.env,
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
    const next: Profile = { ...(profileOf(data, name) ?? {}) };
    for (const field of PROFILE_FIELDS) {
      const v = values[field];
      if (v === undefined) continue;
      if (v === '')
        delete next[field]; // an empty value clears the field
      else next[field] = v;
    }
    if (opts.tokenCommand === '') delete next.tokenCommand;
    else if (opts.tokenCommand !== undefined) next.tokenCommand = opts.tokenCommand;
    profiles[name] = next;
    const out: ConfigData = { ...data, profiles };
    if (first) out.currentProfile = name;
    return out;
  });
  ctx.io.notice(first ? `profile "${name}" saved; it is the current profile (the first one)` : `profile "${name}" saved`);
}

// use and remove look the name up and nothing more: any name that is not
// stored (`constructor`, `__proto__`, a typo) is one that does not exist.
const missing = (name: string, hint: string) => configError(`profile "${escapeInline(name)}" does not exist`, hint);

/** For a name that is not stored: the stored one it is nearest to (`sbz` → sbx), if any. */
const storedNear = (data: ConfigData, name: string) => nearest(name, Object.keys(profileMap(data.profiles)));

export async function runProfileUse(name: string, f: Factory): Promise<void> {
  const { ctx } = f;
  await store(ctx).update((data) => {
    if (!profileOf(data, name)) {
      const near = storedNear(data, name);
      if (near !== undefined) throw missing(name, `did you mean ${near}?  (chatctl profile use ${near})`);
      throw missing(name, PROFILE_NAME.test(name) ? `create it with: chatctl profile set ${name}` : 'list profiles with: chatctl profile list');
    }
    return { ...data, currentProfile: name };
  });
  ctx.io.notice(`now using profile "${name}"`);
}

export async function runProfileRemove(name: string, f: Factory): Promise<void> {
  const { ctx } = f;
  let inKeyring = false;
  let hadToken = false;
  let wasCurrent = false;
  let left: string[] = [];
  await store(ctx).update((data) => {
    const p = profileOf(data, name);
    if (!p) {
      const near = storedNear(data, name);
      throw missing(name, near !== undefined ? `did you mean ${near}?  (list profiles with: chatctl profile list)` : 'list profiles with: chatctl profile list');
    }
    inKeyring = p.tokenStorage === KEYRING_STORAGE;
    const profiles = profileMap(data.profiles);
    hadToken = Boolean(profiles[name]?.token) || inKeyring;
    delete profiles[name];
    const next = { ...data, profiles };
    wasCurrent = next.currentProfile === name;
    if (wasCurrent) delete next.currentProfile;
    left = Object.keys(profiles);
    return next;
  });
  if (inKeyring) {
    // Its token goes with it: a keyring entry left behind would be a token nobody knows of.
    const { keyringCall } = await import('../../credentials/keyring.js');
    const r = await keyringCall('delete', name, { env: ctx.env, signal: ctx.signal, limitMs: ctx.credentialLimits?.keyringMs });
    if (!r.ok) {
      throw configError(
        `profile "${escapeInline(name)}" was removed, but its token could not be removed from the system keyring: ${escapeInline(r.reason)}`,
        `remove it with your keyring's tool (service chatctl, account ${name})`,
      );
    }
  }
  // Removing the profile in use leaves "default" in effect: say so, and how to pick another.
  const inUse = !wasCurrent ? '' : left.includes('default') ? '; "default" is in use now' : left.length ? `; no profile is in use now: choose one with chatctl profile use ${left[0]}` : '';
  ctx.io.notice(`profile "${name}" removed${hadToken ? ` with its stored token${inKeyring ? ' (from the system keyring)' : ''}` : ''}${inUse}`);
}

function checkPrintable(value: string, flag: string): void {
  if (!/^[\x20-\x7e]*$/.test(value)) throw usageError(`${flag} must be printable ASCII`);
}
