// chatctl webhooks create
import type { Factory } from '../app.js';
import { checkIdempotencyKey, parseCreate } from '../../input/parse.js';
import { usageError } from '../../errors/cli-error.js';
import { runSecretRequest, secretPlanOf } from './secret-result.js';
import { scopeKey } from '../../secret/record.js';
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
  const prompter = await f.prompter();
  const name = opts.name ?? (await prompter?.name()) ?? missing('--name');
  const url = opts.url ?? (await prompter?.url()) ?? missing('--url');
  const events = opts.event?.length ? opts.event : ((await prompter?.events()) ?? missing('--event'));
  const body = parseCreate({ name, url, events });
  const idempotencyKey = opts.idempotencyKey !== undefined ? checkIdempotencyKey(opts.idempotencyKey) : ctx.randomUUID();
  const plan = secretPlanOf(f, opts);
  const client = await f.client();
  await runSecretRequest(f, plan, {
    req: { op: 'create', scope: scopeKey(f.invocation().connection().scope), endpointId: null, idempotencyKey },
    send: (hooks) => namingTheKey(client.create(body, idempotencyKey, hooks), {}),
    summary: (res) => `Created webhook endpoint ${endpointLabel(res.data.endpoint)}.`,
  });
}

export function missing(flag: string): never {
  throw usageError(`missing ${flag}`, 'pass it as a flag (prompts are only offered when stdin and stdout are a terminal)');
}
