// `npm run release` (scripts/release.mjs): per target an archive and a
// CycloneDX SBOM, and SHA256SUMS; built twice (the second time with every
// executable rebuilt, --force), every file byte-identical. The archive is
// read back as tar and gzip say it is written: sorted entries, owner 0, the
// fixed time, no time in the gzip header; the x64 executable taken out of
// its archive runs. The SBOM names what the executable holds: the bundled
// npm packages at the versions installed here, Node.js, the keyring addon.
//
// The first build fetches the npm registry's Node for each target (as
// test/sea/arm64.test.ts does, once, into node_modules/.cache); nothing
// else leaves the machine.
import { execFileSync } from 'node:child_process';
import { chmodSync, createReadStream, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NODE, PKG_VERSION, ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

const EPOCH = 1_700_000_000;
const TARGETS = ['linux-x64', 'linux-arm64'];
let first: string;
let second: string;

function release(out: string, ...extra: string[]): void {
  execFileSync(NODE, [join(ROOT, 'scripts', 'release.mjs'), '--out', out, ...extra], {
    cwd: ROOT,
    env: { ...process.env, SOURCE_DATE_EPOCH: String(EPOCH) },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 900_000,
  });
}

beforeAll(() => {
  const root = tempDir('release');
  first = join(root, 'one');
  second = join(root, 'two');
  release(first);
  release(second, '--force');
}, 1_800_000);
afterAll(() => cleanupTempDirs());

const sha256 = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => h.update(c))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });

interface Entry {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  mtime: number;
  type: string;
  data: Buffer;
}

