// The README, docs/ and CONTRIBUTING.md as a new user reads them:
// self-contained (every link to a file the package ships, no issue or
// section numbers of other documents), the README short, its tables and the
// commands every document shows true to the program, and its quick start
// working when pasted line by line on a fresh copy of the repository (npm
// from its cache and a registry on loopback: tests use no network but
// loopback).
import { afterAll, describe, expect, it, type ExpectStatic } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { execa } from 'execa';
import { ROOT } from '../support/fixtures.js';
import { startLocalRegistry } from '../support/npm-registry.js';
import { SHARED_CACHE_DIR } from '../support/run.js';
import { EXIT_CODE_ROWS } from '../../src/errors/cli-error.js';
import { scaled } from '../support/slowdown.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const CONTRIBUTING = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function section(title: string, text = README): string {
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no "## ${title}" section`);
  const end = text.indexOf('\n## ', start + 4);
  return text.slice(start, end < 0 ? undefined : end);
}

const codeBlocks = (text: string) => [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));

/** The user and contributor documents: README.md, CONTRIBUTING.md and every docs/*.md. */
const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The files `npm pack` would put in the package (scripts off: the build has run). */
const packed = (() => {
  let files: Set<string> | undefined;
  return () =>
    (files ??= new Set(
      (
        JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as { files: { path: string }[] }[]
      )[0]!.files.map((f) => f.path),
    ));
})();

/** GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
const anchors = (text: string) => new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1]!)));

describe('the README and the docs are self-contained', () => {
  it('the README is short: at most 350 lines', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(350);
  });

  it('the package ships every document', () => {
    for (const file of DOCS) expect([...packed()], file).toContain(file);
  });

  it.each(DOCS)('%s links only to files the package ships, and to headings that exist', (file) => {
    const text = read(file).replace(/```[\s\S]*?```/g, '');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g), ...text.matchAll(/<(https?:[^>]+)>/g)].map((m) => m[1]!);
    for (const link of links) {
      expect(link, `${file}: ${link}`).not.toMatch(/^[a-z]+:/i);
      const [path, hash] = link.split('#') as [string, string | undefined];
      const target = path
        ? relative(ROOT, resolve(ROOT, dirname(file), path))
            .split(sep)
            .join('/')
        : file;
      expect(packed().has(target), `${file}: ${link} is not a file in the package`).toBe(true);
      if (hash !== undefined && target.endsWith('.md')) expect([...anchors(read(target))], `${file}: ${link}`).toContain(hash);
    }
  });

  // An unclosed fence turns the rest of the page into one code block, and
  // hides its commands from the check below.
  it.each(DOCS)('%s closes every code fence it opens', (file) => {
    const fences = read(file)
      .split('\n')
      .filter((l) => /^\s*```/.test(l));
    expect(fences.length % 2, `${file}: ${fences.length} fence lines`).toBe(0);
    // Each opening fence is followed by a closing one: openings may name a language, closings never do.
    fences.forEach((l, i) => {
      if (i % 2 === 1) expect(l.trim(), `${file}: fence ${i + 1} should close a block`).toBe('```');
    });
  });

  it.each(DOCS)('%s names no issue and no section of another document', (file) => {
    expect(read(file)).not.toMatch(/\bissue\s*#?\d+|(^|\s)#\d+\b|\bsections?\s+\d+|cli-contract|\.\.\/shared|\bthe contract\b/im);
  });

  // A reader of the code has the repository only: a comment points at the
  // docs/ page that says the rule, not at a numbered section of a document
  // they cannot open.
  it('no source, test or script cites a document outside the repository', () => {
    const cites = new RegExp(['(contract|spec)\\s+sections?\\s+\\d', '\\.\\./shared', 'cli-contract', 'webhook-api\\.md', 'contract\\s+§'].join('|'), 'i');
    const found = repositoryFiles()
      .filter((f) => f !== 'test/docs/readme.test.ts' && /^(src|test|scripts|bin|bench|completions)\//.test(f) && /\.(ts|mjs|js|cjs|sh|bash|zsh|fish)$/.test(f) && existsSync(join(ROOT, f)))
      .flatMap((f) =>
        read(f)
          .split('\n')
          .flatMap((line, i) => (cites.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(found).toEqual([]);
  });

  it('its exit-code table is the one chatctl prints', () => {
    const rows = [...section('Exit codes').matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) => [Number(m[1]), m[2]!.trim()]);
    expect(rows).toEqual(EXIT_CODE_ROWS.map(([code, meaning]) => [code, meaning]));
  });

  it("CONTRIBUTING's dependency table has one row per library the build bundles or the suite runs, and names every lazy bundle", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string>; dependencies?: Record<string, string> };
    // The one runtime dependency: the keyring's native addon, which no bundler can take in.
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(['@napi-rs/keyring']);
    const table = section('Dependencies', CONTRIBUTING);
    const rows = [...table.matchAll(/^\| ([^|`]+?)(?: \(`[^`]+`\))? \| /gm)].map((m) => m[1]!).filter((n) => n !== 'library' && !n.startsWith('-'));
    const covered = [...Object.keys(pkg.devDependencies), ...Object.keys(pkg.dependencies ?? {})].filter((n) => !['typescript', '@types/node', '@vitest/coverage-v8'].includes(n));
    expect([...rows].sort()).toEqual([...covered].sort());
    for (const bundle of readdirSync(join(ROOT, 'dist', 'lazy')).filter((f) => f.endsWith('.cjs'))) {
      expect(CONTRIBUTING, bundle).toContain(`\`${bundle.replace(/\.cjs$/, '')}\``);
    }
    // The libraries the table says the program loads are imported by src/ (and only lazily where it says so).
    const src = (f: string) => readFileSync(join(ROOT, 'src', f), 'utf8');
    expect(src('config/conf-writer.ts')).toMatch(/from 'conf'/);
    expect(src('secret/exec.ts')).toMatch(/from 'execa'/);
    expect(src('http/proxy.ts')).toMatch(/from 'undici';/);
    expect(src('prompts/inquirer.ts')).toMatch(/from '@inquirer\/prompts'/);
    expect(src('output/io.ts')).toMatch(/await import\('chalk'\)/);
  });

  it('its command list names every command', () => {
    const list = codeBlocks(section('Commands'))[0]!.body;
    for (const c of TREE.commands) {
      expect(list, c.name).toContain(`chatctl ${c.name}`);
      for (const sub of c.commands) expect(list, `${c.name} ${sub.name}`).toMatch(new RegExp(`chatctl ${c.name}\\b.*\\b${sub.name}\\b|\\| ${sub.name}\\b`));
    }
    expect(list).toContain('chatctl help environment');
  });

  it('the check of shown commands finds an option of another command, and reads quotes and pipes', () => {
    expect(commandLines(`x=$(chatctl webhooks rotate we_1 --yes --from f --secret-to "exec:gh --repo a" | head) # chatctl --bogus`)).toEqual([
      ['webhooks', 'rotate', 'we_1', '--yes', '--from', 'f', '--secret-to', 'VALUE'],
    ]);
    expect(unknownOptions(['webhooks', 'create', '--yes', '--json'])).toEqual(['--yes']);
    expect(unknownOptions(['webhook', 'rotate', '--yes', '--no-color'])).toEqual([]);
    expect(unknownOptions(['webhooks', 'verify', '--secret-file', '-', '--bogus', '-'])).toEqual(['--bogus']);
  });

  // Every chatctl line a reader may paste: its words name a real command and
  // every option it gives is one that command (or the program) takes.
  it.each(DOCS)('%s shows only commands and options that exist', (file) => {
    const lines = codeBlocks(read(file))
      .filter((b) => ['sh', 'bash', 'zsh', 'fish', 'yaml'].includes(b.lang))
      .flatMap((b) => b.body.replace(/\\\n\s*/g, ' ').split('\n'))
      .flatMap((l) => commandLines(l));
    for (const words of lines) expect(unknownOptions(words), `${file}: chatctl ${words.join(' ')}`).toEqual([]);
    if (file === 'README.md') expect(lines.length).toBeGreaterThan(15);
  });
});

/** The argument words after each `chatctl` in a shell line, quotes removed, up to the next pipe, list operator, redirection or comment. */
function commandLines(line: string): string[][] {
  const found: string[][] = [];
  const tokens: { word: string; quoted: boolean }[] = [];
  for (const m of line.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"']+)/g)) tokens.push({ word: m[1] ?? m[2] ?? m[3]!, quoted: m[3] === undefined });
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!t.quoted && t.word.startsWith('#')) break;
    if (t.quoted || !/^(.*\$\()?chatctl$/.test(t.word)) continue;
    const words: string[] = [];
    for (let j = i + 1; j < tokens.length; j++) {
      const w = tokens[j]!;
      if (!w.quoted && /^(\||\|\||&&|;|#.*|[<>].*|\d?>.*|\).*)$/.test(w.word)) break;
      words.push(w.quoted ? 'VALUE' : w.word.replace(/\)$/, ''));
      if (!w.quoted && w.word.endsWith(')')) break;
    }
    found.push(words);
  }
  return found;
}

/** The options of a chatctl line that neither its command nor the program takes. */
function unknownOptions(words: string[]): string[] {
  let node = TREE;
  const options = new Set(TREE.options.flatMap((o) => o.flags));
  const unknown: string[] = [];
  for (const w of words) {
    if (w.startsWith('-') && w !== '-') {
      // a lone - is standard input, not an option
      const flag = w.replace(/=.*/, '');
      if (!options.has(flag) && !(flag.startsWith('--no-') && options.has(`--${flag.slice(5)}`))) unknown.push(flag);
      continue;
    }
    const next = node.commands.find((c) => c.name === w || c.aliases.includes(w));
    if (!next) continue;
    node = next;
    for (const o of next.options) for (const f of o.flags) options.add(f);
  }
  return unknown;
}

interface TreeNode {
  name: string;
  aliases: string[];
  options: { flags: string[] }[];
  commands: TreeNode[];
}
const TREE = JSON.parse(readFileSync(join(ROOT, 'dist', 'tree.json'), 'utf8')) as TreeNode;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Tracked and new files (git), or, outside a git checkout, everything but what the build and install make. */
function repositoryFiles(): string[] {
  try {
    return execFileSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\0')
      .filter(Boolean);
  } catch {
    const skip = new Set(['node_modules', 'dist', '.git', '.test-results', 'bench/results']);
    const walk = (rel: string): string[] =>
      readdirSync(join(ROOT, rel), { withFileTypes: true }).flatMap((e) => {
        const p = rel ? `${rel}/${e.name}` : e.name;
        if (skip.has(p) || p.startsWith('dist.')) return [];
        return e.isDirectory() ? walk(p) : e.isFile() ? [p] : [];
      });
    return walk('');
  }
}

/** The repository as a fresh clone has it: tracked and new files, nothing ignored (no node_modules, no dist). */
function freshCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chatctl-readme-'));
  temps.push(dir);
  const files = repositoryFiles();
  for (const f of files) {
    if (!existsSync(join(ROOT, f))) continue; // deleted, not yet committed
    mkdirSync(dirname(join(dir, 'repo', f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(dir, 'repo', f));
  }
  mkdirSync(join(dir, 'home'));
  return dir;
}

/** The machine's npm cache (asked once: each `npm config get` is an npm start-up). */
let npmCache: string | undefined;

/** npm reading packages from its cache only, with its global folder in the test. */
function npmEnv(dir: string): Record<string, string> {
  npmCache ??= execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  return {
    HOME: join(dir, 'home'),
    PATH: `${join(dir, 'prefix', 'bin')}:${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
    npm_config_prefix: join(dir, 'prefix'),
    npm_config_cache: npmCache,
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

// One fresh copy: the quick start's lines in order (`npm install`, which
// builds; `npm install -g .`, which then only links the built folder; the
// sandbox and the commands), then the packed tarball as docs/ci.md installs
// it. `npm test`, the quick start's second line, is this suite: the test
// checks that it is the command .ci/run runs rather than run it again.
describe('installed from a fresh copy', () => {
  it('the quick start works pasted line by line: npm install (which builds), npm install -g ., sandbox, doctor, create, rotate, reactivate; and the packed tarball installs as docs/ci.md says', {
    timeout: scaled(600_000),
  }, async ({ expect }) => {
    const dir = freshCopy();
    await quickStart(expect, dir);
    await packedTarball(expect, dir);
  });
});

/**
 * `npm pack` in the copy, then docs/ci.md's install of the tarball into a
 * prefix of its own: chatctl and the keyring's two packages, no
 * install-scripts advisory, and a chatctl that runs. Without a lockfile npm
 * asks a registry for the keyring's document, which no `npm ci` put in the
 * cache: a registry on loopback answers it from package-lock.json
 * (test/support/npm-registry.ts), and the tarballs come from npm's cache.
 */
async function packedTarball(expect: ExpectStatic, dir: string): Promise<void> {
  const doc = read('docs/ci.md');
  expect(doc.slice(doc.indexOf('\n## Installing the packed tarball\n'))).toContain('`npm install -g --ignore-scripts ./chatctl-VERSION.tgz`');
  const repo = join(dir, 'repo');
  const base = npmEnv(dir);
  const registry = await startLocalRegistry(base.npm_config_cache!);
  const env = { ...base, npm_config_offline: 'false', npm_config_registry: registry.url, npm_config_prefix: join(dir, 'tarball-prefix') };
  try {
    const packed = JSON.parse((await execa('npm', ['pack', '--json', '--pack-destination', dir], { cwd: repo, env, extendEnv: false })).stdout) as { filename: string; files: { path: string }[] }[];
    expect(packed[0]!.files.filter((f) => f.path.startsWith('dist/bin/'))).toEqual([]);
    const tarball = join(dir, packed[0]!.filename);
    const r = await execa('npm', ['install', '-g', '--ignore-scripts', tarball], { cwd: dir, env, extendEnv: false, all: true });
    expect(r.all).not.toMatch(/install-scripts|allowScripts/);
    expect(r.all).toMatch(/added 3 packages/);
    expect(registry.asked).toContain('@napi-rs/keyring');
  } finally {
    await registry.close();
  }
  const installed = join(dir, 'tarball-prefix', 'lib', 'node_modules', 'chatctl');
  expect(readdirSync(join(installed, 'node_modules', '@napi-rs')).sort()).toEqual(['keyring', expect.stringMatching(new RegExp(`^keyring-${process.platform}-${process.arch}`))]);
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
  expect((await execa(join(dir, 'tarball-prefix', 'bin', 'chatctl'), ['--version'], { env, extendEnv: false })).stdout).toBe(version);
}

describe('the CI recipe', () => {
  it('runs as written against the sandbox (its placeholders filled in): 0 and the new version; 7 and the current version on a stale one', async () => {
    const { startSandbox } = await import('../../src/sandbox/server.js');
    const sb = await startSandbox();
    try {
      const recipe = codeBlocks(read('docs/ci.md'))[0]!
        .body.replace('https://api.example.com', sb.baseUrl)
        .replace('CHATCTL_ORG=org_1 CHATCTL_APP=app_1 CHATCTL_ENV=production', `CHATCTL_ORG=${sb.organizationId} CHATCTL_APP=${sb.applicationId} CHATCTL_ENV=${sb.environmentKey}`);
      const dir = mkdtempSync(join(tmpdir(), 'chatctl-ci-recipe-'));
      temps.push(dir);
      const env = {
        PATH: `${join(ROOT, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
        HOME: dir,
        CHATCTL_CONFIG_DIR: join(dir, 'cfg'),
        CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
        CI: 'true',
        NO_COLOR: '1',
        CHAT_API_TOKEN: sb.token,
      };
      symlinkSync(join(ROOT, 'bin', 'chatctl.js'), join(dir, 'chatctl'));
      env.PATH = `${dir}:${env.PATH}`;
      // Asynchronous runs: the sandbox answers from this process.
      const scope = { CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token, CHATCTL_ORG: sb.organizationId, CHATCTL_APP: sb.applicationId, CHATCTL_ENV: sb.environmentKey };
      const created = await execa('chatctl', ['webhooks', 'create', '--name', 'ci', '--url', 'https://hooks.example.com/ci', '--event', 'chat.message.created.v1', '--json'], {
        env: { ...env, ...scope },
        extendEnv: false,
      });
      const id = JSON.parse(created.stdout).data.endpoint.id as string;
      const run = async (version: string) => {
        const r = await execa('bash', ['-e', '-c', recipe], { cwd: dir, env: { ...env, ENDPOINT_ID: id, VERSION: version }, extendEnv: false, reject: false, stripFinalNewline: false });
        return { status: r.exitCode, out: r.stdout };
      };
      expect(await run('1')).toEqual({ status: 0, out: 'rotated to version 2\n' });
      expect(readFileSync(join(dir, 'new.whsec'), 'utf8')).toMatch(/^\S+$/);
      rmSync(join(dir, 'new.whsec'));
      expect(await run('1')).toEqual({ status: 7, out: 'stale version: the endpoint is at version 2\n' });
    } finally {
      await sb.close();
    }
  });
});

describe("docs/sandbox.md's fault commands", () => {
  it('each one is accepted by a running sandbox, as pasted', async () => {
    const { startSandbox } = await import('../../src/sandbox/server.js');
    const sb = await startSandbox();
    try {
      const block = codeBlocks(section('Rehearsing failures', read('docs/sandbox.md'))).find((b) => b.lang === 'sh')!.body;
      const lines = block.split('\n').filter((l) => l.startsWith('curl '));
      expect(lines.length).toBeGreaterThanOrEqual(5);
      // In order, in one shell (a shell each cost more than the lines);
      // -f: an answer of 400 or more fails the line, which ends the shell
      // (-e), naming it.
      const script = [`trap '[ $? = 0 ] || echo "failed: line $n"' EXIT`, ...lines.flatMap((line, i) => [`n=${i}`, line.replace(/^curl -s /, 'curl -sf ')])].join('\n');
      const r = await execa('bash', ['-e', '-c', script], {
        env: { PATH: process.env.PATH!, CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token },
        extendEnv: false,
        reject: false,
      });
      const failed = /failed: line (\d+)/.exec(r.stdout)?.[1];
      expect(r.exitCode, `${failed === undefined ? '' : lines[Number(failed)]}\n${r.stdout}${r.stderr}`).toBe(0);
      // The last one put everything back.
      const faults = await (await fetch(`${sb.baseUrl}/_sandbox/faults`, { headers: { authorization: `Bearer ${sb.token}` } })).json();
      expect(faults).toMatchObject({ data: { faults: { failNext: 0, delayMs: 0, rateLimit: 0 } } });
    } finally {
      await sb.close();
    }
  });
});

async function quickStart(expect: ExpectStatic, dir: string): Promise<void> {
  {
    const blocks = codeBlocks(section('Quick start'));
    expect(blocks.map((b) => b.lang)).toEqual(['sh', 'sh', 'sh', 'sh', 'sh']);
    const [setup, onPath, demo, sandboxBlock, use] = blocks.map((b) => b.body) as [string, string, string, string, string];
    // `npm run demo` has a test of its own (test/docs/demo.test.ts); here, that the README shows exactly it.
    expect(demo).toBe('npm run demo\n');
    const port = String(await freePort());
    const repo = join(dir, 'repo');
    const env = npmEnv(dir);
    const sh = async (script: string) => (await execa('bash', ['-e', '-c', script], { cwd: repo, env, extendEnv: false, timeout: scaled(300_000), stripFinalNewline: false })).stdout;

    // 1. npm install (which builds); npm test, which is what CI runs.
    expect(setup).toBe('npm install\nnpm test\n');
    expect(read('.ci/run')).toMatch(/^npm test -- --coverage$/m);
    await sh('npm install');
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    expect((await sh('./bin/chatctl.js --version')).trim()).toBe(version);

    // Then on PATH: npm install -g . links the built folder; chatctl --version.
    expect(onPath).toBe('npm install -g .\nchatctl --version\n');
    expect((await sh(onPath)).trim().split('\n').at(-1)).toBe(version);
    expect((await execa('bash', ['-c', 'command -v chatctl'], { env, extendEnv: false })).stdout.trim()).toBe(join(dir, 'prefix', 'bin', 'chatctl'));
    expect((await execa('chatctl', ['exit-codes'], { env, extendEnv: false })).stdout).toMatch(/^CODE {2}MEANING\n/);
    // The manual pages the build wrote are where `man` looks after a global install.
    expect(readFileSync(join(dir, 'prefix', 'share', 'man', 'man1', 'chatctl-webhooks-rotate.1'), 'utf8')).toMatch(/^\.TH "CHATCTL\\-WEBHOOKS\\-ROTATE" "1"/);

    // 2. The sandbox, in "a second terminal".
    const line = sandboxBlock.trim().replaceAll('8484', port);
    expect(line.split('\n')).toHaveLength(1);
    const sandbox = spawn('bash', ['-c', `exec ${line}`], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = new Promise<number | null>((r) => sandbox.on('close', (code) => r(code)));
    try {
      await new Promise<void>((ok, fail) => {
        let out = '';
        sandbox.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('listening')) ok();
        });
        setTimeout(() => fail(new Error(`the sandbox did not start: ${out}`)), scaled(30_000));
      });

      // 3. Back in the first terminal, every line.
      const script = use.replaceAll('8484', port);
      const out = await sh(script);
      expect(out).toContain('all checks passed');
      expect(out).toMatch(/Rotated the signing secret of we_\w+ \(mode overlap\)\./);
      expect(out).toMatch(/Webhook endpoint we_\w+ was already active; nothing changed\./);
      expect(readdirSync(repo).filter((f) => /whsec/.test(f))).toEqual([]);
    } finally {
      sandbox.kill('SIGINT'); // Ctrl-C
    }
    expect(await closed).toBe(0);
  }
}
