// Issue 5, item 5: random argv for every command (real command words, real
// flags with random values, junk, unicode, `--`) never produces a stack
// trace, an exit code outside the table, a malformed --json error line, or
// the token/CSRF value/secret on stderr (nor credentials on stdout).
// The environment names a scope on a scripted loopback server that answers
// every webhook call, so runs that get through argv parsing reach the wire.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CSRF, PKG_VERSION, TOKEN, mutationBody, secretBody } from '../support/fixtures.js';
import { cleanupTempDirs } from '../support/run.js';
import { RecordingServer, json } from '../support/server.js';
import { CONCURRENCY, describeChild, errCode, printStats, tally, flagBeforeDoubleDash, fuzzParams, fuzzTimeoutMs, runChild, tame, violations } from './harness.js';
import { scaled } from '../support/slowdown.js';

const DEFAULT_CHILDREN = 96;
const SECRET = 'whsec_ARGVFUZZ_c2VjcmV0LWZyb20tdGhlLXNlcnZlcg';
const EVENTS = ['chat.message.created.v1', 'chat.message.updated.v1', 'chat.message.deleted.v1'];

let server: RecordingServer;
beforeAll(async () => {
  server = await new RecordingServer({ keepAliveTimeoutMs: 500 }).start();
  server.reset((q, res, rec) => {
    if (rec.url.endsWith('/reactivate')) return json(res, 200, mutationBody());
    if (rec.url.endsWith('/secret/rotate') || rec.url.endsWith('/webhook-endpoints')) return json(res, rec.url.endsWith('/webhook-endpoints') ? 201 : 200, secretBody(SECRET));
    // Anything else: an error that echoes what it was sent.
    return json(res, 404, {
      error: { code: 'resource_not_found', message: `no ${rec.url} for ${String(q.headers.authorization)} ${String(q.headers['x-service-csrf'])}`, requestId: 'r', details: {} },
    });
  });
});
afterAll(async () => {
  printStats(import.meta.url);
  await server.close();
  cleanupTempDirs();
});

// ------------------------------------------------------------------ arbitraries

// Any code point but a lone surrogate, as fast-check's 'binary' unit gives,
// without the table of all 1.1 million of them that unit builds once per
// process (a second of CPU). Lone surrogates come from the list below.
const anyCodePoint = fc.oneof(fc.integer({ min: 0, max: 0xd7ff }), fc.integer({ min: 0xe000, max: 0x10ffff })).map((c) => String.fromCodePoint(c));

const junk: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
    { weight: 2, arbitrary: fc.string({ unit: anyCodePoint, maxLength: 10 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        '-',
        '--',
        '---',
        '-x',
        '--x',
        '--json=1',
        '--timeout=1',
        '--max-retries=-1',
        '--no-json',
        '-Vh',
        '=',
        '\u202e',
        '%2F',
        'a%2Fb',
        'we 1',
        'we_1/x',
        '😀',
        'é',
        'a\tb',
        'a\nb',
        '\u001b[31m',
        '\u0085',
        '\ud800',
        '1e3',
        '-1',
        '0x10',
        '9007199254740992',
        'NaN',
        'Infinity',
        'null',
        '{}',
        '[]',
        '"',
        "'",
        '\\',
      ),
    },
  )
  .map(tame);

