// --query EXPR: in-process runs (execute) against the in-process sandbox on
// 127.0.0.1, which counts every request it receives; and the pure output
// functions with a compiled expression.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRunner, endpointBody, sandbox } from '../support/sandbox.js';
import { cleanupTempDirs, workspace } from '../support/run.js';
import { parseErrorLine } from '../support/json.js';
import { compileQuery } from '../../src/run/query.js';
import { jsonDocumentText, jsonLineText } from '../../src/output/json.js';

afterEach(cleanupTempDirs);

async function setUp() {
  const requests: string[] = [];
  const s = await sandbox({ onRequest: (r) => requests.push(`${r.method} ${r.path}`) });
  const ws = workspace();
  const run = cliRunner(s.sb, ws.cwd, ws.configDir);
  const create = (n: number, ...args: string[]) => run(['webhooks', 'create', '--name', `hook ${n}`, '--url', `https://example.com/hooks/${n}`, '--event', 'chat.message.created.v1', ...args]);
  return { s, requests, ws, run, create };
}

describe('--query', () => {
  it('create --query data.endpoint.id prints the id bare, and the secret goes to its file', async () => {
    const { ws, requests, create } = await setUp();
    const r = await create(1, '--secret-file', 'hook.whsec', '--query', 'data.endpoint.id');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^we_[a-z0-9]+\n$/);
    expect(requests).toEqual([expect.stringMatching(/^POST \/v1\/.*\/webhook-endpoints$/)]);
    expect(readFileSync(join(ws.cwd, 'hook.whsec'), 'utf8')).toMatch(/^whsec_/);
  });

  it('anything but a string is printed as JSON on one line', async () => {
    const { create } = await setUp();
    const r = await create(1, '--secret-to', 'file:a.whsec', '--query', '{id: data.endpoint.id, events: data.endpoint.eventTypes, delivered: length(data.secretDelivery)}');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')).toHaveLength(2);
    expect(JSON.parse(r.stdout)).toEqual({ id: expect.stringMatching(/^we_/), events: ['chat.message.created.v1'], delivered: 1 });
  });

  it('an invalid expression is exit 2 as a JSON error on stderr, and nothing is sent or kept', async () => {
    const { requests, ws, create, run } = await setUp();
    for (const expression of ['data.[', 'data.endpoint.id |', 'nosuch(data)']) {
      const r = await create(1, '--secret-file', 'x.whsec', '--query', expression);
      expect(r.exitCode).toBe(2);
      expect(r.stdout).toBe('');
      const e = parseErrorLine(r.stderr);
      expect(e.error.code).toBe('usage_error');
      expect(e.error.message).toContain(`invalid --query ${JSON.stringify(expression)}`);
    }
    // Checked before the flags of the command are acted on: reactivate too sends nothing.
    expect((await run(['webhooks', 'reactivate', 'we_1', '--expected-version', '1', '--query', '['])).exitCode).toBe(2);
    expect(requests).toEqual([]);
    expect(existsSync(join(ws.configDir, 'recovered')) ? readdirSync(join(ws.configDir, 'recovered')) : []).toEqual([]);
    expect(existsSync(join(ws.cwd, 'x.whsec'))).toBe(false);
  });

  it('never prints the secret: without a destination for it the command refuses before sending', async () => {
    const { requests, create } = await setUp();
    for (const expression of ['data.secret', 'data', '@']) {
      const r = await create(1, '--query', expression);
      expect(r.exitCode).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toMatch(/whsec_/);
      expect(parseErrorLine(r.stderr).error.message).toBe('--query prints part of the JSON output, which is no place for the signing secret');
    }
    // --secret-to stdout is not a way round it: stdout holds the secret alone, never with JSON.
    expect((await create(1, '--secret-to', 'stdout', '--query', 'data.secret')).exitCode).toBe(2);
    expect(requests).toEqual([]);
  });

  it('selecting the secret with a destination given prints null: the document --query reads has it withheld', async () => {
    const { ws, create } = await setUp();
    const r = await create(2, '--secret-file', 'hook.whsec', '--query', 'data.secret');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('null\n');
    const secret = readFileSync(join(ws.cwd, 'hook.whsec'), 'utf8');
    const whole = await create(3, '--secret-file', 'other.whsec', '--query', '@');
    expect(whole.exitCode).toBe(0);
    expect(whole.stdout).not.toContain('whsec_');
    expect(JSON.parse(whole.stdout).data.secretDelivery).toEqual([{ to: `file:${join(ws.cwd, 'other.whsec')}`, fingerprint: expect.stringMatching(/^sha256:/) }]);
    expect(r.stdout + whole.stdout).not.toContain(secret);
  });

  it('applies to every command with --json; a field that is not there prints null', async () => {
    const { run } = await setUp();
    const version = await run(['version', '--query', 'version']);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
    const missing = await run(['exit-codes', '--query', 'nothing.here']);
    expect(missing.exitCode).toBe(0);
    expect(missing.stdout).toBe('null\n');
    const codes = await run(['exit-codes', '--query', 'length(exitCodes)']);
    expect(Number(codes.stdout)).toBeGreaterThan(10);
    // --query implies --json: errors are the JSON line on stderr.
    const unknownProfile = await run(['--profile', 'nope', 'profile', 'show', '--query', 'name']);
    expect(unknownProfile.exitCode).not.toBe(0);
    expect(unknownProfile.stdout).toBe('');
    expect(parseErrorLine(unknownProfile.stderr).exitCode).toBe(unknownProfile.exitCode);
    // A group without its command: the usage error alone, no help after it.
    const bare = await run(['webhooks', '--query', 'x']);
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr.trim().split('\n')).toHaveLength(1);
    expect(parseErrorLine(bare.stderr).error.code).toBe('usage_error');
  });

  it('rotate --from: each result line queried by itself, a null result left out; the secrets in their files', async () => {
    const { s, ws, run } = await setUp();
    const ids: string[] = [];
    for (const n of [1, 2]) ids.push((await s.create(endpointBody(n))).body.data.endpoint.id as string);
    writeFileSync(
      join(ws.cwd, 'fleet.ndjson'),
      [...ids.map((endpointId) => JSON.stringify({ endpointId, expectedVersion: 1 })), JSON.stringify({ endpointId: 'we_gone', expectedVersion: 1 })].join('\n') + '\n',
    );
    mkdirSync(join(ws.cwd, 'secrets'));
    const fleet = (...q: string[]) => run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'file:secrets/{id}.whsec', '--force', ...q]);
    const r = await fleet('--query', 'ok && endpointId || null');
    expect(r.exitCode).toBe(14); // we_gone: not found
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual([...ids].sort());
    for (const id of ids) expect(readFileSync(join(ws.cwd, 'secrets', `${id}.whsec`), 'utf8')).toMatch(/^whsec_/);
    // Again: every line is stale now (7) or gone (6); --query summary prints the summary line alone.
    const summary = await fleet('--query', 'summary');
    expect(JSON.parse(summary.stdout)).toEqual({ ok: 0, failed: 3, skipped: 0 });
  });

  it('a dry run is queried too', async () => {
    const { requests, run } = await setUp();
    const r = await run(['--dry-run', 'webhooks', 'rotate', 'we_1', '--expected-version', '1', '--mode', 'overlap', '--query', 'request.method']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('POST\n');
    expect(requests).toEqual([]);
  });
});

