// The signing secrets a receiver holds (`--secret-file` of sign, verify and
// listen), each named by its path as given and its fingerprint, never its
// value; every value read goes to the scrubber first. listen refreshes them
// before each delivery, comparing content, not the stat: two writes of the
// same size within one tick of the file system's clock leave it unchanged.
// Also the bounded readers of a file or standard input that fingerprint, sign and verify use.
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { usageError } from '../../errors/cli-error.js';
import { escapeInline } from '../../output/json.js';
import { fingerprint } from '../../secret/facts.js';
import { DEFAULT_TOLERANCE_SECONDS, parseSecret, type Checked } from '../../signing/standard-webhooks.js';
import type { Context } from '../../context.js';

/** Far beyond any signing secret; a bigger input is the wrong file. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** A secret held now: its file (as given), its fingerprint and its HMAC key. */
export type HeldSecret = { file: string; fingerprint: string; key: Buffer };

/** What one look at the files found: those that hold a secret now, those left out and why, those whose secret changed. */
export type SecretsNow = { held: HeldSecret[]; skipped: { file: string; reason: string }[]; reloaded: { file: string; fingerprint: string }[] };

type Entry = { file: string; path: string; text: string; held: Checked<HeldSecret> };

/** Every file must hold a secret now, else a usage error naming it; `onSecret` (the scrubber) is told each value. */
export function loadSecretFiles(files: readonly string[], cwd: string, onSecret: (secret: string) => void) {
  const entries: Entry[] = files.map((file) => {
    const text = readFileLimited(resolve(cwd, file), escapeInline(file), MAX_SECRET_BYTES, 'not a signing secret').toString('utf8');
    onSecret(text.trim());
    return { file, path: resolve(cwd, file), text, held: { ok: true, value: heldSecret(file, text) } };
  });
  return {
    /** The secrets as loaded, without looking at the files again. */
    held: (): HeldSecret[] => entries.flatMap((e) => (e.held.ok ? [e.held.value] : [])),
    refresh(): SecretsNow {
      const now: SecretsNow = { held: [], skipped: [], reloaded: [] };
      for (const e of entries) {
        const read = readSecretFile(e.path);
        if ('reason' in read) {
          now.skipped.push({ file: e.file, reason: read.reason });
          continue;
        }
        if (read.text !== e.text) {
          onSecret(read.text.trim());
          e.text = read.text;
          e.held = secretIn(e.file, read.text);
          if (e.held.ok) now.reloaded.push({ file: e.file, fingerprint: e.held.value.fingerprint });
        }
        if (e.held.ok) now.held.push(e.held.value);
        else now.skipped.push({ file: e.file, reason: `it does not hold a signing secret (${e.held.problem})` });
      }
      return now;
    },
  };
}

/** A file's secret, or a usage error that names the file (never the value). */
function heldSecret(file: string, text: string, shown = escapeInline(file)): HeldSecret {
  const held = secretIn(file, text);
  if (!held.ok) throw usageError(`${shown} does not hold a signing secret: ${held.problem}`, 'a signing secret reads whsec_ followed by base64');
  return held.value;
}

function secretIn(file: string, text: string): Checked<HeldSecret> {
  const key = parseSecret(text);
  return key.ok ? { ok: true, value: { file, fingerprint: fingerprint(text.trim()), key: key.value } } : key;
}

function readSecretFile(path: string): { text: string } | { reason: string } {
  try {
    const st = statSync(path);
    if (!st.isFile()) return { reason: 'it is not a regular file any more' };
    if (st.size > MAX_SECRET_BYTES) return { reason: `it holds more than ${MAX_SECRET_BYTES} bytes` };
    return { text: readFileSync(path, 'utf8') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { reason: code === 'ENOENT' ? 'the file is missing' : `it cannot be read (${code ?? 'error'})` };
  }
}

/** --tolerance SECONDS, a whole number (default 300). */
export function parseTolerance(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_TOLERANCE_SECONDS;
  if (!/^\d{1,12}$/.test(raw)) throw usageError(`invalid --tolerance "${escapeInline(raw)}": a whole number of seconds`);
  return Number(raw);
}

export async function readKey(secretFile: string | undefined, bodyFile: string | undefined, ctx: Context, command: string): Promise<Buffer> {
  if (secretFile === undefined)
    throw usageError('--secret-file is required', `the file holding the endpoint's whsec_ secret, e.g. chatctl webhooks ${command} --secret-file ./billing.whsec body.json`);
  if (secretFile === '-') return (await readStdinSecret(bodyFile, ctx)).key;
  return loadSecretFiles([secretFile], ctx.cwd, (s) => ctx.io.scrubber.addSecret(s)).held()[0]!.key;
}

/** verify's secrets, in the order given: files, and at most one from standard input (`-`). */
export async function readSecrets(given: readonly string[], bodyFile: string | undefined, ctx: Context): Promise<HeldSecret[]> {
  if (given.length === 0)
    throw usageError(
      '--secret-file is required',
      "the file holding the endpoint's whsec_ secret (repeat it for each secret you hold), e.g. chatctl webhooks verify --secret-file ./billing.whsec … body.json",
    );
  if (given.filter((g) => g === '-').length > 1) throw usageError('--secret-file - is given more than once', 'standard input holds one secret; give the others as files');
  const stdin = given.includes('-') ? await readStdinSecret(bodyFile, ctx) : undefined;
  const named = given.filter((g) => g !== '-');
  const files = loadSecretFiles(named, ctx.cwd, (s) => ctx.io.scrubber.addSecret(s)).held();
  return given.map((g) => (g === '-' ? stdin! : files.shift()!));
}

async function readStdinSecret(bodyFile: string | undefined, ctx: Context): Promise<HeldSecret> {
  if (bodyFile === undefined || bodyFile === '-') throw usageError('--secret-file - and the body cannot both come from standard input', 'give the body as BODY_FILE');
  const text = await ctx.io.stdin.readAll();
  ctx.io.scrubber.addSecret(text.trim());
  return heldSecret('-', text, 'standard input');
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
