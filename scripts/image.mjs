// `npm run image`: an OCI image chatctl:VERSION of the single executable
// (docs/distribution.md, "A container image"), built with podman, or docker
// where a docker daemon answers and podman is absent. FROM scratch: the
// executable (for this machine's target, made from the npm registry's Node
// as a release is), the shared libraries it and the keyring addon link
// (from `ldd`, the files of this machine's Debian), the CA certificates of
// Debian's ca-certificates package, an /etc/passwd and /etc/group with a
// non-root user (chatctl, 65532) and its home, and nothing else: no shell,
// no package manager. The entrypoint is chatctl; OCI labels name the
// version, revision, source and licence.
//
//   node scripts/image.mjs [--tag NAME:TAG] [--engine podman|docker]
//
// Prints the image's name on stdout.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const TARGET = `${process.platform}-${process.arch}`;
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** The user the image runs as: not root, and no user of the host's by accident (65532 is distroless's "nonroot"). */
const UID = 65532;
/** The source label: package.json's repository when it names one, else the name the docs give this repository. */
const SOURCE = (typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url)?.replace(/^git\+/, '') ?? 'https://github.com/acme/chatctl';

const say = (line) => process.stderr.write(`image: ${line}\n`);

function option(argv, name) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

/** podman if installed, else docker if its daemon answers. */
function engine(argv) {
  const chosen = option(argv, '--engine');
  if (chosen) return chosen;
  if (spawnSync('podman', ['--version'], { stdio: 'ignore' }).status === 0) return 'podman';
  if (spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 20_000 }).status === 0) return 'docker';
  throw new Error('neither podman nor a docker daemon is available (Debian: apt-get install podman runc; docs/distribution.md)');
}

/** The shared libraries `file` links, as ldd resolves them here: [path as linked, real file]. */
function libraries(file) {
  const out = execFileSync('ldd', [file], { encoding: 'utf8' });
  const libs = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.push([m[1], realpathSync(m[1])]);
  }
  return libs;
}

function main(argv) {
  if (process.platform !== 'linux') throw new Error('npm run image builds on Linux only');
  const tag = option(argv, '--tag') ?? `chatctl:${pkg.version}`;
  const tool = engine(argv);
  const exe = join(root, 'node_modules', '.cache', 'chatctl', 'image', process.version, `chatctl-${TARGET}`);
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'package.mjs'), '--out', exe, '--registry-node'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`packaging failed (${r.status ?? r.signal})`);
  const contents = JSON.parse(readFileSync(`${exe}.contents.json`, 'utf8'));
  const ctx = mkdtempSync(join(tmpdir(), 'chatctl-image-'));
  try {
    const rootfs = join(ctx, 'rootfs');
    const put = (path, from, mode = 0o644) => {
      mkdirSync(dirname(join(rootfs, path)), { recursive: true });
      copyFileSync(from, join(rootfs, path));
      chmodSync(join(rootfs, path), mode);
    };
    put('usr/local/bin/chatctl', exe, 0o755);
    const libs = new Map([...libraries(exe), ...(contents.addon ? libraries(contents.addon.file) : [])]);
    for (const [path, real] of [...libs].sort()) put(path.slice(1), real, 0o755);
    put(CA_BUNDLE.slice(1), CA_BUNDLE);
    mkdirSync(join(rootfs, 'etc'), { recursive: true });
    writeFileSync(join(rootfs, 'etc', 'passwd'), `root:x:0:0:root:/root:/sbin/nologin\nchatctl:x:${UID}:${UID}:chatctl:/home/chatctl:/sbin/nologin\n`);
    writeFileSync(join(rootfs, 'etc', 'group'), `root:x:0:\nchatctl:x:${UID}:\n`);
    // glibc reads it for host names; podman and docker write /etc/hosts and /etc/resolv.conf at run time.
    writeFileSync(join(rootfs, 'etc', 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
    // The user's home, its own: a folder of the context copied with --chown (the rootfs copy makes folders root's).
    mkdirSync(join(ctx, 'home'), { mode: 0o700 });
    mkdirSync(join(rootfs, 'tmp'), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    const labels = {
      'org.opencontainers.image.title': 'chatctl',
      'org.opencontainers.image.description': pkg.description,
      'org.opencontainers.image.version': pkg.version,
      'org.opencontainers.image.revision': commit(),
      'org.opencontainers.image.source': SOURCE,
      'org.opencontainers.image.licenses': pkg.license,
    };
    writeFileSync(
      join(ctx, 'Containerfile'),
      [
        'FROM scratch',
        'COPY rootfs/ /',
        `COPY --chown=${UID}:${UID} home /home/chatctl`,
        ...Object.entries(labels).map(([k, v]) => `LABEL ${k}=${JSON.stringify(v)}`),
        // Node's own root certificates are built in; these add the system's (for a CA an operator installed).
        `ENV HOME=/home/chatctl NODE_EXTRA_CA_CERTS=${CA_BUNDLE} PATH=/usr/local/bin`,
        `USER ${UID}:${UID}`,
        'WORKDIR /home/chatctl',
        'ENTRYPOINT ["/usr/local/bin/chatctl"]',
        '',
      ].join('\n'),
    );
    say(`${tool} build -t ${tag} (${[...libs.keys()].length} libraries, ${contents.node.package}@${contents.node.version})`);
    const b = spawnSync(tool, ['build', '--quiet', '--tag', tag, '--file', join(ctx, 'Containerfile'), ctx], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (b.status !== 0) throw new Error(`${tool} build failed (${b.status ?? b.signal})`);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
  process.stdout.write(`${tag}\n`);
}

function commit() {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

main(process.argv.slice(2));
