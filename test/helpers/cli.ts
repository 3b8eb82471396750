// Runs the real bin/chatctl.js as a child process with a clean, explicit
// environment, plus the fixtures the e2e files share.
import { execa } from 'execa';
import { runInProcess } from '../support/in-process.js';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'chatctl.js');
export const NODE = process.execPath;
export const PKG_VERSION: string = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
export const USER_AGENT = `chatctl/${PKG_VERSION} node/${process.versions.node}`;

export const TOKEN = 'tok_e2e_Qm9vYmF6LXNlY3JldC10b2tlbg';
export const SECRET = 'whsec_e2e_c2lnbmluZy1zZWNyZXQtdmFsdWU9PQ';
export const CSRF = 'csrf_e2e_Zm9vYmFyYmF6';
export const ORG = 'org_1';
export const APP = 'app_1';
export const ENV = 'prod';
export const PREFIX = `/v1/organizations/${ORG}/applications/${APP}/environments/${ENV}`;
export const CREATE_PATH = `${PREFIX}/webhook-endpoints`;
export const rotatePath = (id: string) => `${PREFIX}/webhook-endpoints/${id}/secret/rotate`;
export const reactivatePath = (id: string) => `${PREFIX}/webhook-endpoints/${id}/reactivate`;

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// ---------------------------------------------------------------- temp dirs

const temps: string[] = [];

export function tempDir(label = 'tmp'): string {
  const d = mkdtempSync(join(tmpdir(), `chatctl-e2e-${label}-`));
  temps.push(d);
  return d;
}

