// chatctl doctor: checks, in order, what a command needs (config, profile
// and scope, token, base URL and the network to it, the clock, Node.js),
// one line each with the fix. Read-only: it changes no file, and it never
// sends the token: the round trip is a GET of the base URL without it.
// Everything outside comes in: env, clock and config folder from ctx, DNS,
// TCP and TLS from `probes`, HTTP from ctx.transport().
//
// Each check asks the code a real run uses, so doctor cannot disagree with
// it: the config folder and file through config/files.ts's checks (told to
// report, not tighten, loose permissions), the profile and scope through
// config/profile.ts and scope/, the settings through http/settings.ts, and
// the proxy through the transport's proxyFor().
import { userAgent, type Factory } from '../app.js';
import { lstatSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { Context } from '../../context.js';
import { CliError, configError, localError } from '../../errors/cli-error.js';
import { unknownProfileError } from '../../errors/hints.js';
import { nearest } from '../../errors/suggest.js';
import { EXIT, type ExitCode } from '../../errors/exit-codes.js';
import { checkConfigFolder, currentUid, parseConfigBytes, readConfigBytes } from '../../config/files.js';
import { configFile } from '../../config/paths.js';
import type { ConfigData } from '../../config/schema.js';
import type { RunState } from '../../run/state.js';
import { checkBaseUrl, isHeaderSafe } from '../../http/wire-checks.js';
import { SCOPE_INPUTS, type ScopeDescription } from '../../scope/describe.js';
import type { ProfileSource, SelectedProfile } from '../../config/profile.js';
import { helperLabel, storedTokenSource, tokenSourceOf, unreachableKeyringHint } from '../../credentials/source.js';
import { proxyFor, type ProxyChoice } from '../../http/select-transport.js';
import { isTransportError, MAX_BODY_BYTES, type WireResponse } from '../../http/transport.js';
import { headerValue } from '../../http/classify.js';
import { escapeInline, shellWord } from '../../output/sanitize.js';
import { writeJson } from '../../output/io.js';
import type { Probes, TlsFacts } from './probes.js';

export type CheckStatus = 'ok' | 'warning' | 'failure';
/** What a failure means for the exit status: 3, 4 or 12. */
export type FailureKind = 'config' | 'auth' | 'network';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string | undefined;
  kind?: FailureKind | undefined;
}

export interface DoctorDeps {
  probes: Probes;
  /** The effective uid the config checks compare owners with (undefined where there are none: Windows). */
  uid: number | undefined;
  /** process.versions.node */
  nodeVersion: string;
}

const MIN_NODE: readonly [number, number] = [20, 19];
/** Each DNS, TCP or TLS probe; the round trip uses --timeout. */
const PROBE_TIMEOUT_MS = 5_000;
const SKEW_WARN_S = 60;
const CERT_WARN_DAYS = 14;

const ok = (name: string, detail: string): Check => ({ name, status: 'ok', detail });
const warning = (name: string, detail: string, fix?: string): Check => ({ name, status: 'warning', detail, fix });
const failure = (name: string, kind: FailureKind, detail: string, fix?: string): Check => ({ name, status: 'failure', detail, fix, kind });
const skipped = (name: string, why: string): Check => warning(name, `not checked: ${why}`);

const EXIT_FOR_KIND: Record<FailureKind, ExitCode> = { config: EXIT.config, auth: EXIT.auth, network: EXIT.unavailable };

/** 0 when nothing failed, else the exit status of the first failure's kind. */
export function doctorExitCode(checks: readonly Check[]): ExitCode {
  const first = checks.find((c) => c.status === 'failure');
  return first ? EXIT_FOR_KIND[first.kind ?? 'config'] : EXIT.ok;
}

// ---------------------------------------------------------------- files
//
// The checks every command's read makes (config/files.ts), their message and
// fix as they are; only a mode that group or others can read is reported,
// not tightened (doctor changes no file).

const modeOf = (path: string, stat: (p: string) => { mode: number }) => (stat(path).mode & 0o777).toString(8).padStart(3, '0');

