// A real `chatctl sandbox` child process and the real CLI run against it, each
// with an explicit environment (nothing inherited: no CI, CHATCTL_* or proxy).
import { runInProcess } from '../support/in-process.js';
import { execa } from 'execa';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'chatctl.js');
const NODE = process.execPath;

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

function cleanEnv(home: string, configDir: string): Record<string, string> {
  return {
    PATH: `${dirname(NODE)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    CHATCTL_CONFIG_DIR: configDir,
    NO_COLOR: '1',
  };
}

export async function startSandbox(args: string[], home: string, configDir: string): Promise<Sandbox> {
  const child = execa(
    NODE,
    [BIN, 'sandbox', ...args],
    {
      cwd: home,
      env: cleanEnv(home, configDir),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      buffer: true,
      encoding: 'utf8',
      stripFinalNewline: false,
      timeout: 60_000,
    },
  );
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const line = await new Promise<string>((resolveLine, rejectLine) => {
    const timer = setTimeout(() => rejectLine(new Error(`sandbox printed no line in 10 s; stderr:\n${err}`)), 10_000);
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

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs chatctl in-process (through execute) with the sandbox's scope and a clean env. */
export function cliRunner(info: SandboxInfo, home: string, configDir: string) {
  return async (args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> => {
    const env = {
      ...cleanEnv(home, configDir),
      CHATCTL_BASE_URL: info.baseUrl,
      CHATCTL_TOKEN: info.token,
      CHATCTL_ORG: info.organizationId,
      CHATCTL_APP: info.applicationId,
      CHATCTL_ENV: info.environmentKey,
      ...extraEnv,
    };
    return runInProcess(args, { env, cwd: home, timeoutMs: 15_000 });
  };
}

export interface RecordedRequest {
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
    requests: async (): Promise<RecordedRequest[]> => (await call('GET', 'requests')).requests,
    clearRequests: async (): Promise<void> => void (await call('DELETE', 'requests')),
    endpoints: async (): Promise<(EndpointRecord & { validSecrets: string[] })[]> =>
      (await call('GET', 'endpoints')).endpoints,
    faults: async (patch: Record<string, unknown>): Promise<Record<string, unknown>> =>
      (await call('POST', 'faults', patch)).faults,
  };
}

/** The API path prefix of the sandbox's one scope. */
export function scopePath(info: SandboxInfo): string {
  const e = encodeURIComponent;
  return `/v1/organizations/${e(info.organizationId)}/applications/${e(info.applicationId)}/environments/${e(info.environmentKey)}`;
}

/** Every regular file below dir (recursively); [] if dir does not exist. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

export const fileMode = (path: string) => statSync(path).mode & 0o777;

/** The --json error contract: stderr is exactly one JSON line. */
export function errorLine(stderr: string): {
  error: { code: string; message: string; requestId: string | null; status: number | null; details: unknown };
  exitCode: number;
} {
  const text = stderr.replace(/\n$/, '');
  if (text === '' || text.includes('\n')) throw new Error(`stderr is not exactly one line:\n${stderr}`);
  return JSON.parse(text);
}
