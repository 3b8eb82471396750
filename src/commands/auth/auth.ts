// chatctl auth login|logout|status. The token never travels on argv: it is
// read from stdin (--with-token) or a masked prompt, and stored in the
// profile in effect (--profile, CHATCTL_PROFILE, the current profile, else
// "default"), which the notice names with the reason.
import type { Factory } from '../app.js';
import { configError, localError, usageError } from '../../errors/cli-error.js';
import { isHeaderSafe } from '../../http/wire-checks.js';
import { noTokenError, storedTokenSource } from '../../credentials/source.js';
import { selectProfile, type ProfileSource } from '../../config/profile.js';
import { SCOPE_INPUTS, type ScopeDescription, type SourcedValue, type ValueSource } from '../../scope/describe.js';
import { checkProfileName } from '../profile/profile.js';
import { configStoreFor as store } from '../../config/store.js';
import { KEYRING_STORAGE, profileMap, profileOf, type ConfigData } from '../../config/schema.js';
import { sourceWords } from '../../credentials/token.js';
import { checkTokenSize } from '../../credentials/bound.js';
import { escapeInline } from '../../output/sanitize.js';

/** Why this profile: words for a notice. */
export function profileReason(source: ProfileSource): string {
  switch (source) {
    case 'flag':
      return 'named by --profile';
    case 'env':
      return 'named by CHATCTL_PROFILE';
    case 'current':
      return 'the current profile';
    case 'default':
      return 'no profile chosen: --profile, CHATCTL_PROFILE or chatctl profile use NAME chooses one';
  }
}

export interface LoginOptions {
  withToken?: boolean;
  /** The file (config.json, 0600), without trying the keyring. */
  insecureStorage?: boolean;
}

/**
 * Stores the token of the profile in effect: in the system keyring (the
 * config then says `"tokenStorage": "keyring"` and holds no token), or in
 * config.json when asked (--insecure-storage) or when no keyring answers,
 * which is said on stderr. Never both: the copy that is not used is removed.
 */
export async function runAuthLogin(opts: LoginOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const prompter = await f.prompter();
  const s = store(ctx);
  // Checked before asking for the token; chosen again under the lock.
  const before = selectProfile({ profile: g.profile }, ctx.env, s.read());
  checkProfileName(before.name);
  let token: string;
  if (opts.withToken) {
    token = (await ctx.io.stdin.readAll()).trim();
  } else if (prompter) {
    token = (await prompter.token()).trim();
  } else {
    throw usageError('no terminal to ask for the token on', 'pipe it in instead: chatctl auth login --with-token < token.txt');
  }
  if (token === '') throw usageError('the token is empty');
  checkTokenSize(token, 'the token', usageError);
  if (/\s/.test(token) || !isHeaderSafe(token)) {
    throw usageError('the token contains whitespace or characters that cannot be sent in an HTTP header');
  }
  ctx.io.scrubber.addToken(token);

  const limits = { env: ctx.env, signal: ctx.signal, limitMs: ctx.credentialLimits?.keyringMs };
  let fallback: string | undefined;
  let inKeyring = false;
  if (!opts.insecureStorage) {
    const { keyringCall } = await import('../../credentials/keyring.js');
    const r = await keyringCall('set', before.name, limits, token);
    if (r.ok) inKeyring = true;
    else fallback = r.reason;
  }

  let name = '';
  let source: ProfileSource = 'default';
  let movedFromFile = false;
  let leftInKeyring = false;
  let hasCommand = false;
  try {
    await s.update((data) => {
      ({ name, source } = selectProfile({ profile: g.profile }, ctx.env, data));
      checkProfileName(name);
      // The profile in effect was chosen by the same flags and environment:
      // only a `profile use` between the two reads can change it.
      if (inKeyring && name !== before.name) throw configError(`the current profile changed to "${escapeInline(name)}" while logging in; nothing was stored`, 'run the command again');
      const profiles = profileMap(data.profiles);
      const { token: fileToken, tokenStorage, ...rest } = profileOf(data, name) ?? {};
      hasCommand = Boolean(rest.tokenCommand);
      if (inKeyring) {
        movedFromFile = Boolean(fileToken);
        profiles[name] = { ...rest, tokenStorage: KEYRING_STORAGE };
      } else {
        leftInKeyring = tokenStorage === KEYRING_STORAGE;
        profiles[name] = { ...rest, token };
      }
      return { ...data, profiles };
    });
  } catch (err) {
    // The keyring holds a token that config.json does not point at: take it
    // back. (A profile that pointed at it already now has the new token there.)
    if (inKeyring && before.profile?.tokenStorage !== KEYRING_STORAGE) await (await import('../../credentials/keyring.js')).keyringCall('delete', before.name, limits).catch(() => undefined);
    throw err;
  }

  const shown = escapeInline(name);
  if (leftInKeyring) {
    // From the keyring to the file: the keyring's copy goes, so that there are
    // never two. A keyring that just failed to store is not asked again.
    let reason = fallback;
    if (reason === undefined) {
      const { keyringCall } = await import('../../credentials/keyring.js');
      const r = await keyringCall('delete', name, limits);
      if (!r.ok) reason = r.reason;
    }
    if (reason !== undefined) warn(f, `could not remove profile "${shown}"'s earlier entry from the system keyring (${escapeInline(reason)}); it is no longer used`);
  }
  if (inKeyring) {
    ctx.io.notice(
      `token stored in profile "${shown}" (${profileReason(source)}) in the system keyring (service chatctl, account ${shown})${movedFromFile ? '; its earlier copy in config.json was removed' : ''}`,
    );
  } else {
    ctx.io.notice(`token stored in profile "${shown}" (${profileReason(source)}) in ${s.path} (mode 0600)`);
    if (fallback !== undefined) {
      warn(f, `no system keyring answered (${escapeInline(fallback)}): the token is stored in plain text in ${s.path}; use --insecure-storage to choose the file without trying the keyring`);
    }
  }
  if (hasCommand) ctx.io.notice(`profile "${shown}" has a token command, which is used before the stored token; clear it with: chatctl profile set ${name} --token-command ''`);
}

