// Behind a proxy: https tunnelled through the proxy with CONNECT, on Node's
// own http, https and tls (CONTRIBUTING, Dependencies, says why not a
// library). select-transport.ts chose the proxy, sends loopback direct and
// never hands this an http: URL, so the bearer token never reaches a proxy
// in clear text. The tunnel is made in the agent's createConnection (the
// hook http.Agent documents for this); the request itself is nodeTransport's,
// so redirects, the attempt's one timer, the body limit and parse errors
// behave exactly as on a direct connection.
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';
import { PROXY_TUNNEL, nodeTransport, type Transport } from './transport.js';

/** `host:port` for CONNECT's request target, an IPv6 address in brackets. */
const authority = (host: string, port: number | string) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Proxy-Authorization for credentials in the proxy's URL (percent-decoded, as curl reads them). */
function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  return `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`;
}

type ConnectOptions = tls.ConnectionOptions & { host: string; port: number | string };

/** An https.Agent whose connections are TLS inside a CONNECT tunnel through `proxy`; idle ones are kept for the next request. */
class TunnelAgent extends https.Agent {
  constructor(private readonly proxy: URL) {
    super({ keepAlive: true });
  }

  override createConnection(options: ConnectOptions, done: (err: Error | null, socket?: Duplex) => void): undefined {
    const target = authority(options.host, options.port);
    const auth = proxyAuthorization(this.proxy);
    const connect = (this.proxy.protocol === 'https:' ? https : http).request({
      host: this.proxy.hostname.replace(/^\[|\]$/g, ''),
      port: this.proxy.port || (this.proxy.protocol === 'https:' ? 443 : 80),
      method: 'CONNECT',
      path: target,
      headers: { host: target, ...(auth ? { 'proxy-authorization': auth } : {}) },
      agent: false,
    });
    const failed = (message: string) => done(Object.assign(new Error(message), { code: PROXY_TUNNEL }));
    // The attempt's own timer keeps the process alive while it waits; a
    // tunnel still opening when that attempt has ended must not.
    connect.once('socket', (socket) => socket.unref());
    connect.once('connect', (res, socket, head) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        failed(`the proxy refused to connect to ${target} (it answered ${res.statusCode})`);
        return;
      }
      if (head.length > 0) socket.unshift(head);
      done(null, tls.connect({ ...options, socket }));
    });
    connect.once('error', (err: NodeJS.ErrnoException) => failed(`cannot connect to ${target} through the proxy: ${err.code ?? err.message}`));
    connect.end();
    return undefined;
  }
}

/** Requests through the proxy at `proxyUrl` (credentials in it are sent as Proxy-Authorization). */
export function proxyTransport(proxyUrl: string): Transport {
  const agent = new TunnelAgent(new URL(proxyUrl));
  return (req, opts) => nodeTransport(req, { ...opts, agent });
}
