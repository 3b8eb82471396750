// `npm run release`: what a release publishes, in dist/release/
// (docs/distribution.md, "Releases"):
//
//   chatctl-<version>-<target>.tar.gz    the single executable with LICENSE,
//                                        README.md, the third-party notices
//                                        and licences, man pages, completions
//                                        (gzip's default level: -9 takes three
//                                        times as long for 0.6% less)
//   chatctl-<version>-<target>.cdx.json  a CycloneDX 1.5 SBOM of what that
//                                        executable contains
//   SHA256SUMS                           `sha256sum -c` input for all of them
//
// for each target (linux-x64 and linux-arm64 unless `--target T` is given,
// once or more). Built twice from the same commit with the same Node
// version, every file is byte-identical: the executables are (see
// scripts/package.mjs: the npm registry's Node for every target, a fixed
// hash seed for the code caches), the archives hold their entries sorted,
// with one fixed time (SOURCE_DATE_EPOCH, else the commit's time), owner 0
// and fixed modes, gzip-compressed without a time or name in the header,
// and the SBOM carries no time or random serial number of its own.
//
//   node scripts/release.mjs [--target T …] [--out DIR] [--force]
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const TARGETS = ['linux-x64', 'linux-arm64'];
/**
 * The Node versions whose V8 writes the same code cache build after build
 * (with the fixed hash seed). Measured: Node 20 does; Node 24 does not (the
 * bytecode V8 keeps depends on when its garbage collector ran), so a
 * release made with it leaves the caches out: ~10 ms more per command,
 * the same bytes every time.
 */
const STABLE_CODE_CACHES = Number(process.versions.node.split('.')[0]) === 20;

const say = (line) => process.stderr.write(`release: ${line}\n`);
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

function main(argv) {
  const targets = argv.flatMap((a, i) => (argv[i - 1] === '--target' ? [a] : []));
  for (const t of targets) if (!TARGETS.includes(t)) throw new Error(`--target ${t}: a release builds ${TARGETS.join(', ')}`);
  const mtime = sourceDateEpoch();
  const i = argv.indexOf('--out');
  const out = resolve(i >= 0 ? argv[i + 1] : join(root, 'dist', 'release'));
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const bundled = JSON.parse(readFileSync(join(root, 'dist', 'bundled.json'), 'utf8'));
  const written = [];
  for (const target of targets.length > 0 ? targets : TARGETS) {
    const exe = packageFor(target, argv.includes('--force'));
    const contents = JSON.parse(readFileSync(`${exe}.contents.json`, 'utf8'));
    const base = `chatctl-${pkg.version}-${target}`;
    writeFileSync(join(out, `${base}.tar.gz`), gzipSync(tar(archiveEntries(base, exe, contents), mtime)));
    writeFileSync(join(out, `${base}.cdx.json`), `${JSON.stringify(sbom(target, contents, bundled, mtime), null, 2)}\n`);
    written.push(`${base}.tar.gz`, `${base}.cdx.json`);
    say(`${base}.tar.gz and ${base}.cdx.json`);
  }
  const sums = written.sort().map((name) => `${sha256(readFileSync(join(out, name)))}  ${name}\n`);
  writeFileSync(join(out, 'SHA256SUMS'), sums.join(''));
  say(`${out}: ${written.length + 1} files`);
}

/** SOURCE_DATE_EPOCH (reproducible-builds.org), else the commit's time, else 0: the one time the archives carry. */
function sourceDateEpoch() {
  if (/^\d+$/.test(process.env.SOURCE_DATE_EPOCH ?? '')) return Number(process.env.SOURCE_DATE_EPOCH);
  try {
    return Number(execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()) || 0;
  } catch {
    return 0;
  }
}

/** The target's executable, built (or found current) by scripts/package.mjs in the release's own cache folder. */
function packageFor(target, force) {
  const exe = join(root, 'node_modules', '.cache', 'chatctl', 'release', process.version, `chatctl-${target}`);
  const args = [join(root, 'scripts', 'package.mjs'), '--target', target, '--out', exe, '--registry-node', ...(STABLE_CODE_CACHES ? [] : ['--no-code-cache']), ...(force ? ['--force'] : [])];
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`packaging ${target} failed (${r.status ?? r.signal})`);
  return exe;
}

