// A signal that ends create or rotate once the request
// may have been sent names the endpoint (when known) and the Idempotency-Key,
// so that re-running with that key cannot apply the change twice. Whether it
// may have been sent is the HTTP client's to say (it puts the key on the
// error); this adds the endpoint the command knows.
import { CliError, isCliError } from '../../errors/cli-error.js';
import { escapeInline } from '../../output/json.js';

export async function namingTheKey<T>(request: Promise<T>, what: { endpointId?: string | undefined }): Promise<T> {
  try {
    return await request;
  } catch (err) {
    if (!isCliError(err) || err.code !== 'interrupted' || err.idempotencyKey === undefined) throw err;
    const endpoint = what.endpointId !== undefined ? ` for endpoint ${escapeInline(what.endpointId)}` : '';
    throw new CliError('interrupted', `interrupted: the request${endpoint} had been sent and may have been applied (Idempotency-Key ${err.idempotencyKey})`, err.exitCode, {
      hint: err.hint,
      details: { endpointId: what.endpointId ?? null, idempotencyKey: err.idempotencyKey },
      idempotencyKey: err.idempotencyKey,
    });
  }
}
