// chatctl profile use NAME: makes a stored profile the one in use.
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { PROFILE_NAME, profileOf } from '../../config/schema.js';
import { notStored } from './stored.js';

export async function runProfileUse(name: string, f: Factory): Promise<void> {
  const { ctx } = f;
  await store(ctx).update((data) => {
    if (!profileOf(data, name)) {
      throw notStored(data, name, (near) => `chatctl profile use ${near}`, PROFILE_NAME.test(name) ? `create it with: chatctl profile set ${name}` : undefined);
    }
    return { ...data, currentProfile: name };
  });
  ctx.io.notice(`now using profile "${name}"`);
}
