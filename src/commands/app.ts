// The factory: the one way a command reaches what it needs, each part made
// when first asked for (help and completion never read the config or build a client).
import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { Prompter } from '../prompts/prompter.js';
import type { RunState } from '../run/state.js';
import type { HttpDeps } from '../http/client.js';
import type { WebhooksClient } from '../http/api-client.js';
import type { CustodyRun, GivenDestinations } from '../secret/custody.js';
import type { EscrowFlags } from '../secret/escrow.js';
import { usageError } from '../errors/cli-error.js';
import { didYouMean } from '../errors/explain.js';
import { escapeInline } from '../output/json.js';

export interface Factory {
  /** The world of the run: environment, streams, folders, clock, random source, transport. */
  readonly ctx: Context;
  /** The run's settings, worked out once from the flags, the environment and the config: output mode, dry run, profile, scope, token, retry settings. */
  state(): RunState;
  /** A prompter when prompts are allowed (both stdin and stdout terminals, no --no-input/CI), else undefined. */
  prompter(): Promise<Prompter | undefined>;
  /** The management API's client for this run: scope, token, retries, transport (or the dry run's). */
  client(extras?: ClientExtras): Promise<RunClient>;
}

export type Register = (parent: Command, f: Factory) => void;

/** What a command changes in the client it gets (`rotate --from`: its pool, its signals, its words). */
export interface ClientExtras {
  /** What requests in flight listen to instead of Ctrl-C. */
  requestSignal?: AbortSignal | undefined;
  agent?: import('node:http').Agent | undefined;
  /** false: retry waits are not announced one by one (a progress line shows them). */
  announce?: boolean | undefined;
  rerun?: ((idempotencyKey: string) => string) | undefined;
  /** What a signal during the wait for a sent request's answer does. */
  waiting?: HttpDeps['waiting'];
}

/** The client a command gets from its factory, with when its --deadline ends and the settings it sends with. */
export type RunClient = WebhooksClient & { deadlineAt: number; config: import('../http/api-client.js').ClientConfig };

export function userAgent(ctx: Pick<Context, 'version'>): string {
  return `chatctl/${ctx.version} node/${process.versions.node}`;
}

/** The factory of a run over its state and prompter: the one place its API client is built. */
export function factoryOf(ctx: Context, state: () => RunState, prompter: () => Promise<Prompter | undefined>): Factory {
  return {
    ctx,
    state,
    prompter,
    async client(extras = {}) {
      const [{ createWebhooksClient, dryRunTransport }, { deadlineFrom }] = await Promise.all([import('../http/api-client.js'), import('../http/client.js')]);
      const s = state();
      // --deadline counts from here: the request, its retries and their waits.
      const startedAt = ctx.now();
      const conn = s.connection();
      // A dry run shows the request with the token redacted, so it needs none.
      const token = s.dryRun ? (s.presetToken() ?? '') : await s.requireToken();
      ctx.io.scrubber.addToken(token);
      ctx.io.scrubber.addCredential(conn.csrfToken);
      const transport = s.dryRun ? dryRunTransport(ctx.io, s.output.json) : await ctx.transport();
      const { maxRetries, timeoutMs, deadlineMs } = s.settings();
      const { now, sleep, randomUUID, random, signal } = ctx;
      const { requestSignal, agent, waiting, rerun } = extras;
      const trace = s.output.debug ? (line: string) => ctx.io.stderr.write(`[debug] ${escapeInline(line)}\n`) : undefined;
      // Each wait, on a terminal or not (CI logs); io.notice is muted by --json and --quiet.
      const announce = extras.announce === false ? undefined : (line: string) => ctx.io.notice(escapeInline(line));
      const settings = { maxRetries, timeoutMs, deadline: deadlineFrom(startedAt, deadlineMs) };
      const config = { ...conn, token, userAgent: userAgent(ctx), settings, rerun, deps: { now, sleep, randomUUID, random, signal, transport, requestSignal, agent, waiting, trace, announce } };
      return Object.assign(createWebhooksClient(config), { deadlineAt: settings.deadline.at, config });
    },
  };
}

/** A notice during the wait for a sent request's answer; on a terminal whatever the mode (who pressed Ctrl-C reads it there). */
export function sayWaiting(f: Pick<Factory, 'ctx' | 'state'>, text: string): void {
  if (!f.state().output.quiet) f.ctx.io.notice(text);
  else if (f.ctx.io.stderr.isTTY) f.ctx.io.stderr.write(`chatctl: ${text}\n`);
}

export const examples = (...lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** commander's argParser for repeatable options. */
export const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** A value from a fixed list, else a usage error suggesting the nearest (commander's `.choices()` check suggests none). */
export const oneOf = (label: string, choices: readonly string[]) => (value: string) => {
  if (choices.includes(value)) return value;
  const list = `${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}`;
  throw usageError(`invalid ${label} "${value}": must be ${list}`, didYouMean(value, choices));
};

// Help text and options that several webhooks verbs share.
export const SECRET_TO_HELP = 'where the secret goes (repeatable, all must succeed): file:PATH, env-file:PATH#NAME, exec:CMD, stdout, github-output:NAME, github-env:NAME';

export const SECRET_TO_MORE = `
Without --secret-to the secret is in the JSON with --json (--query needs
--secret-to: it prints no secret), or shown once when stdout is a terminal
and CI is not set; otherwise the command refuses before sending (exit 2).
If a destination fails after the change was applied, the secret is kept
under <config folder>/recovered/ and the exit code is 13.
`;

export const SIGNING_MORE = `
The scheme is an assumption (the API does not say how deliveries are signed):
Standard Webhooks, HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"
keyed with the base64 part of the whsec_ secret. See docs/signing.md.
`;

/** custody's escrow hook for these flags, checked (exit 2 on a bad recipient); undefined when none was given. age loads only then. */
export async function escrowOf(flags: EscrowFlags, ctx: { cwd: string; now: () => number }, given?: GivenDestinations): Promise<CustodyRun['escrow']> {
  if (!((flags.escrow?.length ?? 0) > 0 || flags.escrowFile !== undefined || flags.escrowDir !== undefined)) return undefined;
  const [{ parseEscrow, escrowHook }, { destinationFlags }] = await Promise.all([import('../secret/escrow.js'), import('../secret/custody.js')]);
  const opts = parseEscrow(flags, ctx.cwd);
  // The recover command in the hint delivers where this job would have.
  return opts ? escrowHook(opts, ctx.now, given ? (id) => destinationFlags(given, id) : undefined) : undefined;
}

/** --escrow, --escrow-file, --escrow-dir of create and rotate (docs/secrets.md, "Escrow"). */
export function addEscrowOptions(cmd: Command): Command {
  return cmd
    .option('--escrow <age1…>', 'also encrypt a kept secret to this age recipient', collect)
    .option('--escrow-file <file>', 'age recipients, one a line, as --escrow')
    .option('--escrow-dir <dir>', 'where --escrow writes (docs/secrets.md)');
}
