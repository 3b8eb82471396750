// The token a command sends: CHATCTL_TOKEN, else the profile's token command, keyring entry or file
// token. The helper and the keyring load only for the runs that use them.
import type { Context, Env } from '../context.js';
import { configError } from '../errors/cli-error.js';
import { escapeInline } from '../output/json.js';
import { isHeaderSafe } from '../http/wire-checks.js';
import { checkTokenSize, resolveToken, sourceWords, tokenSourceOf, unreachableKeyringHint, type TokenSource } from './source.js';
import type { SelectedProfile } from '../config/profile.js';

export interface ObtainedToken {
  token: string;
  source: TokenSource;
  /** The profile it belongs to (for messages; CHATCTL_TOKEN belongs to none). */
  profile: string;
}

type ObtainDeps = Pick<Context, 'env' | 'signal' | 'credentialLimits'>;

/** One keyring call with the run's environment, signal and limit; keyring.ts loads only for the runs that make one. */
export async function callKeyring(deps: ObtainDeps, op: 'get' | 'set' | 'delete', account: string, password?: string) {
  const { keyringCall } = await import('./keyring.js');
  return keyringCall(op, account, { env: deps.env, signal: deps.signal, limitMs: deps.credentialLimits?.keyringMs }, password);
}

/** The token in effect, or undefined when there is none. A helper or keyring that fails, or a token over 64 KiB, is exit 3. */
export async function obtainToken(sel: SelectedProfile, deps: ObtainDeps): Promise<ObtainedToken | undefined> {
  const got = await fromSource(sel, deps);
  if (got) checkBound(got.token, got.source, got.profile);
  return got;
}

/** The token at hand without running a helper or asking the keyring, for --dry-run; bounded as obtainToken's. */
export function presetToken(env: Env, sel: SelectedProfile): string | undefined {
  const t = resolveToken(env, sel);
  if (t) checkBound(t.token, t.source, sel.name);
  return t?.token;
}

function checkBound(token: string, source: TokenSource, profile: string): void {
  let next = `store the token again: chatctl auth login --profile ${profile}`;
  if (source === 'env') next = 'set CHATCTL_TOKEN to the token alone';
  if (source === 'command') next = 'run the token command yourself to see what it prints';
  checkTokenSize(token, `the token from ${sourceWords(source, profile)}`, configError, next);
}

async function fromSource(sel: SelectedProfile, deps: ObtainDeps): Promise<ObtainedToken | undefined> {
  const profile = sel.name;
  const preset = resolveToken(deps.env, sel); // CHATCTL_TOKEN or the file token
  if (preset) return { ...preset, profile };
  const source = tokenSourceOf(deps.env, sel.profile);
  if (source === 'command') {
    const { runTokenCommand } = await import('./helper.js');
    return { token: await runTokenCommand(profile, sel.profile!.tokenCommand!, { env: deps.env, signal: deps.signal, limitMs: deps.credentialLimits?.helperMs }), source, profile };
  }
  if (source !== 'keyring') return undefined;
  const r = await callKeyring(deps, 'get', profile);
  const shown = escapeInline(profile);
  const next = `run: chatctl auth login --profile ${profile} (or set CHATCTL_TOKEN)`;
  if (!r.ok) throw configError(`cannot read the token of profile "${shown}" from the system keyring: ${escapeInline(r.reason)}`, unreachableKeyringHint(profile));
  if (r.value === null || r.value === '') throw configError(`profile "${shown}" keeps its token in the system keyring, but there is no entry (service chatctl, account "${shown}")`, next);
  if (/\s/.test(r.value) || !isHeaderSafe(r.value)) throw configError(`the keyring entry of profile "${shown}" is not a token (whitespace or characters that cannot be sent in an HTTP header)`, next);
  return { token: r.value, source, profile };
}