const valueFor: Record<string, fc.Arbitrary<string>> = {
  '--profile': fc.oneof(fc.constantFrom('default', 'prod', 'p-1', 'bad name', ''), junk),
  '--base-url': fc.oneof(
    // Only loopback (or refused before sending): the fuzz never reaches the network.
    fc.constant('SERVER'),
    fc.constantFrom('SERVER/prefix', 'SERVER/', 'SERVER?q=1', 'SERVER#f', 'http://example.com', 'ftp://127.0.0.1/', 'http://user:pw@127.0.0.1/', 'http://[::1', 'https://', ''),
    junk.filter((s) => !s.includes(':')),
  ),
  '--org': fc.oneof(fc.constantFrom('org_1', '.', '..', 'a/b', 'o%2F'), junk),
  '--app': fc.oneof(fc.constantFrom('app_1', '..'), junk),
  '--env': fc.oneof(fc.constantFrom('prod', ''), junk),
  '--max-retries': fc.oneof(fc.constantFrom('0', '1', '4', '100', '101', '-1', '1.5', ''), fc.integer({ min: -5, max: 200 }).map(String), junk),
  '--timeout': fc.oneof(fc.constantFrom('1', '2', '30', '0.5', '3600', '3601', '0', '-1', 'abc', '1e3', ''), junk),
  '--name': fc.oneof(fc.constantFrom('n', 'billing', 'x'.repeat(80), 'x'.repeat(81), ''), fc.string({ unit: 'grapheme', maxLength: 90 }), junk),
  '--url': fc.oneof(fc.constantFrom('https://hooks.example.com/in', 'http://hooks.example.com/in', 'https://h.example/' + 'a'.repeat(2040), 'ftp://x', 'hooks.example.com', '', 'https://'), junk),
  '--event': fc.oneof(fc.constantFrom(...EVENTS, EVENTS.join(','), `${EVENTS[0]},`, ',', 'chat.unknown.v1', ''), junk),
  '--idempotency-key': fc.oneof(fc.constantFrom('k1', 'a'.repeat(255), 'a'.repeat(256), 'key with space', 'ключ', ''), junk),
  '--secret-file': fc.oneof(fc.constantFrom('new.whsec', 'exists.whsec', 'dir', 'missing/x.whsec', '.', '', 'new2.whsec'), junk),
  '--expected-version': fc.oneof(fc.constantFrom('1', '4', '9007199254740991', '9007199254740992', '0', '-1', '1.0', '01', ' 1', '1e3', ''), junk),
  '--mode': fc.oneof(fc.constantFrom('overlap', 'immediate', 'OVERLAP', ''), junk),
  '--origin': fc.oneof(fc.constantFrom('https://o.example', 'x\r\ny: z', '\u0001', ''), junk),
  '--csrf-token': fc.oneof(fc.constantFrom('1', 'tok', 'a\r\nb', ''), junk),
  '--host': fc.oneof(fc.constantFrom('127.0.0.1', '::1', 'localhost', '0.0.0.0', '8.8.8.8', ''), junk),
  '--port': fc.oneof(fc.constantFrom('0', '-1', '65536', '80', 'abc', ''), junk),
  '--token': fc.oneof(fc.constantFrom('sbx_fuzz_token', ''), junk),
  '--endpoint-limit': fc.oneof(fc.constantFrom('0', '1', '-1', 'x'), junk),
  '--rate-limit': fc.oneof(fc.constantFrom('0', '1', '-1', 'x'), junk),
};
const VALUE_FLAGS = Object.keys(valueFor);
const BOOL_FLAGS = ['--json', '--no-input', '--dry-run', '--debug', '--no-color', '--force', '--yes', '-y', '--with-token', '--help', '-h', '--version', '-V'];
const WORDS = [
  'webhooks',
  'webhook',
  'create',
  'rotate',
  'reactivate',
  'profile',
  'list',
  'show',
  'set',
  'use',
  'remove',
  'auth',
  'login',
  'logout',
  'status',
  'completion',
  'bash',
  'zsh',
  'fish',
  'exit-codes',
  'help',
  'sandbox',
  'we_1',
  'prod',
  '--',
];

/** One argv item or a flag with its value (as two items, or as --flag=value). */
const item: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...VALUE_FLAGS).chain((f) => fc.tuple(fc.constant(f), valueFor[f]!, fc.integer({ min: 0, max: 5 })).map(([f, v, n]) => (n === 0 ? [`${f}=${v}`] : [f, v]))) },
  { weight: 3, arbitrary: fc.constantFrom(...BOOL_FLAGS).map((f) => [f]) },
  { weight: 2, arbitrary: fc.constantFrom(...WORDS).map((w) => [w]) },
  { weight: 2, arbitrary: junk.map((j) => [j]) },
);

const CREATE_OK = ['webhooks', 'create', '--name', 'n', '--url', 'https://hooks.example.com/in', '--event', EVENTS[0]!];
const ROTATE_OK = ['webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap'];
const PATHS: string[][] = [
  [],
  ['webhooks'],
  ['webhook'],
  ['webhooks', 'create'],
  CREATE_OK,
  [...CREATE_OK, '--json'],
  [...CREATE_OK, '--secret-file', 'new.whsec'],
  ['webhooks', 'rotate'],
  ['webhook', 'rotate', 'we_1'],
  ROTATE_OK,
  [...ROTATE_OK, '--json'],
  [...ROTATE_OK, '--mode', 'immediate', '--yes', '--json'],
  ['webhooks', 'reactivate', 'we_1'],
  ['webhooks', 'reactivate', 'we_1', '--expected-version', '4'],
  ['profile'],
  ['profile', 'list'],
  ['profile', 'show'],
  ['profile', 'show', 'prod'],
  ['profile', 'set', 'prod'],
  ['profile', 'set', 'prod', '--base-url', 'https://api.example.com', '--org', 'o'],
  ['profile', 'use', 'prod'],
  ['profile', 'remove', 'prod'],
  ['auth'],
  ['auth', 'login'],
  ['auth', 'login', '--with-token'],
  ['auth', 'logout'],
  ['auth', 'status'],
  ['completion'],
  ['completion', 'bash'],
  ['completion', 'zsh'],
  ['completion', 'fish'],
  ['exit-codes'],
  ['help'],
  ['help', 'webhooks', 'create'],
  ['sandbox'],
  ['sandbox', '--port', '0'],
  ['bogus'],
];

interface ArgvCase {
  args: string[];
  stdin: string;
  withScope: boolean;
}

