// A started sandbox on 127.0.0.1 with a clock the test moves, and fetch
// helpers that send what chatctl sends.
import { afterEach } from 'vitest';
import { scopedPath } from '../../src/api/spec.js';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox/server.js';

export const T0 = Date.parse('2030-01-01T00:00:00.000Z');
export const HOUR = 60 * 60 * 1000;

const running: RunningSandbox[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

export interface Call {
  method?: string;
  body?: unknown;
  /** Sent verbatim instead of JSON.stringify(body). */
  rawBody?: string;
  headers?: Record<string, string | undefined>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

export async function sandbox(opts: SandboxOptions = {}) {
  let now = T0;
  const sb = await startSandbox({ now: () => now, ...opts });
  running.push(sb);
  const base = {
    authorization: `Bearer ${sb.token}`,
    origin: 'https://console.example.com',
    'x-service-csrf': '1',
    'content-type': 'application/json',
  };

  async function call(path: string, c: Call = {}): Promise<Answer> {
    const headers = Object.fromEntries(
      Object.entries({ ...base, ...c.headers }).filter((e): e is [string, string] => e[1] !== undefined),
    );
    const res = await fetch(sb.baseUrl + path, {
      method: c.method ?? 'POST',
      headers,
      body: c.rawBody ?? (c.body === undefined ? undefined : JSON.stringify(c.body)),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  }

  const path = (...rest: string[]) => scopedPath(sb, 'webhook-endpoints', ...rest);
  let keys = 0;
  const create = (body: unknown, c: Call = {}) =>
    call(path(), { body, ...c, headers: { 'idempotency-key': `create-${++keys}`, ...c.headers } });
  const rotate = (id: string, body: unknown, c: Call = {}) =>
    call(path(id, 'secret', 'rotate'), { body, ...c, headers: { 'idempotency-key': `rotate-${++keys}`, ...c.headers } });
  const reactivate = (id: string, body: unknown, c: Call = {}) => call(path(id, 'reactivate'), { body, ...c });
  const deactivate = (id: string, body: unknown, c: Call = {}) => call(path(id, 'deactivate'), { body, ...c });
  const control = (p: string, c: Call = {}) =>
    call(`/_sandbox/${p}`, { method: c.body === undefined ? 'GET' : 'POST', ...c, headers: { origin: undefined, 'x-service-csrf': undefined, ...c.headers } });

  return {
    sb,
    call,
    path,
    create,
    rotate,
    reactivate,
    deactivate,
    control,
    advance: (ms: number) => void (now += ms),
  };
}

export const endpointBody = (n = 1) => ({
  name: `hook ${n}`,
  destinationUrl: `https://example.com/hooks/${n}`,
  eventTypes: ['chat.message.created.v1'],
});

/** Checks the error envelope and returns its code. */
export function errorCode(a: Answer): string {
  const e = a.body?.error;
  if (!e || typeof e.message !== 'string' || typeof e.requestId !== 'string' || typeof e.details !== 'object' || e.details === null || Array.isArray(e.details))
    throw new Error(`not a PublicErrorResponseDto: ${JSON.stringify(a.body)}`);
  if (Object.keys(a.body).join() !== 'error' || Object.keys(e).sort().join() !== 'code,details,message,requestId')
    throw new Error(`unexpected fields: ${JSON.stringify(a.body)}`);
  if (a.headers.get('x-request-id') !== e.requestId) throw new Error('x-request-id header differs from error.requestId');
  return `${a.status} ${e.code}`;
}
