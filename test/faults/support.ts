// Shared by test/faults and test/fuzz: run the real bin/chatctl.js as a child
// process with a clean environment, and script servers on 127.0.0.1.
// Self-contained on purpose (no dependency on other helpers being edited).
import { execa, type ResultPromise } from 'execa';
import { runInProcess } from '../support/in-process.js';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'chatctl.js');
export const NODE = process.execPath;

/** Long and distinctive: any occurrence on stderr is a leak. */
export const TOKEN = 'tok_FAULTS_7f3a9c2e5b8d4f1a6c0e9b7d3f5a2c8e_do_not_leak';
export const SECRET = 'whsec_FAULTS_Zm9vYmFyLXNpZ25pbmctc2VjcmV0LXZhbHVlLTQy';
export const CSRF = 'csrf_FAULTS_b3b2c1d0e9f8';
export const ORG = 'org_1';
export const APP = 'app_1';
export const ENVKEY = 'prod';
export const E0 = 'chat.message.created.v1';

export const CREATE = ['webhooks', 'create', '--name', 'n', '--url', 'https://hooks.example.com/in', '--event', E0];
export const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap'];
export const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '4'];

export const ALLOWED_EXIT = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 130, 143]);

// ------------------------------------------------------------------ temp dirs

const temps: string[] = [];

export function tempDir(label = 'tmp'): string {
  const d = mkdtempSync(join(tmpdir(), `chatctl-faults-${label}-`));
  temps.push(d);
  return d;
}

