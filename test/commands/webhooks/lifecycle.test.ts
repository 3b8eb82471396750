// Issue 3, deliverable 7: the CLI's end-to-end lifecycle against the real
// sandbox. One `chatctl sandbox` child process for the whole file; every step
// runs the real bin/chatctl.js as a child process with a clean environment.
// Tests in this file run in order and share the sandbox's state.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseErrorLine } from '../../support/json.js';
import { fileMode, listFiles } from '../../support/run.js';
import { cliRunner, control, makeTempRoot, scopePath, startSandbox, type CliResult, type EndpointRecord, type Sandbox } from '../../support/sandbox.js';

const EVENT = 'chat.message.created.v1';
const URL_A = 'https://hooks.example.com/a';
const SECRET_SHAPE = /^whsec_[A-Za-z0-9+/]{43}=$/;

let tmp: ReturnType<typeof makeTempRoot>;
let sbx: Sandbox;
let run: ReturnType<typeof cliRunner>;
let ctl: ReturnType<typeof control>;
let configDir: string;
let secretsDir: string;
let fileNo = 0;

beforeAll(async () => {
  tmp = makeTempRoot();
  const home = tmp.dir('home');
  configDir = join(tmp.root, 'config'); // created by the CLI if it needs it
  secretsDir = tmp.dir('secrets');
  sbx = await startSandbox(['--port', '0', '--json', '--endpoint-limit', '3'], home, join(tmp.root, 'sandbox-config'));
  run = cliRunner(sbx.info, home, configDir);
  ctl = control(sbx.info);
});

afterAll(async () => {
  try {
    if (sbx) {
      const { exitCode, signal, stdout } = await sbx.stop();
      expect({ exitCode, signal }, `sandbox stderr:\n${sbx.stderr()}`).toEqual({ exitCode: 0, signal: undefined });
      // --json: the one JSON line and nothing else on stdout.
      expect(stdout).toBe(JSON.stringify(sbx.info) + '\n');
    }
  } finally {
    tmp?.cleanup();
  }
});

// ------------------------------------------------------------------ helpers

const newSecretPath = () => join(secretsDir, `secret-${++fileNo}`);

