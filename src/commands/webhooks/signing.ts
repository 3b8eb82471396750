// chatctl webhooks sign | verify: produce and check the Standard Webhooks
// headers of a delivery body with a secret held in a file. The secret is
// registered with the scrubber at once and never printed.
import type { Factory } from '../app.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Context } from '../../context.js';
import { localError, usageError } from '../../errors/cli-error.js';
import { writeJson } from '../../output/io.js';
import { escapeInline } from '../../output/sanitize.js';
import { DEFAULT_TOLERANCE_SECONDS, checkWebhookId, parseHeaders, parseSecret, parseTimestamp, signedHeaders, verifySignature } from '../../signing/standard-webhooks.js';
import { readSmallFile } from './fingerprint.js';

/** A delivery body beyond this is not one: refused before it is read whole. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface SignFlags {
  secretFile?: string;
  id?: string;
  timestamp?: string;
}

export interface VerifyFlags {
  secretFile?: string;
  header?: string[];
  tolerance?: string;
}

export async function runSign(bodyFile: string | undefined, flags: SignFlags, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  // The headers are data (`> headers.txt`, `curl -H @headers.txt`): a mask line with the secret must not join them.
  ctx.io.stdoutIsData();
  const key = await readKey(flags.secretFile, bodyFile, ctx, 'sign');
  if (flags.id !== undefined) {
    const problem = checkWebhookId(flags.id);
    if (problem) throw usageError(`invalid --id: ${problem}`);
  }
  let timestamp = Math.floor(ctx.now() / 1000);
  if (flags.timestamp !== undefined) {
    const t = parseTimestamp(flags.timestamp);
    if (!t.ok) throw usageError(`invalid --timestamp "${escapeInline(flags.timestamp)}": ${t.problem}`, 'e.g. --timestamp "$(date +%s)"');
    timestamp = t.value;
  }
  const id = flags.id ?? `msg_${ctx.randomUUID().replaceAll('-', '')}`;
  const body = await readBody(bodyFile, ctx, 'sign');
  const headers = signedHeaders([key], id, timestamp, body);
  if (g.json) writeJson(ctx.io, headers);
  else
    ctx.io.stdout.write(
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\n`)
        .join(''),
    );
}

export async function runVerify(bodyFile: string | undefined, flags: VerifyFlags, f: Factory): Promise<void> {
  const { ctx } = f;
  const g = f.globals();
  const key = await readKey(flags.secretFile, bodyFile, ctx, 'verify');
  let tolerance = DEFAULT_TOLERANCE_SECONDS;
  if (flags.tolerance !== undefined) {
    if (!/^\d{1,12}$/.test(flags.tolerance)) throw usageError(`invalid --tolerance "${escapeInline(flags.tolerance)}": a whole number of seconds`);
    tolerance = Number(flags.tolerance);
  }
  const lines = (flags.header ?? []).map(headerLine);
  const parsed = parseHeaders(lines);
  if (!parsed.ok) throw usageError(`malformed headers: ${parsed.problem}`, "give each as --header 'NAME: VALUE': webhook-id, webhook-timestamp and webhook-signature");
  const headers = parsed.value;
  const body = await readBody(bodyFile, ctx, 'verify');
  const nowSeconds = Math.floor(ctx.now() / 1000);
  const verdict = verifySignature(key, headers, body, nowSeconds, tolerance);
  const count = headers.signatures.length;
  const details = { webhookId: headers.id, timestamp: headers.timestamp, skewSeconds: verdict.skewSeconds, toleranceSeconds: tolerance, signatures: count };
  if (!verdict.ok) {
    const age = describeSkew(verdict.skewSeconds);
    if (verdict.reason === 'no_matching_signature') {
      const late = Math.abs(verdict.skewSeconds) > tolerance ? `; the timestamp is also ${age}, beyond the tolerance of ${tolerance} s` : '';
      throw localError('signature_mismatch', `no signature matches: none of the ${count} in webhook-signature is this body's, signed with this secret${late}`, {
        hint: "check that the body is byte for byte what was delivered (a final newline counts) and that the secret is the endpoint's (chatctl webhooks fingerprint FILE)",
        details: { reason: verdict.reason, ...details },
      });
    }
    throw localError('timestamp_out_of_tolerance', `the signature matches, but the timestamp is ${age}, beyond the tolerance of ${tolerance} s`, {
      hint: 'a replayed or delayed delivery, or a clock that is off; --tolerance SECONDS allows more',
      details: { reason: verdict.reason, ...details },
    });
  }
  if (g.json) writeJson(ctx.io, { verified: true, matched: verdict.matched, ...details });
  else
    ctx.io.stdout.write(
      `verified: signature ${verdict.matched} of ${count} matches; webhook-id ${escapeInline(headers.id)}, timestamp ${describeSkew(verdict.skewSeconds)} (tolerance ${tolerance} s)\n`,
    );
}

const describeSkew = (skew: number) => (skew >= 0 ? `${skew} s old` : `${-skew} s in the future`);

/** `NAME: VALUE` (the space optional), as curl -H takes it. */
function headerLine(line: string): [string, string] {
  const colon = line.indexOf(':');
  const name = colon > 0 ? line.slice(0, colon).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw usageError(`malformed --header "${escapeInline(line.slice(0, 80))}": expected NAME: VALUE`, "e.g. --header 'webhook-id: msg_123'");
  return [name, line.slice(colon + 1)];
}

