// chatctl webhooks recover FILE… --identity KEYFILE --secret-to SINK… (docs/secrets.md,
// "Escrow"). Every file is opened before anything is delivered: a wrong identity or
// a missing sidecar is exit 2 with nothing written.
import type { Command } from 'commander';
import { collect, examples, SECRET_TO_HELP, type Factory } from '../app.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError, isCliError, localError, usageError } from '../../errors/cli-error.js';
import { reportError } from '../../errors/explain.js';
import { escapeInline, shellQuote } from '../../output/json.js';
import { writeJson } from '../../output/io.js';
import { fingerprint } from '../../secret/facts.js';
import type { EscrowMeta } from '../../secret/escrow.js';
import type { Sink, SinkSettings } from '../../secret/deliver.js';

export function registerRecover(parent: Command, f: Factory): void {
  parent
    .command('recover')
    .description('deliver secrets that a run escrowed (--escrow-dir) after a failed destination, on any machine; never one superseded by a later rotation seen here')
    .argument('<file...>', 'escrowed secrets: <endpoint>-v<version>.age, each with its .json beside it')
    .option('--identity <file>', 'the age identity file (age-keygen) of one of the --escrow recipients')
    .option('--secret-to <sink>', SECRET_TO_HELP, collect)
    .option('--secret-file <path>', 'the same as --secret-to file:PATH')
    .option('--force', 'replace an existing regular file (file: destinations)')
    .option('--journal <file>', "the fleet's journal: record each recovered item done there")
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks recover escrow/we_123-v4.age --identity ~/.config/age/ops.key --secret-to "exec:./store-secret.sh"',
        'chatctl webhooks recover escrow/*.age --identity ops.key --secret-to file:secrets/{id}.whsec --force --json',
        'chatctl webhooks recover escrow/*.age --identity ops.key --secret-to "exec:./store-secret.sh" --journal rotation.journal',
      ) +
        `
No request is sent and no token is needed. A file that a later rotation of its
endpoint, noted in this config folder, has superseded is not delivered (exit
13). \`age -d -i KEYFILE FILE\` prints the same secret. See docs/secrets.md.
`,
    )
    .action((files: string[], opts) => runRecover(files, opts, f));
}

/** What recover loads when it runs: age (its own bundle), the destinations, custody's facts. */
const load = async () => {
  const [escrow, deliver, custody] = await Promise.all([import('../../secret/escrow.js'), import('../../secret/deliver.js'), import('../../secret/custody.js')]);
  return { ...escrow, ...deliver, ...custody };
};
type Loaded = Awaited<ReturnType<typeof load>>;

/** `journal`: the fleet's, where each recovered secret's item is recorded done. */
export type RecoverOptions = { identity?: string; journal?: string; secretTo?: string[]; secretFile?: string; force?: boolean };

type Opened = { file: string; meta: EscrowMeta; secret: string };

type Recovered = { file: string; endpointId: string; scope: string; version: number | null; fingerprint: string; delivery: { to: string; fingerprint: string }[] };

export async function runRecover(files: string[], opts: RecoverOptions, f: Factory): Promise<void> {
  const { ctx } = f;
  const json = f.state().output.json;
  if (files.length === 0) throw usageError('give the escrowed file(s) to recover: webhooks recover FILE.age… --identity KEYFILE --secret-to DESTINATION');
  if (opts.identity === undefined || opts.identity === '') throw usageError('--identity KEYFILE is required: the age identity file whose recipient the secrets were escrowed to');
  const m = await load();
  const specs = [...(opts.secretFile !== undefined ? [m.secretFileSpec(opts.secretFile)] : []), ...(opts.secretTo ?? [])];
  if (specs.length === 0)
    throw usageError(
      '--secret-to is required: where each recovered secret goes',
      'the destinations of the run that escrowed it, e.g. --secret-to "exec:./store-secret.sh" or --secret-to file:secrets/{id}.whsec --force',
    );
  const settings: SinkSettings = { cwd: ctx.cwd, env: ctx.env, json, stdoutIsTTY: ctx.io.stdout.isTTY, stdoutDiscards: ctx.io.stdout.discards, force: Boolean(opts.force), idPlaceholder: true };
  const sinks = m.parseSinks(specs, settings);
  if (files.length > 1) {
    const shared = sinks.find((s) => (s.kind === 'file' || s.kind === 'env-file' || s.kind === 'github') && !m.hasIdPlaceholder(s));
    if (shared)
      throw usageError(
        `--secret-to ${shared.to} would receive ${files.length} secrets`,
        'put {id} in its path or name, which stands for each endpoint id (file:secrets/{id}.whsec), or recover one file at a time',
      );
  }
  const identities = m.readIdentities(resolve(ctx.cwd, opts.identity), opts.identity);
  // Every file opened before anything is delivered.
  const opened: Opened[] = [];
  for (const file of files) opened.push(await openOne(m, file, resolve(ctx.cwd, file), identities));
  for (const o of opened) ctx.io.scrubber.addSecret(o.secret);
  // The {id} destinations of each, checked before any is written.
  const perFile = opened.map((o) => m.sinksFor(sinks, o.meta.endpointId, settings));

  const results: Recovered[] = [];
  let failed: CliError | undefined;
  for (const [i, o] of opened.entries()) {
    try {
      results.push(await deliverOne(m, o, perFile[i]!, opts, f));
    } catch (err) {
      if (!isCliError(err)) throw err;
      failed ??= err;
      // Each failure said as it comes; the exit code is the first's.
      if (opened.length > 1) reportError(err, ctx.io, json, false);
    }
  }
  if (opts.journal !== undefined && results.length > 0) await (await import('./rotate-from/journal.js')).settleRecovered(resolve(ctx.cwd, opts.journal), results, ctx);
  if (json) writeJson(ctx.io, { recovered: results });
  else
    for (const r of results)
      ctx.io.stdout.write(
        `Recovered the signing secret ${r.fingerprint} of endpoint ${escapeInline(r.endpointId)}${r.version !== null ? ` (version ${r.version})` : ''} from ${escapeInline(r.file)} to ${r.delivery.map((d) => escapeInline(d.to)).join(', ')}.\n`,
      );
  if (failed) throw opened.length > 1 ? new CliError(failed.code, failed.message, failed.exitCode, { reported: true }) : failed;
}