/** A configuration error of the real checks as a failed check; anything else is not doctor's to catch. */
function refused(name: string, err: unknown): Check {
  if (err instanceof CliError) return failure(name, 'config', err.message, err.hint);
  throw err;
}

interface ConfigResult {
  folder: Check;
  file: Check;
  /** The config as a command would read it; undefined when a command would refuse it. */
  config: ConfigData | undefined;
}

function checkConfig(dir: string, uid: number | undefined): ConfigResult {
  const path = configFile(dir);
  let warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  let exists: boolean;
  try {
    exists = checkConfigFolder(dir, warn, uid, 'report');
  } catch (err) {
    return { folder: refused('config folder', err), file: skipped('config file', 'the config folder cannot be used'), config: undefined };
  }
  const none = ok('config file', `${path}: none yet (profile set and auth login write it, mode 600)`);
  if (!exists) return { folder: ok('config folder', `${dir}: not created yet (profile set and auth login create it, mode 700)`), file: none, config: {} };
  const folder = warnings.length > 0 ? warning('config folder', warnings.join('; '), `chmod 700 ${shellWord(dir)}`) : ok('config folder', `${dir} (mode ${modeOf(dir, statSync)}, yours)`);
  warnings = [];
  let config: ConfigData;
  try {
    const bytes = readConfigBytes(path, warn, uid, 'report');
    if (bytes === undefined) return { folder, file: none, config: {} };
    config = parseConfigBytes(path, bytes);
  } catch (err) {
    return { folder, file: refused('config file', err), config: undefined };
  }
  const count = Object.keys(config.profiles ?? {}).length;
  const summary = `${path} (mode ${modeOf(path, lstatSync)}, yours; ${count} profile${count === 1 ? '' : 's'})`;
  const file = warnings.length > 0 ? warning('config file', `${summary}: it may hold tokens; ${warnings.join('; ')}`, `chmod 600 ${shellWord(path)}`) : ok('config file', summary);
  return { folder, file, config };
}

// ---------------------------------------------------------------- scope
//
// Where each value comes from: describeScope (scope/describe.ts), the same
// rules every command resolves its scope by.

type ScopeKey = 'baseUrl' | 'organizationId' | 'applicationId' | 'environmentKey';
type Source = { value: string; from: string } | undefined;

function sourcesOf(d: ScopeDescription): Record<ScopeKey, Source> {
  const one = (key: ScopeKey): Source => {
    const v = d[key];
    if (v.value === null || v.source === 'none' || v.source === 'default') return undefined;
    const from = v.source === 'flag' ? SCOPE_INPUTS[key].flag : v.source === 'env' ? SCOPE_INPUTS[key].env : `profile "${d.profile.name}"`;
    return { value: v.value, from };
  };
  return { baseUrl: one('baseUrl'), organizationId: one('organizationId'), applicationId: one('applicationId'), environmentKey: one('environmentKey') };
}

/** Why this profile: selectProfile()'s answer, in words. */
const PROFILE_WHY: Record<ProfileSource, string> = {
  flag: 'named by --profile',
  env: 'named by CHATCTL_PROFILE',
  current: 'the current profile: the first one set, or chosen with profile use',
  default: 'the default: no --profile, CHATCTL_PROFILE or current profile',
};

/**
 * Every value is there: the scope as a command resolves it
 * (resolveConnection), which also refuses "." and "..", and an Origin or
 * CSRF value a header cannot carry. A named profile that does not exist and
 * a base URL that is refused have checks of their own.
 */
function scopeCheck(state: RunState, selected: SelectedProfile, baseUrl: string, described: string): Check {
  try {
    state.connection();
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    let baseRefused = false;
    try {
      checkBaseUrl(baseUrl, configError);
    } catch {
      baseRefused = true;
    }
    if (!(selected.explicit && !selected.profile) && !baseRefused) return refused('scope', err);
  }
  return ok('scope', described);
}