describe('the output of a query', () => {
  const io = (expression: string) => ({ query: compileQuery(expression), stdout: { isTTY: true } });

  it('a document: a string bare with its terminal controls escaped, anything else one line of JSON, null as null', () => {
    expect(jsonDocumentText(io('a'), { a: 'plain' })).toBe('plain\n');
    expect(jsonDocumentText(io('a'), { a: 'bad\u001b]0;title\u0007' })).toBe('bad\\e]0;title\\x07\n');
    expect(jsonDocumentText(io('a'), { a: { b: [1, 2] } })).toBe('{"b":[1,2]}\n');
    expect(jsonDocumentText(io('a'), {})).toBe('null\n');
    expect(jsonDocumentText(io('a'), { a: false })).toBe('false\n');
    // Without --query: the document as before, indented on a terminal.
    expect(jsonDocumentText({ stdout: { isTTY: true } }, { a: 1 })).toBe('{\n  "a": 1\n}\n');
  });

  it('a stream of lines (rotate --from, listen): each line queried by itself, a null result left out', () => {
    const lines = [{ endpointId: 'we_1', exitCode: 0 }, { endpointId: 'we_2', exitCode: 7 }, { summary: { ok: 1, failed: 1, skipped: 0 } }];
    expect(lines.map((l) => jsonLineText(io('endpointId'), l)).join('')).toBe('we_1\nwe_2\n');
    expect(lines.map((l) => jsonLineText(io('summary.failed'), l)).join('')).toBe('1\n');
    expect(lines.map((l) => jsonLineText({}, l)).join('')).toBe(lines.map((l) => JSON.stringify(l) + '\n').join(''));
  });

  it('an expression that fails on the document (a function given the wrong type) says so', () => {
    expect(() => jsonDocumentText(io('abs(a)'), { a: 'x' })).toThrow(/--query "abs\(a\)" could not be applied to the output: .*abs\(\)/);
  });
});
