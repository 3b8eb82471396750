// chatctl profile show [NAME]: one profile (the one in use by default); tokens are never shown.
import type { Factory } from '../app.js';
import { profileOf } from '../../config/schema.js';
import { escapeInline } from '../../output/json.js';
import { writeJson } from '../../output/io.js';
import { notStored, publicProfile } from './stored.js';

export async function runProfileShow(name: string | undefined, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const data = state.config();
  const current = state.profile().name;
  const target = name ?? current;
  const p = profileOf(data, target);
  if (!p) throw notStored(data, target);
  const shown = publicProfile(target, p, target === current);
  if (state.output.json) {
    writeJson(ctx.io, shown, 'one-line');
    return;
  }
  const lines = Object.entries(shown).map(([k, v]) => `${k.padEnd(15)} ${escapeInline(v === null ? '-' : String(v))}`);
  ctx.io.stdout.write(lines.join('\n') + '\n');
}