// ---------------------------------------------------------------- network

/** What proxyFor() answered, in words. */
function describeProxy(choice: ProxyChoice, url: URL): string {
  if (choice.proxy) {
    const shown = new URL(choice.proxy.href);
    shown.username = '';
    shown.password = '';
    return `${shown.origin} (from ${choice.variable})`;
  }
  if (choice.why === 'loopback') return 'none: loopback is never proxied';
  if (choice.why === 'no_proxy') return `none: ${choice.variable} entry "${choice.entry}" matches ${url.hostname}`;
  return `none: a direct connection (no ${url.protocol === 'https:' ? 'https_proxy, HTTPS_PROXY, http_proxy or HTTP_PROXY' : 'http_proxy or HTTP_PROXY'})`;
}

const portOf = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80));
const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

function describeSkew(seconds: number): string {
  const abs = Math.abs(seconds);
  const size = abs < 120 ? `${abs} s` : abs < 7200 ? `${Math.round(abs / 60)} min` : `${Math.round(abs / 3600)} h`;
  return seconds > 0 ? `${size} behind the server's` : `${size} ahead of the server's`;
}

// ---------------------------------------------------------------- the checks

export async function doctorChecks(run: RunState, ctx: Context, deps: DoctorDeps): Promise<Check[]> {
  const env = ctx.env;

  // 1. config folder and file
  const file = checkConfig(ctx.configDir, deps.uid);
  // The run's options over the config as read here: a bad file is reported, not refused.
  const state = run.withConfig(file.config ?? {});

  // 2. profile and scope
  const selected = state.profile();
  const sources = sourcesOf(state.describe());
  // A typo of a stored profile (`--profile stagin`): the scope and token
  // checks would offer to store values in the misspelt one.
  const near = selected.explicit && !selected.profile ? nearest(selected.name, Object.keys(file.config?.profiles ?? {})) : undefined;
  const typo = near === undefined ? undefined : `profile "${selected.name}" does not exist (did you mean ${near}?)`;
  const checks: Check[] = [file.folder, file.file, profileCheck(selected, file.config), typo ? skipped('scope', typo) : scopeValuesCheck(state, selected, sources)];

  // 3. token: where it comes from, never its value
  // (Synchronous unless the keyring is asked: nothing else waits before the network probes.)
  if (typo) checks.push(skipped('token', typo));
  else checks.push(tokenSourceOf(env, selected.profile) === 'keyring' ? await keyringTokenCheck(selected, ctx) : tokenCheck(selected, ctx));
  const settings = settingsCheck(state);
  checks.push(settings.check);

  // 4. base URL: the https rule, the proxy in use, DNS, TCP, TLS
  const base = baseUrlCheck(sources.baseUrl);
  checks.push(base.check, ...(await networkChecks(base.url, ctx, deps, settings.timeoutMs)));

  // 5. Node.js
  checks.push(nodeCheck(deps.nodeVersion));
  return checks;
}

function profileCheck(selected: SelectedProfile, config: ConfigData | undefined): Check {
  const why = PROFILE_WHY[selected.source];
  const names = Object.keys(config?.profiles ?? {});
  if (!config) return skipped('profile', `"${selected.name}" (${why}); the config file cannot be used`);
  if (selected.profile) return ok('profile', `"${selected.name}" (${why})`);
  if (selected.explicit) {
    // The stored name nearest to a typo, in the words every command uses; else how to create it.
    const create = `create it with: chatctl profile set ${selected.name} --base-url URL --org ID --app ID --env KEY`;
    return failure(
      'profile',
      'config',
      `"${selected.name}" (${why}) does not exist${names.length ? `; profiles: ${names.join(', ')}` : ''}`,
      unknownProfileError(selected.name, names, selected.source, create).hint,
    );
  }
  if (names.length) return warning('profile', `"${selected.name}" (${why}) does not exist; profiles: ${names.join(', ')}`, `choose one with: chatctl profile use ${names[0]}`);
  return ok('profile', `none stored; values come from flags and the environment`);
}

