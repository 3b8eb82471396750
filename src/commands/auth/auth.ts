// chatctl auth login|logout|status|token (docs/credentials.md): the token never travels on
// argv and is shown by `auth token` alone.
import type { Factory } from '../app.js';
import type { RunState } from '../../run/state.js';
import { type CliError, configError, EXIT, isCliError, localError, usageError } from '../../errors/cli-error.js';
import { isHeaderSafe } from '../../http/wire-checks.js';
import { requireSelected, type ProfileSource } from '../../config/profile.js';
import { checkProfileName } from '../profile/profile.js';
import { configStoreFor as store, type ConfigStore } from '../../config/store.js';
import { KEYRING_STORAGE, profileMap, profileOf, type ConfigData } from '../../config/schema.js';
import { checkTokenSize, noTokenError, sourceWords, storedTokenSource } from '../../credentials/source.js';
import { callKeyring } from '../../credentials/token.js';
import { SCOPE_INPUTS, type ScopeDescription, type SourcedValue, type ValueSource } from '../../scope/resolve.js';
import { escapeInline } from '../../output/json.js';
import { writeJson } from '../../output/io.js';

/** Why this profile: words for a notice. */
function profileReason(source: ProfileSource): string {
  if (source === 'flag') return 'named by --profile';
  if (source === 'env') return 'named by CHATCTL_PROFILE';
  return source === 'current' ? 'the current profile' : 'no profile chosen: --profile, CHATCTL_PROFILE or chatctl profile use NAME chooses one';
}

/** The token in the system keyring (config.json says `"tokenStorage": "keyring"`), or in config.json with --insecure-storage or no keyring; never both. */
export async function runAuthLogin(opts: { withToken?: boolean; insecureStorage?: boolean }, f: Factory): Promise<void> {
  const { ctx } = f;
  const s = store(ctx);
  // Checked before asking for the token; chosen again under the lock.
  const before = f.state().withConfig(s.read()).profile();
  checkProfileName(before.name);
  const token = await readToken(opts, f);
  ctx.io.scrubber.addToken(token);
  const r = opts.insecureStorage ? undefined : await callKeyring(ctx, 'set', before.name, token);
  const inKeyring = r?.ok === true;
  const fallback = r && !r.ok ? r.reason : undefined;
  const stored = await storeInConfig(s, f, token, before.name, inKeyring).catch(async (err: unknown) => {
    // The keyring holds a token config.json does not point at: take it back (unless the profile pointed at it already).
    if (inKeyring && before.profile?.tokenStorage !== KEYRING_STORAGE) await callKeyring(ctx, 'delete', before.name).catch(() => undefined);
    throw err;
  });
  await tell(f, s.path, { ...stored, fallback });
}

async function readToken(opts: { withToken?: boolean }, f: Factory): Promise<string> {
  const prompter = await f.prompter();
  let token: string;
  if (opts.withToken) token = (await f.ctx.io.stdin.readAll()).trim();
  else if (prompter) token = (await prompter.token()).trim();
  else throw usageError('no terminal to ask for the token on', 'pipe it in instead: chatctl auth login --with-token < token.txt');
  if (token === '') throw usageError('the token is empty');
  checkTokenSize(token, 'the token', usageError);
  if (/\s/.test(token) || !isHeaderSafe(token)) throw usageError('the token contains whitespace or characters that cannot be sent in an HTTP header');
  return token;
}

/** Points the profile at the keyring, or puts the token in its file copy, under the config lock; what it did, for the notices (`leftInKeyring`: that entry is to go). */
async function storeInConfig(s: ConfigStore, f: Factory, token: string, chosen: string, inKeyring: boolean) {
  const out = { name: '', source: 'default' as ProfileSource, inKeyring, leftInKeyring: false, movedFromFile: false, hasCommand: false };
  await s.update((data) => {
    const { name, source } = f.state().withConfig(data).profile();
    Object.assign(out, { name, source });
    checkProfileName(name);
    // Only a `profile use` between the two reads can change the profile in effect.
    if (inKeyring && name !== chosen) throw configError(`the current profile changed to "${escapeInline(name)}" while logging in; nothing was stored`, 'run the command again');
    const profiles = profileMap(data.profiles);
    const { token: fileToken, tokenStorage, ...rest } = profileOf(data, name) ?? {};
    out.hasCommand = Boolean(rest.tokenCommand);
    if (inKeyring) {
      out.movedFromFile = Boolean(fileToken);
      profiles[name] = { ...rest, tokenStorage: KEYRING_STORAGE };
    } else {
      out.leftInKeyring = tokenStorage === KEYRING_STORAGE;
      profiles[name] = { ...rest, token };
    }
    return { ...data, profiles };
  });
  return out;
}

