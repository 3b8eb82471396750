// chatctl webhooks list / show ID: what this machine saw of each endpoint, read
// from its facts under <config>/facts/ (docs/inventory.md); nothing is sent.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import type { Context } from '../../context.js';
import type { Fact } from '../../secret/facts.js';
import type { EndpointView } from '../../secret/inventory.js';
import { isCliError, usageError } from '../../errors/cli-error.js';
import { VERSION_PLACES } from '../../errors/explain.js';
import { writeJson } from '../../output/io.js';
import { escapeInline } from '../../output/json.js';

const SAW = `
What this machine saw: every create, rotate and reactivate answer (and each
version conflict that names the current version) is noted under the config
folder's facts/. The API cannot list or read endpoints, so a change made
elsewhere shows only once a conflict names it. See docs/inventory.md.
`;

export function registerList(parent: Command, f: Factory): void {
  parent
    .command('list')
    .description("the endpoints this machine saw, with version, status and where the secret went (not the server's state)")
    .option('--all-scopes', "every scope, not only the profile's (org/app/env)")
    .addHelpText('after', examples('chatctl webhooks list', 'chatctl webhooks list --all-scopes', 'chatctl webhooks list --json') + SAW)
    .action((opts) => runList(opts, f));
}

export function registerShow(parent: Command, f: Factory): void {
  parent
    .command('show')
    .description('one endpoint as this machine saw it, with the history of its facts (never a secret)')
    .argument('<endpoint-id>', 'the endpoint to show')
    .addHelpText('after', examples('chatctl webhooks show we_123', 'chatctl webhooks show we_123 --json') + SAW)
    .action((endpointId: string) => runShow(endpointId, f));
}

const NOT_THE_SERVER = "this is what this machine saw (its facts under the config folder's facts/), not the server's state: a change made elsewhere shows only once a version conflict names it";

/** The endpoints seen in the run's scope, or in every scope (asked for, or none set: then said). */
async function seen(f: Factory, all: boolean) {
  const [{ endpointFacts, viewOf }, { scopeKey }] = await Promise.all([import('../../secret/inventory.js'), import('../../secret/record.js')]);
  let scope: string | undefined;
  if (!all) {
    try {
      scope = scopeKey(f.state().connection().scope);
    } catch (err) {
      if (!isCliError(err)) throw err;
      f.ctx.io.notice(`no scope to show (${err.message}): showing every scope this machine saw`);
    }
  }
  return { scope, found: endpointFacts(f.ctx.configDir, scope), viewOf };
}

export async function runList(opts: { allScopes?: boolean }, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const { scope, found, viewOf } = await seen(f, Boolean(opts.allScopes));
  const views = found.map(viewOf);
  if (state.output.json) return writeJson(ctx.io, views);
  if (views.length === 0) return ctx.io.notice(`${nothingSeen(scope)}: create, rotate and reactivate note here what each answer says. ${CANNOT_READ}`);
  const { tableOf } = await tables(ctx);
  const out: string[] = [];
  for (const s of new Set(views.map((v) => v.scope))) {
    const rows = views.filter((x) => x.scope === s).map((v) => row(v, ctx.now()));
    out.push(`Scope ${escapeInline(s)}:\n${tableOf(['ID', 'NAME', 'URL', 'VERSION', 'STATUS', 'LAST CHANGE', 'FINGERPRINT', 'DELIVERED TO', 'OVERLAP ENDS'], rows)}\n`);
  }
  ctx.io.stdout.write(out.join('\n'));
  ctx.io.notice(NOT_THE_SERVER);
}

const CANNOT_READ = `The API cannot list or read endpoints; an endpoint's version is in ${VERSION_PLACES}.`;

const nothingSeen = (scope: string | undefined) => `this machine saw no webhook endpoint${scope === undefined ? '' : ` in ${escapeInline(scope)}`} yet`;

function row(v: EndpointView, now: number): string[] {
  const cell = (s: string | null | undefined) => (s === null || s === undefined || s === '' ? '-' : escapeInline(s));
  return [
    cell(v.id),
    cell(v.name),
    cell(v.url),
    v.version === null ? '-' : String(v.version),
    cell(v.status),
    changeText(v.lastChange),
    cell(v.fingerprint),
    v.deliveredTo.length > 0 ? v.deliveredTo.map((d) => escapeInline(d)).join('\n') : v.keptAt !== null ? 'kept in recovered/ (webhooks show)' : '-',
    overlapText(v.overlapEndsAt, now),
  ];
}