/** Said even with --quiet (where a token is kept is not chatter); not with --json, whose stderr holds JSON only. */
function warn(f: Factory, text: string): void {
  if (!f.invocation().output.json) f.ctx.io.stderr.write(`chatctl: warning: ${text}\n`);
}

/** Removes the token of the profile in effect: its file token and its keyring entry. */
export async function runAuthLogout(f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  let had = false;
  let inKeyring = false;
  let name = '';
  await store(ctx).update((data): ConfigData => {
    ({ name } = selectProfile({ profile: g.profile }, ctx.env, data));
    const p = profileOf(data, name);
    inKeyring = p?.tokenStorage === KEYRING_STORAGE;
    had = Boolean(p?.token) || inKeyring;
    if (!had || !p) return data;
    const profiles = profileMap(data.profiles);
    const { token: _dropped, tokenStorage: _storage, ...rest } = p;
    profiles[name] = rest;
    return { ...data, profiles };
  });
  const shown = escapeInline(name);
  if (inKeyring) {
    const { keyringCall } = await import('../../credentials/keyring.js');
    const r = await keyringCall('delete', name, { env: ctx.env, signal: ctx.signal, limitMs: ctx.credentialLimits?.keyringMs });
    if (!r.ok) {
      throw configError(
        `profile "${shown}" no longer uses its keyring entry, but the entry could not be removed from the system keyring: ${escapeInline(r.reason)}`,
        `run chatctl auth logout --profile ${name} again when the keyring answers, or remove it with your keyring's tool (service chatctl, account ${name})`,
      );
    }
    ctx.io.notice(`token removed from profile "${shown}" (its system keyring entry ${r.deleted ? 'was deleted' : 'was already gone'})`);
    return;
  }
  ctx.io.notice(had ? `token removed from profile "${shown}"` : `profile "${shown}" had no stored token`);
}

/**
 * `auth token`: the token in effect on stdout, for `$(…)` in scripts. On a
 * terminal it asks first (unless --yes), since the token would stay on the
 * screen and in the scrollback.
 */
export async function runAuthToken(opts: { yes?: boolean }, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const prompter = await f.prompter();
  const inv = f.invocation();
  const t = await inv.token();
  if (!t) throw noTokenError(inv.profile().name);
  if (ctx.io.stdout.isTTY && !opts.yes) {
    if (!prompter) throw usageError('--yes is required to print the token on a terminal when not running interactively');
    if (!(await prompter.confirmShowToken(sourceWords(t.source, t.profile)))) throw localError('interrupted', 'not confirmed: the token was not printed');
  }
  // Masked (in GitHub Actions) before it is printed.
  ctx.io.stdoutIsData();
  ctx.io.scrubber.announceValue(t.token);
  if (g.json) ctx.io.stdout.write(JSON.stringify({ token: t.token, source: t.source, profile: t.source === 'env' ? null : t.profile }) + '\n');
  else ctx.io.stdout.write(t.token + '\n');
}

