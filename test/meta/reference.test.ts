// What a newcomer looks things up with: `chatctl version`, `help reference`,
// the manual pages (rendered by the real `man`), and help that never
// misleads: a typo with --help, the opposite action, a stored profile's
// name, a command of another group.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Command } from 'commander';
import { ROOT, PKG_VERSION } from '../support/fixtures.js';
import { cleanupTempDirs, runCli, workspace } from '../support/run.js';
import { parseErrorLine } from '../support/json.js';
import { fakeContext, fakeIO } from '../support/fakes.js';
import { configuredProgram } from '../../src/app/cli.js';
import { EXIT_STATUS_BY_COMMAND, exitStatusOf, helpOf, HELP_HELP, manPageName, renderManPages, visibleCommands } from '../../src/meta/reference.js';
import { EXIT_CODE_ROWS } from '../../src/errors/cli-error.js';
// @ts-expect-error: a build script, plain JavaScript
import { buildCommit } from '../../scripts/build-stamp.mjs';

afterAll(cleanupTempDirs);

const fast = JSON.parse(readFileSync(join(ROOT, 'dist', 'fast.json'), 'utf8')) as { help: Record<string, string> };
/** The whole program as the build sees it (version 9.9.9 from the fake context). */
const program = (): Command => configuredProgram(fakeContext({ io: fakeIO() }));
const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();

