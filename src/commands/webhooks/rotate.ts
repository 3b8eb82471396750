// chatctl webhooks rotate ENDPOINT_ID
import type { Factory } from '../app.js';
import { checkEndpointId, checkIdempotencyKey, parseRotate } from '../../input/parse.js';
import { EXIT, isCliError, localError, type RerunContext, usageError } from '../../errors/cli-error.js';
import { runSecretRequest, secretPlanOf } from './secret-result.js';
import { scopeKey } from '../../secret/record.js';
import { namingTheKey } from './interrupted.js';
import { endpointLabel, escapeInline } from '../../output/json.js';
import { missing } from './create.js';
import { rerunWords, withRerun } from '../../errors/explain.js';
import { expectedVersionFor } from './expected-version.js';
import { noteConflict } from '../../secret/facts.js';
import { escrowOf, escrowRerunFlags, type EscrowFlags } from './escrow-flags.js';

export interface RotateOptions extends EscrowFlags {
  expectedVersion?: string;
  mode?: string;
  idempotencyKey?: string;
  secretFile?: string;
  secretTo?: string[];
  force?: boolean;
  yes?: boolean;
}

export async function runRotate(endpointId: string, opts: RotateOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const prompter = await f.prompter();
  const id = checkEndpointId(endpointId);
  const expectedVersion = await expectedVersionFor(f, id, opts.expectedVersion, prompter);
  const mode = opts.mode ?? (await prompter?.mode()) ?? missing('--mode');
  const body = parseRotate({ expectedVersion, mode });
  const idempotencyKey = opts.idempotencyKey !== undefined ? checkIdempotencyKey(opts.idempotencyKey) : ctx.randomUUID();
  const plan = secretPlanOf(f, opts, id);
  const escrow = await escrowOf(opts, ctx, opts);
  if (body.mode === 'immediate' && !opts.yes && !state.dryRun) {
    if (!prompter) {
      throw usageError('--yes is required when not running interactively', '--mode immediate revokes the current secret at once; deliveries signed with it will fail verification');
    }
    const ok = await prompter.confirmImmediate(id);
    if (!ok) {
      // Declining is an answer, not a failure: a plain notice (no red "error:"), and still 130.
      const message = 'immediate rotation declined; nothing was sent';
      if (!state.output.json) ctx.io.notice(message);
      throw localError('interrupted', message, { reported: !state.output.json });
    }
  }
  // On a conflict or exhausted retries, the report gives the command to re-run (errors/explain.ts).
  const flags = [
    ['--mode', body.mode],
    ...(opts.secretFile !== undefined ? [['--secret-file', opts.secretFile]] : []),
    ...(opts.secretTo ?? []).map((to) => ['--secret-to', to]),
    ...(opts.force ? [['--force']] : []),
    ...(opts.yes ? [['--yes']] : []),
    ...escrowRerunFlags(opts),
  ];
  if (state.given.profile) flags.push(['--profile', state.given.profile]);
  const rerun: RerunContext = { words: ['webhooks', 'rotate', id], expectedVersion: body.expectedVersion, flags, idempotencyKey, now: ctx.now() };
  const client = await f.client({ rerun: rerunWords(rerun) });
  await runSecretRequest(
    f,
    plan,
    {
      keyGiven: opts.idempotencyKey !== undefined,
      req: { op: 'rotate', scope: scopeKey(f.state().connection().scope), endpointId: id, idempotencyKey, mode: body.mode, expectedVersion: body.expectedVersion },
      send: (hooks) =>
        namingTheKey(
          client.rotate(id, body, idempotencyKey, hooks).catch(async (err: unknown) => {
            const scope = scopeKey(state.connection().scope);
            // Moved on by an earlier run here whose secret is kept, not delivered: that is the 13 to report, not a 7 whose hint rotates again.
            if (isCliError(err) && err.exitCode === EXIT.versionConflict) {
              const [{ keptByEarlierRun }, { keptByEarlierRunError }] = await Promise.all([import('../../secret/custody.js'), import('../../secret/custody.js')]);
              const kept = keptByEarlierRun(ctx.configDir, scope, id);
              if (kept) throw keptByEarlierRunError(kept, err);
            }
            // A 7 that names the current version: the facts know it, for the re-run's `--expected-version last`.
            noteConflict({ configDir: ctx.configDir, scope, now: ctx.now }, id, err, 'rotate');
            throw withRerun(err, { ...rerun, now: ctx.now() });
          }),
          { endpointId: id },
        ),
      summary: (res) => `Rotated the signing secret of ${endpointLabel(res.data.endpoint)} (mode ${escapeInline(body.mode)}).`,
    },
    { escrow, given: opts },
  );
}
