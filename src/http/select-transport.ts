// Direct connections use node:http(s), which loads in a fraction of the time
// undici takes; when a proxy variable is set, the undici transport is loaded.
import { PROXY_VARIABLES, nodeTransport, type Transport } from './transport.js';

export async function selectTransport(env: NodeJS.ProcessEnv): Promise<Transport> {
  if (!PROXY_VARIABLES.some((name) => env[name])) return nodeTransport;
  const { proxyTransport } = await import('./proxy.js');
  return proxyTransport(env);
}