function changeText(c: EndpointView['lastChange']): string {
  if (!c) return '-';
  const what = c.op === 'seen' ? 'seen in exit 7' : `${c.op}${c.mode ? ` ${c.mode}` : ''}`;
  return `${escapeInline(what)} ${escapeInline(c.at)}`;
}

function overlapText(at: string | null, now: number): string {
  if (at === null) return '-';
  const ms = Date.parse(at);
  return Number.isFinite(ms) && ms <= now ? `${escapeInline(at)} (ended)` : escapeInline(at);
}

/** `webhooks show ID --json`: the endpoint's view and every fact of it, oldest first (never a secret: facts hold none). */
export type ShowDocument = EndpointView & { facts: Omit<Fact, 'id' | 'scope'>[] };

export async function runShow(endpointId: string, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const id = (await import('../../input/parse.js')).checkEndpointId(endpointId);
  const { scope, found: all, viewOf } = await seen(f, false);
  const found = all.filter((facts) => facts.endpointId === id);
  if (found.length === 0)
    throw usageError(
      `${nothingSeen(scope).replace('no webhook endpoint', `nothing of endpoint ${escapeInline(id)}`)}`,
      `chatctl webhooks list shows the endpoints it saw (--all-scopes: in every scope). ${CANNOT_READ}`,
    );
  if (found.length > 1)
    throw usageError(
      `endpoint ${escapeInline(id)} was seen in ${found.length} scopes (${found.map((x) => escapeInline(x.scope)).join(', ')})`,
      'name the scope with --org, --app and --env, or a --profile',
    );
  const facts = found[0]!;
  const doc: ShowDocument = { ...viewOf(facts), facts: facts.all.map(({ id: _id, scope: _scope, ...rest }) => rest) };
  if (state.output.json) return writeJson(ctx.io, doc);
  await renderShow(ctx, doc);
  ctx.io.notice(NOT_THE_SERVER);
}

/** cli-table3 and render.ts, loaded by human output only: a table boxed on a terminal, plain columns elsewhere. */
async function tables(ctx: Context) {
  const [{ default: Table }, render] = await Promise.all([import('cli-table3'), import('../../output/render.js')]);
  const tty = ctx.io.stdout.isTTY;
  const tableOf = (head: string[], rows: string[][]) => {
    const table = new Table({ head, style: { head: [], border: [] }, ...(tty ? {} : render.PLAIN_TABLE) });
    table.push(...rows);
    return render.tableText(table.toString(), tty);
  };
  return { tableOf, renderEndpoint: render.renderEndpoint, tty };
}

async function renderShow(ctx: Context, doc: ShowDocument): Promise<void> {
  const { tableOf, renderEndpoint, tty } = await tables(ctx);
  const summary = {
    id: doc.id,
    scope: doc.scope,
    name: doc.name,
    url: doc.url,
    events: doc.events,
    version: doc.version,
    status: doc.status,
    'last change': changeText(doc.lastChange),
    fingerprint: doc.fingerprint,
    'delivered to': doc.deliveredTo.length > 0 ? doc.deliveredTo : null,
    kept: doc.keptAt,
    'overlap ends': doc.overlapEndsAt === null ? null : overlapText(doc.overlapEndsAt, ctx.now()),
  };
  const history = tableOf(['AT', 'FACT', 'VERSION', 'KEY', 'DETAIL'], doc.facts.map(historyRow));
  ctx.io.stdout.write(`${renderEndpoint(summary, { color: ctx.io.color.stdout, tty }, ctx.io.columns)}\nHistory (oldest first):\n${history}\n`);
}

function historyRow(fact: Omit<Fact, 'id' | 'scope'>): string[] {
  const f = fact as Fact;
  const version = 'version' in f && typeof f.version === 'number' ? String(f.version) : '-';
  const key = 'key' in f && typeof f.key === 'string' ? escapeInline(f.key) : '-';
  return [escapeInline(f.at), escapeInline(String(f.f)), version, key, escapeInline(factDetail(f))];
}

function factDetail(f: Fact): string {
  if (f.f === 'applied')
    return [f.op, f.op !== 'reactivate' ? f.mode : f.changed === false ? '(already active)' : undefined, f.op !== 'reactivate' ? f.fp : undefined, f.endpoint?.status ?? undefined]
      .filter((x): x is string => typeof x === 'string' && x !== '')
      .join(' ');
  if (f.f === 'delivered') return `to ${f.to.join(', ') || '(the JSON answer)'}`;
  if (f.f === 'kept') return `kept at ${f.path}`;
  if (f.f === 'superseded') return `by version ${f.by}: never delivered`;
  if (f.f === 'seen') return `the current version, named by exit 7 (${f.via})`;
  return '';
}
