// Direct connections use node:http(s), which loads in a fraction of the time
// undici takes. When a proxy variable is set, targets other than loopback go
// through proxy.ts (undici), loaded on the first such request. Loopback
// (localhost, 127.0.0.0/8, [::1]) is never proxied, whatever NO_PROXY says,
// and an http: URL never goes to a proxy: a bearer token would cross the
// proxy in clear text (http: is only allowed for loopback, which is direct).
import { configError } from '../errors/cli-error.js';
import { isLoopbackHost } from '../scope/resolve.js';
import { PROXY_VARIABLES, nodeTransport, type Transport } from './transport.js';

export async function selectTransport(env: NodeJS.ProcessEnv): Promise<Transport> {
  if (!PROXY_VARIABLES.some((name) => env[name])) return nodeTransport;
  let proxied: Promise<Transport> | undefined;
  return async (req, opts) => {
    const url = new URL(req.url);
    if (isLoopbackHost(url.hostname)) return nodeTransport(req, opts);
    if (url.protocol !== 'https:') {
      throw configError(`refusing to send ${url.origin} through a proxy over http: the token would travel in clear text`, 'use an https base URL');
    }
    proxied ??= import('./proxy.js').then((m) => m.proxyTransport(env));
    return (await proxied)(req, opts);
  };
}
