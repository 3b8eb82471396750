// chatctl profile list: every stored profile, * marking the one in use.
import type { Factory } from '../app.js';
import { escapeInline } from '../../output/json.js';
import { writeJson } from '../../output/io.js';
import { publicProfile } from './stored.js';

export async function runProfileList(f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const data = state.config();
  const current = state.profile().name;
  const rows = Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => publicProfile(name, p, name === current));
  if (state.output.json) {
    writeJson(ctx.io, { current, profiles: rows }, 'one-line');
    return;
  }
  if (rows.length === 0) {
    ctx.io.notice('no profiles yet; create one with: chatctl profile set NAME --base-url URL --org ID --app ID --env KEY');
    return;
  }
  const { default: Table } = await import('cli-table3');
  const { PLAIN_TABLE, tableText } = await import('../../output/render.js');
  const table = new Table({ head: ['', 'PROFILE', 'BASE URL', 'ORG', 'APP', 'ENV', 'TOKEN'], style: { head: [], border: [] }, ...(ctx.io.stdout.isTTY ? {} : PLAIN_TABLE) });
  for (const r of rows) {
    table.push([r.current ? '*' : '', r.name, r.baseUrl ?? '-', r.organizationId ?? '-', r.applicationId ?? '-', r.environmentKey ?? '-', r.tokenSource ?? '-'].map((v) => escapeInline(v)));
  }
  ctx.io.stdout.write(tableText(table.toString(), ctx.io.stdout.isTTY) + '\n');
}
