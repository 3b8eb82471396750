// node:http(s), far quicker to load than undici, unless proxyFor() names a proxy. While a proxy variable is set, an http:
// URL off loopback is refused: the token would cross the proxy in clear text.
import { configError } from '../errors/cli-error.js';
import { isLoopbackHost } from './wire-checks.js';
import { PROXY_VARIABLES, nodeTransport, type Transport } from './transport.js';

export type ProxyChoice =
  | { proxy: URL; variable: (typeof PROXY_VARIABLES)[number] }
  | { proxy: undefined; why: 'loopback' | 'no variable' }
  | { proxy: undefined; why: 'no_proxy'; variable: 'NO_PROXY' | 'no_proxy'; entry: string };

/** The variable's value, lower case first (as curl and undici read them); empty counts as unset. */
function pick<T extends string>(env: NodeJS.ProcessEnv, names: readonly T[]): { name: T; value: string } | undefined {
  const name = names.find((n) => env[n]);
  return name === undefined ? undefined : { name, value: env[name]! };
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** The NO_PROXY entry that sends `url` direct, if any: `*`, a host and its subdomains (`.` or `*.` ignored), `host:port`. */
function noProxyEntry(url: URL, list: string): string | undefined {
  const host = url.hostname.toLowerCase();
  const port = Number(url.port) || DEFAULT_PORTS[url.protocol] || 0;
  for (const raw of list.split(/[,\s]+/)) {
    if (!raw) continue;
    if (raw === '*') return raw;
    const parsed = /^(\[[^\]]*\]|[^:]+):(\d+)$/.exec(raw);
    const name = (parsed ? parsed[1]! : raw).replace(/^\*?\./, '').toLowerCase();
    if (parsed && Number(parsed[2]) !== port) continue;
    if (name && (host === name || host.endsWith(`.${name}`))) return raw;
  }
  return undefined;
}

/** Which proxy a request to `url` goes through, if any: what the transport sends by and `chatctl doctor` reports. */
export function proxyFor(url: URL, env: NodeJS.ProcessEnv): ProxyChoice {
  if (isLoopbackHost(url.hostname)) return { proxy: undefined, why: 'loopback' };
  const chosen = pick(env, url.protocol === 'https:' ? (['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'] as const) : (['http_proxy', 'HTTP_PROXY'] as const));
  if (!chosen) return { proxy: undefined, why: 'no variable' };
  const noProxy = pick(env, ['no_proxy', 'NO_PROXY'] as const);
  const entry = noProxy && noProxyEntry(url, noProxy.value);
  if (noProxy && entry) return { proxy: undefined, why: 'no_proxy', variable: noProxy.name, entry };
  const proxy = URL.canParse(chosen.value) ? new URL(chosen.value) : undefined;
  if (!proxy || (proxy.protocol !== 'http:' && proxy.protocol !== 'https:')) throw configError(`${chosen.name} is not an http:// or https:// proxy URL`, `fix or unset ${chosen.name}`);
  return { proxy, variable: chosen.name };
}

export async function selectTransport(env: NodeJS.ProcessEnv): Promise<Transport> {
  if (!PROXY_VARIABLES.some((name) => env[name])) return nodeTransport;
  // One agent per proxy (undici keeps the tunnel's connection for a retry).
  const agents = new Map<string, Promise<Transport>>();
  return async (req, opts) => {
    const url = new URL(req.url);
    if (isLoopbackHost(url.hostname)) return nodeTransport(req, opts);
    if (url.protocol !== 'https:') throw configError(`refusing to send ${url.origin} through a proxy over http: the token would travel in clear text`, 'use an https base URL');
    const choice = proxyFor(url, env);
    if (!choice.proxy) return nodeTransport(req, opts);
    const key = choice.proxy.href;
    const agent = agents.get(key) ?? import('./proxy.js').then((m) => m.proxyTransport(key));
    agents.set(key, agent);
    return (await agent)(req, opts);
  };
}