/** The notices: where the token is now, and what was left behind or could not be used (`fallback`: why not the keyring). */
async function tell(f: Factory, path: string, r: Awaited<ReturnType<typeof storeInConfig>> & { fallback: string | undefined }): Promise<void> {
  const { ctx } = f;
  const shown = escapeInline(r.name);
  const where = `profile "${shown}" (${profileReason(r.source)})`;
  if (r.leftInKeyring) {
    // From the keyring to the file: the keyring's copy goes. A keyring that just failed to store is not asked again.
    let reason = r.fallback;
    if (reason === undefined) {
      const d = await callKeyring(ctx, 'delete', r.name);
      if (!d.ok) reason = d.reason;
    }
    if (reason !== undefined) warn(f, `could not remove profile "${shown}"'s earlier entry from the system keyring (${escapeInline(reason)}); it is no longer used`);
  }
  if (r.inKeyring) {
    ctx.io.notice(`token stored in ${where} in the system keyring (service chatctl, account ${shown})${r.movedFromFile ? '; its earlier copy in config.json was removed' : ''}`);
  } else if (r.fallback !== undefined) {
    // One line, word for word as docs/credentials.md shows it: not a notice a warning follows, which was easy to miss.
    warn(
      f,
      `token stored in ${where} in plain text in ${path} (mode 0600): no system keyring answered (${escapeInline(r.fallback)}); ` +
        'to use a keyring instead, start one and log in again (docs/credentials.md); --insecure-storage skips trying',
    );
  } else {
    ctx.io.notice(`token stored in ${where} in ${path} (mode 0600)`);
  }
  if (r.hasCommand) ctx.io.notice(`profile "${shown}" has a token command, which is used before the stored token; clear it with: chatctl profile set ${r.name} --token-command ''`);
}

/** Said even with --quiet (where a token is kept is not chatter); not with --json, whose stderr holds JSON only. */
function warn(f: Factory, text: string): void {
  if (!f.state().output.json) f.ctx.io.stderr.write(`chatctl: warning: ${text}\n`);
}

