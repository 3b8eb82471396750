// Escrow (docs/secrets.md, "Escrow"): a secret kept after a failed destination
// is also written, encrypted to the --escrow recipients, as `.age` beside a
// `.json` sidecar (never the secret). A lazy bundle: age-encryption loads only here.
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Decrypter, Encrypter } from 'age-encryption';
import { makeFolders, writeFileAtomic } from '../system/files.js';
import { type CliError, usageError } from '../errors/cli-error.js';
import { describeFailure } from './deliver.js';
import { shellWord } from '../output/json.js';

/** Checked before anything is sent: the recipients (`age1…`) and the folder (absolute, existing). */
type EscrowOptions = { recipients: string[]; dir: string };

/** One secret to escrow; `version` after the change, null when the answer gave none. */
type EscrowItem = { scope: string; endpointId: string; version: number | null; secret: string; fingerprint: string };

/** The sidecar beside each .age file: what `recover` knows of the secret without opening it (`at`: when written). */
export type EscrowMeta = { escrow: 1; endpointId: string; scope: string; version: number | null; fingerprint: string; at: string };

export type EscrowFlags = { escrow?: string[] | undefined; escrowFile?: string | undefined; escrowDir?: string | undefined };

/** The escrow flags checked (exit 2 names a bad recipient), the folder made or found; undefined when no flag was given. */
export function parseEscrow(flags: EscrowFlags, cwd: string): EscrowOptions | undefined {
  if ((flags.escrow?.length ?? 0) === 0 && flags.escrowFile === undefined && flags.escrowDir === undefined) return undefined;
  const recipients: { value: string; from: string }[] = (flags.escrow ?? []).map((value) => ({ value: value.trim(), from: '--escrow' }));
  if (flags.escrowFile !== undefined) recipients.push(...recipientsFile(resolve(cwd, flags.escrowFile), flags.escrowFile));
  if (recipients.length === 0) throw usageError('--escrow-dir needs a recipient: --escrow age1… or --escrow-file FILE', 'age-keygen prints a key pair; its "Public key: age1…" line is the recipient');
  if (flags.escrowDir === undefined || flags.escrowDir === '')
    throw usageError('--escrow needs --escrow-dir DIR: the folder the encrypted secrets go to', 'for instance --escrow-dir escrow/, uploaded as an artifact by the job');
  for (const r of recipients) checkRecipient(r.value, r.from);
  const dir = resolve(cwd, flags.escrowDir);
  try {
    makeFolders(dir, 0o700);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
  } catch (err) {
    throw usageError(`--escrow-dir ${flags.escrowDir}: cannot use it as a folder (${describeFailure(err)})`, 'name a folder chatctl can create or write to');
  }
  return { recipients: [...new Set(recipients.map((r) => r.value))], dir };
}

/** A file's lines (numbered from 1), blank ones and `#` comments skipped: age's own -R and identity formats. */
function keyLines(path: string, what: string): { line: string; n: number }[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw usageError(`${what}: cannot read it (${readFailure(err)})`);
  }
  return text
    .split(/\r?\n/)
    .map((raw, i) => ({ line: raw.trim(), n: i + 1 }))
    .filter(({ line }) => line !== '' && !line.startsWith('#'));
}

/** A file of age1… recipients, one a line. */
function recipientsFile(path: string, given: string): { value: string; from: string }[] {
  const out = keyLines(path, `--escrow-file ${given}`).map(({ line, n }) => ({ value: line, from: `--escrow-file ${given} line ${n}` }));
  if (out.length === 0) throw usageError(`--escrow-file ${given} names no recipient`, 'one age1… recipient a line; lines starting with # are comments');
  return out;
}

const RECIPIENT_HINT = 'an age X25519 recipient starts with age1 (age-keygen -y KEYFILE prints it)';

function checkRecipient(value: string, from: string): void {
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  if (!value.startsWith('age1')) throw usageError(`${from}: "${shown}" is not an age recipient`, RECIPIENT_HINT);
  try {
    new Encrypter().addRecipient(value);
  } catch (err) {
    throw usageError(`${from}: "${shown}" is not a valid age recipient (${err instanceof Error ? err.message : String(err)})`, RECIPIENT_HINT);
  }
}

