// chatctl webhooks fingerprint [FILE|-]: the fingerprint of a secret held
// elsewhere (a receiver's copy, a CI variable), to compare with the one create
// and rotate print, without showing the secret (docs/secrets.md).
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { usageError } from '../../errors/cli-error.js';
import { writeJson } from '../../output/io.js';
import { fingerprint } from '../../secret/facts.js';
import type { Context } from '../../context.js';

/** Far beyond any signing secret; a bigger input is the wrong file. */
export const MAX_SECRET_BYTES = 64 * 1024;

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

/** FILE (`shown` as given), or standard input for `-` or nothing (refused at a terminal: `ask`), of at most `max` bytes (`what`: what a bigger one is not). */
export async function readFileOrStdin(file: string | undefined, shown: string, ctx: Context, max: number, what: string, ask: [string, string]): Promise<Buffer> {
  if (file !== undefined && file !== '-') return readFileLimited(resolve(ctx.cwd, file), shown, max, what);
  if (file === undefined && ctx.io.stdin.isTTY) throw usageError(...ask);
  const bytes = await ctx.io.stdin.readBytes();
  if (bytes.length > max) throw usageError(`standard input holds more than ${max} bytes: ${what}`);
  return bytes;
}

/** A file of at most `max` bytes (`what`: what a bigger one is not), or a usage error naming it as given. */
export function readFileLimited(path: string, given: string, max: number, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError(code === 'ENOENT' ? `${given}: no such file` : `cannot read ${given}: ${code ?? 'error'}`);
  }
  try {
    if (fstatSync(fd).isDirectory()) throw usageError(`${given} is a directory`);
    const chunks: Buffer[] = [];
    let total = 0;
    for (let n = 1; n > 0 && total <= max; ) {
      const buf = Buffer.alloc(Math.min(64 * 1024, max + 1));
      n = readSync(fd, buf, 0, buf.length, null);
      total += n;
      chunks.push(buf.subarray(0, n));
    }
    if (total > max) throw usageError(`${given} holds more than ${max} bytes: ${what}`);
    return Buffer.concat(chunks);
  } catch (err) {
    if ((err as { code?: string }).code === 'usage_error') throw err;
    throw usageError(`cannot read ${given}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  } finally {
    closeSync(fd);
  }
}
