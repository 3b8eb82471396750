// The README as a new user reads it: self-contained (no link out of the
// repository, no issue or section numbers of other documents), its tables
// true to the program, and its quick start working when pasted line by line
// on a fresh copy of the repository (npm from its cache only: tests use no
// network but loopback).
import { afterAll, describe, expect, it, type ExpectStatic } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';
import { ROOT } from '../support/fixtures.js';
import { SHARED_CACHE_DIR } from '../support/run.js';
import { EXIT_CODE_ROWS } from '../../src/errors/exit-codes.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const temps: string[] = [];
afterAll(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no "## ${title}" section`);
  const end = README.indexOf('\n## ', start + 4);
  return README.slice(start, end < 0 ? undefined : end);
}

const codeBlocks = (text: string) => [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));

describe('the README is self-contained', () => {
  const docs = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));

  it.each(docs)('%s links only to files in the repository', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g), ...text.matchAll(/<(https?:[^>]+)>/g)].map((m) => m[1]!);
    for (const link of links) {
      if (link.startsWith('#')) continue;
      expect(link, `${file}: ${link}`).not.toMatch(/^[a-z]+:/i);
      const target = resolve(ROOT, dirname(file), link.split('#')[0]!);
      expect(target.startsWith(ROOT), `${file}: ${link} leaves the repository`).toBe(true);
      expect(existsSync(target), `${file}: ${link} does not exist`).toBe(true);
    }
  });

  it.each(docs)('%s names no issue and no section of another document', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    expect(text).not.toMatch(/\bissue\s*#?\d+|(^|\s)#\d+\b|\bsections?\s+\d+|cli-contract|\.\.\/shared|\bthe contract\b/im);
  });

  it('its exit-code table is the one chatctl prints', () => {
    const rows = [...section('Exit codes').matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) => [Number(m[1]), m[2]!.trim()]);
    expect(rows).toEqual(EXIT_CODE_ROWS.map(([code, meaning]) => [code, meaning]));
  });

  it('its dependency table has one row per library the build bundles or the suite runs, and names every lazy bundle', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string>; dependencies?: Record<string, string> };
    // The one runtime dependency: the keyring's native addon, which no bundler can take in.
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(['@napi-rs/keyring']);
    const table = section('Dependencies');
    const rows = [...table.matchAll(/^\| ([^|`]+?)(?: \(`[^`]+`\))? \| /gm)].map((m) => m[1]!).filter((n) => n !== 'library' && !n.startsWith('-'));
    const covered = [...Object.keys(pkg.devDependencies), ...Object.keys(pkg.dependencies ?? {})].filter((n) => !['typescript', '@types/node', '@vitest/coverage-v8'].includes(n));
    expect([...rows].sort()).toEqual([...covered].sort());
    for (const bundle of readdirSync(join(ROOT, 'dist', 'lazy')).filter((f) => f.endsWith('.cjs'))) {
      expect(README, bundle).toContain(`\`${bundle.replace(/\.cjs$/, '')}\``);
    }
    // The libraries the table says the program loads are imported by src/ (and only lazily where it says so).
    const src = (f: string) => readFileSync(join(ROOT, 'src', f), 'utf8');
    expect(src('config/conf-writer.ts')).toMatch(/from 'conf'/);
    expect(src('secret/exec.ts')).toMatch(/from 'execa'/);
    expect(src('http/proxy.ts')).toMatch(/from 'undici\//);
    expect(src('prompts/inquirer.ts')).toMatch(/from '@inquirer\/prompts'/);
    expect(src('output/colors.ts')).toMatch(/await import\('chalk'\)/);
  });

  it('its command list names every command', () => {
    const tree = JSON.parse(readFileSync(join(ROOT, 'dist', 'tree.json'), 'utf8')) as { commands: { name: string; commands: { name: string }[] }[] };
    const list = codeBlocks(section('Commands'))[0]!.body;
    for (const c of tree.commands) {
      expect(list, c.name).toContain(`chatctl ${c.name}`);
      for (const sub of c.commands) expect(list, `${c.name} ${sub.name}`).toMatch(new RegExp(`chatctl ${c.name}\\b.*\\b${sub.name}\\b|\\| ${sub.name}\\b`));
    }
    expect(list).toContain('chatctl help environment');
  });
});

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
    return execFileSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\0').filter(Boolean);
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