describe('chatctl version', () => {
  it('--json is {"version","commit","node","platform","packaging","target"}: the commit the build was made from (git HEAD of this checkout, or null); "npm" from the package and no target (the single executable says otherwise: test/sea)', async () => {
    const r = await runCli(['version', '--json'], { spawn: true });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(['version', 'commit', 'node', 'platform', 'packaging', 'target']);
    expect(doc).toEqual({ version: PKG_VERSION, commit: buildCommit(), node: process.version, platform: `${process.platform}-${process.arch}`, packaging: 'npm', target: null });
    // This suite runs in a git checkout: a null would mean the build lost it.
    expect(doc.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('prints the version on its first line, as --version does (which stays on the fast path)', async () => {
    const [v, fastV] = await Promise.all([runCli(['version'], { spawn: true }), runCli(['--version'], { spawn: true })]);
    expect(v.exitCode).toBe(0);
    expect(v.stdout.split('\n')[0]).toBe(PKG_VERSION);
    expect(v.stdout).toContain(`Node.js ${process.version}`);
    expect(fastV.stdout).toBe(`${PKG_VERSION}\n`);
    expect(fast.help.version).toContain('chatctl version --json');
  });
});

describe('chatctl help reference', () => {
  it('holds every command of the tree, each with exactly its --help (options and examples)', async () => {
    const r = await runCli(['help', 'reference']);
    expect(r.exitCode).toBe(0);
    const commands = visibleCommands(program()).map((c) => c.path.join(' '));
    expect(commands).toEqual(expect.arrayContaining(['', 'webhooks rotate', 'profile set', 'version', 'completion install']));
    for (const path of commands) {
      const title = ['chatctl', path].filter(Boolean).join(' ');
      expect(r.stdout, path).toContain(`\n${title}\n${'='.repeat(title.length)}\n\n${fast.help[path]!.trimEnd()}\n`);
    }
    // The same from `chatctl reference`, whose run builds only part of the tree for other commands.
    expect((await runCli(['reference'])).stdout).toBe(r.stdout);
  });
});

describe('help help', () => {
  it('works on the fast path and live, and lists the topics', async () => {
    const [spawned, live, flag] = await Promise.all([runCli(['help', 'help'], { spawn: true }), runCli(['--no-color', 'help', 'help']), runCli(['help', '--help'])]);
    for (const r of [spawned, live, flag]) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(HELP_HELP);
    }
    for (const topic of ['environment', 'reference', 'exit-codes']) expect(HELP_HELP).toContain(`chatctl help ${topic}`);
  });
});

describe('manual pages', () => {
  const pages = readdirSync(join(ROOT, 'man'))
    .filter((f) => f.endsWith('.1'))
    .sort();

  it('the build wrote one per command, each exactly what the program renders now', () => {
    const rendered = renderManPages(program(), PKG_VERSION);
    expect(pages).toEqual(
      visibleCommands(program())
        .map((c) => manPageName(c.path))
        .sort(),
    );
    for (const page of pages) expect(readFileSync(join(ROOT, 'man', page), 'utf8'), page).toBe(rendered[page]);
  });

  // Each page rendered once, for both tests below, by `man --warnings -l`,
  // four at a time: one man is a pipeline of five processes (preconv, tbl,
  // nroff, groff, grotty), and two runs of each page, one after the other
  // in a blocked worker, took 15 s on a quiet machine and over 30 s beside
  // two other suites.
  let rendered: Promise<Map<string, { status: number | null; stdout: string; stderr: string }>> | undefined;
  const manPages = () =>
    (rendered ??= (async () => {
      const files = visibleCommands(program()).map(({ path }) => join(ROOT, 'man', manPageName(path)));
      const out = new Map<string, { status: number | null; stdout: string; stderr: string }>();
      const next = files.entries();
      const one = async () => {
        for (const [, file] of next) {
          const r = await execa('man', ['--warnings', '-l', '-P', 'cat', file], { env: { MANWIDTH: '100', LANG: 'C.UTF-8', MAN_KEEP_FORMATTING: '' }, reject: false, stripFinalNewline: false });
          out.set(file, { status: r.exitCode ?? null, stdout: r.stdout.replace(/.\x08/g, ''), stderr: r.stderr });
        }
      };
      await Promise.all([one(), one(), one(), one()]);
      return out;
    })());

  it('rendered by man -l, each says what its --help says: usage, description, arguments, options, subcommands, examples', async () => {
    const pages = await manPages();
    for (const { path, command } of visibleCommands(program())) {
      const file = join(ROOT, 'man', manPageName(path));
      const shown = collapse(pages.get(file)!.stdout);
      const help = command.createHelp();
      const expected = [
        help.commandUsage(command),
        help.commandDescription(command),
        ...help.visibleArguments(command).flatMap((a) => [help.argumentTerm(a), help.argumentDescription(a)]),
        ...help.visibleOptions(command).flatMap((o) => [help.optionTerm(o), help.optionDescription(o)]),
        ...help
          .visibleCommands(command)
          .filter((c) => c.name() !== 'help')
          .flatMap((c) => [help.subcommandTerm(c), help.subcommandDescription(c)]),
        ...helpOf(command)
          .after.split('\n')
          .filter((l) => l.trim() && l.trim() !== 'Examples:'),
      ];
      for (const text of expected) expect(shown, `${manPageName(path)}: ${text}`).toContain(collapse(text));
      // And the live --help carries the same words.
      for (const text of expected) expect(collapse(fast.help[path.join(' ')]!), path.join(' ')).toContain(collapse(text));
    }
  });

  it('rendered by man -l without a warning, each has EXIT STATUS and ENVIRONMENT and no sentence running into the next', async () => {
    const known = new Set(visibleCommands(program()).map((c) => c.path.join(' ')));
    for (const path of Object.keys(EXIT_STATUS_BY_COMMAND)) expect(known, `EXIT_STATUS_BY_COMMAND names "${path}"`).toContain(path);
    const pages = await manPages();
    for (const { path } of visibleCommands(program())) {
      const file = join(ROOT, 'man', manPageName(path));
      const r = pages.get(file)!;
      expect(r.status, file).toBe(0);
      expect(r.stderr, file).toBe('');
      const text = r.stdout;
      const sectionOf = (name: string) => {
        const at = text.indexOf(`\n${name}\n`);
        expect(at, `${file}: ${name}`).toBeGreaterThan(0);
        const body = text.slice(at + name.length + 1);
        return body.slice(0, body.search(/\n[A-Z][A-Z ]+\n/));
      };
      // Each code the command can end with (all of the table for the program and the groups), with its meaning.
      const codes = [...sectionOf('EXIT STATUS').matchAll(/^ {7}(\d+) +(\S.*)$/gm)].map((m) => Number(m[1]));
      expect(codes, file).toEqual(exitStatusOf(path) ?? EXIT_CODE_ROWS.map(([c]) => c));
      const env = sectionOf('ENVIRONMENT');
      for (const name of ['CHATCTL_PROFILE', 'CHATCTL_BASE_URL', 'CHATCTL_TOKEN', 'CHATCTL_NO_INPUT', 'NO_COLOR']) expect(env, `${file}: ${name}`).toContain(`\n       ${name}\n`);
      if (path.length === 0) for (const name of ['CHATCTL_CONFIG_DIR', 'DBUS_SESSION_BUS_ADDRESS', 'GITHUB_ACTIONS']) expect(env, name).toContain(name);
      // A description ends its sentence before "See …" starts the next.
      expect(collapse(text), file).not.toMatch(/[a-z0-9)] See chatctl/);
    }
    expect(collapse(readFileSync(join(ROOT, 'man', 'chatctl.1'), 'utf8'))).toContain('(base URL and scope).\n.br\nSee chatctl\\-profile(1).'.replace(/\n/g, ' '));
  });

  it('the package ships them, and names each in "man" so that a global install puts them on the MANPATH', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[]; man: string[] };
    expect(pkg.files).toContain('man/');
    // A new command has a new page: add "./man/chatctl-GROUP-COMMAND.1" to package.json's "man".
    expect([...pkg.man].sort()).toEqual(pages.map((p) => `./man/${p}`));
  });
});