const argvCase: fc.Arbitrary<ArgvCase> = fc
  .record({
    before: fc.array(item, { maxLength: 3 }),
    path: fc.constantFrom(...PATHS),
    after: fc.array(item, { maxLength: 6 }),
    stdin: fc.constantFrom('', `${TOKEN}\n`, 'short\n', '\u0000\u0001'),
    withScope: fc.boolean(),
  })
  .map(({ before, path, after, stdin, withScope }) => ({ args: [...before.flat(), ...path, ...after.flat()], stdin, withScope }));

function materialise(c: ArgvCase): string[] {
  return c.args.map((a) => a.replace(/^SERVER/, server.url).replace(/=SERVER/, `=${server.url}`));
}

async function check(c: ArgvCase): Promise<string | undefined> {
  const args = materialise(c);
  const r = await runChild(args, {
    input: c.stdin,
    env: c.withScope
      ? { CHATCTL_BASE_URL: server.url, CHATCTL_TOKEN: TOKEN, CHATCTL_CSRF_TOKEN: CSRF, CHATCTL_ORG: 'org_1', CHATCTL_APP: 'app_1', CHATCTL_ENV: 'prod' }
      : { CHATCTL_TOKEN: TOKEN, CHATCTL_CSRF_TOKEN: CSRF },
    // `sandbox` serves until stopped; anything else must be long done.
    stopAfterMs: args.includes('sandbox') ? 2000 : scaled(8000),
    prepare: (ws) => {
      writeFileSync(join(ws.cwd, 'exists.whsec'), 'old');
      mkdirSync(join(ws.cwd, 'dir'));
    },
  });
  // `sandbox` serves until stopped: being stopped is its normal end.
  const sandbox = args.includes('sandbox');
  tally(`${args.slice(0, 2).join(' ')} → exit ${String(r.exitCode)} ${errCode(r.stderr)}`);
  const problems = violations(r, { credentials: [TOKEN, CSRF], secrets: [SECRET], mayRunForever: sandbox });
  if (r.stoppedByUs && sandbox && r.exitCode !== 0 && r.exitCode !== 130) problems.push(`sandbox stopped by SIGINT exited ${String(r.exitCode)}`);
  // The version, when printed, is the whole answer (-V wins, as in gh): never followed by an error or other output.
  if (r.stdout.startsWith(`${PKG_VERSION}\n`) && (r.stdout !== `${PKG_VERSION}\n` || r.stderr !== '' || r.exitCode !== 0)) problems.push('printed the version and then something else');
  // A --json webhook success prints exactly one JSON document.
  const end = args.indexOf('--');
  const helpish = ['--help', '--version', 'help', '--dry-run'].some((f) => flagBeforeDoubleDash(args, f)) || (end === -1 ? args : args.slice(0, end)).some((a) => /^-[A-Za-z]*[hV]/.test(a)); // -h, -V, -yV…
  if (r.exitCode === 0 && flagBeforeDoubleDash(args, '--json') && args[0]?.startsWith('webhook') && !helpish) {
    try {
      JSON.parse(r.stdout);
    } catch {
      problems.push('--json success: stdout is not one JSON document');
    }
  }
  return problems.length ? describeChild(r, problems) : undefined;
}

describe('fuzz: argv', () => {
  test(
    `random argv for every command (${Number(process.env.FUZZ_RUNS) || DEFAULT_CHILDREN} children, ${CONCURRENCY} at a time)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(argvCase, { minLength: CONCURRENCY, maxLength: CONCURRENCY }), async (cases) => {
          const reports = (await Promise.all(cases.map(check))).filter((x): x is string => x !== undefined);
          expect(reports, reports.join('\n\n')).toEqual([]);
        }),
        fuzzParams(DEFAULT_CHILDREN),
      );
    },
    fuzzTimeoutMs(DEFAULT_CHILDREN),
  );

  // Fixed cases the generator reaches only rarely.
  test.each([
    [['--json', '--', 'webhooks', 'create']],
    [['webhooks', 'create', '--json', '--name', '\u001b]0;pwned\u0007', '--url', 'x', '--event', 'e']],
    [['--json', 'webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap', '--idempotency-key', TOKEN]],
    [['--json', 'profile', 'set', 'p', '--csrf-token', CSRF, '--origin', 'https://o.example']],
    [['--debug', '--json', ...CREATE_OK]],
    [['--debug', ...ROTATE_OK, '--secret-file', 'new.whsec']],
    [['--timeout=0.5', '--max-retries=0', '--json', ...ROTATE_OK]],
    // Found by the fuzz: `help` with an unknown command word.
    [['--json', 'help', 'bogus']],
    [['--json', 'webhooks']],
    // Found by the fuzz (seed -1846575134): the version, then a plain-text error.
    [['--host', '::1', '-Vh', 'exit-codes', '-h', '--dry-run', '--json']],
    [['help', 'help', '-V']],
  ])('fixed argv %j', async (args) => {
    const report = await check({ args, stdin: '', withScope: true });
    expect(report).toBeUndefined();
  });
});