// One fresh copy serves both installs, one after the other: `npm install -g .`
// alone first (prepare installs the build tools into the copy), then the
// quick start's lines in that same copy. Each install unpacks about 150
// packages, a fifth of the suite's CPU when it was done twice; the quick
// start's own `npm install` on a fresh clone is what `.ci/run` does first
// (`npm ci`, then this suite), so it is proved on every CI run.
describe('installed from a fresh copy', () => {
  it('npm install -g . works alone (prepare installs the build tools it needs); then the quick start works pasted line by line: build, install on PATH, sandbox, doctor, create, rotate, reactivate', async ({ expect }) => {
    const dir = freshCopy();
    const env = npmEnv(dir);
    await execa('npm', ['install', '-g', '.'], { cwd: join(dir, 'repo'), env, extendEnv: false, timeout: 300_000 });
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    expect((await execa('chatctl', ['--version'], { env, extendEnv: false, stripFinalNewline: false })).stdout).toBe(`${version}\n`);
    expect((await execa('chatctl', ['exit-codes'], { env, extendEnv: false })).stdout).toMatch(/^CODE {2}MEANING\n/);
    await quickStart(expect, dir);
  }, 600_000);
});

describe('the CI recipe', () => {
  it('runs as written against the sandbox (its placeholders filled in): 0 and the new version; 7 and the current version on a stale one', async () => {
    const { startSandbox } = await import('../../src/sandbox/server.js');
    const sb = await startSandbox();
    try {
      const recipe = codeBlocks(section('In CI'))[0]!.body
        .replace('https://api.example.com', sb.baseUrl)
        .replace('CHATCTL_ORG=org_1 CHATCTL_APP=app_1 CHATCTL_ENV=production', `CHATCTL_ORG=${sb.organizationId} CHATCTL_APP=${sb.applicationId} CHATCTL_ENV=${sb.environmentKey}`);
      const dir = mkdtempSync(join(tmpdir(), 'chatctl-ci-recipe-'));
      temps.push(dir);
      const env = { PATH: `${join(ROOT, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: dir, CHATCTL_CONFIG_DIR: join(dir, 'cfg'), CHATCTL_CACHE_DIR: SHARED_CACHE_DIR, CI: 'true', NO_COLOR: '1', CHAT_API_TOKEN: sb.token };
      symlinkSync(join(ROOT, 'bin', 'chatctl.js'), join(dir, 'chatctl'));
      env.PATH = `${dir}:${env.PATH}`;
      // Asynchronous runs: the sandbox answers from this process.
      const scope = { CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token, CHATCTL_ORG: sb.organizationId, CHATCTL_APP: sb.applicationId, CHATCTL_ENV: sb.environmentKey };
      const created = await execa('chatctl', ['webhooks', 'create', '--name', 'ci', '--url', 'https://hooks.example.com/ci', '--event', 'chat.message.created.v1', '--json'], { env: { ...env, ...scope }, extendEnv: false });
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

async function quickStart(expect: ExpectStatic, dir: string): Promise<void> {
  {
    const blocks = codeBlocks(section('Quick start'));
    expect(blocks.map((b) => b.lang)).toEqual(['sh', 'sh', 'sh']);
    const [install, sandboxBlock, use] = blocks.map((b) => b.body) as [string, string, string];
    const port = String(await freePort());
    const repo = join(dir, 'repo');
    const env = npmEnv(dir);
    const sh = async (script: string) => (await execa('bash', ['-e', '-c', script], { cwd: repo, env, extendEnv: false, timeout: 300_000, stripFinalNewline: false })).stdout;

    // 1. npm install; npm install -g .; chatctl --version
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    expect((await sh(install)).trim().split('\n').at(-1)).toBe(version);
    expect((await execa('bash', ['-c', 'command -v chatctl'], { env, extendEnv: false })).stdout.trim()).toBe(join(dir, 'prefix', 'bin', 'chatctl'));

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
        setTimeout(() => fail(new Error(`the sandbox did not start: ${out}`)), 30_000);
      });

      // 3. Back in the first terminal, every line.
      const script = use.replaceAll('8484', port);
      const out = await sh(script);
      expect(out).toContain('all checks passed');
      expect(out).toMatch(/Rotated the signing secret of we_\w+ \(mode overlap\)\./);
      expect(out).toMatch(/Webhook endpoint we_\w+ was already active; nothing changed\./);
      expect(readdirSync(repo).filter((f) => /whsec|created\.json/.test(f))).toEqual([]);
    } finally {
      sandbox.kill('SIGINT'); // Ctrl-C
    }
    expect(await closed).toBe(0);
  }
}
