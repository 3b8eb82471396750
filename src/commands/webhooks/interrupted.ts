// Contract section 6: a signal that ends create or rotate once the request
// may have been sent names the endpoint (when known) and the Idempotency-Key,
// so that re-running with that key cannot apply the change twice.
import { CliError, isCliError } from '../../errors/cli-error.js';
import { EXIT } from '../../errors/exit-codes.js';
import { escapeInline, shellQuote } from '../../output/sanitize.js';

export async function namingTheKey<T>(request: Promise<T>, what: { endpointId?: string | undefined; idempotencyKey: string }): Promise<T> {
  try {
    return await request;
  } catch (err) {
    if (!isCliError(err) || err.code !== 'interrupted') throw err;
    const endpoint = what.endpointId !== undefined ? ` for endpoint ${escapeInline(what.endpointId)}` : '';
    throw new CliError(
      'interrupted',
      `interrupted; the request${endpoint} may have been sent and applied (Idempotency-Key ${what.idempotencyKey})`,
      EXIT.interrupted,
      {
        hint: `re-run the same command with --idempotency-key ${shellQuote(what.idempotencyKey)}, so the change cannot be applied twice`,
        details: { endpointId: what.endpointId ?? null, idempotencyKey: what.idempotencyKey },
      },
    );
  }
}
