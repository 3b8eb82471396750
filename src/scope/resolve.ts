// Each value from the first of flag, environment,
// selected profile, default. Pure: the caller hands in flags, env and the
// config it read, so every precedence rule is a table test.
import { KEYRING_STORAGE, type ConfigData, type Profile } from '../config/schema.js';
import type { Scope } from '../api/spec.js';
import { configError, usageError } from '../errors/cli-error.js';
import { unknownProfileError } from '../errors/hints.js';

export interface GlobalFlags {
  profile?: string | undefined;
  baseUrl?: string | undefined;
  org?: string | undefined;
  app?: string | undefined;
  env?: string | undefined;
  maxRetries?: string | undefined;
  timeout?: string | undefined;
  deadline?: string | undefined;
  noInput?: boolean | undefined;
}

/** Why this profile is the one in effect: --profile, CHATCTL_PROFILE, `profile use`, or the fallback. */
export type ProfileSource = 'flag' | 'env' | 'current' | 'default';

export interface SelectedProfile {
  name: string;
  /** Named by --profile or CHATCTL_PROFILE (so it must exist), not a fallback. */
  explicit: boolean;
  source: ProfileSource;
  profile: Profile | undefined;
  /** The names of the stored profiles, for a suggestion when the one asked for is not among them. */
  stored?: readonly string[];
}

export interface Connection {
  baseUrl: string; // no trailing slash
  origin: string;
  csrfToken: string;
  scope: Scope;
}

export const DEFAULT_PROFILE = 'default';
export const DEFAULT_MAX_RETRIES = 4;
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const DEFAULT_DEADLINE_SECONDS = 300;
export const MAX_DEADLINE_SECONDS = 86_400;

export function isTruthyEnv(value: string | undefined): boolean {
  return value !== undefined && !['', '0', 'false', 'no', 'off'].includes(value.trim().toLowerCase());
}

const nonEmpty = (v: string | undefined) => (v === undefined || v === '' ? undefined : v);

export function selectProfile(flags: GlobalFlags, env: NodeJS.ProcessEnv, config: ConfigData): SelectedProfile {
  const fromFlag = nonEmpty(flags.profile);
  const fromEnv = nonEmpty(env.CHATCTL_PROFILE);
  const current = nonEmpty(config.currentProfile);
  const [name, source]: [string, ProfileSource] =
    fromFlag !== undefined ? [fromFlag, 'flag'] : fromEnv !== undefined ? [fromEnv, 'env'] : current !== undefined ? [current, 'current'] : [DEFAULT_PROFILE, 'default'];
  // Profile names are plain keys: "constructor" or "__proto__" are absent unless stored.
  const profiles = config.profiles;
  const profile = profiles !== undefined && Object.hasOwn(profiles, name) ? profiles[name] : undefined;
  return { name, explicit: source === 'flag' || source === 'env', source, profile, stored: Object.keys(profiles ?? {}) };
}

/** The profile must exist when it was asked for by name. */
export function requireSelected(sel: SelectedProfile): void {
  if (sel.explicit && !sel.profile) {
    throw unknownProfileError(sel.name, sel.stored ?? [], sel.source);
  }
}

export function resolveConnection(flags: GlobalFlags, env: NodeJS.ProcessEnv, sel: SelectedProfile): Connection {
  requireSelected(sel);
  const p = sel.profile ?? {};
  const rawBase = nonEmpty(flags.baseUrl) ?? nonEmpty(env.CHATCTL_BASE_URL) ?? nonEmpty(p.baseUrl);
  if (!rawBase) {
    throw configError('no base URL', 'pass --base-url, set CHATCTL_BASE_URL, or store one with: chatctl profile set NAME --base-url URL');
  }
  const base = checkBaseUrl(rawBase, configError);
  const missing: string[] = [];
  const pick = (flag: string | undefined, envName: string, stored: string | undefined, label: string) => {
    const v = nonEmpty(flag) ?? nonEmpty(env[envName]) ?? nonEmpty(stored);
    if (v === undefined) missing.push(label);
    return v ?? '';
  };
  const scope: Scope = {
    organizationId: pick(flags.org, 'CHATCTL_ORG', p.organizationId, '--org (CHATCTL_ORG)'),
    applicationId: pick(flags.app, 'CHATCTL_APP', p.applicationId, '--app (CHATCTL_APP)'),
    environmentKey: pick(flags.env, 'CHATCTL_ENV', p.environmentKey, '--env (CHATCTL_ENV)'),
  };
  if (missing.length) {
    throw configError(`missing scope: ${missing.join(', ')}`, 'pass the flags, set the variables, or store them in a profile with: chatctl profile set');
  }
  for (const [label, v] of Object.entries(scope)) {
    if (v === '.' || v === '..') throw configError(`${label} cannot be "${v}"`);
  }
  const origin = nonEmpty(env.CHATCTL_ORIGIN) ?? nonEmpty(p.origin) ?? base.origin;
  const csrfToken = nonEmpty(env.CHATCTL_CSRF_TOKEN) ?? nonEmpty(p.csrfToken) ?? '1';
  checkHeaderValue(origin, 'Origin');
  checkHeaderValue(csrfToken, 'x-service-csrf value');
  return { baseUrl: base.href, origin, csrfToken, scope };
}

