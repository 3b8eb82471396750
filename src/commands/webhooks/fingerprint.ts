// chatctl webhooks fingerprint [FILE|-]: the fingerprint of a secret held
// elsewhere (a receiver's copy, a CI variable), to compare with the one create
// and rotate print, without showing the secret (docs/secrets.md).
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { usageError } from '../../errors/cli-error.js';
import { writeJson } from '../../output/io.js';

export function registerFingerprint(parent: Command, f: Factory): void {
  parent
    .command('fingerprint')
    .description('print the fingerprint (sha256:…) of a signing secret held in a file or given on stdin, without showing it')
    .argument('[file]', 'the file holding the secret; - or nothing for standard input')
    .addHelpText(
      'after',
      examples('chatctl webhooks fingerprint ./billing.whsec', 'printenv WEBHOOK_SECRET | chatctl webhooks fingerprint -') +
        '\nSurrounding whitespace is ignored. Compare the result with the fingerprint\nthat create and rotate print.\n',
    )
    .action((file: string | undefined) => runFingerprint(file, f));
}

export async function runFingerprint(file: string | undefined, f: Factory): Promise<void> {
  const [{ readFileOrStdin, MAX_SECRET_BYTES }, { fingerprint }] = await Promise.all([import('./secret-files.js'), import('../../secret/facts.js')]);
  const { ctx } = f;
  const state = f.state();
  // The fingerprint is data (FP="$(…)"): a mask line with the secret must not join it.
  ctx.io.stdoutIsData();
  const text = await readFileOrStdin(file, file ?? '', ctx, MAX_SECRET_BYTES, 'not a signing secret', [
    'give the FILE holding the secret, or the secret on standard input',
    'e.g. chatctl webhooks fingerprint ./whsec, or printenv WEBHOOK_SECRET | chatctl webhooks fingerprint -',
  ]);
  const secret = text.toString('utf8').trim();
  if (secret === '') throw usageError(`${file === undefined || file === '-' ? 'standard input' : file} holds no secret (it is empty or only whitespace)`);
  ctx.io.scrubber.addSecret(secret);
  const fp = fingerprint(secret);
  if (state.output.json) writeJson(ctx.io, { fingerprint: fp });
  else ctx.io.stdout.write(`${fp}\n`);
}