export async function runAuthLogout(f: Factory): Promise<void> {
  const { ctx } = f;
  let had = false;
  let inKeyring = false;
  let name = '';
  await store(ctx).update((data): ConfigData => {
    ({ name } = f.state().withConfig(data).profile());
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
    const r = await callKeyring(ctx, 'delete', name);
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

/** The token in effect on stdout, for `$(…)`; on a terminal it asks first (unless --yes): it would stay in the scrollback. */
export async function runAuthToken(opts: { yes?: boolean }, f: Factory): Promise<void> {
  const { ctx } = f;
  const prompter = await f.prompter();
  const state = f.state();
  const t = await state.token();
  if (!t) throw noTokenError(state.profile().name);
  if (ctx.io.stdout.isTTY && !opts.yes) {
    if (!prompter) throw usageError('--yes is required to print the token on a terminal when not running interactively');
    if (!(await prompter.confirmShowToken(sourceWords(t.source, t.profile)))) throw localError('interrupted', 'not confirmed: the token was not printed');
  }
  ctx.io.stdoutIsData(); // masked (in GitHub Actions) before it is printed
  ctx.io.scrubber.announceValue(t.token);
  if (state.output.json) writeJson(ctx.io, { token: t.token, source: t.source, profile: t.source === 'env' ? null : t.profile }, 'one-line');
  else ctx.io.stdout.write(t.token + '\n');
}

/** Whether the token in effect could be read, and why not: null when there is none to read. */
type TokenRead = { readable: boolean | null; error: CliError | undefined };

const SOURCE_WORDS: Record<ValueSource, string> = { flag: 'flag', env: 'environment', profile: 'profile', default: 'default', none: 'not set' };

function sourceText(key: keyof typeof SCOPE_INPUTS, source: ValueSource, profile: string): string {
  const inputs = SCOPE_INPUTS[key];
  if (source === 'flag' && inputs.flag) return `from ${inputs.flag}`;
  if (source === 'env') return `from ${inputs.env}`;
  if (source === 'profile') return `from profile "${profile}"`;
  return SOURCE_WORDS[source];
}

/** Each stored profile's own token source (its token command, keyring entry or file token); none: null. */
function profileTokenSources(data: ConfigData): { name: string; tokenSource: 'command' | 'keyring' | 'file' | null }[] {
  return Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => ({ name, tokenSource: storedTokenSource(p) ?? null }));
}

/** `auth status --json`: chatctl 0.1's fields, each value with its source, whether the token could be read just now, each profile's token source. */
function statusDocument(d: ScopeDescription, data: ConfigData, read: TokenRead) {
  return {
    profile: d.profile.name,
    profileSource: d.profile.source,
    profileExists: d.profile.exists,
    baseUrl: d.baseUrl.value,
    tokenStored: d.token.stored,
    tokenSource: d.token.source === 'none' ? null : d.token.source,
    tokenReadable: read.readable,
    scope: { baseUrl: d.baseUrl, organizationId: d.organizationId, applicationId: d.applicationId, environmentKey: d.environmentKey, origin: d.origin, csrfToken: d.csrfToken },
    token: { ...d.token, readable: read.readable, error: read.error ? { code: read.error.code, message: read.error.message, exitCode: read.error.exitCode } : null },
    profiles: profileTokenSources(data),
  };
}

/** Reads the token as a command would (the keyring asked, the token command run), keeping its failure to report. */
async function readTokenOf(state: RunState, d: ScopeDescription): Promise<TokenRead> {
  if (d.token.source === 'none') return { readable: null, error: undefined };
  try {
    await state.requireToken();
    return { readable: true, error: undefined };
  } catch (err) {
    if (isCliError(err) && (err.exitCode === EXIT.config || err.exitCode === EXIT.auth)) return { readable: false, error: err };
    throw err;
  }
}

const TOKEN_LINE = {
  env: () => 'from CHATCTL_TOKEN (environment)',
  command: (p: string) => `from the token command of profile "${p}"`,
  keyring: (p: string) => `in the system keyring, profile "${p}"`,
  file: (p: string) => `in config.json (file), profile "${p}"`,
  none: () => 'none',
};

const PROFILE_SOURCE_WORDS = { command: 'token command', keyring: 'system keyring', file: 'config.json (file)' } as const;

function statusText(state: RunState, d: ScopeDescription, data: ConfigData, read: TokenRead): string {
  const name = d.profile.name;
  const line = (label: string, key: keyof typeof SCOPE_INPUTS, v: SourcedValue) => `${label.padEnd(14)}${v.value === null ? '-' : escapeInline(v.value)} (${sourceText(key, v.source, name)})`;
  const profileLine = `${escapeInline(name)} (${profileReason(d.profile.source)})${d.profile.exists ? '' : ' - not created yet'}`;
  const shadowed = d.token.source === 'env' ? storedTokenSource(state.profile().profile) : undefined;
  const readWords = read.readable === true ? '; read just now' : read.readable === false ? '; cannot be read (see the error below)' : '';
  const tokenLine = TOKEN_LINE[d.token.source](escapeInline(name)) + (shadowed ? `; it overrides the profile's ${PROFILE_SOURCE_WORDS[shadowed]}` : '') + readWords;
  const others = profileTokenSources(data).map((p) => `  ${escapeInline(p.name)}: ${p.tokenSource ? PROFILE_SOURCE_WORDS[p.tokenSource] : 'no token'}`);
  const csrf = d.csrfToken.source === 'default' ? '1 (default)' : `set (${sourceText('csrfToken', d.csrfToken.source, name)})`;
  return [
    `${'profile:'.padEnd(14)}${profileLine}`,
    line('base URL:', 'baseUrl', d.baseUrl),
    line('org:', 'organizationId', d.organizationId),
    line('app:', 'applicationId', d.applicationId),
    line('env:', 'environmentKey', d.environmentKey),
    `${line('origin:', 'origin', d.origin)}: sent as the Origin header, which the API requires on every request`,
    `${'csrf value:'.padEnd(14)}${csrf}: sent as the x-service-csrf header, the anti-forgery check the API requires on every request`,
    `${'token:'.padEnd(14)}${tokenLine}`,
    ...(others.length ? ['', 'tokens by profile:', ...others] : []),
    '',
  ].join('\n');
}

/** Which profile, scope and token a command would use, with where each comes from; a token that cannot be read ends it with the error any command would. */
export async function runAuthStatus(f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const d = state.describe();
  const data = state.config();
  const sel = state.profile();
  const unknown = sel.explicit && !sel.profile;
  const read = unknown ? { readable: null, error: undefined } : await readTokenOf(state, d);
  if (state.output.json) writeJson(ctx.io, statusDocument(d, data, read), 'one-line');
  else ctx.io.stdout.write(statusText(state, d, data, read));
  requireSelected(sel);
  if (d.token.source === 'none') throw noTokenError(d.profile.name);
  if (read.error) throw read.error;
}
