// chatctl webhooks recover FILE… --identity KEYFILE --secret-to SINK…
// (docs/secrets.md, "Escrow"; docs/ci.md): opens secrets that a run escrowed
// (secret/escrow.ts) after a failed destination and delivers them, on any
// machine, through the same destinations as create and rotate
// (secret/deliver.ts). No request is sent: no token is needed.
//
// One escrowed secret that what this machine knows shows superseded (a later
// change of its endpoint, in this config folder's facts) is never
// delivered: it ends 13 and its destinations are left as they are. A
// rotation made elsewhere cannot be seen here.
//
// Every file is checked and opened before anything is delivered: a wrong
// identity or a missing sidecar is exit 2 with nothing written.
// A bundle of its own (dist/lazy/recover.cjs), with age.
import type { Factory } from '../app.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError, isCliError, localError, usageError } from '../../errors/cli-error.js';
import { reportError } from '../../errors/explain.js';
import { escapeInline, shellQuote } from '../../output/json.js';
import { writeJson } from '../../output/io.js';
import { deliverAll, hasIdPlaceholder, parseSinks, secretFileSpec, type Sink, type SinkSettings, sinksFor } from '../../secret/deliver.js';
import { openEscrowed, readFailure, readIdentities, type EscrowMeta } from '../../secret/escrow.js';
import { exit13Details, supersedingChange } from '../../secret/custody.js';
import { fingerprint } from '../../secret/facts.js';

export interface RecoverOptions {
  identity?: string;
  /** The fleet's journal: each recovered secret's item is recorded done there. */
  journal?: string;
  secretTo?: string[];
  secretFile?: string;
  force?: boolean;
}

/** One escrowed file, opened. */
interface Opened {
  file: string;
  meta: EscrowMeta;
  secret: string;
}

interface Recovered {
  file: string;
  endpointId: string;
  scope: string;
  version: number | null;
  fingerprint: string;
  delivery: { to: string; fingerprint: string }[];
}

/** Records recovered items done in a fleet's journal (rotate-from/journal.ts settleRecovered, handed in by the verb: this folder does not import the fleet's). */
export type SettleInJournal = (path: string, recovered: RecoveredItem[], ctx: Factory['ctx']) => Promise<void>;

/** What a journal needs of a recovered secret. */
export type RecoveredItem = Pick<Recovered, 'endpointId' | 'scope' | 'fingerprint' | 'delivery'>;

export async function runRecover(files: string[], opts: RecoverOptions, f: Factory, settleInJournal?: SettleInJournal): Promise<void> {
  const { ctx } = f;
  const json = f.state().output.json;
  if (files.length === 0) throw usageError('give the escrowed file(s) to recover: webhooks recover FILE.age… --identity KEYFILE --secret-to DESTINATION');
  if (opts.identity === undefined || opts.identity === '') throw usageError('--identity KEYFILE is required: the age identity file whose recipient the secrets were escrowed to');
  const specs = [...(opts.secretFile !== undefined ? [secretFileSpec(opts.secretFile)] : []), ...(opts.secretTo ?? [])];
  if (specs.length === 0)
    throw usageError(
      '--secret-to is required: where each recovered secret goes',
      'the destinations of the run that escrowed it, e.g. --secret-to "exec:./store-secret.sh" or --secret-to file:secrets/{id}.whsec --force',
    );
  const settings: SinkSettings = { cwd: ctx.cwd, env: ctx.env, json, stdoutIsTTY: ctx.io.stdout.isTTY, stdoutDiscards: ctx.io.stdout.discards, force: Boolean(opts.force), idPlaceholder: true };
  const sinks = parseSinks(specs, settings);
  if (files.length > 1) {
    const shared = sinks.find((s) => (s.kind === 'file' || s.kind === 'env-file' || s.kind === 'github') && !hasIdPlaceholder(s));
    if (shared)
      throw usageError(
        `--secret-to ${shared.to} would receive ${files.length} secrets`,
        'put {id} in its path or name, which stands for each endpoint id (file:secrets/{id}.whsec), or recover one file at a time',
      );
  }
  const identities = readIdentities(resolve(ctx.cwd, opts.identity), opts.identity);
  // Every file opened before anything is delivered.
  const opened: Opened[] = [];
  for (const file of files) opened.push(await openOne(file, resolve(ctx.cwd, file), identities));
  for (const o of opened) ctx.io.scrubber.addSecret(o.secret);
  // The {id} destinations of each, checked before any is written.
  const perFile = opened.map((o) => sinksFor(sinks, o.meta.endpointId, settings));

  const results: Recovered[] = [];
  let failed: CliError | undefined;
  for (const [i, o] of opened.entries()) {
    try {
      results.push(await deliverOne(o, perFile[i]!, opts, f));
    } catch (err) {
      if (!isCliError(err)) throw err;
      failed ??= err;
      // Each failure said as it comes; the exit code is the first's.
      if (opened.length > 1) reportError(err, ctx.io, json, false);
    }
  }
  if (opts.journal !== undefined && results.length > 0 && settleInJournal) await settleInJournal(resolve(ctx.cwd, opts.journal), results, ctx);
  if (json) writeJson(ctx.io, { recovered: results });
  else
    for (const r of results)
      ctx.io.stdout.write(
        `Recovered the signing secret ${r.fingerprint} of endpoint ${escapeInline(r.endpointId)}${r.version !== null ? ` (version ${r.version})` : ''} from ${escapeInline(r.file)} to ${r.delivery.map((d) => escapeInline(d.to)).join(', ')}.\n`,
      );
  if (failed) throw opened.length > 1 ? new CliError(failed.code, failed.message, failed.exitCode, { reported: true }) : failed;
}

