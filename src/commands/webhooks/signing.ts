// chatctl webhooks sign | verify: produce and check the Standard Webhooks
// headers of a delivery body with a secret held in a file. The secret is
// registered with the scrubber at once and never printed.
import type { Command } from 'commander';
import { collect, examples, SIGNING_MORE, type Factory } from '../app.js';
import type { Context } from '../../context.js';
import { localError, usageError } from '../../errors/cli-error.js';
import { writeJson } from '../../output/io.js';
import { escapeInline } from '../../output/json.js';
import type { Verdict } from '../../signing/standard-webhooks.js';
import type { HeldSecret } from './secret-files.js';

/** A delivery body beyond this is not one: refused before it is read whole. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function registerSign(parent: Command, f: Factory): void {
  parent
    .command('sign')
    .description('print the webhook-id, webhook-timestamp and webhook-signature headers of a delivery body (Standard Webhooks)')
    .argument('[body-file]', 'the body to sign, byte for byte; - or nothing for standard input')
    .option('--secret-file <path>', "the file holding the endpoint's whsec_ secret (- for standard input, with BODY_FILE)")
    .option('--id <id>', 'the webhook-id (default: msg_ and a random UUID)')
    .option('--timestamp <seconds>', 'the webhook-timestamp, in Unix seconds (default: now)')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks sign --secret-file ./billing.whsec body.json',
        'chatctl webhooks sign --secret-file ./billing.whsec --id msg_1 --timestamp 1700000000 --json < body.json',
        'chatctl webhooks sign --secret-file ./billing.whsec body.json > headers.txt && curl -H @headers.txt --data-binary @body.json http://127.0.0.1:8080/hooks',
      ) + SIGNING_MORE,
    )
    .action((bodyFile: string | undefined, opts) => runSign(bodyFile, opts, f));
}

export function registerVerify(parent: Command, f: Factory): void {
  parent
    .command('verify')
    .description('check the Standard Webhooks signature of a delivery body with the secrets you hold: exit 0 if one signature matches, 9 if none does or the timestamp is too far from now')
    .argument('[body-file]', 'the body as received, byte for byte; - or nothing for standard input')
    .option(
      '--secret-file <path>',
      "a file holding one of the endpoint's whsec_ secrets (- for standard input, with BODY_FILE); repeat it for each secret you hold, as during an overlap rotation",
      collect,
    )
    .option('--header <line>', "a received header as 'NAME: VALUE'; repeat it for webhook-id, webhook-timestamp and webhook-signature", collect)
    .option('--tolerance <seconds>', 'how far the timestamp may be from now, in seconds (default 300)')
    .addHelpText(
      'after',
      examples(
        "chatctl webhooks verify --secret-file ./billing.whsec --header 'webhook-id: msg_1' --header 'webhook-timestamp: 1700000000' --header 'webhook-signature: v1,K5o…=' body.json",
        "chatctl webhooks verify --secret-file ./old.whsec --secret-file ./new.whsec --header 'webhook-id: msg_1' --header 'webhook-timestamp: 1700000000' --header 'webhook-signature: v1,K5o…= v1,9dQ…=' body.json",
        'printenv WEBHOOK_SECRET | chatctl webhooks verify --secret-file - --header "webhook-id: $ID" --header "webhook-timestamp: $TS" --header "webhook-signature: $SIG" --tolerance 600 body.json',
      ) +
        `
webhook-signature may hold several space-separated signatures (during an
overlap rotation: one per valid secret); one match is enough, wherever it is.
Each is compared in constant time, with every secret given; the output names
each secret that matched by its file and fingerprint. The signed content
takes webhook-timestamp as received, which must be a plain decimal integer
(Unix seconds, no sign, no leading zero). Exit 0: verified; 9: no signature matches
(signature_mismatch) or the timestamp is out of tolerance
(timestamp_out_of_tolerance), the message says which; 2: a malformed header,
secret or flag. The secret is never printed.
` +
        SIGNING_MORE,
    )
    .action((bodyFile: string | undefined, opts) => runVerify(bodyFile, opts, f));
}

export async function runSign(bodyFile: string | undefined, flags: { secretFile?: string; id?: string; timestamp?: string }, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  // The headers are data (`> headers.txt`, `curl -H @headers.txt`): a mask line with the secret must not join them.
  ctx.io.stdoutIsData();
  const [sw, { readKey }] = await Promise.all([import('../../signing/standard-webhooks.js'), import('./secret-files.js')]);
  const key = await readKey(flags.secretFile, bodyFile, ctx, 'sign');
  if (flags.id !== undefined) {
    const problem = sw.checkWebhookId(flags.id);
    if (problem) throw usageError(`invalid --id: ${problem}`);
  }
  let timestamp = Math.floor(ctx.now() / 1000);
  if (flags.timestamp !== undefined) {
    const t = sw.parseTimestamp(flags.timestamp);
    if (!t.ok) throw usageError(`invalid --timestamp "${escapeInline(flags.timestamp)}": ${t.problem}`, 'e.g. --timestamp "$(date +%s)"');
    timestamp = t.value;
  }
  const id = flags.id ?? `msg_${ctx.randomUUID().replaceAll('-', '')}`;
  const body = await readBody(bodyFile, ctx, 'sign');
  const headers = sw.signedHeaders([key], id, timestamp, body);
  if (state.output.json) writeJson(ctx.io, headers);
  else ctx.io.stdout.write(Object.entries(headers).reduce((text, [k, v]) => `${text}${k}: ${v}\n`, ''));
}

export async function runVerify(bodyFile: string | undefined, flags: { secretFile?: string[]; header?: string[]; tolerance?: string }, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const [sw, { readSecrets, parseTolerance }] = await Promise.all([import('../../signing/standard-webhooks.js'), import('./secret-files.js')]);
  const secrets = await readSecrets(flags.secretFile ?? [], bodyFile, ctx);
  const tolerance = parseTolerance(flags.tolerance);
  const lines = (flags.header ?? []).map(headerLine);
  const parsed = sw.parseHeaders(lines);
  if (!parsed.ok) throw usageError(`malformed headers: ${parsed.problem}`, "give each as --header 'NAME: VALUE': webhook-id, webhook-timestamp and webhook-signature");
  const headers = parsed.value;
  const body = await readBody(bodyFile, ctx, 'verify');
  const keys = secrets.map((s) => s.key);
  const verdict = sw.verifySignature(keys, headers, body, Math.floor(ctx.now() / 1000), tolerance);
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
const describeSecret = (s: { file: string; fingerprint: string }) => `${s.file === '-' ? 'standard input' : escapeInline(s.file)} (${s.fingerprint})`;

const describeSkew = (skew: number) => (skew >= 0 ? `${skew} s old` : `${-skew} s in the future`);

/** `NAME: VALUE` (the space optional), as curl -H takes it. */
function headerLine(line: string): [string, string] {
  const colon = line.indexOf(':');
  const name = colon > 0 ? line.slice(0, colon).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw usageError(`malformed --header "${escapeInline(line.slice(0, 80))}": expected NAME: VALUE`, "e.g. --header 'webhook-id: msg_123'");
  return [name, line.slice(colon + 1)];
}

const readBody = async (file: string | undefined, ctx: Context, command: string) =>
  (await import('./secret-files.js')).readFileOrStdin(file, escapeInline(file ?? ''), ctx, MAX_BODY_BYTES, 'not a delivery body', [
    'give the BODY_FILE, or the body on standard input',
    `e.g. chatctl webhooks ${command} … body.json, or … - < body.json`,
  ]);
