// The network seam of `chatctl doctor`: DNS, TCP and TLS, each one attempt
// with a time limit, ended by Ctrl-C. Tests hand doctor fakes instead.
import { promises as dns } from 'node:dns';
import { connect as netConnect, isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export interface TlsFacts {
  protocol: string;
  /** The certificate's notAfter, as the peer certificate gives it. */
  validTo: string;
}

export interface Probes {
  lookup(host: string, timeoutMs: number, signal: AbortSignal): Promise<string[]>;
  connect(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<void>;
  tls(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<TlsFacts>;
}

/** An Error whose message is what went wrong, with the system's code when there is one. */
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

export const realProbes: Probes = {
  lookup: (host, timeoutMs, signal) =>
    limited(`looking up ${host}`, timeoutMs, signal, (done) => {
      dns.lookup(host, { all: true }).then(
        (list) =>
          done(
            null,
            list.map((a) => a.address),
          ),
        (err: NodeJS.ErrnoException) => done(new ProbeError(`cannot resolve ${host} (${err.code ?? err.message})`, err.code)),
      );
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
    limited<TlsFacts>(`TLS handshake with ${host}:${port}`, timeoutMs, signal, (done) => {
      const socket: TLSSocket = tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }) });
      socket.once('secureConnect', () => {
        const cert = socket.getPeerCertificate();
        done(null, { protocol: socket.getProtocol() ?? 'TLS', validTo: cert?.valid_to ?? '' });
      });
      socket.once('error', (err: NodeJS.ErrnoException) => done(new ProbeError(`${err.message}${err.code ? ` (${err.code})` : ''}`, err.code)));
      return () => socket.destroy();
    }),
};
