// Escrow (docs/secrets.md, "Escrow"): a secret kept after a failed
// destination is also written, encrypted to the recipients given with
// --escrow / --escrow-file, into --escrow-dir, so that the job's own machine
// (and its recovered/ folder, gone with a CI runner) is not the only place
// that holds it. `chatctl webhooks recover` (commands/webhooks/recover.ts)
// opens it on any machine that has an identity of a recipient.
//
// One pair of files per endpoint and version:
//   <endpoint>-v<version>.age   age's own binary format; its plaintext is the
//                               secret alone, so `age -d -i KEY FILE` prints
//                               exactly the secret
//   <endpoint>-v<version>.json  what it is (endpoint, scope, version,
//                               fingerprint, time), never the secret: age's
//                               format has no unencrypted metadata
// Both 0600, written whole or not at all (fs/atomic.ts), the .json first, so
// a .age file never lacks what `recover` checks it against.
//
// Loaded only by a run given --escrow or --escrow-file, and by `recover`
// (age-encryption stays out of every other run).
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Decrypter, Encrypter } from 'age-encryption';
import { makeFolders } from '../config/make-folders.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { type CliError, usageError } from '../errors/cli-error.js';
import { describeFailure } from './deliver-all.js';
import { shellWord } from '../output/sanitize.js';

/** Where escrowed secrets go and for whom: worked out (and checked) before anything is sent. */
export interface EscrowOptions {
  /** age recipients (`age1…`), each checked. */
  recipients: string[];
  /** The folder, absolute; it exists (0700 when chatctl made it). */
  dir: string;
}

/** One secret to escrow, and what its sidecar says of it. */
export interface EscrowItem {
  /** "org/app/env", as the custody records name it. */
  scope: string;
  endpointId: string;
  /** The endpoint's version after the change; null when the answer gave none. */
  version: number | null;
  secret: string;
  fingerprint: string;
}

/** The sidecar beside each .age file: what `recover` knows of the secret without opening it. */
export interface EscrowMeta {
  escrow: 1;
  endpointId: string;
  scope: string;
  version: number | null;
  fingerprint: string;
  /** When it was written (ISO 8601). */
  at: string;
}

/** The flags that ask for escrow (escrowOf in commands/app.ts reads them). */
export interface EscrowFlags {
  escrow?: string[] | undefined;
  escrowFile?: string | undefined;
  escrowDir?: string | undefined;
}

const escrowAsked = (f: EscrowFlags): boolean => (f.escrow?.length ?? 0) > 0 || f.escrowFile !== undefined || f.escrowDir !== undefined;

/**
 * The escrow flags checked: every recipient parsed by age (exit 2 names the
 * bad one), the recipients file read, the folder made or found. Undefined
 * when no flag was given. Nothing has been sent when this throws.
 */
export function parseEscrow(flags: EscrowFlags, cwd: string): EscrowOptions | undefined {
  if (!escrowAsked(flags)) return undefined;
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

/** A file of recipients, one a line; blank lines and `#` comments skipped (age's own -R format, age1… recipients only). */
function recipientsFile(path: string, given: string): { value: string; from: string }[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw usageError(`--escrow-file ${given}: cannot read it (${readFailure(err)})`);
  }
  const out: { value: string; from: string }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    out.push({ value: line, from: `--escrow-file ${given} line ${i + 1}` });
  });
  if (out.length === 0) throw usageError(`--escrow-file ${given} names no recipient`, 'one age1… recipient a line; lines starting with # are comments');
  return out;
}

function checkRecipient(value: string, from: string): void {
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  if (!value.startsWith('age1')) throw usageError(`${from}: "${shown}" is not an age recipient`, 'an age X25519 recipient starts with age1 (age-keygen -y KEYFILE prints it)');
  try {
    new Encrypter().addRecipient(value);
  } catch (err) {
    throw usageError(
      `${from}: "${shown}" is not a valid age recipient (${err instanceof Error ? err.message : String(err)})`,
      'an age X25519 recipient starts with age1 (age-keygen -y KEYFILE prints it)',
    );
  }
}

/** The name both files share: the endpoint id made safe for a file name, and the version (or the fingerprint when no version is known). */
export function escrowStem(item: Pick<EscrowItem, 'endpointId' | 'version' | 'fingerprint'>): string {
  const id =
    item.endpointId
      .replace(/[^A-Za-z0-9_.-]/g, '_')
      .replace(/^\.+/, '_')
      .slice(0, 120) || 'endpoint';
  return item.version !== null ? `${id}-v${item.version}` : `${id}-${item.fingerprint.replace(/^sha256:/, '')}`;
}

/**
 * Writes the secret, encrypted to every recipient, and its sidecar into the
 * escrow folder; returns the .age file's path. Throws (an Error) when it
 * cannot: the caller says so in its error.
 */
export async function escrowSecret(opts: EscrowOptions, item: EscrowItem, now: number): Promise<string> {
  const encrypter = new Encrypter();
  for (const r of opts.recipients) encrypter.addRecipient(r);
  const sealed = await encrypter.encrypt(item.secret);
  const stem = join(opts.dir, escrowStem(item));
  const meta: EscrowMeta = { escrow: 1, endpointId: item.endpointId, scope: item.scope, version: item.version, fingerprint: item.fingerprint, at: new Date(now).toISOString() };
  makeFolders(opts.dir, 0o700);
  writeFileAtomic(`${stem}.json`, `${JSON.stringify(meta)}\n`, { mode: 0o600 });
  writeFileAtomic(`${stem}.age`, sealed, { mode: 0o600 });
  return `${stem}.age`;
}

/**
 * The hook custody calls once a secret is kept after a failed destination
 * (secret/custody.ts): escrows it and says where in the exit-13 error
 * (message, hint, `details.escrowPath`), or why not (`details.escrowError`).
 * Never throws: the error it amends is the outcome either way.
 */
export function escrowHook(opts: EscrowOptions, now: () => number, destination?: (endpointId: string) => string | undefined): (error: CliError, item: EscrowItem) => Promise<void> {
  return async (error, item) => {
    const details = (error.details !== null && typeof error.details === 'object' ? error.details : {}) as Record<string, unknown>;
    try {
      const path = await escrowSecret(opts, item, now());
      details.escrowPath = path;
      error.message += `; an encrypted copy is in ${path}`;
      amendHint(
        error,
        `on any machine with an identity of an --escrow recipient: chatctl webhooks recover ${shellWord(path)} --identity KEYFILE ${destination?.(item.endpointId) ?? '--secret-to DESTINATION'}`,
      );
    } catch (err) {
      details.escrowPath = null;
      details.escrowError = describeFailure(err);
      error.message += `; no encrypted copy could be written to ${opts.dir} (${describeFailure(err)})`;
    }
    if (error.details === null) (error as { details: unknown }).details = details;
  };
}

function amendHint(error: CliError, more: string): void {
  const e = error as { hint: string | undefined };
  e.hint = e.hint ? `${e.hint}; or, ${more}` : more;
}

/** An age identity file (age-keygen's): every `AGE-SECRET-KEY-1…` line in it. */
export function readIdentities(path: string, given: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw usageError(`--identity ${given}: cannot read it (${readFailure(err)})`);
  }
  const keys = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
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