const SOURCE_WORDS: Record<ValueSource, string> = {
  flag: 'flag',
  env: 'environment',
  profile: 'profile',
  default: 'default',
  none: 'not set',
};

function sourceText(key: keyof typeof SCOPE_INPUTS, source: ValueSource, profile: string): string {
  const inputs = SCOPE_INPUTS[key];
  if (source === 'flag' && inputs.flag) return `from ${inputs.flag}`;
  if (source === 'env') return `from ${inputs.env}`;
  if (source === 'profile') return `from profile "${profile}"`;
  return SOURCE_WORDS[source];
}

/** Each stored profile's own token source (its token command, keyring entry or file token); none: null. */
export function profileTokenSources(data: ConfigData): { name: string; tokenSource: 'command' | 'keyring' | 'file' | null }[] {
  return Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => ({ name, tokenSource: storedTokenSource(p) ?? null }));
}

/**
 * `auth status --json`: the fields of chatctl 0.1 (profile, profileExists,
 * baseUrl, tokenStored, tokenSource), each value with its source, and each
 * profile's token source. `tokenSource` is where the token in effect comes
 * from: "env", "command", "keyring", "file", or null.
 */
export function statusDocument(d: ScopeDescription, data: ConfigData) {
  return {
    profile: d.profile.name,
    profileSource: d.profile.source,
    profileExists: d.profile.exists,
    baseUrl: d.baseUrl.value,
    tokenStored: d.token.stored,
    tokenSource: d.token.source === 'none' ? null : d.token.source,
    scope: {
      baseUrl: d.baseUrl,
      organizationId: d.organizationId,
      applicationId: d.applicationId,
      environmentKey: d.environmentKey,
      origin: d.origin,
      csrfToken: d.csrfToken,
    },
    token: d.token,
    profiles: profileTokenSources(data),
  };
}

const TOKEN_LINE = {
  env: () => 'from CHATCTL_TOKEN (environment)',
  command: (p: string) => `from the token command of profile "${p}"`,
  keyring: (p: string) => `in the system keyring, profile "${p}"`,
  file: (p: string) => `in config.json (file), profile "${p}"`,
  none: () => 'none',
};

const PROFILE_SOURCE_WORDS = { command: 'token command', keyring: 'system keyring', file: 'config.json (file)' } as const;

export async function runAuthStatus(f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const inv = f.invocation();
  const d = inv.describe();
  const data = inv.config();
  if (g.json) ctx.io.stdout.write(JSON.stringify(statusDocument(d, data)) + '\n');
  else {
    const name = d.profile.name;
    const line = (label: string, key: keyof typeof SCOPE_INPUTS, v: SourcedValue) => `${label.padEnd(14)}${v.value === null ? '-' : escapeInline(v.value)} (${sourceText(key, v.source, name)})`;
    const profileLine = `${escapeInline(name)} (${profileReason(d.profile.source)})${d.profile.exists ? '' : ' - not created yet'}`;
    const shadowed = d.token.source === 'env' ? storedTokenSource(inv.profile().profile) : undefined;
    const tokenLine = TOKEN_LINE[d.token.source](escapeInline(name)) + (shadowed ? `; it overrides the profile's ${PROFILE_SOURCE_WORDS[shadowed]}` : '');
    const others = profileTokenSources(data).map((p) => `  ${escapeInline(p.name)}: ${p.tokenSource ? PROFILE_SOURCE_WORDS[p.tokenSource] : 'no token'}`);
    ctx.io.stdout.write(
      [
        `${'profile:'.padEnd(14)}${profileLine}`,
        line('base URL:', 'baseUrl', d.baseUrl),
        line('org:', 'organizationId', d.organizationId),
        line('app:', 'applicationId', d.applicationId),
        line('env:', 'environmentKey', d.environmentKey),
        line('origin:', 'origin', d.origin),
        `${'csrf value:'.padEnd(14)}${d.csrfToken.source === 'default' ? '1 (default)' : `set (${sourceText('csrfToken', d.csrfToken.source, name)})`}`,
        `${'token:'.padEnd(14)}${tokenLine}`,
        ...(others.length ? ['', 'tokens by profile:', ...others] : []),
        '',
      ].join('\n'),
    );
  }
  if ((d.profile.source === 'flag' || d.profile.source === 'env') && !d.profile.exists) {
    throw configError(`profile "${escapeInline(d.profile.name)}" does not exist`, 'list profiles with: chatctl profile list');
  }
  if (d.token.source === 'none') throw noTokenError(d.profile.name);
}
