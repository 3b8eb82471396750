// The execute seam (src/app/execute.ts): the whole CLI runs from argv and a
// ctx, never from the process. Two checks: no module but main.ts reads the
// process's environment, arguments or streams or exits it; and a run driven
// with an env that differs from process.env, against a loopback server,
// follows the env it was given.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { ROOT, SECRET, TOKEN, secretBody } from '../support/fixtures.js';
import { tempDir, workspace, runInProcess, waitFor } from '../support/run.js';
import { startServer, type RecordingServer } from '../support/server.js';
import { execa } from 'execa';

const FORBIDDEN = /\bprocess\s*\.\s*(env|argv|stdout|stderr|stdin|exit)\b|\bprocess\s*\[\s*['"](env|argv|stdout|stderr|stdin|exit)['"]\s*\]/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('the seam', () => {
  test('no module but src/app/main.ts touches process.env/argv/stdout/stderr/stdin/exit', () => {
    const offenders: string[] = [];
    for (const file of sources(join(ROOT, 'src'))) {
      const rel = relative(ROOT, file);
      // main.ts is the adapter; src/sea/main.ts and src/sea/launcher.ts are the single executable's entry and launcher, what bin/chatctl.js is to the npm package.
      if ([join('src', 'app', 'main.ts'), join('src', 'sea', 'main.ts'), join('src', 'sea', 'launcher.ts')].includes(rel)) continue;
      readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
        .split('\n')
        .forEach((line, i) => {
          if (FORBIDDEN.test(line.replace(/\/\/.*$/, ''))) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
  });

  describe('execute() with a world of its own', () => {
    let server: RecordingServer;
    const saved = { ...process.env };
    beforeAll(async () => {
      server = await startServer();
      // What the process has is wrong on purpose: only ctx.env may count.
      process.env.CHATCTL_BASE_URL = 'https://wrong.invalid';
      process.env.CHATCTL_TOKEN = 'tok_from_process_env_must_not_be_used';
      process.env.CHATCTL_CONFIG_DIR = '/nonexistent/chatctl-process-env';
    });
    afterAll(async () => {
      for (const k of ['CHATCTL_BASE_URL', 'CHATCTL_TOKEN', 'CHATCTL_CONFIG_DIR']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await server.close();
    });

    // Bundled as the build bundles it (CommonJS, which has no import.meta),
    // and driven in plain Node (not through vitest's module loader).
    test.each(['cjs'] as const)('a %s bundle of src/app/execute.ts, in plain Node, rotates against a loopback server with the env and streams it is given', async (format) => {
      server.reset();
      server.setHandler(() => ({ status: 200, body: secretBody() }));
      const outdir = tempDir('seam-plain');
      const bundle = join(outdir, 'execute.cjs');
      await build({ entryPoints: [join(ROOT, 'src/app/execute.ts')], bundle: true, platform: 'node', format, outfile: bundle, logLevel: 'silent', define: { __CHATCTL_VERSION__: '"7.7.7"' } });
      const ws = workspace();
      const driver = [
        "import { Readable, Writable } from 'node:stream';",
        'const mod = await import(process.argv[1]);',
        'const execute = mod.execute ?? mod.default.execute;',
        "let out = '', err = '';",
        'const sink = (add) => new Writable({ write(c, _e, cb) { add(String(c)); cb(); } });',
        'const code = await execute(JSON.parse(process.argv[2]), { env: JSON.parse(process.argv[3]), cwd: process.argv[4],',
        '  io: { stdin: Readable.from([]), stdout: sink((s) => (out += s)), stderr: sink((s) => (err += s)) } });',
        'console.log(JSON.stringify({ code, out, err }));',
      ].join('\n');
      const argv = ['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap', '--json'];
      const env = { CHATCTL_BASE_URL: server.url, CHATCTL_TOKEN: TOKEN, CHATCTL_ORG: 'o', CHATCTL_APP: 'a', CHATCTL_ENV: 'e', CHATCTL_CONFIG_DIR: ws.configDir, HOME: ws.home };
      // The child's own environment points elsewhere: only the env handed to execute() may count.
      const child = await execa(process.execPath, ['--input-type=module', '-e', driver, bundle, JSON.stringify(argv), JSON.stringify(env), ws.cwd], {
        env: { PATH: process.env.PATH, CHATCTL_BASE_URL: 'https://wrong.invalid', CHATCTL_TOKEN: 'tok_wrong' },
        extendEnv: false,
        reject: false,
      });
      expect(child.stderr).toBe('');
      expect(child.exitCode).toBe(0);
      const r = JSON.parse(child.stdout) as { code: number; out: string; err: string };
      expect(r.code, r.err).toBe(0);
      expect(JSON.parse(r.out)).toEqual(secretBody());
      expect(r.err).toBe('');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(server.requests[0]!.headers['user-agent']).toMatch(/^chatctl\/7\.7\.7 /);
      expect(server.requests[0]!.url).toBe('/v1/organizations/o/applications/a/environments/e/webhook-endpoints/we_1/secret/rotate');
    });

    test('the TTY flag of the given stdout decides: a secret is printed once on a terminal, refused on a pipe', async () => {
      server.reset();
      server.setHandler(() => ({ status: 200, body: secretBody() }));
      const ws = workspace();
      const env = { CHATCTL_BASE_URL: server.url, CHATCTL_TOKEN: TOKEN, CHATCTL_ORG: 'o', CHATCTL_APP: 'a', CHATCTL_ENV: 'e', CHATCTL_CONFIG_DIR: ws.configDir, NO_COLOR: '1' };
      const argv = ['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap', '--no-input'];
      const onTerminal = await runInProcess(argv, { env, cwd: ws.cwd, tty: { stdout: true } });
      expect(onTerminal.exitCode, onTerminal.stderr).toBe(0);
      expect(onTerminal.stdout.split(SECRET)).toHaveLength(2);
      const onPipe = await runInProcess(argv, { env, cwd: ws.cwd });
      expect(onPipe.exitCode).toBe(2);
      expect(server.requests).toHaveLength(1);
    });

    // main.ts hands stdin in through a getter, since Node builds
    // process.stdin (and the modules behind it) when it is first touched:
    // a run that never reads standard input must never ask for it, a run
    // that does must get it.
    test('ctx.io.stdin is taken only by a run that reads it: not by rotate --json onto a pipe, but by fingerprint -', async () => {
      server.reset();
      server.setHandler(() => ({ status: 200, body: secretBody() }));
      const ws = workspace();
      const env = { CHATCTL_BASE_URL: server.url, CHATCTL_TOKEN: TOKEN, CHATCTL_ORG: 'o', CHATCTL_APP: 'a', CHATCTL_ENV: 'e', CHATCTL_CONFIG_DIR: ws.configDir };
      const { Readable, Writable } = await import('node:stream');
      const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
      const world = (input: string) => {
        let taken = 0;
        const stdin = Object.assign(Readable.from([Buffer.from(input)]), { isTTY: false });
        const io = {
          get stdin() {
            taken++;
            return stdin;
          },
          stdout: sink(),
          stderr: sink(),
        };
        return { io, taken: () => taken };
      };
      const { execute } = await import('../../src/app/execute.js');
      const rotate = world('');
      expect(await execute(['webhooks', 'rotate', 'we_1', '--expected-version', '3', '--mode', 'overlap', '--json'], { env, cwd: ws.cwd, io: rotate.io })).toBe(0);
      expect(server.requests).toHaveLength(1);
      expect(rotate.taken()).toBe(0);
      const fp = world(SECRET);
      expect(await execute(['webhooks', 'fingerprint', '-'], { env, cwd: ws.cwd, io: fp.io })).toBe(0);
      expect(fp.taken()).toBe(1);
    });

    test("an aborted ctx.signal ends the run with the signal's exit code", async () => {
      server.reset();
      server.setHandler(() => new Promise<never>(() => {})); // never answers
      const ws = workspace();
      const env = { CHATCTL_BASE_URL: server.url, CHATCTL_TOKEN: TOKEN, CHATCTL_ORG: 'o', CHATCTL_APP: 'a', CHATCTL_ENV: 'e', CHATCTL_CONFIG_DIR: ws.configDir };
      const argv = ['webhooks', 'reactivate', 'we_1', '--expected-version', '3', '--json'];
      for (const [reason, code] of [
        ['SIGINT', 130],
        ['SIGTERM', 143],
        ['SIGHUP', 129],
      ] as const) {
        const controller = new AbortController();
        const sent = server.hits;
        const run = runInProcess(argv, { env, cwd: ws.cwd, signal: controller.signal });
        await waitFor(() => server.hits > sent, 10_000, 'the request to arrive');
        controller.abort(reason);
        const r = await run;
        expect(r.exitCode).toBe(code);
        expect(JSON.parse(r.stderr).exitCode).toBe(code);
      }
    });
  });
});