/** The sidecar read and the .age file opened: exit 2 when either cannot be (nothing is delivered then). */
async function openOne(m: Loaded, given: string, path: string, identities: readonly string[]): Promise<Opened> {
  let sealed: Buffer;
  try {
    sealed = readFileSync(path);
  } catch (err) {
    throw usageError(`${given}: cannot read it (${m.readFailure(err)})`);
  }
  const metaPath = path.replace(/\.age$/, '') + '.json';
  let meta: EscrowMeta;
  try {
    meta = JSON.parse(readFileSync(metaPath, 'utf8')) as EscrowMeta;
  } catch (err) {
    throw usageError(
      `${given}: its description ${metaPath} cannot be read (${m.readFailure(err)})`,
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
    secret = await m.openEscrowed(sealed, identities);
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

async function deliverOne(m: Loaded, o: Opened, sinks: Sink[], opts: RecoverOptions, f: Factory): Promise<Recovered> {
  const { ctx } = f;
  const { meta } = o;
  const id = escapeInline(meta.endpointId);
  const newer = m.supersedingChange(ctx.configDir, meta.scope, meta);
  if (newer)
    throw localError(
      'secret_not_delivered',
      `${o.file}: the secret ${meta.fingerprint} of endpoint ${id}${meta.version !== null ? ` (version ${meta.version})` : ''} is superseded by the rotation to version ${newer.version} at ${newer.at}; it was not delivered, and the destinations were left as they are`,
      {
        details: m.exit13Details(
          { endpointId: meta.endpointId, version: newer.version, fingerprint: meta.fingerprint, recoveredPath: null },
          { escrowPath: o.file, supersededBy: { version: newer.version, at: newer.at } },
        ),
        hint: `the destinations should hold what the rotation to version ${newer.version} put there; ${o.file} can be deleted`,
      },
    );
  const outcome = await m.deliverAll(
    sinks,
    { endpointId: meta.endpointId, secret: o.secret },
    { cwd: ctx.cwd, env: ctx.env, stdout: ctx.io.stdout, stderr: ctx.io.stderr, scrubber: ctx.io.scrubber, signal: ctx.signal, captureExecOutput: f.state().output.json },
  );
  if (outcome.failures.length > 0) {
    const why = outcome.failures.map((x) => `${x.to}: ${x.reason}`).join('; ');
    const got = outcome.delivered.length > 0 ? ` (it did reach ${outcome.delivered.map((d) => d.to).join(', ')})` : '';
    throw localError('secret_not_delivered', `${o.file}: the signing secret ${meta.fingerprint} of endpoint ${id} was not delivered to ${why}${got}; it is still in ${o.file}`, {
      details: m.exit13Details(
        { endpointId: meta.endpointId, version: meta.version, fingerprint: meta.fingerprint, recoveredPath: null },
        { escrowPath: o.file, delivered: outcome.delivered, failed: outcome.failures },
      ),
      hint: `fix the destination, then run the same command again: chatctl webhooks recover ${shellQuote(o.file)} --identity ${shellQuote(opts.identity ?? 'KEYFILE')} …`,
    });
  }
  return { file: o.file, endpointId: meta.endpointId, scope: meta.scope, version: meta.version, fingerprint: meta.fingerprint, delivery: outcome.delivered };
}
