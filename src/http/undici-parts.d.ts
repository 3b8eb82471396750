// Types for the undici modules proxy.ts takes directly instead of the
// package's index (which also loads fetch, WebSocket, the cache stores, the
// mocks …). undici has no "exports" map, so these are public files of the
// package; the index does exactly what proxy.ts does with them.
declare module 'undici/lib/dispatcher/env-http-proxy-agent.js' {
  import { EnvHttpProxyAgent } from 'undici';
  export = EnvHttpProxyAgent;
}

declare module 'undici/lib/dispatcher/dispatcher.js' {
  import { Dispatcher } from 'undici';
  export = Dispatcher;
}

declare module 'undici/lib/api/index.js' {
  const api: Record<string, (...args: never[]) => unknown>;
  export = api;
}
