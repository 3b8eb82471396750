// The tool explains itself, checked as a new user meets it: `help
// environment` (every variable the code reads), short subcommand help with
// one pointer to the global options, examples everywhere, hints naming the
// subcommand's help, did-you-mean, and `exit-codes --json`.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/fixtures.js';
import { parseErrorLine } from '../support/json.js';
import { cleanupTempDirs, runCli } from '../support/run.js';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { EXIT_CODE_ROWS, exitCodeForApiCode } from '../../src/errors/cli-error.js';

afterAll(cleanupTempDirs);

const fast = JSON.parse(readFileSync(join(ROOT, 'dist', 'fast.json'), 'utf8')) as { help: Record<string, string> };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'sandbox' ? [] : sourceFiles(p);
    // meta/environment.ts is the list itself: reading it would prove nothing.
    return /\.(ts|js|cjs|mjs)$/.test(name) && !p.endsWith(join('meta', 'environment.ts')) ? [p] : [];
  });
}

/** Every environment variable src/ (but the sandbox, a server of its own) and bin/ read. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const file of [...sourceFiles(join(ROOT, 'src')), join(ROOT, 'bin', 'chatctl.js')]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\benv(?:\.|\[['"])([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]!);
    for (const m of text.matchAll(/['"]((?:CHATCTL|XDG|HTTPS?|NO)_[A-Z_]+|https?_proxy|no_proxy)['"]/g)) names.add(m[1]!);
    for (const m of text.matchAll(/pick(?:Env)?\(env, '([A-Za-z_]+)'\)/g)) names.add(m[1]!);
  }
  names.delete('CHATCTL_VERSION__');
  names.delete('CHATCTL_COMMIT__');
  return names;
}

describe('help environment', () => {
  it('lists every environment variable the code reads, with a default for each, on the fast path and live', async () => {
    const r = await runCli(['help', 'environment']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const live = await runCli(['--no-color', 'help', 'environment']); // --no-color first: commander renders it
    expect(live.exitCode).toBe(0);
    expect(live.stdout).toBe(r.stdout);
    const read = variablesRead();
    for (const name of ['CHATCTL_TOKEN', 'CHATCTL_CONFIG_DIR', 'CI', 'NO_COLOR', 'FORCE_COLOR', 'TERM', 'HTTPS_PROXY', 'NO_PROXY', 'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'SHELL'])
      expect(read).toContain(name);
    const listed = new Set([...r.stdout.matchAll(/^ {2}([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*)$/gm)].flatMap((m) => m[1]!.split(', ')));
    for (const name of read) expect(listed, `${name} is read by the code but not in help environment`).toContain(name);
    for (const name of ['CHATCTL_DEADLINE', 'NODE_EXTRA_CA_CERTS', 'HOME', 'XDG_DATA_HOME']) expect(listed).toContain(name);
    // Each entry says its default.
    const entries = r.stdout.split(/\n(?= {2}[A-Za-z_])/).slice(1);
    for (const e of entries) if (!e.startsWith('  Options')) expect(e.replace(/\s+/g, ' ')).toMatch(/Default: /);
  });

  it('a mistyped help topic gets a suggestion, not the whole top-level help', async () => {
    const r = await runCli(['help', 'envirnment']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('chatctl: error: no help for "envirnment": unknown command\n  hint: did you mean environment?\n');
  });

  it('help A B, rendered live, is A B --help', async () => {
    const live = await runCli(['--no-color', 'help', 'webhooks', 'rotate']);
    expect(live.stdout).toBe(fast.help['webhooks rotate']);
  });

  it('top-level --help ends with a pointer to it', async () => {
    const r = await runCli(['--help']);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('Environment variables: chatctl help environment');
  });
});

describe('subcommand help', () => {
  // Topics, not commands: `help environment`, `help reference`, `help help`.
  const commands = Object.keys(fast.help).filter((p) => p !== '' && p !== 'environment' && p !== 'reference' && p !== 'help');

  it('every command has examples; subcommands show their own options and one line pointing to the global ones', () => {
    expect(commands).toEqual(expect.arrayContaining(['webhooks rotate', 'doctor', 'completion install', 'exit-codes', 'profile set', 'auth status', 'sandbox']));
    for (const path of ['', ...commands]) {
      const text = fast.help[path]!;
      expect(text, path).toContain('\nExamples:\n  $ chatctl ');
      expect(text, path).not.toContain('Global Options:');
      if (path === '') continue;
      expect(
        text.split('\n').filter((l) => l.includes('chatctl --help') && l.startsWith('Global options')),
        path,
      ).toEqual(['Global options (--profile, --json, --no-input, --dry-run, …): chatctl --help']);
      expect(text, path).not.toContain('--max-retries'); // a global option: not repeated here
    }
  });

  // rotate has the most options (one endpoint, or --from, with --journal and --next-manifest, each form's under its own heading); the global block is one line, not sixteen.
  it('is short: webhooks rotate --help fits in 53 lines', async () => {
    const r = await runCli(['webhooks', 'rotate', '--help']);
    expect(r.stdout.split('\n').length).toBeLessThanOrEqual(53);
  });
});

describe('bare chatctl', () => {
  it('prints the help on stdout and exits 0, as gh does; the help says so; a group without its command stays a usage error', async () => {
    const [live, spawned] = await Promise.all([runCli([]), runCli([], { spawn: true })]);
    for (const r of [live, spawned]) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(fast.help['']);
      expect(r.stderr).toBe('');
    }
    expect(fast.help['']).toContain('Run with no arguments, chatctl prints this help and exits 0.');
    const group = await runCli(['auth']);
    expect(group.exitCode).toBe(2);
    expect(group.stderr).toContain('chatctl: error: a subcommand is required');
  });
});

describe('hints and did-you-mean', () => {
  const cases: [string[], RegExp, string][] = [
    [['webhoks'], /unknown command 'webhoks'/, 'did you mean webhooks?  (see: chatctl --help)'],
    [['webhooks', 'rotat'], /unknown command 'rotat'/, 'did you mean rotate?  (see: chatctl webhooks --help)'],
    [['webhooks', 'create', '--evnt', 'x'], /unknown option '--evnt'/, 'did you mean --event?  (see: chatctl webhooks create --help)'],
    [['webhooks', 'reactivate', 'we_1', '--jsn'], /unknown option '--jsn'/, 'did you mean --json?  (see: chatctl webhooks reactivate --help)'],
    [['webhooks', 'rotate', 'we_1', '--expected-version', '2', '--mode', 'overla'], /invalid --mode "overla": must be overlap or immediate/, 'did you mean overlap?'],
    [['webhooks', 'rotate', 'we_1', '--expected-version', '2', '--mode', 'imediate'], /invalid --mode "imediate"/, 'did you mean immediate?'],
    [['completion', 'fihs'], /invalid shell "fihs": must be bash, zsh or fish/, 'did you mean fish?'],
    [['completion', 'install', '--shell', 'bsah'], /invalid --shell "bsah"/, 'did you mean bash?'],
    [['webhooks', 'rotate'], /missing ENDPOINT_ID/, 'give the endpoint to rotate, or --from FILE to rotate many'],
    [['profile', 'set'], /missing required argument 'name'/, 'see: chatctl profile set --help'],
  ];
  it.each(cases)('%j → exit 2 with the hint', async (args, message, hint) => {
    const r = await runCli(args);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`\n  hint: ${hint}\n`);
    expect(r.stderr).not.toContain('(Did you mean');
  });

  it('an unknown event type gets the nearest one, sent nothing', async () => {
    const r = await runCli([
      'webhooks',
      'create',
      '--name',
      'n',
      '--url',
      'https://hooks.example.com/x',
      '--event',
      'chat.message.created.v1,chat.mesage.deleted.v1',
      '--dry-run',
      '--base-url',
      'http://127.0.0.1:9',
      '--org',
      'o',
      '--app',
      'a',
      '--env',
      'e',
    ]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe('chatctl: error: invalid --event: unknown event type "chat.mesage.deleted.v1"\n  hint: did you mean chat.message.deleted.v1?\n');
  });

  it('under --json the suggestion stays out of the one error line', async () => {
    const r = await runCli(['webhooks', 'rotate', 'we_1', '--mode', 'overla', '--json']);
    expect(r.exitCode).toBe(2);
    expect(parseErrorLine(r.stderr).error.message).toBe('invalid --mode "overla": must be overlap or immediate');
  });
});

describe('exit-codes --json', () => {
  it('prints the table as JSON; every spec code sits under its exit code exactly once', async () => {
    const r = await runCli(['exit-codes', '--json']);
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(r.stdout) as { exitCodes: { code: number; meaning: string; apiCodes: string[]; rule: string }[] };
    expect(doc.exitCodes.map((e) => e.code)).toEqual(EXIT_CODE_ROWS.map(([c]) => c));
    const all = doc.exitCodes.flatMap((e) => e.apiCodes.map((c) => [c, e.code] as const));
    expect(all.map(([c]) => c).sort()).toEqual([...ERROR_CODES].sort());
    for (const [code, exit] of all) expect(exitCodeForApiCode(code)).toBe(exit);
    expect(doc.exitCodes.find((e) => e.code === 7)!.rule).toBe('every code ending in _version_conflict');
    const text = await runCli(['exit-codes']);
    expect(text.stdout).toMatch(/^CODE {2}MEANING\n/);
  });
});