/**
 * Where a token comes from: `CHATCTL_TOKEN`, the profile's token command
 * (credential helper), its entry in the system keyring, or its file token
 * (config.json). Credentials are never described by their value.
 */
export type TokenSource = 'env' | 'command' | 'keyring' | 'file';

/** Where a profile keeps its token, in the order they are tried: its token command, its keyring entry, its file token. */
export function storedTokenSource(p: Profile | undefined): Exclude<TokenSource, 'env'> | undefined {
  if (nonEmpty(p?.tokenCommand) !== undefined) return 'command';
  if (p?.tokenStorage === KEYRING_STORAGE) return 'keyring';
  if (nonEmpty(p?.token) !== undefined) return 'file';
  return undefined;
}

/** The source of the token in effect: CHATCTL_TOKEN first, then the profile's. Reads no token. */
export function tokenSourceOf(env: NodeJS.ProcessEnv, p: Profile | undefined): TokenSource | undefined {
  return nonEmpty(env.CHATCTL_TOKEN) !== undefined ? 'env' : storedTokenSource(p);
}

/**
 * The token in effect when it is at hand without running anything: from
 * CHATCTL_TOKEN or the file token. Undefined when there is none, or when it
 * is behind a token command or in the keyring (credentials/token.ts gets it).
 */
export function resolveToken(env: NodeJS.ProcessEnv, sel: SelectedProfile): { token: string; source: 'env' | 'file' } | undefined {
  const source = tokenSourceOf(env, sel.profile);
  if (source === 'env') return { token: env.CHATCTL_TOKEN!.trim(), source };
  if (source === 'file') return { token: sel.profile!.token!, source };
  return undefined;
}

export function noTokenError(profile: string): Error {
  return configError(`no token for profile "${profile}"`, `run: chatctl auth login --profile ${profile}, or set CHATCTL_TOKEN`);
}

/** Where a value came from (docs/configuration.md). */
export type ValueSource = 'flag' | 'env' | 'profile' | 'default' | 'none';

export interface SourcedValue {
  value: string | null;
  source: ValueSource;
}

/** Everything `auth status` and `doctor` say about the scope in effect; no credential's value. */
export interface ScopeDescription {
  profile: { name: string; source: ProfileSource; exists: boolean };
  baseUrl: SourcedValue;
  organizationId: SourcedValue;
  applicationId: SourcedValue;
  environmentKey: SourcedValue;
  origin: SourcedValue;
  /** A credential: where it comes from, never its value. */
  csrfToken: { source: ValueSource };
  /** Where the bearer token comes from (never its value), and whether the profile stores one (keyring or file). */
  token: { source: TokenSource | 'none'; stored: boolean };
}

/** The flag and variable behind each described value, for messages. */
export const SCOPE_INPUTS = {
  baseUrl: { flag: '--base-url', env: 'CHATCTL_BASE_URL' },
  organizationId: { flag: '--org', env: 'CHATCTL_ORG' },
  applicationId: { flag: '--app', env: 'CHATCTL_APP' },
  environmentKey: { flag: '--env', env: 'CHATCTL_ENV' },
  origin: { flag: undefined, env: 'CHATCTL_ORIGIN' },
  csrfToken: { flag: undefined, env: 'CHATCTL_CSRF_TOKEN' },
  token: { flag: undefined, env: 'CHATCTL_TOKEN' },
} as const;

/**
 * Each scope value and where it comes from: flag, environment, the selected
 * profile, a default, or nowhere. Pure, and never throws: a value that
 * resolveConnection would refuse is still described (as given).
 */
export function describeScope(flags: GlobalFlags, env: NodeJS.ProcessEnv, config: ConfigData): ScopeDescription {
  const sel = selectProfile(flags, env, config);
  const p: Profile = sel.profile ?? {};
  const pick = (flag: string | undefined, envName: string, stored: string | undefined): SourcedValue => {
    const f = nonEmpty(flag);
    if (f !== undefined) return { value: f, source: 'flag' };
    const e = nonEmpty(env[envName]);
    if (e !== undefined) return { value: e, source: 'env' };
    const s = nonEmpty(stored);
    if (s !== undefined) return { value: s, source: 'profile' };
    return { value: null, source: 'none' };
  };
  const baseUrl = pick(flags.baseUrl, 'CHATCTL_BASE_URL', p.baseUrl);
  let origin = pick(undefined, 'CHATCTL_ORIGIN', p.origin);
  if (origin.source === 'none' && baseUrl.value !== null) {
    const url = URL.canParse(baseUrl.value) ? new URL(baseUrl.value) : undefined;
    if (url && (url.protocol === 'https:' || url.protocol === 'http:')) origin = { value: url.origin, source: 'default' };
  }
  const csrf = pick(undefined, 'CHATCTL_CSRF_TOKEN', p.csrfToken).source;
  const token = tokenSourceOf(env, sel.profile);
  return {
    profile: { name: sel.name, source: sel.source, exists: sel.profile !== undefined },
    baseUrl,
    organizationId: pick(flags.org, 'CHATCTL_ORG', p.organizationId),
    applicationId: pick(flags.app, 'CHATCTL_APP', p.applicationId),
    environmentKey: pick(flags.env, 'CHATCTL_ENV', p.environmentKey),
    origin,
    csrfToken: { source: csrf === 'none' ? 'default' : csrf },
    token: { source: token ?? 'none', stored: p.tokenStorage === KEYRING_STORAGE || nonEmpty(p.token) !== undefined },
  };
}

