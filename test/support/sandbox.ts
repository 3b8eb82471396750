// The sandbox two ways: a real `chatctl sandbox` child process (with chatctl
// run in-process against it, and its control routes), and an in-process
// sandbox on 127.0.0.1 with a clock the test moves plus fetch helpers that
// send what chatctl sends. Their fetch() takes a connection per request
// (test/support/worker-setup.ts), never one the sandbox may have closed.
import { afterEach } from 'vitest';
import { execa } from 'execa';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scopedPath } from '../../src/api/schemas.js';
import { startSandbox as startInProcessSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox/server.js';
import { BIN, NODE } from './fixtures.js';
import { baseEnv, runInProcess, type InProcessResult } from './run.js';
import { scaled } from './slowdown.js';

// ---------------------------------------------------------------- child process

export interface SandboxInfo {
  baseUrl: string;
  token: string;
  organizationId: string;
  applicationId: string;
  environmentKey: string;
}

export interface Sandbox {
  info: SandboxInfo;
  /** Everything the sandbox wrote to stderr so far (for failure messages). */
  stderr: () => string;
  /** SIGTERM, then its exit code and signal. */
  stop: () => Promise<{ exitCode: number | undefined; signal: string | undefined; stdout: string }>;
}

export function makeTempRoot(): { root: string; dir: (name: string) => string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'chatctl-lifecycle-'));
  return {
    root,
    dir: (name) => {
      const d = join(root, name);
      mkdirSync(d, { recursive: true });
      return d;
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** `chatctl sandbox ...args` as a child; resolves with the JSON line it prints first. */
export async function startSandbox(args: string[], home: string, configDir: string): Promise<Sandbox> {
  const child = execa(NODE, [BIN, 'sandbox', ...args], {
    cwd: home,
    env: baseEnv({ home, configDir }),
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    buffer: true,
    encoding: 'utf8',
    stripFinalNewline: false,
    // A backstop only (each file stops its sandbox): a whole file of runs on a loaded machine can outlast a minute.
    timeout: 600_000,
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const line = await new Promise<string>((resolveLine, rejectLine) => {
    const limit = scaled(10_000);
    const timer = setTimeout(() => rejectLine(new Error(`sandbox printed no line in ${limit / 1000} s; stderr:\n${err}`)), limit);
    const onData = (c: Buffer) => {
      out += c.toString('utf8');
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolveLine(out.slice(0, nl));
      }
    };
    child.stdout.on('data', onData);
    void child.then((r) => {
      clearTimeout(timer);
      rejectLine(new Error(`sandbox exited (${r.exitCode}) before its first line; stderr:\n${err}`));
    });
  });
  const info = JSON.parse(line) as SandboxInfo;
  return {
    info,
    stderr: () => err,
    stop: async () => {
      child.kill('SIGTERM');
      const r = await child;
      return { exitCode: r.exitCode, signal: r.signal, stdout: String(r.stdout ?? '') };
    },
  };
}

export type CliResult = InProcessResult;

/** Runs chatctl in-process (through execute) with the sandbox's scope and a clean env. */
export function cliRunner(info: SandboxInfo, home: string, configDir: string) {
  return async (args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> => {
    const env = {
      ...baseEnv({ home, configDir }),
      CHATCTL_BASE_URL: info.baseUrl,
      CHATCTL_TOKEN: info.token,
      CHATCTL_ORG: info.organizationId,
      CHATCTL_APP: info.applicationId,
      CHATCTL_ENV: info.environmentKey,
      ...extraEnv,
    };
    return runInProcess(args, { env, cwd: home, timeoutMs: scaled(15_000) });
  };
}

/** A request as the sandbox's control route reports it. */
export interface SandboxRequest {
  at: string;
  requestId: string;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  status: number | null;
}

export interface EndpointRecord {
  id: string;
  name: string;
  destinationUrl: string;
  eventTypes: string[];
  status: 'active' | 'inactive';
  version: number;
  createdAt: string;
  updatedAt: string;
  previousSecretExpiresAt: string | null;
}

/** The sandbox's control routes (docs/sandbox.md, "Control routes"). */
export function control(info: SandboxInfo) {
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${info.baseUrl}/_sandbox/${path}`, {
      method,
      headers: { authorization: `Bearer ${info.token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${method} /_sandbox/${path} -> ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  return {
    requests: async (): Promise<SandboxRequest[]> => (await call('GET', 'requests')).requests,
    clearRequests: async (): Promise<void> => void (await call('DELETE', 'requests')),
    endpoints: async (): Promise<(EndpointRecord & { validSecrets: string[] })[]> => (await call('GET', 'endpoints')).endpoints,
    faults: async (patch: Record<string, unknown>): Promise<Record<string, unknown>> => (await call('POST', 'faults', patch)).faults,
  };
}

/** The API path prefix of the sandbox's one scope. */
export function scopePath(info: SandboxInfo): string {
  const e = encodeURIComponent;
  return `/v1/organizations/${e(info.organizationId)}/applications/${e(info.applicationId)}/environments/${e(info.environmentKey)}`;
}

// ---------------------------------------------------------------- in-process
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
  const sb = await startInProcessSandbox({ now: () => now, ...opts });
  running.push(sb);
  const base = {
    authorization: `Bearer ${sb.token}`,
    origin: 'https://console.example.com',
    'x-service-csrf': '1',
    'content-type': 'application/json',
  };

  async function call(path: string, c: Call = {}): Promise<Answer> {
    const headers = Object.fromEntries(Object.entries({ ...base, ...c.headers }).filter((e): e is [string, string] => e[1] !== undefined));
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
  const create = (body: unknown, c: Call = {}) => call(path(), { body, ...c, headers: { 'idempotency-key': `create-${++keys}`, ...c.headers } });
  const rotate = (id: string, body: unknown, c: Call = {}) => call(path(id, 'secret', 'rotate'), { body, ...c, headers: { 'idempotency-key': `rotate-${++keys}`, ...c.headers } });
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
    /** What points chatctl at this sandbox: its base URL, token and scope, as CHATCTL_* variables. */
    scopeEnv: {
      CHATCTL_BASE_URL: sb.baseUrl,
      CHATCTL_TOKEN: sb.token,
      CHATCTL_ORG: sb.organizationId,
      CHATCTL_APP: sb.applicationId,
      CHATCTL_ENV: sb.environmentKey,
    },
    advance: (ms: number) => void (now += ms),
    /** The sandbox's clock: what a chatctl run beside it is given (inject.now) to see the same time. */
    now: () => now,
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
  if (Object.keys(a.body).join() !== 'error' || Object.keys(e).sort().join() !== 'code,details,message,requestId') throw new Error(`unexpected fields: ${JSON.stringify(a.body)}`);
  if (a.headers.get('x-request-id') !== e.requestId) throw new Error('x-request-id header differs from error.requestId');
  return `${a.status} ${e.code}`;
}