/** The entries of a ustar archive, read field by field. */
function untar(buf: Buffer): Entry[] {
  const entries: Entry[] = [];
  const text = (at: number, len: number) => buf.toString('ascii', at, at + len).replace(/\0.*$/s, '');
  const octal = (at: number, len: number) => Number.parseInt(text(at, len).trim(), 8);
  for (let at = 0; at + 512 <= buf.length && buf[at] !== 0; ) {
    const size = octal(at + 124, 12);
    entries.push({
      name: text(at, 100),
      mode: octal(at + 100, 8),
      uid: octal(at + 108, 8),
      gid: octal(at + 116, 8),
      mtime: octal(at + 136, 12),
      type: text(at + 156, 1),
      data: buf.subarray(at + 512, at + 512 + size),
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

describe('npm run release', () => {
  const names = TARGETS.flatMap((t) => [`chatctl-${PKG_VERSION}-${t}.cdx.json`, `chatctl-${PKG_VERSION}-${t}.tar.gz`]);

  test('writes an archive and an SBOM per target, and SHA256SUMS that checks them all', async () => {
    expect(readdirSync(first).sort()).toEqual(['SHA256SUMS', ...names].sort());
    const lines = readFileSync(join(first, 'SHA256SUMS'), 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => l.split('  ')[1])).toEqual([...names].sort());
    for (const line of lines) {
      const [sum, name] = line.split('  ');
      expect(await sha256(join(first, name!)), name).toBe(sum);
    }
  });

  test('built twice, with every executable built again, every file is byte-identical', async () => {
    expect(readdirSync(second).sort()).toEqual(readdirSync(first).sort());
    for (const name of readdirSync(first)) expect(await sha256(join(second, name)), name).toBe(await sha256(join(first, name)));
  });

  test('each archive: one folder of sorted entries, owner 0, the fixed time, no time in the gzip header; the executable, licences, man pages, completions', () => {
    const manPages = readdirSync(join(ROOT, 'man')).filter((n) => n.endsWith('.1'));
    for (const target of TARGETS) {
      const base = `chatctl-${PKG_VERSION}-${target}`;
      const gz = readFileSync(join(first, `${base}.tar.gz`));
      expect(gz.readUInt32LE(4), 'gzip MTIME').toBe(0);
      expect(gz[3]! & 0x08, 'gzip FNAME').toBe(0);
      const entries = untar(gunzipSync(gz));
      const paths = entries.map((e) => e.name);
      expect(paths).toEqual([...paths].sort());
      expect(paths.every((p) => p.startsWith(`${base}/`))).toBe(true);
      for (const e of entries) expect({ name: e.name, uid: e.uid, gid: e.gid, mtime: e.mtime }).toEqual({ name: e.name, uid: 0, gid: 0, mtime: EPOCH });
      const byName = new Map(entries.map((e) => [e.name.slice(base.length + 1), e]));
      expect(byName.get('chatctl')!.mode).toBe(0o755);
      expect(byName.get('LICENSE')!.data.equals(readFileSync(join(ROOT, 'LICENSE')))).toBe(true);
      expect(byName.get('README.md')!.data.equals(readFileSync(join(ROOT, 'README.md')))).toBe(true);
      expect(byName.get('THIRD-PARTY-NOTICES.txt')!.data.toString()).toContain('commander@');
      expect(byName.get('licenses/node-LICENSE')!.data.toString()).toMatch(/^Node\.js is licensed/);
      expect([...byName.keys()].filter((k) => k.startsWith('man/') && k.endsWith('.1')).sort()).toEqual(manPages.map((n) => `man/${n}`).sort());
      expect([...byName.keys()].filter((k) => k.startsWith('completions/') && k !== 'completions/').sort()).toEqual(
        readdirSync(join(ROOT, 'completions'))
          .map((n) => `completions/${n}`)
          .sort(),
      );
      const elf = byName.get('chatctl')!.data;
      expect(elf.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
      expect(elf.readUInt16LE(18)).toBe(target === 'linux-x64' ? 62 : 183);
    }
  });

  test('the x64 executable taken out of its archive runs and names its target', () => {
    const base = `chatctl-${PKG_VERSION}-linux-x64`;
    const exe = join(tempDir('release-run'), 'chatctl');
    writeFileSync(exe, untar(gunzipSync(readFileSync(join(first, `${base}.tar.gz`)))).find((e) => e.name === `${base}/chatctl`)!.data);
    chmodSync(exe, 0o755);
    expect(execFileSync(exe, ['--version'], { encoding: 'utf8' })).toBe(`${PKG_VERSION}\n`);
    expect(JSON.parse(execFileSync(exe, ['version', '--json'], { encoding: 'utf8' }))).toMatchObject({ target: 'linux-x64', packaging: 'single-executable', node: process.version });
  });

  test('the SBOM (CycloneDX 1.5) names the bundled packages at their installed versions, Node.js and the keyring addon with its hash', () => {
    const installed = (name: string) => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    for (const target of TARGETS) {
      const doc = JSON.parse(readFileSync(join(first, `chatctl-${PKG_VERSION}-${target}.cdx.json`), 'utf8'));
      expect(doc).toMatchObject({
        bomFormat: 'CycloneDX',
        specVersion: '1.5',
        version: 1,
        metadata: { timestamp: new Date(EPOCH * 1000).toISOString().replace('.000Z', 'Z'), component: { name: 'chatctl', version: PKG_VERSION, type: 'application' } },
      });
      expect(doc.serialNumber).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const components = new Map((doc.components as { name: string; version: string; purl: string; type: string; hashes?: { content: string }[] }[]).map((c) => [c.name, c]));
      for (const name of ['commander', 'undici', 'zod']) {
        expect(components.get(name), name).toMatchObject({ type: 'library', version: installed(name), purl: `pkg:npm/${name}@${installed(name)}` });
      }
      expect(components.get('@inquirer/core')?.purl).toBe(`pkg:npm/%40inquirer/core@${installed('@inquirer/core')}`);
      expect(components.get(`node-${target}`)).toMatchObject({ type: 'platform', version: process.versions.node });
      const addon = components.get(`@napi-rs/keyring-${target}-gnu`)!;
      expect(addon.version).toBe(installed('@napi-rs/keyring'));
      expect(addon.hashes![0]!.content).toMatch(/^[0-9a-f]{64}$/);
      expect(doc.dependencies[0].dependsOn).toEqual(doc.components.map((c: { 'bom-ref': string }) => c['bom-ref']));
    }
    const x64 = JSON.parse(readFileSync(join(first, `chatctl-${PKG_VERSION}-linux-x64.cdx.json`), 'utf8'));
    const addonFile = readFileSync(join(ROOT, 'node_modules', '@napi-rs', 'keyring-linux-x64-gnu', 'keyring.linux-x64-gnu.node'));
    expect(x64.components.find((c: { name: string }) => c.name === '@napi-rs/keyring-linux-x64-gnu').hashes[0].content).toBe(createHash('sha256').update(addonFile).digest('hex'));
  });
});