async function readKey(secretFile: string | undefined, bodyFile: string | undefined, ctx: Context, command: string): Promise<Buffer> {
  if (secretFile === undefined)
    throw usageError('--secret-file is required', `the file holding the endpoint's whsec_ secret, e.g. chatctl webhooks ${command} --secret-file ./billing.whsec body.json`);
  let text: string;
  if (secretFile === '-') {
    if (bodyFile === undefined || bodyFile === '-') throw usageError('--secret-file - and the body cannot both come from standard input', 'give the body as BODY_FILE');
    text = await ctx.io.stdin.readAll();
  } else text = readSmallFile(resolve(ctx.cwd, secretFile), secretFile);
  ctx.io.scrubber.addSecret(text.trim());
  const key = parseSecret(text);
  if (!key.ok)
    throw usageError(`${secretFile === '-' ? 'standard input' : escapeInline(secretFile)} does not hold a signing secret: ${key.problem}`, 'a signing secret reads whsec_ followed by base64');
  return key.value;
}

async function readBody(file: string | undefined, ctx: Context, command: string): Promise<Buffer> {
  if (file === undefined || file === '-') {
    if (file === undefined && ctx.io.stdin.isTTY) throw usageError('give the BODY_FILE, or the body on standard input', `e.g. chatctl webhooks ${command} … body.json, or … - < body.json`);
    const bytes = ctx.io.stdin.readBytes ? await ctx.io.stdin.readBytes() : Buffer.from(await ctx.io.stdin.readAll(), 'utf8');
    if (bytes.length > MAX_BODY_BYTES) throw usageError(`standard input holds more than ${MAX_BODY_BYTES} bytes: not a delivery body`);
    return bytes;
  }
  let fd: number;
  try {
    fd = openSync(resolve(ctx.cwd, file), 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError(code === 'ENOENT' ? `${escapeInline(file)}: no such file` : `cannot read ${escapeInline(file)}: ${code ?? 'error'}`);
  }
  try {
    if (fstatSync(fd).isDirectory()) throw usageError(`${escapeInline(file)} is a directory`);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.alloc(64 * 1024);
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      total += n;
      if (total > MAX_BODY_BYTES) throw usageError(`${escapeInline(file)} holds more than ${MAX_BODY_BYTES} bytes: not a delivery body`);
      chunks.push(buf.subarray(0, n));
    }
    return Buffer.concat(chunks);
  } catch (err) {
    if ((err as { code?: string }).code === 'usage_error') throw err;
    throw usageError(`cannot read ${escapeInline(file)}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  } finally {
    closeSync(fd);
  }
}