const SCOPE_LABELS: Record<ScopeKey, string> = { baseUrl: 'base URL', organizationId: 'org', applicationId: 'app', environmentKey: 'env' };
const SCOPE_FLAGS: Record<ScopeKey, string> = {
  baseUrl: '--base-url (CHATCTL_BASE_URL)',
  organizationId: '--org (CHATCTL_ORG)',
  applicationId: '--app (CHATCTL_APP)',
  environmentKey: '--env (CHATCTL_ENV)',
};

/** Each value of the scope with where it comes from; a failure naming the flags of the missing ones. */
function scopeValuesCheck(state: RunState, selected: SelectedProfile, sources: Record<ScopeKey, Source>): Check {
  const keys = Object.keys(SCOPE_LABELS) as ScopeKey[];
  const described = keys.map((k) => (sources[k] ? `${SCOPE_LABELS[k]} ${escapeInline(sources[k]!.value)} (${sources[k]!.from})` : `${SCOPE_LABELS[k]} missing`)).join(', ');
  const missing = keys.filter((k) => !sources[k]);
  if (!missing.length) return scopeCheck(state, selected, sources.baseUrl!.value, described);
  const pass = missing.map((k) => SCOPE_FLAGS[k]).join(', ');
  const store = missing.map((k) => `${SCOPE_FLAGS[k].split(' ')[0]} …`).join(' ');
  return failure('scope', 'config', described, `pass ${pass}, or store them with: chatctl profile set ${selected.name} ${store}`);
}

/** The request settings, and the limit the round trip waits for (30 s when the settings are refused). */
function settingsCheck(state: RunState): { check: Check; timeoutMs: number } {
  try {
    const settings = state.settings();
    return { check: ok('settings', `timeout ${settings.timeoutMs / 1000} s, retries ${settings.maxRetries}`), timeoutMs: settings.timeoutMs };
  } catch (err) {
    return { check: failure('settings', 'config', (err as Error).message, (err as CliError).hint), timeoutMs: 30_000 };
  }
}

/** The base URL by the https rule, and the URL the network checks probe (none when it is missing or refused). */
function baseUrlCheck(source: Source): { check: Check; url?: URL } {
  if (!source) return { check: failure('base URL', 'config', 'missing', 'pass --base-url, set CHATCTL_BASE_URL, or store one with: chatctl profile set NAME --base-url URL') };
  try {
    const base = checkBaseUrl(source.value, (message, hint) => Object.assign(new Error(message), { hint }));
    const url = new URL(base.href);
    return { check: ok('base URL', `${base.href} (${url.protocol === 'https:' ? 'https' : 'http on loopback, allowed'})`), url };
  } catch (err) {
    return { check: failure('base URL', 'config', (err as Error).message, (err as { hint?: string }).hint ?? `fix ${source.from}`) };
  }
}

function nodeCheck(version: string): Check {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const recent = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return recent ? ok('Node.js', `v${version} (20.19 or newer needed)`) : failure('Node.js', 'config', `v${version} is older than 20.19`, 'install Node.js 20.19 or newer');
}

/**
 * Where the token comes from. A token from the environment or the file is
 * checked for what an HTTP header can carry; a keyring entry is looked up
 * (within the keyring's limit) but not shown; a token command is named and
 * not run (it may ask for a fingerprint or a password).
 */
const badHeader = (t: string) => t === '' || !isHeaderSafe(t);