/** Call from afterAll in every file. */
export function cleanupTempDirs(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Every regular file below dir, recursively. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...listFiles(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

export function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

// ---------------------------------------------------------------- running

export interface Workspace {
  home: string;
  /** CHATCTL_CONFIG_DIR: does not exist until the CLI creates it. */
  configDir: string;
  /** A scratch directory used as cwd. */
  cwd: string;
}

export function workspace(): Workspace {
  const root = tempDir('ws');
  const home = join(root, 'home');
  const cwd = join(root, 'cwd');
  mkdirSync(home);
  mkdirSync(cwd);
  return { home, cwd, configDir: join(root, 'config') };
}

export interface RunOptions {
  /** Extra variables; `undefined` removes one. Only these CHATCTL_* are set. */
  env?: Record<string, string | undefined>;
  /** stdin contents (default: empty, not a TTY). */
  input?: string;
  ws?: Workspace;
  /** Leave NO_COLOR unset (default: NO_COLOR=1). */
  color?: boolean;
  timeoutMs?: number;
  /**
   * Run bin/chatctl.js as a child process. By default the run is in-process,
   * through the execute seam, with the same argv, environment, cwd and stdin;
   * a process is for what only a process has (the packaged bin's fast paths,
   * signals, pipes, exit timing).
   */
  spawn?: boolean;
  /** In-process only: which standard streams claim to be terminals. */
  tty?: { stdin?: boolean; stdout?: boolean; stderr?: boolean };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
  ws: Workspace;
  timedOut: boolean;
}

export function baseEnv(ws: Workspace, color = false): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${dirname(NODE)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: ws.home,
    CHATCTL_CONFIG_DIR: ws.configDir,
    LANG: 'C.UTF-8',
  };
  if (!color) env.NO_COLOR = '1';
  return env;
}

export function buildEnv(ws: Workspace, extra: Record<string, string | undefined> = {}, color = false) {
  const env: Record<string, string> = baseEnv(ws, color);
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export async function runCli(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const ws = opts.ws ?? workspace();
  const env = buildEnv(ws, opts.env, opts.color);
  if (!opts.spawn) {
    const r = await runInProcess(args, { env, cwd: ws.cwd, input: opts.input, tty: opts.tty, timeoutMs: opts.timeoutMs ?? 20_000 });
    return { ...r, ws };
  }
  const started = Date.now();
  const r = await execa(NODE, [BIN, ...args], {
    cwd: ws.cwd,
    env,
    extendEnv: false,
    reject: false,
    input: opts.input ?? '',
    stripFinalNewline: false,
    timeout: opts.timeoutMs ?? 20_000,
    encoding: 'utf8',
  });
  return {
    exitCode: r.exitCode ?? -1,
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
    durationMs: Date.now() - started,
    ws,
    timedOut: r.timedOut ?? false,
  };
}

/** The environment naming a full scope against a server. */
export function scopeEnv(
  baseUrl: string,
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    CHATCTL_BASE_URL: baseUrl,
    CHATCTL_TOKEN: TOKEN,
    CHATCTL_ORG: ORG,
    CHATCTL_APP: APP,
    CHATCTL_ENV: ENV,
    ...extra,
  };
}

// ---------------------------------------------------------------- bodies

export function endpointRecord(id = 'we_1', extra: Record<string, unknown> = {}) {
  return {
    id,
    name: 'orders hook',
    destinationUrl: 'https://hooks.example.com/in',
    eventTypes: ['chat.message.created.v1'],
    version: 2,
    futureField: { nested: [1, 'two', null] },
    ...extra,
  };
}

export function secretBody(secret: string | null = SECRET, secretAvailable = secret !== null, id = 'we_1') {
  return {
    data: { endpoint: endpointRecord(id), secret, secretAvailable },
    meta: { requestId: 'req_srv_secret_1' },
  };
}

export function mutationBody(id = 'we_1', changed = true) {
  return {
    data: { endpoint: endpointRecord(id, { version: 3 }), changed },
    meta: { requestId: 'req_srv_mut_1', nextCursor: { opaque: 'c1' } },
  };
}

export function errorBody(code: string, message = `server says ${code}`, details: Record<string, unknown> = { hint: 'h' }) {
  return { error: { code, message, requestId: `req_err_${code}`, details } };
}

// ---------------------------------------------------------------- parsing

export interface JsonErrorLine {
  error: { code: string; message: string; requestId: string | null; status: number | null; details: unknown };
  exitCode: number;
  /** create and rotate, when the change may have been applied. */
  idempotencyKey?: string;
}

/**
 * The --json error contract: stderr is exactly one line of JSON with the
 * fields {error:{code,message,requestId,status,details},exitCode}.
 * Throws (failing the test) if not.
 */
export function parseErrorLine(stderr: string): JsonErrorLine {
  const text = stderr.endsWith('\n') ? stderr.slice(0, -1) : stderr;
  if (text.length === 0) throw new Error('stderr is empty; expected one JSON error line');
  if (text.includes('\n')) throw new Error(`stderr is more than one line:\n${stderr}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`stderr is not JSON:\n${stderr}`);
  }
  const obj = parsed as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  if (keys.join(',') !== 'error,exitCode' && keys.join(',') !== 'error,exitCode,idempotencyKey') throw new Error(`top-level keys are ${keys.join(',')}`);
  if ('idempotencyKey' in obj && typeof obj.idempotencyKey !== 'string') throw new Error('idempotencyKey is not a string');
  const err = obj.error as Record<string, unknown>;
  if (typeof err !== 'object' || err === null) throw new Error('error is not an object');
  const ek = Object.keys(err).sort();
  if (ek.join(',') !== 'code,details,message,requestId,status')
    throw new Error(`error keys are ${ek.join(',')}`);
  if (typeof err.code !== 'string' || typeof err.message !== 'string')
    throw new Error('error.code/message are not strings');
  if (typeof obj.exitCode !== 'number') throw new Error('exitCode is not a number');
  return parsed as JsonErrorLine;
}

/** stdout holds exactly one JSON document (a trailing newline allowed). */
export function parseStdoutJson(stdout: string): unknown {
  return JSON.parse(stdout);
}

// ---------------------------------------------------------------- contract §7

const AUTH = ['authentication_failed', 'authentication_required', 'reauthentication_required'];
const STATE_8 = [
  'conflict',
  'idempotency_conflict',
  'invitation_expired',
  'attachment_upload_incomplete',
  'attachment_not_ready',
  'data_job_not_cancelable',
  'data_job_not_ready',
  'webhook_delivery_not_replayable',
];
const RULES_9 = [
  'validation_failed',
  'webhook_destination_rejected',
  'message_moderation_rejected',
  'message_reaction_type_not_allowed',
];

/** Contract section 7, written independently of the CLI. null = no row names it. */
export function exitCodeForApiCode(code: string): number | null {
  if (code === 'internal_error') return 1;
  if (AUTH.includes(code)) return 4;
  if (code === 'permission_denied') return 5;
  if (code === 'resource_not_found' || code === 'target_account_unavailable') return 6;
  if (code.endsWith('_version_conflict')) return 7;
  if (STATE_8.includes(code) || code.endsWith('_conflict')) return 8;
  if (RULES_9.includes(code)) return 9;
  if (code.endsWith('_limit_reached') || code === 'data_job_limit_exceeded') return 10;
  if (code === 'rate_limit_exceeded') return 11;
  if (code === 'service_unavailable') return 12;
  return null;
}

/** Contract section 7, fallback for bodies that are not a PublicErrorResponseDto. */
export function exitCodeForStatus(status: number): number {
  switch (status) {
    case 400:
    case 422:
      return 9;
    case 401:
      return 4;
    case 403:
      return 5;
    case 404:
      return 6;
    case 409:
      return 8;
    case 429:
      return 11;
    case 503:
      return 12;
    default:
      return 1;
  }
}

/** Case-insensitive header lookup on a plain object. */
export function headerOf(headers: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : headers[key];
}
