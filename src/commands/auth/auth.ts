// chatctl auth login|logout|status. The token never travels on argv: it is
// read from stdin (--with-token) or a masked prompt, and stored in the
// selected profile of config.json (0600).
import type { Context, GlobalOptions } from '../../context.js';
import { configError, usageError } from '../../errors/cli-error.js';
import { isHeaderSafe, resolveToken, selectProfile } from '../../scope/resolve.js';
import { checkProfileName } from '../profile/profile.js';
import { configStoreFor as store } from '../../config/store.js';
import type { Prompter } from '../../prompts/prompter.js';

export async function runAuthLogin(opts: { withToken?: boolean }, g: GlobalOptions, ctx: Context, prompter: Prompter | undefined): Promise<void> {
  const s = store(ctx);
  const sel = selectProfile({ profile: g.profile }, ctx.env, s.read());
  checkProfileName(sel.name);
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
  ctx.io.redactor.addCredential(token);
  s.update((data) => {
    const profiles = { ...(data.profiles ?? {}) };
    profiles[sel.name] = { ...(profiles[sel.name] ?? {}), token };
    return { ...data, profiles };
  });
  ctx.io.notice(`token stored in profile "${sel.name}"`);
}

export async function runAuthLogout(g: GlobalOptions, ctx: Context): Promise<void> {
  const s = store(ctx);
  const sel = selectProfile({ profile: g.profile }, ctx.env, s.read());
  let had = false;
  s.update((data) => {
    const p = data.profiles?.[sel.name];
    if (!p?.token) return data;
    had = true;
    const profiles = { ...data.profiles };
    const { token: _dropped, ...rest } = p;
    profiles[sel.name] = rest;
    return { ...data, profiles };
  });
  ctx.io.notice(had ? `token removed from profile "${sel.name}"` : `profile "${sel.name}" had no stored token`);
}

export async function runAuthStatus(g: GlobalOptions, ctx: Context): Promise<void> {
  const data = store(ctx).read();
  const sel = selectProfile({ profile: g.profile }, ctx.env, data);
  const t = resolveToken(ctx.env, sel);
  const status = {
    profile: sel.name,
    profileExists: Boolean(sel.profile),
    baseUrl: ctx.env.CHATCTL_BASE_URL || sel.profile?.baseUrl || null,
    tokenStored: Boolean(sel.profile?.token),
    tokenSource: t?.source ?? null,
  };
  if (g.json) ctx.io.stdout.write(JSON.stringify(status) + '\n');
  else {
    ctx.io.stdout.write(
      [
        `profile:      ${status.profile}${status.profileExists ? '' : ' (not created yet)'}`,
        `base URL:     ${status.baseUrl ?? '-'}`,
        `token:        ${t ? (t.source === 'env' ? 'from CHATCTL_TOKEN' : 'stored in config') : 'none'}`,
        '',
      ].join('\n'),
    );
  }
  if (!t) throw configError(`no token for profile "${sel.name}"`, 'run: chatctl auth login --with-token < token.txt, or set CHATCTL_TOKEN');
}
