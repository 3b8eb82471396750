// chatctl webhooks create
import type { Factory } from '../app.js';
import { checkIdempotencyKey, parseCreate } from '../../input/parse.js';
import { missingFlagError } from '../../errors/hints.js';
import { rerunWords, withRerun, type RerunContext } from '../../errors/explain.js';
import { checkSecretAnswer, deliverSecretResult, secretPlanOf } from './secret-result.js';
import { namingTheKey } from './interrupted.js';
import { endpointLabel } from '../../output/label.js';

export interface CreateOptions {
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
  const g = f.globals();
  const prompter = await f.prompter();
  const name = opts.name ?? (await prompter?.name()) ?? missing('--name');
  const url = opts.url ?? (await prompter?.url()) ?? missing('--url');
  const events = opts.event?.length ? opts.event : ((await prompter?.events()) ?? missing('--event'));
  const body = parseCreate({ name, url, events });
  const idempotencyKey = opts.idempotencyKey !== undefined ? checkIdempotencyKey(opts.idempotencyKey) : ctx.randomUUID();
  const plan = secretPlanOf(f, opts);
  // On exhausted retries, the report gives the command to re-run, with the key (errors/explain.ts).
  const rerun: RerunContext = { words: ['webhooks', 'create'], flags: createFlags(opts, name, url, events, g.profile), idempotencyKey };
  const client = await f.client({ rerun: rerunWords(rerun) });
  const answer = await namingTheKey(
    client.create(body, idempotencyKey).catch((err: unknown) => {
      throw withRerun(err, rerun);
    }),
    {},
  );
  const res = checkSecretAnswer(ctx, answer, { idempotencyKey });
  await deliverSecretResult(ctx, g, plan, res, `Created webhook endpoint ${endpointLabel(res.data.endpoint)}.`, { idempotencyKey });
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
    ...(profile ? [['--profile', profile]] : []),
  ];
}

export function missing(flag: string): never {
  throw missingFlagError(flag);
}
