// chatctl webhooks reactivate ENDPOINT_ID (no Idempotency-Key: the spec declares none)
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { endpointLabel } from '../../output/json.js';
import { writeJson } from '../../output/io.js';
import { withRerun } from '../../errors/explain.js';

export function registerReactivate(parent: Command, f: Factory): void {
  parent
    .command('reactivate')
    .description('reactivate a deactivated endpoint')
    .argument('<endpoint-id>', 'the endpoint to reactivate')
    .option('--expected-version <n>', "the endpoint's current version; last: the one this machine last saw (used at a terminal when left out)")
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks reactivate we_123 --expected-version 4',
        'chatctl webhooks reactivate we_123 --expected-version 4 --json',
        'chatctl webhooks reactivate we_123 --expected-version last',
      ),
    )
    .action((endpointId: string, opts) => runReactivate(endpointId, opts, f));
}

export async function runReactivate(endpointId: string, opts: { expectedVersion?: string }, f: Factory): Promise<void> {
  const [{ checkEndpointId, parseExpectedVersionBody }, { expectedVersionFor }, { noteConflict, noteReactivated }, { scopeKey }] = await Promise.all([
    import('../../input/parse.js'),
    import('./secret-request.js'),
    import('../../secret/facts.js'),
    import('../../secret/record.js'),
  ]);
  const { ctx } = f;
  const state = f.state();
  const prompter = await f.prompter();
  const id = checkEndpointId(endpointId);
  const expectedVersion = await expectedVersionFor(f, id, opts.expectedVersion, prompter);
  const body = parseExpectedVersionBody({ expectedVersion });
  const client = await f.client();
  // What the answer says goes into this machine's facts (docs/inventory.md); a dry run sends nothing.
  const facts = { configDir: ctx.configDir, scope: scopeKey(state.connection().scope), now: ctx.now, scrub: (t: string) => ctx.io.scrubber.scrub(t) };
  const res = await client.reactivate(id, body).catch((err: unknown) => {
    noteConflict(facts, id, err, 'reactivate');
    // On a version conflict, the report gives the command to re-run (errors/explain.ts).
    throw withRerun(err, { words: ['webhooks', 'reactivate', id], expectedVersion: body.expectedVersion, flags: state.given.profile ? [['--profile', state.given.profile]] : [], now: ctx.now() });
  });
  if (!state.dryRun) noteReactivated(facts, id, res.data);
  if (state.output.json) return writeJson(ctx.io, res);
  const { renderEndpoint, renderSummary } = await import('../../output/render.js');
  const label = endpointLabel(res.data.endpoint);
  ctx.io.stdout.write(renderSummary(res.data.changed ? `Reactivated webhook endpoint ${label}.` : `Webhook endpoint ${label} was already active; nothing changed.`, ctx.io.paint.stdout));
  ctx.io.stdout.write(renderEndpoint(res.data.endpoint, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }, ctx.io.columns));
}
