// The pieces of GitHub Actions support, each alone: the ::add-mask:: lines
// for a value (escaped as the runner reads workflow-command data), the
// Scrubber's announcement of each value once, `{id}` in a github-output:
// name, the heredoc append and the tail of an exec: command's output.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Readable, Writable } from 'node:stream';
import { maskCommands } from '../../src/output/json.js';
import { createIO } from '../../src/output/io.js';
import { Scrubber } from '../../src/output/scrub.js';
import { appendGitHubValue, lastBytes, parseSinks, sinksFor } from '../../src/secret/deliver.js';
import { destinationFlags, newSecretHint } from '../../src/secret/custody.js';
import { parseRunnerFile } from '../support/github-runner.js';

const dir = mkdtempSync(join(tmpdir(), 'chatctl-gha-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The runner's reading of a workflow command's data. */
const unescapeData = (s: string) => s.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');

describe('maskCommands', () => {
  test('a plain value: one line', () => {
    expect(maskCommands('whsec_abc123')).toBe('::add-mask::whsec_abc123\n');
  });
  test('%, CR and LF escaped; each line of a multi-line value masked on its own too', () => {
    const value = 'ab%0A%cd\r\nline two\n\nthree';
    const lines = maskCommands(value).split('\n').filter(Boolean);
    for (const l of lines) expect(l).toMatch(/^::add-mask::[^\r\n]+$/);
    const masked = lines.map((l) => unescapeData(l.slice('::add-mask::'.length)));
    expect(masked).toContain(value);
    expect(masked).toEqual(expect.arrayContaining(['ab%0A%cd', 'line two', 'three']));
    // And as a JSON document shows it.
    expect(masked).toContain(JSON.stringify(value).slice(1, -1));
  });
  test('a value JSON escapes (quote, backslash) is masked in that form as well', () => {
    const masked = maskCommands('a"b\\c')
      .split('\n')
      .filter(Boolean)
      .map((l) => unescapeData(l.slice(12)));
    expect(masked).toEqual(['a"b\\c', 'a\\"b\\\\c']);
  });
});

describe('Scrubber announcements', () => {
  test('each secret and the token once, before they are scrubbed; credentials that are not the token are not announced', () => {
    const told: string[] = [];
    const r = new Scrubber((v) => told.push(v));
    r.addToken('tok_0123456789');
    r.addToken('tok_0123456789');
    r.addCredential('csrf-value-long');
    r.addSecret('whsec_one_secret');
    r.addSecret('whsec_one_secret');
    r.retireSecret('whsec_one_secret');
    r.addSecret('whsec_one_secret');
    r.addSecret('e'); // short: not scrubbed from free text, but still masked
    expect(told).toEqual(['tok_0123456789', 'whsec_one_secret', 'e']);
    expect(r.scrub('tok_0123456789 whsec_one_secret')).toBe('[REDACTED] [REDACTED]');
  });
});

describe('github-output: with {id}', () => {
  test('ids are made safe; a name that is still not a name (a leading digit) is refused for that item', () => {
    const env = { GITHUB_OUTPUT: join(dir, 'out'), GITHUB_ENV: join(dir, 'env') };
    const settings = { cwd: dir, env, json: false, stdoutIsTTY: false, force: false, idPlaceholder: true };
    const sinks = parseSinks(['github-output:{id}_SECRET', 'github-env:S_{id}'], settings);
    expect(sinksFor(sinks, 'we-1.a/b', settings).map((s) => s.to)).toEqual(['github-output:we_1_a_b_SECRET', 'github-env:S_we_1_a_b']);
    expect(() => parseSinks(['github-env:S_{id}'], { ...settings, env: { GITHUB_OUTPUT: env.GITHUB_OUTPUT } })).toThrow(/GITHUB_ENV is not set/);
    expect(() => sinksFor(sinks, '9lives', settings)).toThrow(/"9lives_SECRET" is not a valid name/);
  });
});

describe('appendGitHubValue', () => {
  test('a secret holding what looks like a delimiter, and line breaks, reads back whole', () => {
    const file = join(dir, 'append');
    writeFileSync(file, 'A=1\n');
    const secret = 'line1\nghadelimiter_x\nEOF\n%0A<<';
    appendGitHubValue(file, 'S', secret);
    appendGitHubValue(file, 'T', 'second');
    expect(Object.fromEntries(parseRunnerFile(readFileSync(file, 'utf8')))).toEqual({ A: '1', S: secret, T: 'second' });
  });
});

describe('lastBytes', () => {
  test('at most N bytes, starting at a whole character', () => {
    expect(lastBytes('abc', 10)).toBe('abc');
    expect(lastBytes('xé€', 4)).toBe('€');
    expect(lastBytes('xé€', 5)).toBe('é€');
  });
});

describe('newSecretHint', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  test('during an overlap: its end, and --mode immediate', () => {
    const hint = newSecretHint({ endpointId: 'we_1', version: 5, answer: { endpoint: { previousSecretExpiresAt: '2030-01-02T00:00:00.000Z' } }, now });
    expect(hint).toContain('runs until 2030-01-02T00:00:00.000Z');
    expect(hint).toContain("chatctl webhooks rotate 'we_1' --expected-version 5 --mode immediate --yes");
  });
  test('no overlap running (ended, or none): the overlap command alone', () => {
    for (const end of [null, '2029-12-31T00:00:00.000Z']) {
      const hint = newSecretHint({ endpointId: 'we_1', version: 5, answer: { endpoint: { previousSecretExpiresAt: end } }, now });
      expect(hint).toBe("to get a new secret, rotate it: chatctl webhooks rotate 'we_1' --expected-version 5 --mode overlap --secret-to file:PATH");
    }
  });
  test("the job's own destinations as given, {id} replaced where a path or name holds it, --force kept", () => {
    const destination = destinationFlags({ secretTo: ['file:secrets/{id}.whsec', 'exec:vault kv put secret/{id} value=-', 'github-output:S_{id}'], force: true }, 'we_1');
    expect(destination).toBe("--secret-to file:secrets/we_1.whsec --secret-to 'exec:vault kv put secret/{id} value=-' --secret-to github-output:S_we_1 --force");
    expect(newSecretHint({ endpointId: 'we_1', version: 5, answer: { endpoint: { previousSecretExpiresAt: null } }, now, destination })).toBe(
      `to get a new secret, rotate it: chatctl webhooks rotate 'we_1' --expected-version 5 --mode overlap ${destination}`,
    );
    expect(destinationFlags({ secretFile: 'new.whsec' }, 'we_1')).toBe('--secret-file new.whsec');
    expect(destinationFlags({}, 'we_1')).toBeUndefined();
  });
  test('unknown: the overlap command, and immediate as the way out', () => {
    const hint = newSecretHint({ endpointId: undefined, now });
    expect(hint).toContain('chatctl webhooks rotate ENDPOINT_ID --expected-version CURRENT_VERSION --mode overlap');
    expect(hint).toContain('--mode immediate --yes');
  });
});

describe('::add-mask:: never into a file the shell redirected to', () => {
  const sink = (props: { toFile?: boolean; discards?: boolean } = {}) => {
    const chunks: string[] = [];
    return { chunks, stream: Object.assign(new Writable({ write: (c, _e, cb) => (chunks.push(String(c)), cb()) }), props) };
  };
  const stdin = Readable.from([]);

  test('stderr a regular file (2>error.json), stdout the JSON: no mask line anywhere, so the file never holds the secret', () => {
    const out = sink();
    const err = sink({ toFile: true });
    const io = createIO({ stdin, stdout: out.stream, stderr: err.stream }, { env: { GITHUB_ACTIONS: 'true' } });
    io.setOutputMode({ json: true, quiet: true, debug: false, noColor: true });
    io.scrubber.addSecret('whsec_ZmlsZS1yZWRpcmVjdGVkLXNlY3JldA');
    expect(err.chunks.join('')).not.toContain('whsec_');
    expect(out.chunks.join('')).not.toContain('whsec_');
  });

  test('stdout a regular file, stderr the log: the mask goes to stderr; a pipe on both keeps it on stdout', () => {
    const out = sink({ toFile: true });
    const err = sink();
    createIO({ stdin, stdout: out.stream, stderr: err.stream }, { env: { GITHUB_ACTIONS: 'true' } }).scrubber.addSecret('whsec_b3V0LWZpbGU');
    expect(out.chunks.join('')).toBe('');
    expect(err.chunks.join('')).toContain('::add-mask::whsec_b3V0LWZpbGU');
    const out2 = sink();
    createIO({ stdin, stdout: out2.stream, stderr: sink().stream }, { env: { GITHUB_ACTIONS: 'true' } }).scrubber.addSecret('whsec_cGlwZQ');
    expect(out2.chunks.join('')).toContain('::add-mask::whsec_cGlwZQ');
  });
});
