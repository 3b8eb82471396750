// chatctl webhooks create
import type { Factory } from '../app.js';
import { checkIdempotencyKey, parseCreate } from '../../input/parse.js';
import { missingFlagError, rerunWords, withRerun } from '../../errors/explain.js';
import type { RerunContext } from '../../errors/cli-error.js';
import { runSecretRequest, secretPlanOf } from './secret-result.js';
import { scopeKey } from '../../secret/record.js';
import { namingTheKey } from './interrupted.js';
import { endpointLabel } from '../../output/json.js';
import { escrowOf, escrowRerunFlags, type EscrowFlags } from './escrow-flags.js';

export interface CreateOptions extends EscrowFlags {
  name?: string;
  url?: string;
  event?: string[];
  idempotencyKey?: string;
  secretFile?: string;
  secretTo?: string[];
  force?: boolean;
}

export async function runCreate(opts: CreateOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const prompter = await f.prompter();
  const name = opts.name ?? (await prompter?.name()) ?? missing('--name');
  const url = opts.url ?? (await prompter?.url()) ?? missing('--url');
  const events = opts.event?.length ? opts.event : ((await prompter?.events()) ?? missing('--event'));
  const body = parseCreate({ name, url, events });
  const idempotencyKey = opts.idempotencyKey !== undefined ? checkIdempotencyKey(opts.idempotencyKey) : ctx.randomUUID();
  const plan = secretPlanOf(f, opts);
  const escrow = await escrowOf(opts, ctx, opts);
  // On exhausted retries, the report gives the command to re-run, with the key (errors/explain.ts).
  const rerun: RerunContext = { words: ['webhooks', 'create'], flags: createFlags(opts, name, url, events, f.state().given.profile), idempotencyKey };
  const client = await f.client({ rerun: rerunWords(rerun) });
  await runSecretRequest(
    f,
    plan,
    {
      keyGiven: opts.idempotencyKey !== undefined,
      req: { op: 'create', scope: scopeKey(f.state().connection().scope), endpointId: null, idempotencyKey },
      send: (hooks) =>
        namingTheKey(
          client.create(body, idempotencyKey, hooks).catch((err: unknown) => {
            throw withRerun(err, rerun);
          }),
          {},
        ),
      summary: (res) => `Created webhook endpoint ${endpointLabel(res.data.endpoint)}.`,
    },
    { escrow, given: opts },
  );
}

/** The flags that repeat this create. */
function createFlags(opts: CreateOptions, name: string, url: string, events: string[], profile: string | undefined): string[][] {
  return [
    ['--name', name],
    ['--url', url],
    ...events.map((e) => ['--event', e]),
    ...(opts.secretFile !== undefined ? [['--secret-file', opts.secretFile]] : []),
    ...(opts.secretTo ?? []).map((to) => ['--secret-to', to]),
    ...(opts.force ? [['--force']] : []),
    ...escrowRerunFlags(opts),
    ...(profile ? [['--profile', profile]] : []),
  ];
}

export function missing(flag: string): never {
  throw missingFlagError(flag);
}
