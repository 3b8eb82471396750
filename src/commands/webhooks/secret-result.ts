// What create and rotate do with a success body: print the result and put
// the one-time secret where the plan said, or explain why it is not in hand
// (exit 13). The secret is registered with the redactor first, so whatever
// happens next it cannot reach stderr.
import type { Context, GlobalOptions } from '../../context.js';
import type { SecretResponse } from '../../api/schemas.js';
import { CliError } from '../../errors/cli-error.js';
import { EXIT } from '../../errors/exit-codes.js';
import { recoverSecret, writeSecretFile, type SecretSink } from '../../secret/deliver.js';
import { endpointLabel } from '../../output/label.js';
import { writeJson } from '../../output/io.js';

export async function deliverSecretResult(ctx: Context, g: GlobalOptions, sink: SecretSink, body: SecretResponse, summary: string): Promise<void> {
  const { endpoint, secret, secretAvailable } = body.data;
  ctx.io.redactor.addSecret(secret);
  const id = endpointLabel(endpoint);
  const withheld = secret === null || secretAvailable === false;

  if (withheld) {
    await printResult(ctx, g, body, summary);
    const version = typeof endpoint.version === 'number' ? endpoint.version : 'CURRENT_VERSION';
    throw new CliError(
      'secret_not_delivered',
      `the change was applied, but the server did not return the signing secret (secretAvailable: ${String(secretAvailable)})`,
      EXIT.secretNotDelivered,
      {
        // chatctl's own error: requestId stays null (contract section 6); the server's is in details.
        details: { serverRequestId: body.meta.requestId },
        hint: `to get a new secret, rotate it: chatctl webhooks rotate ${id} --expected-version ${version} --mode overlap --secret-file PATH`,
      },
    );
  }

  if (sink.kind === 'file') {
    try {
      writeSecretFile(sink.path, secret, sink.force);
    } catch (err) {
      await printResult(ctx, g, withoutSecret(body, null), summary);
      throw await recovered(ctx, String(endpoint.id ?? 'endpoint'), secret, `cannot write --secret-file ${sink.path}: ${(err as NodeJS.ErrnoException).code ?? 'write failed'}`);
    }
    await printResult(ctx, g, withoutSecret(body, sink.path), summary);
    ctx.io.notice(`signing secret saved to ${sink.path} (mode 0600)`);
    return;
  }

  if (sink.kind === 'json') {
    writeJson(ctx.io, body);
    return;
  }

  // TTY: the secret once, framed, with the result.
  await printResult(ctx, g, body, summary);
  const { renderSecretBlock } = await import('../../output/render.js');
  ctx.io.stdout.write(renderSecretBlock(secret, ctx.io.paint.stdout));
}

async function printResult(ctx: Context, g: GlobalOptions, body: SecretResponse, summary: string): Promise<void> {
  if (g.json) {
    writeJson(ctx.io, body);
    return;
  }
  const { renderEndpoint, renderSummary } = await import('../../output/render.js');
  ctx.io.stdout.write(renderSummary(summary, ctx.io.paint.stdout));
  ctx.io.stdout.write(renderEndpoint(body.data.endpoint, { color: ctx.io.color.stdout, tty: ctx.io.stdout.isTTY }));
}

/** The envelope with the secret taken out: it went to a file (or nowhere). */
function withoutSecret(body: SecretResponse, path: string | null): SecretResponse {
  const data: Record<string, unknown> = { ...body.data, secret: null };
  if (path) data.secretFile = path;
  return { ...body, data: data as SecretResponse['data'] };
}

async function recovered(ctx: Context, endpointId: string, secret: string, why: string): Promise<CliError> {
  let where: string;
  try {
    where = recoverSecret(ctx.configDir, endpointId, secret, new Date(ctx.now()));
  } catch (err) {
    if (ctx.io.stdout.isTTY) {
      const { renderSecretBlock } = await import('../../output/render.js');
      ctx.io.stdout.write(renderSecretBlock(secret));
      return new CliError('secret_not_delivered', `${why}; could not keep a recovery copy either, so it was printed above`, EXIT.secretNotDelivered);
    }
    return new CliError(
      'secret_not_delivered',
      `${why}; a recovery copy could not be written either (${(err as NodeJS.ErrnoException).code ?? 'error'}): the secret is lost`,
      EXIT.secretNotDelivered,
      { hint: 'rotate the secret to get a new one' },
    );
  }
  ctx.io.notice(`the signing secret was kept in ${where} (mode 0600)`);
  return new CliError('secret_not_delivered', `${why}; the signing secret was kept in ${where}`, EXIT.secretNotDelivered, {
    details: { recoveredPath: where },
    hint: 'move it where it belongs, then delete that file',
  });
}
