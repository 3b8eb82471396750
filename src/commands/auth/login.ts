// chatctl auth login. The token never travels on argv: it is read from
// stdin (--with-token) or a masked prompt, and stored in the profile in
// effect (--profile, CHATCTL_PROFILE, the current profile, else "default"),
// which the notice names with the reason. Where it is kept, and what is said
// when there is no keyring: docs/credentials.md.
import type { Factory } from '../app.js';
import { configError, usageError } from '../../errors/cli-error.js';
import { isHeaderSafe } from '../../http/wire-checks.js';
import type { ProfileSource } from '../../config/profile.js';
import { checkProfileName } from '../profile/stored.js';
import { configStoreFor as store, type ConfigStore } from '../../config/store.js';
import { KEYRING_STORAGE, profileMap, profileOf } from '../../config/schema.js';
import { checkTokenSize } from '../../credentials/source.js';
import { escapeInline } from '../../output/sanitize.js';
import { profileReason } from './words.js';

export interface LoginOptions {
  withToken?: boolean;
  /** The file (config.json, 0600), without trying the keyring. */
  insecureStorage?: boolean;
}

/** What storing the token did, for the notices. */
interface Stored {
  name: string;
  source: ProfileSource;
  /** The keyring holds it (else config.json does). */
  inKeyring: boolean;
  /** Why the keyring was not used, when it was tried. */
  fallback: string | undefined;
  /** The keyring held it before and config.json does now: the entry is to go. */
  leftInKeyring: boolean;
  movedFromFile: boolean;
  hasCommand: boolean;
}

/**
 * Stores the token of the profile in effect: in the system keyring (the
 * config then says `"tokenStorage": "keyring"` and holds no token), or in
 * config.json when asked (--insecure-storage) or when no keyring answers,
 * which is said on stderr. Never both: the copy that is not used is removed.
 */
export async function runAuthLogin(opts: LoginOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const s = store(ctx);
  // Checked before asking for the token; chosen again under the lock.
  const before = f.state().withConfig(s.read()).profile();
  checkProfileName(before.name);
  const token = await readToken(opts, f);
  ctx.io.scrubber.addToken(token);
  const { keyringCall, keyringOptions } = await import('../../credentials/keyring.js');
  let fallback: string | undefined;
  let inKeyring = false;
  if (!opts.insecureStorage) {
    const r = await keyringCall('set', before.name, keyringOptions(ctx), token);
    if (r.ok) inKeyring = true;
    else fallback = r.reason;
  }
  let stored: Omit<Stored, 'fallback'>;
  try {
    stored = await storeInConfig(s, f, token, before.name, inKeyring);
  } catch (err) {
    // The keyring holds a token that config.json does not point at: take it
    // back. (A profile that pointed at it already now has the new token there.)
    if (inKeyring && before.profile?.tokenStorage !== KEYRING_STORAGE) await keyringCall('delete', before.name, keyringOptions(ctx)).catch(() => undefined);
    throw err;
  }
  await tell(f, s.path, { ...stored, fallback });
}

async function readToken(opts: LoginOptions, f: Factory): Promise<string> {
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

/** Points the profile at the keyring, or puts the token in its file copy, under the config lock. */
async function storeInConfig(s: ConfigStore, f: Factory, token: string, chosen: string, inKeyring: boolean): Promise<Omit<Stored, 'fallback'>> {
  const out: Omit<Stored, 'fallback'> = { name: '', source: 'default', inKeyring, leftInKeyring: false, movedFromFile: false, hasCommand: false };
  await s.update((data) => {
    const { name, source } = f.state().withConfig(data).profile();
    Object.assign(out, { name, source });
    checkProfileName(name);
    // The profile in effect was chosen by the same flags and environment:
    // only a `profile use` between the two reads can change it.
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

/** The notices: where the token is now, and what was left behind or could not be used. */
async function tell(f: Factory, path: string, r: Stored): Promise<void> {
  const { ctx } = f;
  const shown = escapeInline(r.name);
  if (r.leftInKeyring) {
    // From the keyring to the file: the keyring's copy goes, so that there are
    // never two. A keyring that just failed to store is not asked again.
    let reason = r.fallback;
    if (reason === undefined) {
      const { keyringCall, keyringOptions } = await import('../../credentials/keyring.js');
      const d = await keyringCall('delete', r.name, keyringOptions(ctx));
      if (!d.ok) reason = d.reason;
    }
    if (reason !== undefined) warn(f, `could not remove profile "${shown}"'s earlier entry from the system keyring (${escapeInline(reason)}); it is no longer used`);
  }
  if (r.inKeyring) {
    ctx.io.notice(
      `token stored in profile "${shown}" (${profileReason(r.source)}) in the system keyring (service chatctl, account ${shown})${r.movedFromFile ? '; its earlier copy in config.json was removed' : ''}`,
    );
  } else if (r.fallback !== undefined) {
    // One line, the only one about where the token went: not a notice a
    // warning follows, which was easy to miss.
    warn(f, noKeyringWarning(r.fallback, path, `profile "${shown}" (${profileReason(r.source)})`));
  } else {
    ctx.io.notice(`token stored in profile "${shown}" (${profileReason(r.source)}) in ${path} (mode 0600)`);
  }
  if (r.hasCommand) ctx.io.notice(`profile "${shown}" has a token command, which is used before the stored token; clear it with: chatctl profile set ${r.name} --token-command ''`);
}

/**
 * The one line of a login that found no keyring, word for word as
 * docs/credentials.md shows it: where the token went, why, and how to keep
 * it in a keyring instead (or choose the file without the wait).
 */
function noKeyringWarning(reason: string, path: string, where: string): string {
  return (
    `token stored in ${where} in plain text in ${path} (mode 0600): no system keyring answered (${escapeInline(reason)}); ` +
    'to use a keyring instead, start one and log in again (docs/credentials.md); --insecure-storage skips trying'
  );
}

/** Said even with --quiet (where a token is kept is not chatter); not with --json, whose stderr holds JSON only. */
function warn(f: Factory, text: string): void {
  if (!f.state().output.json) f.ctx.io.stderr.write(`chatctl: warning: ${text}\n`);
}