/** What one archive holds: [path in the archive, file on disk or null for a folder, mode]. */
function archiveEntries(base, exe, contents) {
  const entries = [
    [`${base}/`, null, 0o755],
    [`${base}/chatctl`, exe, 0o755],
    [`${base}/LICENSE`, join(root, 'LICENSE'), 0o644],
    [`${base}/README.md`, join(root, 'README.md'), 0o644],
    [`${base}/THIRD-PARTY-NOTICES.txt`, join(root, 'dist', 'THIRD-PARTY-NOTICES.txt'), 0o644],
    [`${base}/licenses/`, null, 0o755],
    [`${base}/licenses/node-LICENSE`, contents.node.license, 0o644],
    ...(contents.addon?.licenseFiles ?? []).map((f) => [`${base}/licenses/keyring-addon-${f.split(/[\\/]/).pop()}`, f, 0o644]),
    [`${base}/man/`, null, 0o755],
    ...readdirSync(join(root, 'man'))
      .filter((n) => n.endsWith('.1'))
      .map((n) => [`${base}/man/${n}`, join(root, 'man', n), 0o644]),
    [`${base}/completions/`, null, 0o755],
    ...readdirSync(join(root, 'completions')).map((n) => [`${base}/completions/${n}`, join(root, 'completions', n), 0o644]),
  ];
  for (const [, file] of entries) if (file !== null && !existsSync(file)) throw new Error(`release: ${file} is missing`);
  return entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** A POSIX ustar archive of `entries`, every one owned by 0:0 with time `mtime`. */
function tar(entries, mtime) {
  const blocks = [];
  for (const [name, file, mode] of entries) {
    const data = file === null ? Buffer.alloc(0) : readFileSync(file);
    if (Buffer.byteLength(name) > 100) throw new Error(`release: ${name} is too long for a tar header`);
    const h = Buffer.alloc(512);
    const field = (offset, length, text) => h.write(text, offset, length, 'ascii');
    const octal = (offset, length, n) => field(offset, length, `${n.toString(8).padStart(length - 1, '0')}\0`);
    field(0, 100, name);
    octal(100, 8, mode);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, data.length);
    octal(136, 12, mtime);
    h.fill(' ', 148, 156);
    field(156, 1, file === null ? '5' : '0');
    field(257, 6, 'ustar\0');
    field(263, 2, '00');
    let sum = 0;
    for (const b of h) sum += b;
    field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** A package URL for an npm package (a scope's @ escaped, as the purl spec asks). */
const npmPurl = (name, version) => `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;

/** A CycloneDX licence entry: an SPDX id, or an expression ("(MIT OR CC0-1.0)"). */
const licenses = (license) => (typeof license !== 'string' ? undefined : /^[A-Za-z0-9.+-]+$/.test(license) ? [{ license: { id: license } }] : [{ expression: license }]);

/**
 * The CycloneDX 1.5 SBOM of one target's executable: chatctl itself, the
 * npm packages bundled into its JavaScript (dist/bundled.json, from the
 * build's esbuild metafiles), the Node.js binary it is a copy of, and the
 * keyring's native addon. Its serial number is derived from its contents
 * and its time is the release's fixed time, so it too is the same each build.
 */
function sbom(target, contents, bundled, mtime) {
  const component = (name, version, license, extra = {}) => ({
    type: 'library',
    'bom-ref': npmPurl(name, version),
    name,
    version,
    purl: npmPurl(name, version),
    ...(licenses(license) ? { licenses: licenses(license) } : {}),
    ...extra,
  });
  const components = bundled.map((p) => component(p.name, p.version, p.license));
  components.push(
    component(contents.node.package, contents.node.version, 'MIT', {
      type: 'platform',
      description: `Node.js ${contents.node.version} for ${target}: the runtime the executable is a copy of (its licence file lists what Node.js bundles)`,
    }),
  );
  if (contents.addon) {
    components.push(
      component(contents.addon.name, contents.addon.version, contents.addon.license, {
        description: 'the keyring native addon, unpacked and loaded when the system keyring is used',
        hashes: [{ alg: 'SHA-256', content: contents.addon.sha256 }],
      }),
    );
  }
  components.sort((a, b) => (a['bom-ref'] < b['bom-ref'] ? -1 : 1));
  const self = npmPurl(pkg.name, pkg.version);
  const doc = {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    version: 1,
    metadata: {
      timestamp: new Date(mtime * 1000).toISOString().replace(/\.000Z$/, 'Z'),
      component: {
        type: 'application',
        'bom-ref': self,
        name: pkg.name,
        version: pkg.version,
        purl: self,
        description: `${pkg.description} (single executable for ${target})`,
        licenses: licenses(pkg.license),
      },
      properties: [
        { name: 'chatctl:target', value: target },
        { name: 'chatctl:code-caches', value: String(contents.codeCaches) },
      ],
    },
    components,
    dependencies: [{ ref: self, dependsOn: components.map((c) => c['bom-ref']) }],
  };
  const h = sha256(JSON.stringify(doc));
  return {
    bomFormat: doc.bomFormat,
    specVersion: doc.specVersion,
    serialNumber: `urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((Number.parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`,
    ...doc,
  };
}

main(process.argv.slice(2));
