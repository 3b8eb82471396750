// chatctl auth logout: removes the token of the profile in effect, its file
// token and its keyring entry (docs/credentials.md).
import type { Factory } from '../app.js';
import { configError } from '../../errors/cli-error.js';
import { configStoreFor as store } from '../../config/store.js';
import { KEYRING_STORAGE, profileMap, profileOf, type ConfigData } from '../../config/schema.js';
import { escapeInline } from '../../output/json.js';

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
    const { keyringCall, keyringOptions } = await import('../../credentials/keyring.js');
    const r = await keyringCall('delete', name, keyringOptions(ctx));
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
