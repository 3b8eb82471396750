// chatctl doctor: what a command needs, in order, one line each with the fix; read-only, never
// sends the token. Each check asks the code a real run uses, so doctor cannot disagree with it.
import { promises as dns } from 'node:dns';
import { lstatSync, statSync } from 'node:fs';
import { connect as netConnect, isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { type Factory, userAgent } from '../app.js';
import type { Context } from '../../context.js';
import { CliError, EXIT, type ExitCode, localError } from '../../errors/cli-error.js';
import { nearest, unknownProfileError } from '../../errors/explain.js';
import { checkConfigFolder, currentUid, parseConfigBytes, readConfigBytes } from '../../config/store.js';
import { configFile, type ConfigData } from '../../config/schema.js';
import type { RunState } from '../../run/state.js';
import { checkBaseUrl, isHeaderSafe } from '../../http/wire-checks.js';
import { SCOPE_INPUTS, type ScopeDescription } from '../../scope/resolve.js';
import type { ProfileSource, SelectedProfile } from '../../config/profile.js';
import { helperLabel, storedTokenSource, unreachableKeyringHint, type TokenSource } from '../../credentials/source.js';
import { callKeyring } from '../../credentials/token.js';
import { proxyFor, type ProxyChoice } from '../../http/select-transport.js';
import { isTransportError, MAX_BODY_BYTES, type Transport, type WireResponse } from '../../http/transport.js';
import { headerValue } from '../../http/client.js';
import { escapeInline, shellWord } from '../../output/json.js';
import { writeJson } from '../../output/io.js';

/** What a failure means for the exit status: 3, 4 or 12. */
type FailureKind = 'config' | 'auth' | 'network';

export interface Check {
  name: string;
  status: 'ok' | 'warning' | 'failure';
  detail: string;
  fix?: string | undefined;
  kind?: FailureKind | undefined;
}

/** The network seam: DNS, TCP and TLS, each one attempt with a time limit, ended by Ctrl-C. Tests hand in fakes. */
export interface Probes {
  lookup(host: string, timeoutMs: number, signal: AbortSignal): Promise<string[]>;
  connect(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<void>;
  tls(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<{ protocol: string; validTo: string }>;
}

export interface DoctorDeps {
  probes: Probes;
  /** The effective uid the config checks compare owners with (undefined where there are none: Windows). */
  uid: number | undefined;
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

export async function doctorChecks(run: RunState, ctx: Context, deps: DoctorDeps): Promise<Check[]> {
  const file = checkConfig(ctx.configDir, deps.uid);
  // The run's options over the config as read here: a bad file is reported, not refused.
  const state = run.withConfig(file.config ?? {});
  const selected = state.profile();
  const described = state.describe();
  const sources = sourcesOf(described);
  // A typo of a stored profile (`--profile stagin`): the scope and token checks would offer to store values in it.
  const near = selected.explicit && !selected.profile ? nearest(selected.name, Object.keys(file.config?.profiles ?? {})) : undefined;
  const typo = near === undefined ? undefined : `profile "${selected.name}" does not exist (did you mean ${near}?)`;
  const checks: Check[] = [file.folder, file.file, profileCheck(selected, file.config), typo ? skipped('scope', typo) : scopeValuesCheck(state, selected, sources)];
  const source = described.token.source;
  // Synchronous unless the keyring is asked: nothing else waits before the network probes.
  if (typo) checks.push(skipped('token', typo));
  else checks.push(source === 'keyring' ? await keyringTokenCheck(selected, ctx) : tokenCheck(selected, source, ctx.env.CHATCTL_TOKEN));
  const settings = settingsCheck(state);
  checks.push(settings.check);
  const base = baseUrlCheck(sources.baseUrl);
  checks.push(base.check, ...(await networkChecks(base.url, ctx, deps, settings.timeoutMs)), nodeCheck(deps.nodeVersion));
  return checks;
}

const modeOf = (path: string, stat: (p: string) => { mode: number }) => (stat(path).mode & 0o777).toString(8).padStart(3, '0');

/** A configuration error of the real checks as a failed check; anything else is not doctor's to catch. */
function refused(name: string, err: unknown): Check {
  if (err instanceof CliError) return failure(name, 'config', err.message, err.hint);
  throw err;
}

/** The checks every command's read makes, their messages as they are; loose read permissions reported, not tightened. */
function checkConfig(dir: string, uid: number | undefined): { folder: Check; file: Check; config: ConfigData | undefined } {
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

type ScopeKey = 'baseUrl' | 'organizationId' | 'applicationId' | 'environmentKey';
type Source = { value: string; from: string } | undefined;
const SCOPE_LABELS: Record<ScopeKey, string> = { baseUrl: 'base URL', organizationId: 'org', applicationId: 'app', environmentKey: 'env' };
const SCOPE_KEYS = Object.keys(SCOPE_LABELS) as ScopeKey[];

function sourcesOf(d: ScopeDescription): Record<ScopeKey, Source> {
  const one = (key: ScopeKey): Source => {
    const v = d[key];
    if (v.value === null || v.source === 'none' || v.source === 'default') return undefined;
    return { value: v.value, from: v.source === 'flag' ? SCOPE_INPUTS[key].flag : v.source === 'env' ? SCOPE_INPUTS[key].env : `profile "${d.profile.name}"` };
  };
  return { baseUrl: one('baseUrl'), organizationId: one('organizationId'), applicationId: one('applicationId'), environmentKey: one('environmentKey') };
}

const PROFILE_WHY: Record<ProfileSource, string> = {
  flag: 'named by --profile',
  env: 'named by CHATCTL_PROFILE',
  current: 'the current profile: the first one set, or chosen with profile use',
  default: 'the default: no --profile, CHATCTL_PROFILE or current profile',
};

function profileCheck(selected: SelectedProfile, config: ConfigData | undefined): Check {
  const why = PROFILE_WHY[selected.source];
  const names = Object.keys(config?.profiles ?? {});
  if (!config) return skipped('profile', `"${selected.name}" (${why}); the config file cannot be used`);
  if (selected.profile) return ok('profile', `"${selected.name}" (${why})`);
  if (selected.explicit) {
    const create = `create it with: chatctl profile set ${selected.name} --base-url URL --org ID --app ID --env KEY`;
    const detail = `"${selected.name}" (${why}) does not exist${names.length ? `; profiles: ${names.join(', ')}` : ''}`;
    return failure('profile', 'config', detail, unknownProfileError(selected.name, names, selected.source, create).hint);
  }
  if (names.length) return warning('profile', `"${selected.name}" (${why}) does not exist; profiles: ${names.join(', ')}`, `choose one with: chatctl profile use ${names[0]}`);
  return ok('profile', `none stored; values come from flags and the environment`);
}

/** Each value of the scope with where it comes from; a missing one fails naming its flag, a refused one as a command refuses it. */
function scopeValuesCheck(state: RunState, selected: SelectedProfile, sources: Record<ScopeKey, Source>): Check {
  const described = SCOPE_KEYS.map((k) => (sources[k] ? `${SCOPE_LABELS[k]} ${escapeInline(sources[k]!.value)} (${sources[k]!.from})` : `${SCOPE_LABELS[k]} missing`)).join(', ');
  const missing = SCOPE_KEYS.filter((k) => !sources[k]);
  if (missing.length) {
    const pass = missing.map((k) => `${SCOPE_INPUTS[k].flag} (${SCOPE_INPUTS[k].env})`).join(', ');
    const store = missing.map((k) => `${SCOPE_INPUTS[k].flag} …`).join(' ');
    return failure('scope', 'config', described, `pass ${pass}, or store them with: chatctl profile set ${selected.name} ${store}`);
  }
  try {
    state.connection();
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    // A named profile that does not exist and a refused base URL have checks of their own.
    const baseRefused = baseUrlCheck(sources.baseUrl).url === undefined;
    if (!(selected.explicit && !selected.profile) && !baseRefused) return refused('scope', err);
  }
  return ok('scope', described);
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

const badHeader = (t: string) => t === '' || !isHeaderSafe(t);

/** Where the token comes from, never its value; a token command is named, not run (it may ask for a password). */
function tokenCheck(selected: SelectedProfile, source: Exclude<TokenSource, 'keyring'> | 'none', envToken: string | undefined): Check {
  const name = selected.name;
  const stored = storedTokenSource(selected.profile);
  switch (source) {
    case 'none':
      return failure('token', 'config', `none for profile "${name}" (no CHATCTL_TOKEN, none stored)`, `chatctl auth login --with-token --profile ${name} < token.txt, or set CHATCTL_TOKEN`);
    case 'env': {
      if (badHeader(envToken!.trim())) return failure('token', 'auth', 'CHATCTL_TOKEN contains characters that cannot be sent in an HTTP header', 'set CHATCTL_TOKEN to the token alone');
      const shadowed = stored ? `; it overrides ${stored === 'command' ? 'the token command of' : stored === 'keyring' ? 'the keyring entry of' : 'the token stored in'} profile "${name}"` : '';
      return ok('token', `from CHATCTL_TOKEN (environment)${shadowed}; doctor does not send it`);
    }
    case 'file':
      if (badHeader(selected.profile!.token!))
        return failure('token', 'auth', `the token stored in profile "${name}" contains characters that cannot be sent in an HTTP header`, `store it again: chatctl auth login --profile ${name}`);
      return ok('token', `stored in profile "${name}" (config file); doctor does not send it`);
    case 'command':
      return ok('token', `from the token command of profile "${name}" (${helperLabel(selected.profile!.tokenCommand!)}); doctor does not run it`);
  }
}

/** A keyring entry is looked up (within the keyring's limit), never shown. */
async function keyringTokenCheck(selected: SelectedProfile, ctx: Context): Promise<Check> {
  const name = selected.name;
  const login = `chatctl auth login --profile ${name}`;
  const r = await callKeyring(ctx, 'get', name).catch(() => {
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

const portOf = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80));
const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

async function networkChecks(url: URL | undefined, ctx: Context, deps: DoctorDeps, timeoutMs: number): Promise<Check[]> {
  if (!url) return NETWORK_CHECKS.map((n) => skipped(n, 'no usable base URL'));
  const out: Check[] = [];
  const stop = (check: Check, why: string): false => {
    out.push(check, ...NETWORK_CHECKS.slice(out.length + 1).map((n) => skipped(n, why)));
    return false;
  };
  // Each step runs only when the one before it passed.
  const step = async (run: () => Promise<Check | Check[]>, fail: (e: ProbeError) => [Check, string]): Promise<boolean> => {
    rethrowIfInterrupted(ctx);
    try {
      out.push(...[await run()].flat());
      return true;
    } catch (err) {
      rethrowIfInterrupted(ctx);
      return stop(...fail(err as ProbeError));
    }
  };
  let choice: ProxyChoice;
  try {
    choice = proxyFor(url, ctx.env); // the transport's own answer for this URL
  } catch (err) {
    stop(refused('proxy', err), 'the proxy variable is not usable');
    return out;
  }
  out.push(ok('proxy', describeProxy(choice, url)));
  // DNS and TCP go to the proxy when there is one: that is where chatctl connects.
  const target = choice.proxy ?? url;
  const [host, port, via] = [bareHost(target), portOf(target), choice.proxy ? 'the proxy ' : ''];
  const dnsFix = choice.proxy ? 'check the proxy variable' : 'check the host name in the base URL, and your network or DNS settings';
  const tcpFix = choice.proxy ? 'is the proxy running, and the variable right?' : 'is the server running, and the port in the base URL right? A firewall?';
  const dns = async () => {
    if (isIP(host)) return ok('DNS', `${via}${host} is an address: nothing to look up`);
    const addresses = await deps.probes.lookup(host, PROBE_TIMEOUT_MS, ctx.signal);
    return ok('DNS', `${via}${host} → ${addresses.slice(0, 4).join(', ')}${addresses.length > 4 ? ', …' : ''}`);
  };
  if (!(await step(dns, (e) => [failure('DNS', 'network', `${via}${e.message}`, dnsFix), 'the host name does not resolve']))) return out;
  const tcp = async () => (await deps.probes.connect(host, port, PROBE_TIMEOUT_MS, ctx.signal), ok('TCP', `${via}${host}:${port} accepts connections`));
  if (!(await step(tcp, (e) => [failure('TCP', 'network', `${via}${e.message}`, tcpFix), 'no TCP connection']))) return out;
  const tls = async () => {
    if (url.protocol !== 'https:') return ok('TLS', 'not used: http on loopback');
    if (choice.proxy) return ok('TLS', 'through the proxy: the round trip below checks it');
    return certificateCheck(await deps.probes.tls(bareHost(url), portOf(url), PROBE_TIMEOUT_MS, ctx.signal), ctx.now());
  };
  const tlsFailed = (e: ProbeError): [Check, string] => {
    const privateCa = /CERT|SELF_SIGNED|UNABLE_TO/.test(e.code ?? '');
    const fix = privateCa ? 'a private certificate authority? point NODE_EXTRA_CA_CERTS at its PEM file' : 'check that the base URL points at an https server';
    return [failure('TLS', 'network', e.message, fix), 'no TLS connection'];
  };
  if (!(await step(tls, tlsFailed))) return out;
  rethrowIfInterrupted(ctx);
  const transport = await ctx.transport();
  await step(
    () => roundTrip(transport, url, ctx, timeoutMs),
    (e) => {
      if (isTransportError(e) && e.failure === 'aborted') throw localError('interrupted', 'interrupted');
      return [failure('round trip', 'network', `GET ${url.href}: ${e.message}`, 'run again with --timeout 60; check the proxy and the server'), 'no answer from the server'];
    },
  );
  return out;
}

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

function certificateCheck(facts: { protocol: string; validTo: string }, now: number): Check {
  const until = Date.parse(facts.validTo);
  const days = Number.isFinite(until) ? Math.floor((until - now) / 86_400_000) : undefined;
  const detail = `${facts.protocol}, certificate valid${Number.isFinite(until) ? ` until ${new Date(until).toISOString().slice(0, 10)}` : ''}`;
  if (days === undefined || days >= CERT_WARN_DAYS) return ok('TLS', detail);
  return warning('TLS', `${detail}: it expires in ${Math.max(days, 0)} day${days === 1 ? '' : 's'}`, "tell the server's operators");
}

/** A GET of the base URL without the token: any HTTP answer shows the path works; its Date header gives the clock skew. */
async function roundTrip(transport: Transport, url: URL, ctx: Context, timeoutMs: number): Promise<Check[]> {
  const started = ctx.now();
  const headers = { Accept: 'application/json', 'User-Agent': userAgent(ctx) };
  const res = await transport({ method: 'GET', url: url.href, headers, body: '' }, { timeoutMs, maxBodyBytes: MAX_BODY_BYTES, signal: ctx.signal });
  const finished = ctx.now();
  const detail = `GET ${url.href} (without the token) answered HTTP ${res.status} in ${finished - started} ms`;
  const trip = res.status >= 500 ? warning('round trip', detail, 'the server or a proxy in between reports a failure: try again later') : ok('round trip', detail);
  return [trip, clockCheck(res, (started + finished) / 2)];
}

/** The skew between this clock, at the middle of the exchange, and the server's Date header (whole seconds). */
function clockCheck(res: WireResponse, middle: number): Check {
  const date = headerValue(res, 'date');
  const serverMs = date ? Date.parse(date) : NaN;
  if (!Number.isFinite(serverMs)) return warning('clock', 'the server sent no Date header: skew not measured');
  const skew = Math.round((serverMs - middle) / 1000);
  const abs = Math.abs(skew);
  const size = abs < 120 ? `${abs} s` : abs < 7200 ? `${Math.round(abs / 60)} min` : `${Math.round(abs / 3600)} h`;
  const text = abs <= 1 ? 'in step with the server (within 1 s)' : `your clock is ${size} ${skew > 0 ? "behind the server's" : "ahead of the server's"}`;
  return abs > SKEW_WARN_S ? warning('clock', text, 'turn on time synchronisation (timedatectl set-ntp true, or your system settings)') : ok('clock', text);
}

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
  let summary = 'all checks passed';
  if (failures) summary = `${count(failures, 'failure')}, ${count(warnings, 'warning')}: exit ${doctorExitCode(checks)}`;
  else if (warnings) summary = `no failures, ${count(warnings, 'warning')}`;
  return `${lines.join('\n')}\n\n${summary}\n`;
}

export async function runDoctor(f: Factory, deps?: DoctorDeps): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const checks = await doctorChecks(state, ctx, deps ?? { probes: realProbes, uid: currentUid(), nodeVersion: process.versions.node });
  if (state.output.json) writeJson(ctx.io, { checks: checks.map(({ name, status, detail, fix }) => ({ name, status, detail: fix ? `${detail}; fix: ${fix}` : detail })) });
  else ctx.io.stdout.write(render(checks, ctx));
  const code = doctorExitCode(checks);
  // The lines above are the report: the exit status is all that is left to give.
  if (code !== EXIT.ok) throw new CliError(code === EXIT.unavailable ? 'network_error' : 'config_error', 'doctor found a failure', code, { reported: true });
}

export class ProbeError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ProbeError';
  }
}

function limited<T>(what: string, timeoutMs: number, signal: AbortSignal, start: (done: (err: Error | null, value?: T) => void) => () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let cleanup = () => {};
    const finish = (err: Error | null, value?: T) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      cleanup();
      if (err) reject(err);
      else resolve(value as T);
    };
    const timer = setTimeout(() => finish(new ProbeError(`${what}: no answer within ${timeoutMs / 1000} s`, 'ETIMEDOUT')), timeoutMs);
    const onAbort = () => finish(new ProbeError('interrupted', 'ABORT_ERR'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    cleanup = start(finish);
  });
}

const CONNECT_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
};

const realProbes: Probes = {
  lookup: (host, timeoutMs, signal) =>
    limited(`looking up ${host}`, timeoutMs, signal, (done) => {
      const found = (list: { address: string }[]) => {
        const addresses = list.map((a) => a.address);
        done(null, addresses);
      };
      const failed = (err: NodeJS.ErrnoException) => done(new ProbeError(`cannot resolve ${host} (${err.code ?? err.message})`, err.code));
      dns.lookup(host, { all: true }).then(found, failed);
      return () => {};
    }),
  connect: (host, port, timeoutMs, signal) =>
    limited(`connecting to ${host}:${port}`, timeoutMs, signal, (done) => {
      const socket = netConnect({ host, port });
      socket.once('connect', () => done(null));
      socket.once('error', (err: NodeJS.ErrnoException) => done(new ProbeError(`cannot connect to ${host}:${port}: ${CONNECT_ERRORS[err.code ?? ''] ?? err.code ?? err.message}`, err.code)));
      return () => socket.destroy();
    }),
  tls: (host, port, timeoutMs, signal) =>
    limited<{ protocol: string; validTo: string }>(`TLS handshake with ${host}:${port}`, timeoutMs, signal, (done) => {
      const socket = tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }) });
      socket.once('secureConnect', () => done(null, { protocol: socket.getProtocol() ?? 'TLS', validTo: socket.getPeerCertificate()?.valid_to ?? '' }));
      socket.once('error', (err: NodeJS.ErrnoException) => done(new ProbeError(`${err.message}${err.code ? ` (${err.code})` : ''}`, err.code)));
      return () => socket.destroy();
    }),
};
