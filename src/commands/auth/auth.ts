// chatctl auth login|logout|status. The token never travels on argv: it is
// read from stdin (--with-token) or a masked prompt, and stored in the
// profile in effect (--profile, CHATCTL_PROFILE, the current profile, else
// "default"), which the notice names with the reason.
import type { Context, GlobalOptions } from '../../context.js';
import { configError, usageError } from '../../errors/cli-error.js';
import { invocationOf } from '../../app/invocation.js';
import { isHeaderSafe, selectProfile, SCOPE_INPUTS, type ProfileSource, type ScopeDescription, type SourcedValue, type ValueSource } from '../../scope/resolve.js';
import { checkProfileName } from '../profile/profile.js';
import { configStoreFor as store } from '../../config/store.js';
import { profileMap, profileOf, type ConfigData } from '../../config/schema.js';
import { escapeInline } from '../../output/sanitize.js';
import type { Prompter } from '../../prompts/prompter.js';

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

export async function runAuthLogin(opts: { withToken?: boolean }, g: GlobalOptions, ctx: Context, prompter: Prompter | undefined): Promise<void> {
  const s = store(ctx);
  // Checked before asking for the token; chosen again under the lock.
  checkProfileName(selectProfile({ profile: g.profile }, ctx.env, s.read()).name);
  let token: string;
  if (opts.withToken) {
    token = (await ctx.io.stdin.readAll()).trim();
  } else if (prompter) {
    token = (await prompter.token()).trim();
  } else {
    throw usageError('no terminal to ask for the token on', 'pipe it in instead: chatctl auth login --with-token < token.txt');
  }
  if (token === '') throw usageError('the token is empty');
  if (/\s/.test(token) || !isHeaderSafe(token)) {
    throw usageError('the token contains whitespace or characters that cannot be sent in an HTTP header');
  }
  ctx.io.redactor.addToken(token);
  let name = '';
  let source: ProfileSource = 'default';
  await s.update((data) => {
    ({ name, source } = selectProfile({ profile: g.profile }, ctx.env, data));
    checkProfileName(name);
    const profiles = profileMap(data.profiles);
    profiles[name] = { ...(profileOf(data, name) ?? {}), token };
    return { ...data, profiles };
  });
  ctx.io.notice(`token stored in profile "${name}" (${profileReason(source)})`);
}

export async function runAuthLogout(g: GlobalOptions, ctx: Context): Promise<void> {
  let had = false;
  let name = '';
  await store(ctx).update((data): ConfigData => {
    ({ name } = selectProfile({ profile: g.profile }, ctx.env, data));
    const p = profileOf(data, name);
    had = Boolean(p?.token);
    if (!p?.token) return data;
    const profiles = profileMap(data.profiles);
    const { token: _dropped, ...rest } = p;
    profiles[name] = rest;
    return { ...data, profiles };
  });
  const shown = escapeInline(name);
  ctx.io.notice(had ? `token removed from profile "${shown}"` : `profile "${shown}" had no stored token`);
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

/** `auth status --json`: the fields of chatctl 0.1 (profile, profileExists, baseUrl, tokenStored, tokenSource) and, added, each value with its source. */
export function statusDocument(d: ScopeDescription) {
  return {
    profile: d.profile.name,
    profileSource: d.profile.source,
    profileExists: d.profile.exists,
    baseUrl: d.baseUrl.value,
    tokenStored: d.token.stored,
    tokenSource: d.token.source === 'env' ? 'env' : d.token.source === 'config' ? 'profile' : null,
    scope: {
      baseUrl: d.baseUrl,
      organizationId: d.organizationId,
      applicationId: d.applicationId,
      environmentKey: d.environmentKey,
      origin: d.origin,
      csrfToken: d.csrfToken,
    },
    token: d.token,
  };
}

export async function runAuthStatus(g: GlobalOptions, ctx: Context): Promise<void> {
  const d = invocationOf(ctx).describe();
  if (g.json) ctx.io.stdout.write(JSON.stringify(statusDocument(d)) + '\n');
  else {
    const name = d.profile.name;
    const line = (label: string, key: keyof typeof SCOPE_INPUTS, v: SourcedValue) =>
      `${label.padEnd(14)}${v.value === null ? '-' : escapeInline(v.value)} (${sourceText(key, v.source, name)})`;
    const profileLine = `${escapeInline(name)} (${profileReason(d.profile.source)})${d.profile.exists ? '' : ' - not created yet'}`;
    const tokenLine =
      d.token.source === 'env' ? 'from CHATCTL_TOKEN' : d.token.source === 'config' ? `stored in config, profile "${escapeInline(name)}"` : 'none';
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
        '',
      ].join('\n'),
    );
  }
  if ((d.profile.source === 'flag' || d.profile.source === 'env') && !d.profile.exists) {
    throw configError(`profile "${escapeInline(d.profile.name)}" does not exist`, 'list profiles with: chatctl profile list');
  }
  if (d.token.source === 'none') {
    throw configError(`no token for profile "${d.profile.name}"`, 'run: chatctl auth login --with-token < token.txt, or set CHATCTL_TOKEN');
  }
}
