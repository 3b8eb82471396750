// `npm run image` (scripts/image.mjs): the OCI image of the single
// executable, run with podman (or docker): FROM scratch, so nothing but what
// the image script put there; --version as the non-root user, then create
// and rotate against a sandbox on the host's loopback (--network host), the
// secret written to a mounted folder with mode 0600.
//
// Without podman (or a docker daemon) these tests are skipped with a
// warning, except under CHATCTL_REQUIRE_IMAGE_TESTS (set by .ci/run, which
// installs podman and runc), where they fail.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NODE, PKG_VERSION, ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';
import { sandbox } from '../support/sandbox.js';

const works = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'ignore', timeout: 20_000 }).status === 0;
const engine = works('podman', ['--version']) ? 'podman' : works('docker', ['info']) ? 'docker' : undefined;
const required = Boolean(process.env.CHATCTL_REQUIRE_IMAGE_TESTS);
if (!engine && !required) {
  process.stderr.write('\n*** test/sea/image.test.ts: SKIPPED, the container image was not built: neither podman nor a docker daemon. Install podman and runc (as .ci/run does) to run it. ***\n\n');
}
/** podman on a machine without crun (and with hybrid cgroups) runs containers with runc: docs/distribution.md. */
const runtime = engine === 'podman' && works('runc', ['--version']) ? ['--runtime', 'runc'] : [];
const TAG = `chatctl:${PKG_VERSION}`;

describe.runIf(engine !== undefined || required)('the container image', () => {
  let out: string;
  beforeAll(() => {
    expect(engine, 'podman or a docker daemon').toBeDefined();
    expect(execFileSync(NODE, [join(ROOT, 'scripts', 'image.mjs')], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 }).trim()).toBe(TAG);
    out = join(tempDir('image'), 'out');
    mkdirSync(out, { mode: 0o700 });
    // The image's user (65532) owns the mounted folder, as an operator would arrange.
    if (process.getuid?.() === 0) chownSync(out, 65532, 65532);
    else chmodSync(out, 0o777);
  }, 620_000);
  afterAll(() => cleanupTempDirs());

  const run = (args: string[], opts: string[] = []) => execa(engine!, ['run', '--rm', ...runtime, ...opts, TAG, ...args], { reject: false, stdin: 'ignore', timeout: 120_000 });

  test('is FROM scratch with a non-root user, chatctl as its entrypoint and OCI labels; no shell', async () => {
    const inspect = JSON.parse((await execa(engine!, ['image', 'inspect', TAG])).stdout)[0];
    const config = inspect.Config ?? inspect.config;
    expect(config.User).toBe('65532:65532');
    expect(config.Entrypoint).toEqual(['/usr/local/bin/chatctl']);
    expect(config.Labels).toMatchObject({ 'org.opencontainers.image.version': PKG_VERSION, 'org.opencontainers.image.licenses': 'MIT', 'org.opencontainers.image.title': 'chatctl' });
    expect(config.Labels['org.opencontainers.image.source']).toMatch(/^https:\/\//);
    expect(inspect.RootFS?.Layers ?? inspect.rootfs?.diff_ids).toHaveLength(2);
    const shell = await run(['-c', 'true'], ['--entrypoint', '/bin/sh']);
    expect(shell.exitCode).not.toBe(0);
  }, 120_000);

  test('--version and version --json, as user 65532', async () => {
    const v = await run(['--version']);
    expect({ code: v.exitCode, out: v.stdout }).toEqual({ code: 0, out: PKG_VERSION });
    const info = await run(['version', '--json']);
    expect(JSON.parse(info.stdout)).toMatchObject({ version: PKG_VERSION, packaging: 'single-executable', target: `linux-${process.arch}` });
  }, 120_000);

  test('create and rotate against a sandbox on the host loopback, the secret to a mounted folder with mode 0600', async () => {
    const s = await sandbox();
    const env = { ...s.scopeEnv };
    const opts = ['--network', 'host', '--volume', `${out}:/out`, ...Object.keys(env).flatMap((k) => ['--env', k])];
    const withEnv = (args: string[]) => execa(engine!, ['run', '--rm', ...runtime, ...opts, TAG, ...args], { reject: false, stdin: 'ignore', timeout: 120_000, env });
    const created = await withEnv([
      'webhooks',
      'create',
      '--name',
      'image',
      '--url',
      'https://hooks.example.com/image',
      '--event',
      'chat.message.created.v1',
      '--secret-to',
      'file:/out/one.whsec',
      '--json',
    ]);
    expect(created.exitCode, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).data.endpoint.id as string;
    const rotated = await withEnv(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'immediate', '--yes', '--secret-to', 'file:/out/two.whsec', '--json']);
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout).data.endpoint.version).toBe(2);
    const secret = readFileSync(join(out, 'two.whsec'), 'utf8');
    expect(secret).toMatch(/^\S{20,}$/);
    expect(secret).not.toBe(readFileSync(join(out, 'one.whsec'), 'utf8'));
    expect(statSync(join(out, 'two.whsec')).mode & 0o777).toBe(0o600);
    // Written by the image's user (seen as such from here when the container runs without a user namespace of its own).
    if (process.getuid?.() === 0) expect(statSync(join(out, 'two.whsec')).uid).toBe(65532);
    expect(rotated.stderr).not.toContain(secret);
  }, 240_000);
});
