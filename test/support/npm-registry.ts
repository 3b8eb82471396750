// An npm registry on 127.0.0.1 that knows the packages of the repository's
// package-lock.json and nothing else, for tests that install without a
// lockfile (a packed tarball, `npm install -g`) and so must resolve its
// dependencies' ranges: npm asks a registry for each one's document. The
// tests use no network but loopback, and the npm cache that `npm ci` (or the
// README's `npm install`) filled holds the tarballs, keyed by the lockfile's
// integrity, but not these documents; asked offline, npm answers ENOTCACHED.
//
// Each document lists the versions the lockfile pins, with the lockfile's
// fields (dependencies, os, cpu, libc, engines...) and its integrity; the
// tarballs are served from npm's cache by that integrity, where npm also
// looks first. A package the cache does not hold answers 404, which npm
// reports by name.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ROOT } from './fixtures.js';

interface LockEntry {
  version?: string;
  integrity?: string;
  link?: boolean;
  [field: string]: unknown;
}

/** The fields of a lockfile entry that a registry's version document carries too. */
const MANIFEST_FIELDS = ['dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'bin', 'os', 'cpu', 'libc', 'engines', 'license', 'funding'];

/** Where npm's cache (cacache, content-v2) keeps the tarball of an sha512 integrity. */
function cachedTarball(cache: string, integrity: string): string | undefined {
  const sha512 = /^sha512-(\S+)$/.exec(integrity.split(/\s+/)[0]!)?.[1];
  if (!sha512) return undefined;
  const hex = Buffer.from(sha512, 'base64').toString('hex');
  return join(cache, '_cacache', 'content-v2', 'sha512', hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

export interface LocalRegistry {
  /** For npm_config_registry. */
  url: string;
  /** The package documents npm asked for, by name. */
  asked: string[];
  close: () => Promise<void>;
}

/** A registry of package-lock.json's packages, their tarballs read from the npm cache folder `cache`. */
export async function startLocalRegistry(cache: string): Promise<LocalRegistry> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const versions = new Map<string, Map<string, LockEntry>>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const name = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(path)?.[1];
    if (!name || entry.link || !entry.version || !entry.integrity) continue;
    if (!versions.has(name)) versions.set(name, new Map());
    versions.get(name)!.set(entry.version, entry);
  }
  const tarballs = new Map<string, string>(); // URL path -> integrity
  const asked: string[] = [];
  let url = '';

  const server = http.createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const integrity = tarballs.get(path);
    if (integrity !== undefined) {
      const file = cachedTarball(cache, integrity);
      if (!file || !existsSync(file)) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return void res.end(readFileSync(file));
    }
    const name = path.slice(1);
    const known = versions.get(name);
    if (!known) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    asked.push(name);
    const docs: Record<string, unknown> = {};
    for (const [version, entry] of known) {
      const tarballPath = `/${name}/-/${name.split('/').pop()}-${version}.tgz`;
      tarballs.set(tarballPath, entry.integrity!);
      const fields = Object.fromEntries(MANIFEST_FIELDS.filter((f) => entry[f] !== undefined).map((f) => [f, entry[f]]));
      docs[version] = { name, version, ...fields, dist: { integrity: entry.integrity, tarball: `${url}${tarballPath.slice(1)}` } };
    }
    const latest = [...known.keys()].at(-1)!;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ name, 'dist-tags': { latest }, versions: docs }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
