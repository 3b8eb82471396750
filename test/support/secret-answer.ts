// A create's or rotate's answer through the one lifecycle (secret-request.ts's
// runSecretRequest), as if the server had just sent it: for tests of what
// happens to the secret, without a server.
import type { Context } from '../../src/context.js';
import type { GlobalOptions } from '../../src/run/state.js';
import { runSecretRequest } from '../../src/commands/webhooks/secret-request.js';
import type { SecretPlan } from '../../src/secret/deliver.js';
import type { SecretResponse } from '../../src/api/schemas.js';
import { fakeFactory } from './fakes.js';
import { stringifyJson } from '../../src/output/json.js';

/** Whether the answer was sent at all (a refused recovered/ ends the command before). */
export const sent = { count: 0 };

export async function deliverAnswer(
  ctx: Context,
  g: GlobalOptions,
  plan: Partial<SecretPlan>,
  body: unknown,
  summary: string,
  opts: { endpointId?: string; idempotencyKey?: string; execTimeoutMs?: number } = {},
): Promise<void> {
  const answered = (body as { data?: { endpoint?: { id?: unknown } } })?.data?.endpoint?.id;
  const f = fakeFactory(ctx, undefined, g);
  await runSecretRequest(
    f,
    { sinks: [], fallback: 'json', ...plan } as SecretPlan,
    {
      req: { op: 'rotate', scope: 'org_1/app_1/env_1', endpointId: opts.endpointId ?? (typeof answered === 'string' ? answered : 'we_1'), idempotencyKey: opts.idempotencyKey ?? 'idem-test' },
      // As the transport does: the answer's bytes reach the record before anything parses them.
      send: async (hooks) => {
        sent.count += 1;
        const bytes = Buffer.from(stringifyJson(body), 'utf8');
        hooks.tap?.head(200, { 'content-length': String(bytes.length) });
        hooks.tap?.chunk(bytes);
        return { ok: true, body: body as SecretResponse };
      },
      summary: () => summary,
    },
    { execTimeoutMs: opts.execTimeoutMs },
  );
}