/** The sidecar read and the .age file opened: exit 2 when either cannot be (nothing is delivered then). */
async function openOne(given: string, path: string, identities: readonly string[]): Promise<Opened> {
  let sealed: Buffer;
  try {
    sealed = readFileSync(path);
  } catch (err) {
    throw usageError(`${given}: cannot read it (${readFailure(err)})`);
  }
  const metaPath = path.replace(/\.age$/, '') + '.json';
  let meta: EscrowMeta;
  try {
    meta = JSON.parse(readFileSync(metaPath, 'utf8')) as EscrowMeta;
  } catch (err) {
    throw usageError(
      `${given}: its description ${metaPath} cannot be read (${readFailure(err)})`,
      'the escrow folder holds each .age file with a .json of the same name (endpoint, scope, version): copy both',
    );
  }
  if (
    meta?.escrow !== 1 ||
    typeof meta.endpointId !== 'string' ||
    typeof meta.scope !== 'string' ||
    (meta.version !== null && typeof meta.version !== 'number') ||
    typeof meta.fingerprint !== 'string'
  )
    throw usageError(`${given}: ${metaPath} is not an escrow description chatctl wrote`);
  let secret: string;
  try {
    secret = await openEscrowed(sealed, identities);
  } catch (err) {
    throw usageError(
      `${given}: cannot be opened with the identity given (${err instanceof Error ? err.message : String(err)})`,
      'give the identity file of one of the --escrow recipients of the run that wrote it',
    );
  }
  if (fingerprint(secret) !== meta.fingerprint)
    throw usageError(`${given}: the secret inside has the fingerprint ${fingerprint(secret)}, not the ${meta.fingerprint} its description names`, 'the .age file and its .json do not belong together');
  return { file: given, meta, secret };
}

async function deliverOne(o: Opened, sinks: Sink[], opts: RecoverOptions, f: Factory): Promise<Recovered> {
  const { ctx } = f;
  const { meta } = o;
  const id = escapeInline(meta.endpointId);
  const newer = supersedingChange(ctx.configDir, meta.scope, meta);
  if (newer) {
    throw localError(
      'secret_not_delivered',
      `${o.file}: the secret ${meta.fingerprint} of endpoint ${id}${meta.version !== null ? ` (version ${meta.version})` : ''} is superseded by the rotation to version ${newer.version} at ${newer.at}; it was not delivered, and the destinations were left as they are`,
      {
        details: exit13Details(
          { endpointId: meta.endpointId, version: newer.version, fingerprint: meta.fingerprint, recoveredPath: null },
          { escrowPath: o.file, supersededBy: { version: newer.version, at: newer.at } },
        ),
        hint: `the destinations should hold what the rotation to version ${newer.version} put there; ${o.file} can be deleted`,
      },
    );
  }
  const outcome = await deliverAll(
    sinks,
    { endpointId: meta.endpointId, secret: o.secret },
    {
      cwd: ctx.cwd,
      env: ctx.env,
      stdout: ctx.io.stdout,
      stderr: ctx.io.stderr,
      scrubber: ctx.io.scrubber,
      signal: ctx.signal,
      captureExecOutput: f.state().output.json,
    },
  );
  if (outcome.failures.length > 0) {
    const why = outcome.failures.map((x) => `${x.to}: ${x.reason}`).join('; ');
    const got = outcome.delivered.length > 0 ? ` (it did reach ${outcome.delivered.map((d) => d.to).join(', ')})` : '';
    throw localError('secret_not_delivered', `${o.file}: the signing secret ${meta.fingerprint} of endpoint ${id} was not delivered to ${why}${got}; it is still in ${o.file}`, {
      details: exit13Details(
        { endpointId: meta.endpointId, version: meta.version, fingerprint: meta.fingerprint, recoveredPath: null },
        { escrowPath: o.file, delivered: outcome.delivered, failed: outcome.failures },
      ),
      hint: `fix the destination, then run the same command again: chatctl webhooks recover ${shellQuote(o.file)} --identity ${shellQuote(opts.identity ?? 'KEYFILE')} …`,
    });
  }
  return { file: o.file, endpointId: meta.endpointId, scope: meta.scope, version: meta.version, fingerprint: meta.fingerprint, delivery: outcome.delivered };
}
