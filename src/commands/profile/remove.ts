// chatctl profile remove NAME: the profile and its stored token (its
// config.json copy, or its system keyring entry).
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { KEYRING_STORAGE, profileMap, profileOf } from '../../config/schema.js';
import { configError } from '../../errors/cli-error.js';
import { escapeInline } from '../../output/json.js';
import { notStored } from './stored.js';

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
    // Its token goes with it: a keyring entry left behind would be a token nobody knows of.
    const { keyringCall, keyringOptions } = await import('../../credentials/keyring.js');
    const r = await keyringCall('delete', name, keyringOptions(ctx));
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
