// The run-state: what this run's global options, environment and config
// amount to, worked out once and read by every command. Commands never read
// the raw flags; the config is read at most once, and only when needed.
import type { Context, Env } from '../context.js';
import type { ConfigData } from '../config/schema.js';
import type { OutputMode } from '../output/io.js';
import type { JsonQuery } from '../output/json.js';
import { configStoreFor } from '../config/store.js';
import { checkHeaderValue } from '../http/wire-checks.js';
import { isCi, noInput } from '../input/values.js';
import { noTokenError, storedTokenSource, type TokenOrigin } from '../credentials/source.js';
import { describeScope, resolveConnection, type Connection, type ScopeDescription, type ScopeFlags } from '../scope/resolve.js';
import { resolveRequestSettings, type RequestFlags, type RequestSettings } from '../http/settings.js';
import { selectProfile, type ProfileFlags, type SelectedProfile } from '../config/profile.js';
import { obtainToken, presetToken, type ObtainedToken } from '../credentials/token.js';

/** The options every API command takes (docs/configuration.md), as commander parses them: read by src/app/ alone. */
export interface GlobalOptions {
  profile?: string;
  baseUrl?: string;
  org?: string;
  app?: string;
  env?: string;
  json?: boolean;
  /** --query EXPR: compiled by the preAction hook (src/run/query.ts) before resolveRunState. */
  query?: string;
  input?: boolean; // commander's --no-input
  dryRun?: boolean;
  debug?: boolean;
  maxRetries?: string;
  timeout?: string;
  deadline?: string;
  color?: boolean; // commander's --no-color
  quiet?: boolean;
}

/** The global options as the modules that read them take them: strings as given, --no-input as a switch. */
type GlobalFlags = ProfileFlags & ScopeFlags & RequestFlags & { noInput?: boolean | undefined };

/** The profile and scope options as given, before the environment and the profile fill them in: a re-run repeats --profile, `profile set` stores the rest. */
export type GivenScope = Readonly<Pick<GlobalOptions, 'profile' | 'baseUrl' | 'org' | 'app' | 'env'>>;

export interface RunState {
  readonly given: GivenScope;
  readonly output: OutputMode & { noColor: boolean };
  readonly dryRun: boolean;
  /** CI is set: no prompts, and the one-time secret is never printed on a terminal. */
  readonly ci: boolean;
  /** Prompts are allowed: stdin and stdout are terminals and nothing forbids them. */
  readonly interactive: boolean;
  config(): ConfigData;
  profile(): SelectedProfile;
  connection(): Connection;
  /** The token at hand without running a helper or asking the keyring (CHATCTL_TOKEN, the file token), for --dry-run. */
  presetToken(): string | undefined;
  /** The token in effect, from the first of CHATCTL_TOKEN, token command, keyring, file; obtained at most once per run. */
  token(): Promise<ObtainedToken | undefined>;
  /** The token, or a configuration error (exit 3) naming the profile. */
  requireToken(): Promise<string>;
  /** Where the token obtained so far came from (none obtained: undefined), for the exit-4 message. */
  tokenOrigin(): TokenOrigin | undefined;
  settings(): RequestSettings;
  /** Every value of the scope with where it came from (flag, environment, profile, default). */
  describe(): ScopeDescription;
  /** The same options and environment over another config: the one read under the config lock, or the one doctor read. */
  withConfig(config: ConfigData): RunState;
}

const once = <T>(fn: () => T): (() => T) => {
  let made: { value: T } | undefined;
  return () => (made ??= { value: fn() }).value;
};

function globalFlags({ profile, baseUrl, org, app, env, maxRetries, timeout, deadline, input }: GlobalOptions): GlobalFlags {
  return { profile, baseUrl, org, app, env, maxRetries, timeout, deadline, noInput: input === false };
}

/** The output mode the flags ask for; --query implies --json (an invalid expression is still reported as JSON). */
export function outputMode(g: GlobalOptions, query?: JsonQuery): OutputMode & { noColor: boolean } {
  const json = Boolean(g.json) || g.query !== undefined;
  return { json, quiet: Boolean(g.quiet) || json, debug: Boolean(g.debug), noColor: g.color === false, ...(query ? { query } : {}) };
}

/** The run-state of these options; `query` is --query's expression, compiled (src/run/query.ts). */
export function resolveRunState(g: GlobalOptions, ctx: Context, query?: JsonQuery): RunState {
  const config = once(() => configStoreFor(ctx).read());
  return runState(g, ctx, config, query);
}

function runState(g: GlobalOptions, ctx: Context, config: () => ConfigData, query?: JsonQuery): RunState {
  const flags = globalFlags(g);
  const env: Env = ctx.env;
  const profile = once(() => selectProfile(flags, env, config()));
  let obtained: ObtainedToken | undefined;
  const token = once(async () => {
    obtained = await obtainToken(profile(), ctx);
    return obtained;
  });
  return {
    given: { profile: g.profile, baseUrl: g.baseUrl, org: g.org, app: g.app, env: g.env },
    output: outputMode(g, query),
    dryRun: Boolean(g.dryRun),
    ci: isCi(env),
    // stdout first: a run whose output is not a terminal never builds stdin.
    interactive: Boolean(ctx.io.stdout.isTTY && ctx.io.stdin.isTTY) && !noInput(flags, env),
    config,
    profile,
    connection: once(() => resolveConnection(flags, env, profile())),
    presetToken: () => presetToken(env, profile()),
    token,
    requireToken: once(async () => {
      const t = await token();
      if (!t) throw noTokenError(profile().name);
      checkHeaderValue(t.token, 'token');
      return t.token;
    }),
    tokenOrigin: () => {
      if (!obtained) return undefined;
      const p = profile().profile;
      return {
        source: obtained.source,
        profile: obtained.profile,
        shadowed: obtained.source === 'env' ? storedTokenSource(p) : undefined,
        command: obtained.source === 'command' ? p?.tokenCommand : undefined,
      };
    },
    settings: once(() => resolveRequestSettings(flags, env)),
    describe: once(() => describeScope(flags, env, config())),
    withConfig: (data) => runState(g, ctx, () => data, query),
  };
}

/** Where a run keeps its state once commander has parsed the flags (src/app/cli.ts's preAction hook sets it). */
export type RunStateSlot = { state?: RunState | undefined };

/** The run-state, which commander's preAction hook has set before any action runs. */
export function stateOf(slot: RunStateSlot): RunState {
  if (!slot.state) throw new Error('no run-state: a command ran before its flags were parsed');
  return slot.state;
}
