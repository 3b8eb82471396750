// chatctl profile list|show|set|use|remove. Tokens are never shown, only
// whether and where one is stored. use, show and remove look the name up and
// nothing more: a name not stored (`constructor`, a typo) does not exist.
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { KEYRING_STORAGE, PROFILE_FIELDS, PROFILE_NAME, profileMap, profileOf, type ConfigData, type Profile } from '../../config/schema.js';
import { configError, usageError, type CliError } from '../../errors/cli-error.js';
import { unknownProfileError } from '../../errors/explain.js';
import { storedTokenSource } from '../../credentials/source.js';
import { callKeyring } from '../../credentials/token.js';
import { checkBaseUrl } from '../../http/wire-checks.js';
import { escapeInline } from '../../output/json.js';
import { writeJson } from '../../output/io.js';

export function checkProfileName(name: string): string {
  if (!PROFILE_NAME.test(name)) {
    throw usageError(`invalid profile name "${escapeInline(name)}"`, 'use letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64 characters');
  }
  return name;
}

/** What `profile show` and `profile list --json` print: no token, only whether one is stored and where (CHATCTL_TOKEN aside). */
function publicProfile(name: string, p: Profile, current: boolean) {
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
    tokenSource: storedTokenSource(p) ?? null,
    tokenCommand: p.tokenCommand ?? null,
  };
}

/** A name that is not stored, with the stored one nearest to it (`sbz` → sbx) when there is one. */
function notStored(data: ConfigData, name: string, instead?: (near: string) => string, otherwise?: string): CliError {
  return unknownProfileError(name, Object.keys(profileMap(data.profiles)), instead ?? 'default', otherwise);
}

export async function runProfileList(f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const data = state.config();
  const current = state.profile().name;
  const rows = Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => publicProfile(name, p, name === current));
  if (state.output.json) return writeJson(ctx.io, { current, profiles: rows }, 'one-line');
  if (rows.length === 0) return ctx.io.notice('no profiles yet; create one with: chatctl profile set NAME --base-url URL --org ID --app ID --env KEY');
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
  const state = f.state();
  const data = state.config();
  const current = state.profile().name;
  const target = name ?? current;
  const p = profileOf(data, target);
  if (!p) throw notStored(data, target);
  const shown = publicProfile(target, p, target === current);
  if (state.output.json) return writeJson(ctx.io, shown, 'one-line');
  const lines = Object.entries(shown).map(([k, v]) => `${k.padEnd(15)} ${escapeInline(v === null ? '-' : String(v))}\n`);
  ctx.io.stdout.write(lines.join(''));
}

/** From the global --base-url, --org, --app and --env (here they say what to store), --origin, --csrf-token and --token-command; empty clears. */
export async function runProfileSet(name: string, opts: { origin?: string; csrfToken?: string; tokenCommand?: string }, f: Factory): Promise<void> {
  const { ctx } = f;
  const { given } = f.state();
  checkProfileName(name);
  const values: Partial<Record<(typeof PROFILE_FIELDS)[number], string | undefined>> = {
    baseUrl: given.baseUrl,
    organizationId: given.org,
    applicationId: given.app,
    environmentKey: given.env,
    origin: opts.origin,
    csrfToken: opts.csrfToken,
  };
  if (values.baseUrl) values.baseUrl = checkBaseUrl(values.baseUrl, usageError).href;
  const unprintable = (v: string | undefined) => v !== undefined && !/^[\x20-\x7e]*$/.test(v);
  if (unprintable(values.origin)) throw usageError('--origin must be printable ASCII');
  if (unprintable(values.csrfToken)) throw usageError('--csrf-token must be printable ASCII');
  if (opts.tokenCommand?.includes('\0')) throw usageError('--token-command cannot contain a NUL character');
  let first = false;
  await store(ctx).update((data) => {
    const profiles = profileMap(data.profiles);
    // The first profile becomes the current one: a later command uses it, not a hidden "default".
    first = Object.keys(profiles).length === 0;
    const next: Profile = { ...(profileOf(data, name) ?? {}) };
    for (const field of PROFILE_FIELDS) {
      const v = values[field];
      if (v === '') delete next[field];
      else if (v !== undefined) next[field] = v;
    }
    if (opts.tokenCommand === '') delete next.tokenCommand;
    else if (opts.tokenCommand !== undefined) next.tokenCommand = opts.tokenCommand;
    profiles[name] = next;
    return first ? { ...data, profiles, currentProfile: name } : { ...data, profiles };
  });
  ctx.io.notice(first ? `profile "${name}" saved; it is the current profile (the first one)` : `profile "${name}" saved`);
}

export async function runProfileUse(name: string, f: Factory): Promise<void> {
  await store(f.ctx).update((data) => {
    if (!profileOf(data, name)) throw notStored(data, name, (near) => `chatctl profile use ${near}`, PROFILE_NAME.test(name) ? `create it with: chatctl profile set ${name}` : undefined);
    return { ...data, currentProfile: name };
  });
  f.ctx.io.notice(`now using profile "${name}"`);
}

/** The profile and its stored token: its config.json copy, or its keyring entry (one left behind would be a token nobody knows of). */
export async function runProfileRemove(name: string, f: Factory): Promise<void> {
  const { ctx } = f;
  let inKeyring = false;
  let hadToken = false;
  let wasCurrent = false;
  let left: string[] = [];
  await store(ctx).update((data) => {
    const p = profileOf(data, name);
    if (!p) throw notStored(data, name);
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
    const r = await callKeyring(ctx, 'delete', name);
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
