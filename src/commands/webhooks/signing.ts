// chatctl webhooks sign | verify: produce and check the Standard Webhooks
// headers of a delivery body with a secret held in a file. The secret is
// registered with the scrubber at once and never printed.
import type { Factory } from '../app.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Context } from '../../context.js';
import { localError, usageError } from '../../errors/cli-error.js';
import { writeJson } from '../../output/io.js';
import { escapeInline } from '../../output/json.js';
import { fingerprint } from '../../secret/facts.js';
import { DEFAULT_TOLERANCE_SECONDS, checkWebhookId, parseHeaders, parseSecret, parseTimestamp, signedHeaders, verifySignature, type Verdict } from '../../signing/standard-webhooks.js';
import { SecretFiles, type HeldSecret } from './secret-files.js';

/** A delivery body beyond this is not one: refused before it is read whole. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface SignFlags {
  secretFile?: string;
  id?: string;
  timestamp?: string;
}

export interface VerifyFlags {
  secretFile?: string[];
  header?: string[];
  tolerance?: string;
}

export async function runSign(bodyFile: string | undefined, flags: SignFlags, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
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
  if (state.output.json) writeJson(ctx.io, headers);
  else
    ctx.io.stdout.write(
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\n`)
        .join(''),
    );
}

export async function runVerify(bodyFile: string | undefined, flags: VerifyFlags, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const secrets = await readSecrets(flags.secretFile ?? [], bodyFile, ctx);
  const tolerance = parseTolerance(flags.tolerance);
  const lines = (flags.header ?? []).map(headerLine);
  const parsed = parseHeaders(lines);
  if (!parsed.ok) throw usageError(`malformed headers: ${parsed.problem}`, "give each as --header 'NAME: VALUE': webhook-id, webhook-timestamp and webhook-signature");
  const headers = parsed.value;
  const body = await readBody(bodyFile, ctx, 'verify');
  const verdict = verifySignature(
    secrets.map((s) => s.key),
    headers,
    body,
    Math.floor(ctx.now() / 1000),
    tolerance,
  );
  const count = headers.signatures.length;
  const matchedBy = verdict.matches.map((m) => ({ file: secrets[m.key]!.file, fingerprint: secrets[m.key]!.fingerprint, signature: m.signature }));
  const details = { webhookId: headers.id, timestamp: headers.timestamp, skewSeconds: verdict.skewSeconds, toleranceSeconds: tolerance, signatures: count, matchedBy };
  if (!verdict.ok) throw verifyFailure(verdict, secrets, details);
  if (state.output.json) writeJson(ctx.io, { verified: true, matched: verdict.matched, ...details });
  else
    ctx.io.stdout.write(
      `verified: ${matchedBy.map((m) => `signature ${m.signature} of ${count} matches ${describeSecret(m)}`).join('; ')}; webhook-id ${escapeInline(headers.id)}, timestamp ${describeSkew(verdict.skewSeconds)} (tolerance ${tolerance} s)\n`,
    );
}

function verifyFailure(verdict: Verdict & { ok: false }, secrets: readonly HeldSecret[], details: { signatures: number; toleranceSeconds: number }) {
  const { signatures: count, toleranceSeconds: tolerance } = details;
  const age = describeSkew(verdict.skewSeconds);
  if (verdict.reason === 'no_matching_signature') {
    const late = Math.abs(verdict.skewSeconds) > tolerance ? `; the timestamp is also ${age}, beyond the tolerance of ${tolerance} s` : '';
    const which = secrets.length === 1 ? `signed with ${describeSecret(secrets[0]!)}` : `signed with any of the ${secrets.length} secrets (${secrets.map(describeSecret).join(', ')})`;
    return localError('signature_mismatch', `no signature matches: none of the ${count} in webhook-signature is this body's, ${which}${late}`, {
      hint: "check that the body is byte for byte what was delivered (a final newline counts) and that the secret is the endpoint's (chatctl webhooks fingerprint FILE)",
      details: { reason: verdict.reason, ...details },
    });
  }
  return localError('timestamp_out_of_tolerance', `the signature matches, but the timestamp is ${age}, beyond the tolerance of ${tolerance} s`, {
    hint: 'a replayed or delayed delivery, or a clock that is off; --tolerance SECONDS allows more',
    details: { reason: verdict.reason, ...details },
  });
}

/** A secret as output names it: its file and fingerprint, never its value. */
export const describeSecret = (s: { file: string; fingerprint: string }) => `${s.file === '-' ? 'standard input' : escapeInline(s.file)} (${s.fingerprint})`;

/** --tolerance SECONDS, a whole number (default 300). */
export function parseTolerance(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_TOLERANCE_SECONDS;
  if (!/^\d{1,12}$/.test(raw)) throw usageError(`invalid --tolerance "${escapeInline(raw)}": a whole number of seconds`);
  return Number(raw);
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
  if (secretFile === '-') return (await readStdinSecret(bodyFile, ctx)).key;
  return SecretFiles.load([secretFile], ctx.cwd, (s) => ctx.io.scrubber.addSecret(s)).held[0]!.key;
}

/** verify's secrets, in the order given: files, and at most one from standard input (`-`). */
async function readSecrets(given: readonly string[], bodyFile: string | undefined, ctx: Context): Promise<HeldSecret[]> {
  if (given.length === 0)
    throw usageError(
      '--secret-file is required',
      "the file holding the endpoint's whsec_ secret (repeat it for each secret you hold), e.g. chatctl webhooks verify --secret-file ./billing.whsec … body.json",
    );
  if (given.filter((g) => g === '-').length > 1) throw usageError('--secret-file - is given more than once', 'standard input holds one secret; give the others as files');
  const stdin = given.includes('-') ? await readStdinSecret(bodyFile, ctx) : undefined;
  const files = SecretFiles.load(
    given.filter((g) => g !== '-'),
    ctx.cwd,
    (s) => ctx.io.scrubber.addSecret(s),
  ).held;
  return given.map((g) => (g === '-' ? stdin! : files.shift()!));
}

async function readStdinSecret(bodyFile: string | undefined, ctx: Context): Promise<HeldSecret> {
  if (bodyFile === undefined || bodyFile === '-') throw usageError('--secret-file - and the body cannot both come from standard input', 'give the body as BODY_FILE');
  const text = await ctx.io.stdin.readAll();
  ctx.io.scrubber.addSecret(text.trim());
  const key = parseSecret(text);
  if (!key.ok) throw usageError(`standard input does not hold a signing secret: ${key.problem}`, 'a signing secret reads whsec_ followed by base64');
  return { file: '-', fingerprint: fingerprint(text.trim()), key: key.value };
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