describe('help that never misleads', () => {
  it('a mistyped subcommand with --help is a usage error with the suggestion, not the group help', async () => {
    for (const args of [
      ['webhooks', 'rotat', '--help'],
      ['help', 'webhooks', 'rotat'],
      ['webhook', 'rotat', '-h'],
    ]) {
      const r = await runCli(args, { spawn: args[0] === 'webhooks' });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe("chatctl: error: unknown command 'rotat'\n  hint: did you mean rotate?  (see: chatctl webhooks --help)\n");
    }
    // The right words still get their help.
    const ok = await runCli(['webhooks', 'rotate', '--help']);
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe(fast.help['webhooks rotate']);
  });

  it('deactivate is never answered with reactivate: the API covers create, rotate and reactivate', async () => {
    for (const args of [
      ['webhooks', 'deactivate', 'we_1'],
      ['webhooks', 'deactivate', '--help'],
    ]) {
      const r = await runCli(args);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain('covers create, rotate and reactivate');
      expect(r.stderr).not.toMatch(/did you mean/);
    }
    const json = await runCli(['webhooks', 'deactivate', '--json']);
    expect(parseErrorLine(json.stderr).exitCode).toBe(2);
  });

  it('a command of a group typed at the top level names the group: login → chatctl auth login', async () => {
    for (const [word, full] of [
      ['login', 'auth login'],
      ['rotate', 'webhooks rotate'],
    ] as const) {
      const r = await runCli([word]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(`hint: did you mean chatctl ${full}?`);
    }
  });

  it('completion bsh suggests bash (a tie with zsh goes to the same first letter)', async () => {
    const r = await runCli(['completion', 'bsh']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('hint: did you mean bash?');
  });

  it('profile use / show / remove of a name that is not stored suggest the stored one nearest to it', async () => {
    const ws = workspace();
    expect((await runCli(['profile', 'set', 'sbx', '--base-url', 'http://127.0.0.1:9', '--org', 'o', '--app', 'a', '--env', 'e'], { ws })).exitCode).toBe(0);
    for (const verb of ['use', 'show', 'remove']) {
      const r = await runCli(['profile', verb, 'sbz'], { ws });
      expect(r.exitCode, verb).toBe(3);
      expect(r.stderr, verb).toContain('hint: did you mean sbx?');
      expect(r.stderr, verb).not.toContain('create it with');
    }
    // A name near nothing stored keeps the old advice.
    expect((await runCli(['profile', 'use', 'production'], { ws })).stderr).toContain('create it with: chatctl profile set production');
  });

  it('profile set --help shows the scope flags it stores', async () => {
    const r = await runCli(['profile', 'set', '--help'], { spawn: true });
    for (const flag of ['--base-url <url>', '--org <id>', '--app <id>', '--env <key>', '--origin <origin>', '--csrf-token <value>']) expect(r.stdout).toContain(`  ${flag}`);
  });

  it('sandbox --help says that faults can be injected, and how', async () => {
    const r = await runCli(['sandbox', '--help'], { spawn: true });
    expect(r.stdout).toMatch(/Fault injection/);
    expect(r.stdout).toContain('POST /_sandbox/faults');
    for (const field of ['failNext', 'status', 'retryAfter', 'dropConnection', 'delayMs', 'rateLimit']) expect(r.stdout).toContain(field);
  });
});