function tokenCheck(selected: SelectedProfile, ctx: Context): Check {
  const name = selected.name;
  const login = `chatctl auth login --profile ${name}`;
  const stored = storedTokenSource(selected.profile);
  switch (tokenSourceOf(ctx.env, selected.profile)) {
    case undefined:
      return failure('token', 'config', `none for profile "${name}" (no CHATCTL_TOKEN, none stored)`, `chatctl auth login --with-token --profile ${name} < token.txt, or set CHATCTL_TOKEN`);
    case 'env': {
      if (badHeader(ctx.env.CHATCTL_TOKEN!.trim())) return failure('token', 'auth', 'CHATCTL_TOKEN contains characters that cannot be sent in an HTTP header', 'set CHATCTL_TOKEN to the token alone');
      const shadowed = stored ? `; it overrides ${stored === 'command' ? 'the token command of' : stored === 'keyring' ? 'the keyring entry of' : 'the token stored in'} profile "${name}"` : '';
      return ok('token', `from CHATCTL_TOKEN (environment)${shadowed}; doctor does not send it`);
    }
    case 'file':
      if (badHeader(selected.profile!.token!))
        return failure('token', 'auth', `the token stored in profile "${name}" contains characters that cannot be sent in an HTTP header`, `store it again: ${login}`);
      return ok('token', `stored in profile "${name}" (config file); doctor does not send it`);
    case 'command':
      return ok('token', `from the token command of profile "${name}" (${helperLabel(selected.profile!.tokenCommand!)}); doctor does not run it`);
    case 'keyring':
      throw new Error('keyringTokenCheck looks up a keyring entry');
  }
}

async function keyringTokenCheck(selected: SelectedProfile, ctx: Context): Promise<Check> {
  const name = selected.name;
  const login = `chatctl auth login --profile ${name}`;
  const { keyringCall } = await import('../../credentials/keyring.js');
  const r = await keyringCall('get', name, { env: ctx.env, signal: ctx.signal, limitMs: ctx.credentialLimits?.keyringMs }).catch(() => {
    throw localError('interrupted', 'interrupted');
  });
  if (!r.ok) return failure('token', 'config', `profile "${name}" keeps its token in the system keyring, which did not answer (${r.reason})`, unreachableKeyringHint(name));
  if (r.value === null || r.value === '') return failure('token', 'config', `profile "${name}" keeps its token in the system keyring, but there is no entry (service chatctl, account ${name})`, login);
  if (badHeader(r.value)) return failure('token', 'auth', `the keyring entry of profile "${name}" contains characters that cannot be sent in an HTTP header`, `store it again: ${login}`);
  return ok('token', `stored in the system keyring (service chatctl, account ${name}) for profile "${name}"; doctor does not send it`);
}

/** Ctrl-C during a probe ends doctor with 130, not with a network failure. */
function rethrowIfInterrupted(ctx: Context): void {
  if (ctx.signal.aborted) throw localError('interrupted', 'interrupted');
}

/** The network checks in order; when one fails, the ones after it are "not checked". */
const NETWORK_CHECKS = ['proxy', 'DNS', 'TCP', 'TLS', 'round trip', 'clock'];

/** What one step of the network checks found, and, when it failed, why the rest cannot run. */
interface Step {
  checks: Check[];
  stop?: string | undefined;
}

const passed = (...checks: Check[]): Step => ({ checks });
const stopped = (check: Check, why: string): Step => ({ checks: [check], stop: why });

/** Where a request to the base URL connects: the proxy the transport chose for it, or the server itself. */
interface Route {
  url: URL;
  choice: ProxyChoice;
  host: string;
  port: number;
  /** "the proxy " before a detail about the proxy, else nothing. */
  via: string;
}

async function networkChecks(url: URL | undefined, ctx: Context, deps: DoctorDeps, timeoutMs: number): Promise<Check[]> {
  if (!url) return NETWORK_CHECKS.map((n) => skipped(n, 'no usable base URL'));
  const out: Check[] = [];
  const went = ({ checks, stop }: Step): boolean => {
    out.push(...checks);
    if (stop !== undefined) for (const n of NETWORK_CHECKS.slice(out.length)) out.push(skipped(n, stop));
    return stop === undefined;
  };
  const proxy = proxyStep(url, ctx);
  if (!went(proxy) || !proxy.route) return out;
  const route = proxy.route;
  // Each step runs only when the one before it passed.
  const steps = [() => dnsStep(route, ctx, deps), () => tcpStep(route, ctx, deps), () => tlsStep(route, ctx, deps), () => roundTripStep(url, ctx, timeoutMs)];
  for (const step of steps) {
    rethrowIfInterrupted(ctx);
    if (!went(await step())) break;
  }
  return out;
}

