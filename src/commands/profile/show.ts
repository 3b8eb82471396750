// chatctl profile show [NAME]: one profile (the one in use by default); tokens are never shown.
import type { Factory } from '../app.js';
import { configStoreFor as store } from '../../config/store.js';
import { profileOf } from '../../config/schema.js';
import { selectProfile } from '../../config/profile.js';
import { escapeInline } from '../../output/sanitize.js';
import { notStored, publicProfile } from './stored.js';

export async function runProfileShow(name: string | undefined, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const data = store(ctx).read();
  const current = selectProfile({ profile: g.profile }, ctx.env, data).name;
  const target = name ?? current;
  const p = profileOf(data, target);
  if (!p) throw notStored(data, target);
  const shown = publicProfile(target, p, target === current);
  if (g.json) {
    ctx.io.stdout.write(JSON.stringify(shown) + '\n');
    return;
  }
  const lines = Object.entries(shown).map(([k, v]) => `${k.padEnd(15)} ${escapeInline(v === null ? '-' : String(v))}`);
  ctx.io.stdout.write(lines.join('\n') + '\n');
}