export interface RequestSettings {
  maxRetries: number;
  timeoutMs: number;
  /** --deadline / CHATCTL_DEADLINE: the whole command, retries and waits included. */
  deadlineMs: number;
}

export function resolveRequestSettings(flags: GlobalFlags, env: NodeJS.ProcessEnv): RequestSettings {
  const maxRetries = pickNumber(flags.maxRetries, '--max-retries', env.CHATCTL_MAX_RETRIES, 'CHATCTL_MAX_RETRIES', DEFAULT_MAX_RETRIES, parseRetries);
  const timeout = pickNumber(flags.timeout, '--timeout', env.CHATCTL_TIMEOUT, 'CHATCTL_TIMEOUT', DEFAULT_TIMEOUT_SECONDS, parseTimeout);
  const deadline = pickNumber(flags.deadline, '--deadline', env.CHATCTL_DEADLINE, 'CHATCTL_DEADLINE', DEFAULT_DEADLINE_SECONDS, parseDeadline);
  return { maxRetries, timeoutMs: Math.round(timeout * 1000), deadlineMs: Math.round(deadline * 1000) };
}

function pickNumber(flag: string | undefined, flagName: string, envValue: string | undefined, envName: string, fallback: number, parse: (s: string) => number | undefined): number {
  if (flag !== undefined) {
    const n = parse(flag);
    if (n === undefined) throw usageError(`invalid ${flagName} "${flag}"`, hintFor(flagName));
    return n;
  }
  if (nonEmpty(envValue) !== undefined) {
    const n = parse(envValue!);
    if (n === undefined) throw configError(`invalid ${envName} "${envValue}"`, hintFor(flagName));
    return n;
  }
  return fallback;
}

const hintFor = (flag: string) =>
  flag === '--timeout'
    ? 'a number of seconds greater than 0, at most 3600'
    : flag === '--deadline'
      ? `a number of seconds greater than 0, at most ${MAX_DEADLINE_SECONDS}`
      : 'a whole number from 0 to 100';

export function parseRetries(s: string): number | undefined {
  if (!/^\d{1,3}$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n <= 100 ? n : undefined;
}

export function parseTimeout(s: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n > 0 && n <= 3600 ? n : undefined;
}

export function parseDeadline(s: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n > 0 && n <= MAX_DEADLINE_SECONDS ? n : undefined;
}

export function noInput(flags: GlobalFlags, env: NodeJS.ProcessEnv): boolean {
  return Boolean(flags.noInput) || isTruthyEnv(env.CHATCTL_NO_INPUT) || isTruthyEnv(env.CI);
}

const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/**
 * Loopback as docs/configuration.md defines it, exactly: localhost, 127.0.0.0/8, [::1]. Narrower
 * on purpose than the sandbox's isLoopbackHost (src/sandbox/ip.ts), which as
 * a server also accepts mapped and trailing-dot forms.
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h === '[::1]' || LOOPBACK_V4.test(h);
}

/**
 * A base URL is an absolute http(s) URL with no credentials, query or
 * fragment; `http:` only for loopback, so a token never travels in clear text.
 */
export function checkBaseUrl(raw: string, fail: (message: string, hint?: string) => Error): { href: string; origin: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail(`base URL "${raw}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw fail(`base URL "${raw}" must use https`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw fail(`refusing http: base URL "${raw}": the token would travel in clear text`, 'use https, or http only with localhost, 127.0.0.0/8 or [::1]');
  }
  if (url.username || url.password) throw fail('base URL must not contain credentials');
  if (url.search || url.hash) throw fail('base URL must not have a query or fragment');
  const href = url.origin + url.pathname.replace(/\/+$/, '');
  return { href, origin: url.origin };
}

/** Whether a value can travel in an HTTP header: no control characters, nothing beyond Latin-1. */
export function isHeaderSafe(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u001f\u007f]/.test(value) && !/[^\u0000-\u00ff]/.test(value);
}

export function checkHeaderValue(value: string, label: string): void {
  if (!isHeaderSafe(value)) throw configError(`the ${label} contains characters that cannot be sent in an HTTP header`);
}