/** The transport's own answer for this URL: the proxy a request goes through, or none. */
function proxyStep(url: URL, ctx: Context): Step & { route?: Route } {
  let choice: ProxyChoice;
  try {
    choice = proxyFor(url, ctx.env);
  } catch (err) {
    return stopped(refused('proxy', err), 'the proxy variable is not usable');
  }
  // DNS and TCP go to the proxy when there is one: that is where chatctl connects.
  const target = choice.proxy ?? url;
  return { checks: [ok('proxy', describeProxy(choice, url))], route: { url, choice, host: bareHost(target), port: portOf(target), via: choice.proxy ? 'the proxy ' : '' } };
}

async function dnsStep(r: Route, ctx: Context, deps: DoctorDeps): Promise<Step> {
  if (isIP(r.host)) return passed(ok('DNS', `${r.via}${r.host} is an address: nothing to look up`));
  try {
    const addresses = await deps.probes.lookup(r.host, PROBE_TIMEOUT_MS, ctx.signal);
    return passed(ok('DNS', `${r.via}${r.host} → ${addresses.slice(0, 4).join(', ')}${addresses.length > 4 ? ', …' : ''}`));
  } catch (err) {
    rethrowIfInterrupted(ctx);
    const fix = r.choice.proxy ? 'check the proxy variable' : 'check the host name in the base URL, and your network or DNS settings';
    return stopped(failure('DNS', 'network', `${r.via}${(err as Error).message}`, fix), 'the host name does not resolve');
  }
}

async function tcpStep(r: Route, ctx: Context, deps: DoctorDeps): Promise<Step> {
  try {
    await deps.probes.connect(r.host, r.port, PROBE_TIMEOUT_MS, ctx.signal);
    return passed(ok('TCP', `${r.via}${r.host}:${r.port} accepts connections`));
  } catch (err) {
    rethrowIfInterrupted(ctx);
    const fix = r.choice.proxy ? 'is the proxy running, and the variable right?' : 'is the server running, and the port in the base URL right? A firewall?';
    return stopped(failure('TCP', 'network', `${r.via}${(err as Error).message}`, fix), 'no TCP connection');
  }
}

async function tlsStep(r: Route, ctx: Context, deps: DoctorDeps): Promise<Step> {
  if (r.url.protocol !== 'https:') return passed(ok('TLS', 'not used: http on loopback'));
  if (r.choice.proxy) return passed(ok('TLS', 'through the proxy: the round trip below checks it'));
  try {
    return passed(certificateCheck(await deps.probes.tls(bareHost(r.url), portOf(r.url), PROBE_TIMEOUT_MS, ctx.signal), ctx.now()));
  } catch (err) {
    rethrowIfInterrupted(ctx);
    const e = err as Error & { code?: string };
    const privateCa = /CERT|SELF_SIGNED|UNABLE_TO/.test(e.code ?? '');
    const fix = privateCa ? 'a private certificate authority? point NODE_EXTRA_CA_CERTS at its PEM file' : 'check that the base URL points at an https server';
    return stopped(failure('TLS', 'network', e.message, fix), 'no TLS connection');
  }
}

function certificateCheck(facts: TlsFacts, now: number): Check {
  const until = Date.parse(facts.validTo);
  const days = Number.isFinite(until) ? Math.floor((until - now) / 86_400_000) : undefined;
  const detail = `${facts.protocol}, certificate valid${Number.isFinite(until) ? ` until ${new Date(until).toISOString().slice(0, 10)}` : ''}`;
  if (days === undefined || days >= CERT_WARN_DAYS) return ok('TLS', detail);
  return warning('TLS', `${detail}: it expires in ${Math.max(days, 0)} day${days === 1 ? '' : 's'}`, "tell the server's operators");
}

