// The transport used when a proxy variable is set: undici's
// EnvHttpProxyAgent honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY (upper and
// lower case), tunnelling https through CONNECT. Same contract as
// nodeTransport: no redirects followed, one timer for the whole attempt,
// a body limit enforced while reading.
import { EnvHttpProxyAgent, request } from 'undici';
import { PROXY_VARIABLES, TransportError, type Transport } from './transport.js';
import { configError } from '../errors/cli-error.js';

const pick = (env: NodeJS.ProcessEnv, name: string) => env[name.toLowerCase()] || env[name.toUpperCase()] || undefined;


/** A proxy variable that is not a URL is a configuration error naming it. */
function checkProxyVariables(env: NodeJS.ProcessEnv): void {
  for (const name of PROXY_VARIABLES) {
    const value = env[name];
    if (!value) continue;
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw configError(`${name} is not an http:// or https:// proxy URL`, `fix or unset ${name}`);
  }
}

export function proxyTransport(env: NodeJS.ProcessEnv): Transport {
  checkProxyVariables(env);
  const dispatcher = new EnvHttpProxyAgent({
    httpProxy: pick(env, 'http_proxy'),
    httpsProxy: pick(env, 'https_proxy') ?? pick(env, 'http_proxy'),
    noProxy: pick(env, 'no_proxy'),
  });
  return async (req, opts) => {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, opts.timeoutMs);
    const onAbort = () => controller.abort();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    let status: number | undefined;
    try {
      const res = await request(req.url, {
        method: req.method,
        headers: req.headers,
        body: req.body,
        dispatcher,
        signal: controller.signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      status = res.statusCode;
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBodyBytes) {
        controller.abort();
        throw new TransportError('too_large', `response body of ${declared} bytes exceeds the ${opts.maxBodyBytes}-byte limit`, status);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > opts.maxBodyBytes) {
          controller.abort();
          throw new TransportError('too_large', `response body exceeds the ${opts.maxBodyBytes}-byte limit`, status);
        }
        chunks.push(chunk as Buffer);
      }
      const headers: Record<string, string | string[] | undefined> = {};
      for (const [k, v] of Object.entries(res.headers)) headers[k.toLowerCase()] = v;
      return { status: res.statusCode, headers, body: Buffer.concat(chunks).toString('utf8') };
    } catch (err) {
      if (err instanceof TransportError) throw err;
      if (opts.signal.aborted) throw new TransportError('aborted', 'interrupted');
      if (timedOut) throw new TransportError('timeout', `no complete response within ${opts.timeoutMs / 1000} s`, status);
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const code = e.cause?.code ?? e.code ?? e.message;
      if (status !== undefined) throw new TransportError('truncated', `the connection failed during the response (${code})`, status);
      throw new TransportError('connect', `cannot connect to ${new URL(req.url).host} through the proxy: ${code}`);
    } finally {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
    }
  };
}