const show = (r: CliResult) => `exit ${r.exitCode}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** exit 0, nothing on stderr, exactly one JSON document on stdout. */
function succeeded(r: CliResult): any {
  expect(r.exitCode, show(r)).toBe(0);
  expect(r.stderr, show(r)).toBe('');
  return JSON.parse(r.stdout);
}

/** The given exit code and API/CLI error code, nothing on stdout, one JSON error line on stderr. */
function failed(r: CliResult, exitCode: number, code: string, status: number | null) {
  expect(r.exitCode, show(r)).toBe(exitCode);
  expect(r.stdout, show(r)).toBe('');
  const line = parseErrorLine(r.stderr);
  expect(line.exitCode).toBe(exitCode);
  expect(line.error.code).toBe(code);
  expect(line.error.status).toBe(status);
  return line;
}

function readSecret(path: string): string {
  expect(fileMode(path)).toBe(0o600);
  const text = readFileSync(path, 'utf8');
  expect(text.startsWith('whsec_')).toBe(true);
  const secret = text.replace(/\n$/, '');
  expect(secret).toMatch(SECRET_SHAPE);
  return secret;
}

async function serverRecord(id: string) {
  const found = (await ctl.endpoints()).find((e) => e.id === id);
  if (!found) throw new Error(`the sandbox has no endpoint ${id}`);
  return found;
}

const createArgs = (name: string, url: string, secretFile: string, key?: string) => [
  'webhooks',
  'create',
  '--json',
  '--name',
  name,
  '--url',
  url,
  '--event',
  EVENT,
  ...(key === undefined ? [] : ['--idempotency-key', key]),
  '--secret-file',
  secretFile,
];

// ------------------------------------------------------------------ lifecycle

describe('lifecycle: create → replay → rotate → reactivate', () => {
  let id = '';
  let secret1 = '';
  let secret2 = '';
  let secret3 = '';
  let updatedAtAfterImmediate = '';

  it('1. create writes a 0600 whsec_ secret file; the endpoint is active at version 1', async () => {
    const file = newSecretPath();
    const body = succeeded(await run(createArgs('orders', URL_A, file, 'K1')));
    const endpoint = body.data.endpoint as EndpointRecord;
    expect(endpoint).toMatchObject({
      name: 'orders',
      destinationUrl: URL_A,
      eventTypes: [EVENT],
      status: 'active',
      version: 1,
      previousSecretExpiresAt: null,
    });
    expect(endpoint.id).toMatch(/^we_[0-9a-z]{20}$/);
    expect(typeof body.meta.requestId).toBe('string');
    id = endpoint.id;

    secret1 = readSecret(file);
    expect(JSON.stringify(body)).not.toContain(secret1); // --secret-file: not printed
    // The file holds the secret the server actually issued.
    expect((await serverRecord(id)).validSecrets).toEqual([secret1]);
    // The CLI sent our key.
    const sent = (await ctl.requests()).filter((q) => q.requestId === body.meta.requestId);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers['idempotency-key']).toBe('K1');
  });

  it('2. the same create with the same key and body is a replay: exit 13, no file, nothing applied twice', async () => {
    const file = newSecretPath();
    const r = await run(createArgs('orders', URL_A, file, 'K1'));
    expect(r.exitCode, show(r)).toBe(13);
    const line = parseErrorLine(r.stderr);
    expect(line).toMatchObject({ exitCode: 13, error: { code: 'secret_not_delivered', status: null } });
    // stdout: the replayed envelope, secret withheld, same endpoint.
    const body = JSON.parse(r.stdout);
    expect(body.data).toMatchObject({ secret: null, secretAvailable: false, endpoint: { id, version: 1 } });
    expect(existsSync(file)).toBe(false);
    expect(listFiles(join(configDir, 'recovered'))).toEqual([]);
    const all = await ctl.endpoints();
    expect(all.filter((e) => e.destinationUrl === URL_A)).toHaveLength(1);
    expect(all.find((e) => e.id === id)).toMatchObject({ version: 1, validSecrets: [secret1] });
  });

  it('3. rotate --mode overlap --expected-version 1: a new secret, version 2, the old one still valid', async () => {
    const file = newSecretPath();
    const body = succeeded(await run(['webhooks', 'rotate', id, '--json', '--mode', 'overlap', '--expected-version', '1', '--secret-file', file]));
    const endpoint = body.data.endpoint as EndpointRecord;
    expect(endpoint).toMatchObject({ id, version: 2, status: 'active' });
    expect(endpoint.previousSecretExpiresAt).not.toBeNull();
    const window = Date.parse(endpoint.previousSecretExpiresAt!) - Date.parse(endpoint.updatedAt);
    expect(window).toBe(24 * 3600 * 1000);
    secret2 = readSecret(file);
    expect(secret2).not.toBe(secret1);
    expect(JSON.stringify(body)).not.toContain(secret2);
    expect((await serverRecord(id)).validSecrets).toEqual([secret2, secret1]);
  });

  it('4. a second overlap while one runs → exit 8 webhook_secret_rotation_conflict, nothing changes', async () => {
    const file = newSecretPath();
    const r = await run(['webhooks', 'rotate', id, '--json', '--mode', 'overlap', '--expected-version', '2', '--secret-file', file]);
    failed(r, 8, 'webhook_secret_rotation_conflict', 409);
    expect(existsSync(file)).toBe(false);
    expect(await serverRecord(id)).toMatchObject({ version: 2, validSecrets: [secret2, secret1] });
  });

  it('5. a stale --expected-version 1 → exit 7 webhook_endpoint_version_conflict, nothing changes', async () => {
    const file = newSecretPath();
    // immediate is always allowed, so the version is the only reason to refuse
    const r = await run(['webhooks', 'rotate', id, '--json', '--mode', 'immediate', '--yes', '--expected-version', '1', '--secret-file', file]);
    const line = failed(r, 7, 'webhook_endpoint_version_conflict', 409);
    expect(line.error.details).toMatchObject({ currentVersion: 2 });
    expect(existsSync(file)).toBe(false);
    expect(await serverRecord(id)).toMatchObject({ version: 2, validSecrets: [secret2, secret1] });
  });

  it('6. rotate --mode immediate --yes --expected-version 2: version 3, every older secret revoked', async () => {
    const file = newSecretPath();
    const body = succeeded(await run(['webhooks', 'rotate', id, '--json', '--mode', 'immediate', '--yes', '--expected-version', '2', '--secret-file', file]));
    expect(body.data.endpoint).toMatchObject({ id, version: 3, status: 'active', previousSecretExpiresAt: null });
    secret3 = readSecret(file);
    expect(new Set([secret1, secret2, secret3]).size).toBe(3);
    expect((await serverRecord(id)).validSecrets).toEqual([secret3]);
    updatedAtAfterImmediate = body.data.endpoint.updatedAt;
  });

  it('7. reactivate an active endpoint: changed false, version and updatedAt unchanged', async () => {
    const body = succeeded(await run(['webhooks', 'reactivate', id, '--json', '--expected-version', '3']));
    expect(body.data.changed).toBe(false);
    expect(body.data.endpoint).toMatchObject({ id, status: 'active', version: 3, updatedAt: updatedAtAfterImmediate });
    expect(await serverRecord(id)).toMatchObject({ status: 'active', version: 3, validSecrets: [secret3] });
  });

  it('8. deactivate over raw HTTP, then reactivate with the CLI: changed true, version +1', async () => {
    const { baseUrl, token } = sbx.info;
    const res = await fetch(`${baseUrl}${scopePath(sbx.info)}/webhook-endpoints/${encodeURIComponent(id)}/deactivate`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        origin: new URL(baseUrl).origin,
        'x-service-csrf': '1',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ expectedVersion: 3 }),
    });
    const deactivated = (await res.json()) as any;
    expect(res.status, JSON.stringify(deactivated)).toBe(200);
    expect(deactivated.data).toMatchObject({ changed: true, endpoint: { id, status: 'inactive', version: 4 } });

    const body = succeeded(await run(['webhooks', 'reactivate', id, '--json', '--expected-version', '4']));
    expect(body.data.changed).toBe(true);
    expect(body.data.endpoint).toMatchObject({ id, status: 'active', version: 5 });
    expect(await serverRecord(id)).toMatchObject({ status: 'active', version: 5, validSecrets: [secret3] });
  });
});

// ------------------------------------------------------------------ errors

describe('errors against the sandbox', () => {
  const anyEndpoint = async () => {
    const [first] = await ctl.endpoints();
    if (!first) throw new Error('the lifecycle tests created no endpoint');
    return first;
  };

  it('a rejected destination → exit 9 webhook_destination_rejected, no endpoint, no file', async () => {
    const before = (await ctl.endpoints()).length;
    for (const [url, reason] of [
      ['http://hooks.example.com/x', 'not_https'],
      ['https://127.0.0.1/x', 'loopback'],
    ] as const) {
      const file = newSecretPath();
      const line = failed(await run(createArgs('bad', url, file)), 9, 'webhook_destination_rejected', 422);
      expect(line.error.details).toMatchObject({ reason });
      expect(existsSync(file)).toBe(false);
    }
    expect((await ctl.endpoints()).length).toBe(before);
  });

  it('an unknown endpoint id → exit 6 resource_not_found', async () => {
    const missing = 'we_00000000000000000000';
    const line = failed(await run(['webhooks', 'reactivate', missing, '--json', '--expected-version', '1']), 6, 'resource_not_found', 404);
    expect(line.error.details).toMatchObject({ endpointId: missing });
    const file = newSecretPath();
    failed(await run(['webhooks', 'rotate', missing, '--json', '--mode', 'overlap', '--expected-version', '1', '--secret-file', file]), 6, 'resource_not_found', 404);
    expect(existsSync(file)).toBe(false);
  });

  it('a wrong token → exit 4, and the token is echoed nowhere', async () => {
    const ep = await anyEndpoint();
    await ctl.clearRequests();
    const r = await run(['webhooks', 'reactivate', ep.id, '--json', '--expected-version', String(ep.version)], {
      CHATCTL_TOKEN: 'nope',
    });
    failed(r, 4, 'authentication_failed', 401);
    expect(r.stdout + r.stderr).not.toContain('nope');
    // It was the server that refused the token the CLI really sent.
    const sent = await ctl.requests();
    expect(sent.map((q) => [q.headers.authorization, q.status])).toEqual([['Bearer nope', 401]]);
    expect(await serverRecord(ep.id)).toMatchObject({ version: ep.version, status: ep.status });
  });

  it('the endpoint limit (3) reached → exit 10 webhook_endpoint_limit_reached', async () => {
    let count = (await ctl.endpoints()).length;
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(3);
    for (; count < 3; count++) {
      succeeded(await run(createArgs(`fill ${count}`, `https://hooks.example.com/fill-${count}`, newSecretPath())));
    }
    const file = newSecretPath();
    const line = failed(await run(createArgs('one too many', 'https://hooks.example.com/over', file)), 10, 'webhook_endpoint_limit_reached', 409);
    expect(line.error.details).toMatchObject({ limit: 3 });
    expect(existsSync(file)).toBe(false);
    expect((await ctl.endpoints()).length).toBe(3);
  });

  it('--mode immediate without --yes (no TTY) → exit 2 and nothing is sent', async () => {
    const ep = await anyEndpoint();
    await ctl.clearRequests();
    const file = newSecretPath();
    const r = await run(['webhooks', 'rotate', ep.id, '--json', '--mode', 'immediate', '--expected-version', String(ep.version), '--secret-file', file]);
    const line = failed(r, 2, 'usage_error', null);
    expect(line.error.message).toContain('--yes');
    expect(existsSync(file)).toBe(false);
    expect(await ctl.requests()).toEqual([]);
    expect(await serverRecord(ep.id)).toMatchObject({ version: ep.version, validSecrets: ep.validSecrets });
    // The log does record what is sent (so the empty list above means something).
    succeeded(await run(['webhooks', 'reactivate', ep.id, '--json', '--expected-version', String(ep.version)]));
    expect((await ctl.requests()).length).toBe(1);
  });

  it('two injected 503s, then --max-retries 2 succeeds on the third attempt', async () => {
    const ep = await anyEndpoint();
    await ctl.clearRequests();
    expect(await ctl.faults({ failNext: 2, retryAfter: 0 })).toMatchObject({ failNext: 2, status: 503, retryAfter: 0 });
    try {
      const body = succeeded(await run(['webhooks', 'reactivate', ep.id, '--json', '--max-retries', '2', '--expected-version', String(ep.version)]));
      expect(body.data.endpoint).toMatchObject({ id: ep.id, version: ep.version });
      const sent = await ctl.requests();
      const path = `${scopePath(sbx.info)}/webhook-endpoints/${ep.id}/reactivate`;
      expect(sent.map((q) => [q.method, q.path, q.status])).toEqual([
        ['POST', path, 503],
        ['POST', path, 503],
        ['POST', path, 200],
      ]);
      const ids = sent.map((q) => q.headers['x-request-id']);
      expect(ids.every((v) => typeof v === 'string' && v.length > 0)).toBe(true);
      expect(new Set(ids).size).toBe(3);
      // The success printed is the third attempt's answer.
      expect(body.meta.requestId).toBe(ids[2]);
    } finally {
      await ctl.faults({ failNext: 0, retryAfter: null });
    }
  });
});