export function cleanupTempDirs(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

export interface Workspace {
  root: string;
  home: string;
  cwd: string;
  /** CHATCTL_CONFIG_DIR; not created until the CLI creates it. */
  configDir: string;
}

export function workspace(): Workspace {
  const root = tempDir('ws');
  const home = join(root, 'home');
  const cwd = join(root, 'cwd');
  mkdirSync(home);
  mkdirSync(cwd);
  return { root, home, cwd, configDir: join(root, 'config') };
}

export const modeOf = (p: string) => statSync(p).mode & 0o777;

export function listAll(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

// ------------------------------------------------------------------ running

/** PATH, HOME, CHATCTL_CONFIG_DIR, NO_COLOR, LANG and the extras: nothing inherited. */
export function cleanEnv(ws: Workspace, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${dirname(NODE)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: ws.home,
    CHATCTL_CONFIG_DIR: ws.configDir,
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
  };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export function scopeEnv(baseUrl: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    CHATCTL_BASE_URL: baseUrl,
    CHATCTL_TOKEN: TOKEN,
    CHATCTL_ORG: ORG,
    CHATCTL_APP: APP,
    CHATCTL_ENV: ENVKEY,
    CHATCTL_CSRF_TOKEN: CSRF,
    ...extra,
  };
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  ws?: Workspace;
  input?: string;
  timeoutMs?: number;
  /** Run bin/chatctl.js as a child process instead of in-process through execute(). */
  spawn?: boolean;
}

export interface RunResult {
  exitCode: number;
  signal: string | undefined;
  stdout: string;
  stderr: string;
  durationMs: number;
  ws: Workspace;
  timedOut: boolean;
}

const MISSING_BUILD = /ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND|Cannot find module .*dist/;

/** Someone else's rebuild removes dist/ for a moment: wait for it to come back. */
export async function waitForDist(maxMs = 30_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  const built = () =>
    existsSync(join(ROOT, 'dist', 'fast.json')) && (existsSync(join(ROOT, 'dist', 'main.js')) || existsSync(join(ROOT, 'dist', 'main.cjs')));
  while (!built()) {
    if (Date.now() > deadline) throw new Error('dist/ is missing: run npm run build');
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function runCli(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const ws = opts.ws ?? workspace();
  if (!opts.spawn) {
    const r = await runInProcess(args, { env: cleanEnv(ws, opts.env), cwd: ws.cwd, input: opts.input, timeoutMs: opts.timeoutMs ?? 20_000 });
    return { ...r, signal: undefined, ws };
  }
  for (let tries = 0; ; tries++) {
    await waitForDist();
    const started = Date.now();
    const r = await execa(NODE, [BIN, ...args], {
      cwd: ws.cwd,
      env: cleanEnv(ws, opts.env),
      extendEnv: false,
      reject: false,
      input: opts.input ?? '',
      stripFinalNewline: false,
      timeout: opts.timeoutMs ?? 20_000,
      encoding: 'utf8',
    });
    const result: RunResult = {
      exitCode: r.exitCode ?? -1,
      signal: r.signal ?? undefined,
      stdout: String(r.stdout ?? ''),
      stderr: String(r.stderr ?? ''),
      durationMs: Date.now() - started,
      ws,
      timedOut: r.timedOut ?? false,
    };
    // A module-load failure happens before anything is sent: safe to re-run.
    if (MISSING_BUILD.test(result.stderr) && tries < 5) {
      await new Promise((res) => setTimeout(res, 1000));
      continue;
    }
    return result;
  }
}

/** A child we can signal: stdout/stderr collected, stdin closed. */
export function spawnCli(args: string[], opts: RunOptions = {}): { child: ResultPromise; ws: Workspace } {
  const ws = opts.ws ?? workspace();
  const child = execa(NODE, [BIN, ...args], {
    cwd: ws.cwd,
    env: cleanEnv(ws, opts.env),
    extendEnv: false,
    reject: false,
    input: opts.input ?? '',
    stripFinalNewline: false,
    timeout: opts.timeoutMs ?? 20_000,
    encoding: 'utf8',
  });
  return { child, ws };
}

// ------------------------------------------------------------------ checking

export interface JsonErrorLine {
  error: { code: string; message: string; requestId: string | null; status: number | null; details: unknown };
  exitCode: number;
  /** create and rotate, when the change may have been applied. */
  idempotencyKey?: string;
}

/** stderr must be exactly one JSON line with the contract's fields. */
export function parseErrorLine(stderr: string): JsonErrorLine {
  const text = stderr.endsWith('\n') ? stderr.slice(0, -1) : stderr;
  if (text === '') throw new Error('stderr is empty; expected one JSON error line');
  if (text.includes('\n')) throw new Error(`stderr is more than one line:\n${stderr}`);
  let parsed: JsonErrorLine;
  try {
    parsed = JSON.parse(text) as JsonErrorLine;
  } catch {
    throw new Error(`stderr is not JSON:\n${stderr}`);
  }
  const keys = Object.keys(parsed).sort().join(',');
  if (keys !== 'error,exitCode' && keys !== 'error,exitCode,idempotencyKey') throw new Error(`top-level keys are ${keys}: ${stderr}`);
  if ('idempotencyKey' in parsed && typeof parsed.idempotencyKey !== 'string') throw new Error(`idempotencyKey is not a string: ${stderr}`);
  const ek = Object.keys(parsed.error ?? {}).sort().join(',');
  if (ek !== 'code,details,message,requestId,status') throw new Error(`error keys are ${ek}: ${stderr}`);
  if (typeof parsed.error.code !== 'string' || typeof parsed.error.message !== 'string') throw new Error(`bad error line: ${stderr}`);
  return parsed;
}

const STACK_PATTERNS: RegExp[] = [
  /^\s+at (?:.+ \()?(?:file:\/\/|node:|\/|<anonymous>|native).*\)?$/m, // V8 frames
  /node:internal/,
  /^(?:Uncaught )?(?:[A-Z][A-Za-z]*)?Error(?: \[[A-Z_]+\])?: /m, // "Error: …" / "TypeError: …" at a line start
  /^file:\/\/\/.*:\d+$/m, // the source line node prints above an uncaught error
  /^Node\.js v\d+/m,
  /\bEPIPE\b/,
  /UnhandledPromiseRejection|unhandled 'error' event/i,
];

/** The first stack-trace-like fragment in text, if any. */
export function stackTrace(text: string): string | undefined {
  for (const p of STACK_PATTERNS) {
    const m = p.exec(text);
    if (m) return m[0];
  }
  return undefined;
}

/** Values that must never be on stderr. */
export function leaks(stderr: string, values: string[]): string[] {
  return values.filter((v) => v.length > 0 && stderr.includes(v));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor(cond: () => boolean, maxMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// ------------------------------------------------------------------ bodies

export function endpointRecord(id = 'we_1', extra: Record<string, unknown> = {}) {
  return { id, name: 'orders hook', destinationUrl: 'https://hooks.example.com/in', eventTypes: [E0], version: 2, ...extra };
}

export function secretBody(secret: string | null = SECRET, extra: Record<string, unknown> = {}) {
  return { data: { endpoint: endpointRecord('we_1', extra), secret, secretAvailable: secret !== null }, meta: { requestId: 'req_srv_1' } };
}

export function mutationBody() {
  return { data: { endpoint: endpointRecord('we_1', { version: 5 }), changed: true }, meta: { requestId: 'req_srv_2' } };
}

export function errorBody(code: string, message = `server says ${code}`, details: Record<string, unknown> = {}) {
  return { error: { code, message, requestId: `req_err_${code}`, details } };
}

// ------------------------------------------------------------------ servers

export interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type ScriptHandler = (req: http.IncomingMessage, res: http.ServerResponse, rec: Recorded, index: number) => unknown;

/**
 * An HTTP(S) server on 127.0.0.1 whose every answer is written by the test
 * (raw access to the response and socket). Records each request.
 */
export class ScriptServer {
  readonly requests: Recorded[] = [];
  private server!: http.Server;
  private sockets = new Set<net.Socket>();
  port = 0;
  handler: ScriptHandler = (_q, res) => {
    res.writeHead(599).end();
  };

  constructor(private readonly tls?: { key: string | Buffer; cert: string | Buffer }) {}

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get hits(): number {
    return this.requests.length;
  }

  reset(handler?: ScriptHandler): void {
    this.requests.length = 0;
    if (handler) this.handler = handler;
  }

  async start(): Promise<this> {
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const at = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rec: Recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at };
        const index = this.requests.length;
        this.requests.push(rec);
        Promise.resolve(this.handler(req, res, rec, index)).catch(() => res.destroy());
      });
    };
    this.server = this.tls ? https.createServer({ key: this.tls.key, cert: this.tls.cert }, onRequest) : http.createServer(onRequest);
    this.server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    if (this.tls) {
      this.server.on('secureConnection', (s: net.Socket) => {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      });
    }
    this.server.on('clientError', (_e, s) => s.destroy());
    this.server.keepAliveTimeout = 500;
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** Drop every open connection (a hung answer, say) without stopping. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

export const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
};

/** A port on 127.0.0.1 with nothing listening. */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

// ------------------------------------------------------------------ proxy

export interface ProxyRecord {
  kind: 'connect' | 'forward';
  target: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A forward proxy on 127.0.0.1: CONNECT tunnels (for https, and for http when
 * the client tunnels it too) and plain-HTTP forwarding of absolute-URI
 * requests. Records what it carries; refuses any target off loopback.
 * `aliases` are host names it resolves to 127.0.0.1 itself: chatctl never
 * proxies loopback, so a test reaches a local server through the proxy by a
 * name only the proxy knows (a reserved .test name that no DNS answers).
 */
export class ConnectProxy {
  readonly records: ProxyRecord[] = [];
  private server!: http.Server;
  private sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly aliases: string[] = []) {}

  private local(host: string): boolean {
    return host === '127.0.0.1' || host === 'localhost' || this.aliases.includes(host);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  reset(): void {
    this.records.length = 0;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let target: URL;
      try {
        target = new URL(req.url ?? '');
      } catch {
        res.writeHead(400).end();
        return;
      }
      this.records.push({ kind: 'forward', target: req.url ?? '', headers: req.headers });
      if (!this.local(target.hostname)) {
        res.writeHead(403).end();
        return;
      }
      const headers = { ...req.headers };
      delete headers['proxy-connection'];
      const up = http.request(
        { host: '127.0.0.1', port: Number(target.port || 80), path: target.pathname + target.search, method: req.method, headers, agent: false },
        (ur) => {
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          ur.pipe(res);
          ur.on('error', () => res.destroy());
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    this.server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      const target = req.url ?? '';
      this.records.push({ kind: 'connect', target, headers: req.headers });
      const m = /^([^:]+):(\d+)$/.exec(target);
      if (!m || !this.local(m[1]!)) {
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      const up = net.connect(Number(m[2]), '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) up.write(head);
        up.pipe(client);
        client.pipe(up);
      });
      this.sockets.add(up);
      up.on('close', () => this.sockets.delete(up));
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    this.server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
