// chatctl auth status: which profile, scope and token a command would use,
// with where each comes from; the token is read (keyring, file, token
// command, environment) as a command would read it, never shown, and a
// token that cannot be read ends the command with the error every other
// command would end with (docs/credentials.md).
import type { Factory } from '../app.js';
import type { RunState } from '../../run/state.js';
import { isCliError, type CliError } from '../../errors/cli-error.js';
import { EXIT } from '../../errors/exit-codes.js';
import { unknownProfileError } from '../../errors/hints.js';
import { noTokenError, storedTokenSource } from '../../credentials/source.js';
import { SCOPE_INPUTS, type ScopeDescription, type SourcedValue, type ValueSource } from '../../scope/resolve.js';
import type { ConfigData } from '../../config/schema.js';
import { escapeInline } from '../../output/sanitize.js';
import { writeJson } from '../../output/io.js';
import { profileReason } from './words.js';

/** Whether the token in effect could be read, and why not: null when there is none to read. */
export interface TokenRead {
  readable: boolean | null;
  error: CliError | undefined;
}

const SOURCE_WORDS: Record<ValueSource, string> = {
  flag: 'flag',
  env: 'environment',
  profile: 'profile',
  default: 'default',
  none: 'not set',
};

function sourceText(key: keyof typeof SCOPE_INPUTS, source: ValueSource, profile: string): string {
  const inputs = SCOPE_INPUTS[key];
  if (source === 'flag' && inputs.flag) return `from ${inputs.flag}`;
  if (source === 'env') return `from ${inputs.env}`;
  if (source === 'profile') return `from profile "${profile}"`;
  return SOURCE_WORDS[source];
}

/** Each stored profile's own token source (its token command, keyring entry or file token); none: null. */
export function profileTokenSources(data: ConfigData): { name: string; tokenSource: 'command' | 'keyring' | 'file' | null }[] {
  return Object.entries(data.profiles ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => ({ name, tokenSource: storedTokenSource(p) ?? null }));
}

/**
 * `auth status --json`: the fields of chatctl 0.1 (profile, profileExists,
 * baseUrl, tokenStored, tokenSource), each value with its source, and each
 * profile's token source. `tokenSource` is where the token in effect comes
 * from: "env", "command", "keyring", "file", or null. `tokenReadable` says
 * whether it could be read just now (null: there is none), and
 * `token.error` why not.
 */
export function statusDocument(d: ScopeDescription, data: ConfigData, read: TokenRead = { readable: null, error: undefined }) {
  return {
    profile: d.profile.name,
    profileSource: d.profile.source,
    profileExists: d.profile.exists,
    baseUrl: d.baseUrl.value,
    tokenStored: d.token.stored,
    tokenSource: d.token.source === 'none' ? null : d.token.source,
    tokenReadable: read.readable,
    scope: {
      baseUrl: d.baseUrl,
      organizationId: d.organizationId,
      applicationId: d.applicationId,
      environmentKey: d.environmentKey,
      origin: d.origin,
      csrfToken: d.csrfToken,
    },
    token: { ...d.token, readable: read.readable, error: read.error ? { code: read.error.code, message: read.error.message, exitCode: read.error.exitCode } : null },
    profiles: profileTokenSources(data),
  };
}

/** Reads the token as a command would (the keyring asked, the token command run), keeping its failure to report. */
async function readToken(state: RunState, d: ScopeDescription): Promise<TokenRead> {
  if (d.token.source === 'none') return { readable: null, error: undefined };
  try {
    await state.requireToken();
    return { readable: true, error: undefined };
  } catch (err) {
    if (isCliError(err) && (err.exitCode === EXIT.config || err.exitCode === EXIT.auth)) return { readable: false, error: err };
    throw err;
  }
}

const TOKEN_LINE = {
  env: () => 'from CHATCTL_TOKEN (environment)',
  command: (p: string) => `from the token command of profile "${p}"`,
  keyring: (p: string) => `in the system keyring, profile "${p}"`,
  file: (p: string) => `in config.json (file), profile "${p}"`,
  none: () => 'none',
};

/** What the two header values are, said on their lines (the API requires both on every request: docs/configuration.md). */
const ORIGIN_WORDS = 'sent as the Origin header, which the API requires on every request';
const CSRF_WORDS = 'sent as the x-service-csrf header, the anti-forgery check the API requires on every request';

const PROFILE_SOURCE_WORDS = { command: 'token command', keyring: 'system keyring', file: 'config.json (file)' } as const;

function statusText(state: RunState, d: ScopeDescription, data: ConfigData, read: TokenRead): string {
  const name = d.profile.name;
  const line = (label: string, key: keyof typeof SCOPE_INPUTS, v: SourcedValue) => `${label.padEnd(14)}${v.value === null ? '-' : escapeInline(v.value)} (${sourceText(key, v.source, name)})`;
  const profileLine = `${escapeInline(name)} (${profileReason(d.profile.source)})${d.profile.exists ? '' : ' - not created yet'}`;
  const shadowed = d.token.source === 'env' ? storedTokenSource(state.profile().profile) : undefined;
  const readWords = read.readable === true ? '; read just now' : read.readable === false ? '; cannot be read (see the error below)' : '';
  const tokenLine = TOKEN_LINE[d.token.source](escapeInline(name)) + (shadowed ? `; it overrides the profile's ${PROFILE_SOURCE_WORDS[shadowed]}` : '') + readWords;
  const others = profileTokenSources(data).map((p) => `  ${escapeInline(p.name)}: ${p.tokenSource ? PROFILE_SOURCE_WORDS[p.tokenSource] : 'no token'}`);
  return [
    `${'profile:'.padEnd(14)}${profileLine}`,
    line('base URL:', 'baseUrl', d.baseUrl),
    line('org:', 'organizationId', d.organizationId),
    line('app:', 'applicationId', d.applicationId),
    line('env:', 'environmentKey', d.environmentKey),
    `${line('origin:', 'origin', d.origin)}: ${ORIGIN_WORDS}`,
    `${'csrf value:'.padEnd(14)}${d.csrfToken.source === 'default' ? '1 (default)' : `set (${sourceText('csrfToken', d.csrfToken.source, name)})`}: ${CSRF_WORDS}`,
    `${'token:'.padEnd(14)}${tokenLine}`,
    ...(others.length ? ['', 'tokens by profile:', ...others] : []),
    '',
  ].join('\n');
}

export async function runAuthStatus(f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const d = state.describe();
  const data = state.config();
  const unknown = (d.profile.source === 'flag' || d.profile.source === 'env') && !d.profile.exists;
  const read = unknown ? { readable: null, error: undefined } : await readToken(state, d);
  if (state.output.json) writeJson(ctx.io, statusDocument(d, data, read), 'one-line');
  else ctx.io.stdout.write(statusText(state, d, data, read));
  if (unknown) throw unknownProfileError(d.profile.name, Object.keys(data.profiles ?? {}), d.profile.source);
  if (d.token.source === 'none') throw noTokenError(d.profile.name);
  if (read.error) throw read.error;
}
