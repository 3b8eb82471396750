// The single executable for another architecture: `npm run package --
// --target linux-arm64` on this x64 machine (the npm registry's arm64 Node
// of this Node's version and the arm64 keyring addon, fetched at packaging
// time into node_modules/.cache/chatctl/targets/), run under qemu's user
// mode emulation with Debian's arm64 C and C++ libraries
// (qemu-user-static, libc6-arm64-cross, libstdc++6-arm64-cross): its
// version, then create and rotate against a sandbox on 127.0.0.1, the secret
// to a file of mode 0600.
//
// Without qemu these tests are skipped with a warning, except under
// CHATCTL_REQUIRE_ARM64_TESTS (set by .ci/run, which installs them), where
// they fail. Real processes: the executable is the thing under test; it is
// built once per set of inputs and found current afterwards.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NODE, PKG_VERSION, ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';
import { sandbox } from '../support/sandbox.js';

/** Where Debian's cross packages put the arm64 loader and libraries. */
const SYSROOT = '/usr/aarch64-linux-gnu';
const QEMU = ['/usr/bin/qemu-aarch64-static', '/usr/bin/qemu-aarch64'].find((f) => existsSync(f));
const native = arch() === 'arm64';
const missing = native
  ? []
  : [
      ...(QEMU ? [] : ['qemu-aarch64-static (qemu-user-static)']),
      ...(existsSync(join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1')) ? [] : ['the arm64 C library (libc6-arm64-cross)']),
      ...(existsSync(join(SYSROOT, 'lib', 'libstdc++.so.6')) ? [] : ['the arm64 C++ library (libstdc++6-arm64-cross)']),
    ];
const required = Boolean(process.env.CHATCTL_REQUIRE_ARM64_TESTS);
if (missing.length > 0 && !required) {
  process.stderr.write(
    `\n*** test/sea/arm64.test.ts: SKIPPED, the arm64 executable was not run: ${missing.join(', ')} not found. ` +
      'Install qemu-user-static, libc6-arm64-cross and libstdc++6-arm64-cross (as .ci/run does) to run it. ***\n\n',
  );
}

describe.runIf(missing.length === 0 || required)('the single executable built for linux-arm64, under emulation', () => {
  let exe: string;
  let home: string;
  let folder: string;
  beforeAll(() => {
    expect(missing).toEqual([]);
    exe = execFileSync(NODE, [join(ROOT, 'scripts', 'package.mjs'), '--cached', '--target', 'linux-arm64'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 400_000,
    }).trim();
    const root = tempDir('arm64');
    home = join(root, 'home');
    folder = join(root, 'work');
    for (const d of [home, folder]) mkdirSync(d);
  }, 420_000);
  afterAll(() => cleanupTempDirs());

  /** The executable under qemu (or as is on an arm64 machine), with a clean environment; async, so the in-process sandbox answers meanwhile. */
  const run = (args: string[], env: Record<string, string> = {}) =>
    execa(native ? exe : QEMU!, native ? args : ['-L', SYSROOT, exe, ...args], {
      cwd: folder,
      env: { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', NO_COLOR: '1', XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache'), ...env },
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      timeout: 120_000,
    });

  test('is an arm64 ELF executable that prints its version, and says it is the single executable for linux-arm64', async () => {
    const header = readFileSync(exe).subarray(0, 20);
    expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(header.readUInt16LE(18)).toBe(183); // e_machine EM_AARCH64
    const v = await run(['--version']);
    expect({ code: v.exitCode, out: v.stdout, err: v.stderr }).toEqual({ code: 0, out: PKG_VERSION, err: '' });
    const info = await run(['version', '--json']);
    expect(info.exitCode, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ version: PKG_VERSION, platform: 'linux-arm64', target: 'linux-arm64', packaging: 'single-executable', node: process.version });
  }, 240_000);

  test('creates an endpoint and rotates its secret against a sandbox on 127.0.0.1, the secret to a file of mode 0600', async () => {
    const s = await sandbox();
    const scope = { ...s.scopeEnv };
    const created = await run(
      ['webhooks', 'create', '--name', 'arm', '--url', 'https://hooks.example.com/arm', '--event', 'chat.message.created.v1', '--secret-to', 'file:one.whsec', '--json'],
      scope,
    );
    expect(created.exitCode, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).data.endpoint.id as string;
    const rotated = await run(['webhooks', 'rotate', id, '--expected-version', '1', '--mode', 'immediate', '--yes', '--secret-to', 'file:two.whsec', '--json'], scope);
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout).data.endpoint.version).toBe(2);
    const secret = readFileSync(join(folder, 'two.whsec'), 'utf8');
    expect(secret).toMatch(/^\S{20,}$/);
    expect(secret).not.toBe(readFileSync(join(folder, 'one.whsec'), 'utf8'));
    expect(statSync(join(folder, 'two.whsec')).mode & 0o777).toBe(0o600);
    expect(rotated.stderr).not.toContain(secret);
  }, 240_000);
});