/** The name both files share: the endpoint id made safe for a file name, and the version (or the fingerprint when no version is known). */
function escrowStem(item: EscrowItem): string {
  const id =
    item.endpointId
      .replace(/[^A-Za-z0-9_.-]/g, '_')
      .replace(/^\.+/, '_')
      .slice(0, 120) || 'endpoint';
  return item.version !== null ? `${id}-v${item.version}` : `${id}-${item.fingerprint.replace(/^sha256:/, '')}`;
}

/** Writes the secret, encrypted to every recipient, and its sidecar; returns the .age file's path, or throws. */
async function escrowSecret(opts: EscrowOptions, item: EscrowItem, now: number): Promise<string> {
  const encrypter = new Encrypter();
  for (const r of opts.recipients) encrypter.addRecipient(r);
  const sealed = await encrypter.encrypt(item.secret);
  const stem = join(opts.dir, escrowStem(item));
  const meta: EscrowMeta = { escrow: 1, endpointId: item.endpointId, scope: item.scope, version: item.version, fingerprint: item.fingerprint, at: new Date(now).toISOString() };
  makeFolders(opts.dir, 0o700);
  // The .json first: a .age file never lacks what `recover` checks it against.
  writeFileAtomic(`${stem}.json`, `${JSON.stringify(meta)}\n`, { mode: 0o600 });
  writeFileAtomic(`${stem}.age`, sealed, { mode: 0o600 });
  return `${stem}.age`;
}

/** Custody's hook after a failed destination: escrows the secret and says where in the 13 (message, hint, `details.escrowPath`) or why not (`details.escrowError`). Never throws. */
export function escrowHook(opts: EscrowOptions, now: () => number, destination?: (endpointId: string) => string | undefined): (error: CliError, item: EscrowItem) => Promise<void> {
  return async (error, item) => {
    const details = (error.details !== null && typeof error.details === 'object' ? error.details : {}) as Record<string, unknown>;
    try {
      const path = await escrowSecret(opts, item, now());
      details.escrowPath = path;
      error.message += `; an encrypted copy is in ${path}`;
      const more = `on any machine with an identity of an --escrow recipient: chatctl webhooks recover ${shellWord(path)} --identity KEYFILE ${destination?.(item.endpointId) ?? '--secret-to DESTINATION'}`;
      const e = error as { hint: string | undefined };
      e.hint = e.hint ? `${e.hint}; or, ${more}` : more;
    } catch (err) {
      details.escrowPath = null;
      details.escrowError = describeFailure(err);
      error.message += `; no encrypted copy could be written to ${opts.dir} (${describeFailure(err)})`;
    }
    if (error.details === null) (error as { details: unknown }).details = details;
  };
}

/** An age identity file (age-keygen's): every `AGE-SECRET-KEY-1…` line in it. */
export function readIdentities(path: string, given: string): string[] {
  const keys = keyLines(path, `--identity ${given}`).map(({ line }) => line);
  const bad = keys.find((k) => !/^AGE-SECRET-KEY-(PQ-)?1[0-9A-Z]+$/.test(k));
  if (keys.length === 0 || bad !== undefined) throw usageError(`--identity ${given}: not an age identity file`, 'give the file age-keygen wrote: lines of AGE-SECRET-KEY-1…, # comments');
  return keys;
}

/** Opens an escrowed file with the identities: the secret, or throws (an Error) saying why not. */
export async function openEscrowed(sealed: Uint8Array, identities: readonly string[]): Promise<string> {
  const d = new Decrypter();
  for (const k of identities) d.addIdentity(k);
  return d.decrypt(sealed, 'text');
}

/** Why a file named on the command line cannot be read (describeFailure's ENOENT speaks of a folder gone meanwhile). */
export const readFailure = (err: unknown) => ((err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeFailure(err));