/**
 * The round trip: a GET of the base URL without the token. Any HTTP
 * answer shows the path works; its Date header gives the clock skew.
 */
async function roundTripStep(url: URL, ctx: Context, timeoutMs: number): Promise<Step> {
  const transport = await ctx.transport();
  const started = ctx.now();
  let res: WireResponse;
  try {
    res = await transport(
      { method: 'GET', url: url.href, headers: { Accept: 'application/json', 'User-Agent': userAgent(ctx) }, body: '' },
      { timeoutMs, maxBodyBytes: MAX_BODY_BYTES, signal: ctx.signal },
    );
  } catch (err) {
    rethrowIfInterrupted(ctx);
    if (isTransportError(err) && err.failure === 'aborted') throw localError('interrupted', 'interrupted');
    return stopped(failure('round trip', 'network', `GET ${url.href}: ${(err as Error).message}`, 'run again with --timeout 60; check the proxy and the server'), 'no answer from the server');
  }
  const finished = ctx.now();
  const note = res.status >= 500 ? warning : (name: string, detail: string) => ok(name, detail);
  const trip = note('round trip', `GET ${url.href} (without the token) answered HTTP ${res.status} in ${finished - started} ms`, 'the server or a proxy in between reports a failure: try again later');
  return passed(trip, clockCheck(res, (started + finished) / 2));
}

/** The skew between this clock, at the middle of the exchange, and the server's Date header (whole seconds). */
function clockCheck(res: WireResponse, middle: number): Check {
  const date = headerValue(res, 'date');
  const serverMs = date ? Date.parse(date) : NaN;
  if (!Number.isFinite(serverMs)) return warning('clock', 'the server sent no Date header: skew not measured');
  const skew = Math.round((serverMs - middle) / 1000);
  const text = Math.abs(skew) <= 1 ? 'in step with the server (within 1 s)' : `your clock is ${describeSkew(skew)}`;
  return Math.abs(skew) > SKEW_WARN_S ? warning('clock', text, 'turn on time synchronisation (timedatectl set-ntp true, or your system settings)') : ok('clock', text);
}

// ---------------------------------------------------------------- output

function render(checks: readonly Check[], ctx: Context): string {
  const c = ctx.io.paint.stdout;
  const width = Math.max(...checks.map((x) => x.name.length));
  const lines = checks.map((x) => {
    const status = x.status === 'ok' ? c.green('ok     ') : x.status === 'warning' ? c.yellow('warning') : c.red('failure');
    const head = `${status}  ${x.name.padEnd(width)}  ${escapeInline(x.detail)}`;
    return x.fix ? `${head}\n${' '.repeat(width + 11)}fix: ${escapeInline(x.fix)}` : head;
  });
  const failures = checks.filter((x) => x.status === 'failure').length;
  const warnings = checks.filter((x) => x.status === 'warning').length;
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const summary = failures
    ? `${count(failures, 'failure')}, ${count(warnings, 'warning')}: exit ${doctorExitCode(checks)}`
    : warnings
      ? `no failures, ${count(warnings, 'warning')}`
      : 'all checks passed';
  return `${lines.join('\n')}\n\n${summary}\n`;
}

export async function runDoctor(f: Factory, deps?: DoctorDeps): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const { realProbes } = await import('./probes.js');
  const checks = await doctorChecks(state, ctx, deps ?? { probes: realProbes, uid: currentUid(), nodeVersion: process.versions.node });
  if (state.output.json) writeJson(ctx.io, { checks: checks.map(({ name, status, detail, fix }) => ({ name, status, detail: fix ? `${detail}; fix: ${fix}` : detail })) });
  else ctx.io.stdout.write(render(checks, ctx));
  const code = doctorExitCode(checks);
  // The lines above are the report: the exit status is all that is left to give.
  if (code !== EXIT.ok) throw new CliError(code === EXIT.unavailable ? 'network_error' : 'config_error', 'doctor found a failure', code, { reported: true });
}
