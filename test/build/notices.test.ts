// The bundles in dist/ carry the code of MIT/ISC (and one Apache-2.0)
// libraries, whose licences ask that their notices go with every copy: the
// build writes dist/THIRD-PARTY-NOTICES.txt from esbuild's metafiles, and
// the package ships it. Checked here against what the bundles themselves
// show (the path of each module esbuild bundled, see bundledPackages),
// not against the metafile the file was made from. Reads dist/ only: npm
// test builds it before the suite.
import { describe, expect, test } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/fixtures.js';

const DIST = join(ROOT, 'dist');
const NOTICES = join(DIST, 'THIRD-PARTY-NOTICES.txt');

function bundles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? bundles(join(dir, e.name)) : e.name.endsWith('.cjs') ? [join(dir, e.name)] : []));
}

/**
 * name@version of every package whose modules the bundles hold, from what
 * esbuild writes of each module's path: a `// node_modules/…` comment before
 * its code, and the `"node_modules/….js"` key of its lazy wrapper, which a
 * minified bundle (main.cjs) keeps while it drops the comments.
 */
function bundledPackages(): Set<string> {
  const folders = new Set<string>();
  for (const file of bundles(DIST)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\/\/ ((?:.*\/)?node_modules\/(?:@[^/\n]+\/)?[^/\n]+)\//gm)) folders.add(m[1]!);
    for (const m of text.matchAll(/["'`]((?:[^"'`\n]*\/)?node_modules\/(?:@[^/"'`\n]+\/)?[^/"'`\n]+)\/[^"'`\n]*\.[cm]?js["'`]/g)) folders.add(m[1]!);
  }
  return new Set(
    [...folders].map((folder) => {
      const pkg = JSON.parse(readFileSync(join(ROOT, folder, 'package.json'), 'utf8')) as { name: string; version: string };
      return `${pkg.name}@${pkg.version}`;
    }),
  );
}

/** The notices file's sections, by their `name@version (license)` header. */
function notices(): Map<string, { license: string; text: string }> {
  const sections = readFileSync(NOTICES, 'utf8')
    .split(/\n-{20,}\n\n/)
    .slice(1);
  return new Map(
    sections.map((s) => {
      const m = /^(\S+@\d\S*) \(([^)\n]*)\)\n\n([\s\S]*)$/.exec(s);
      if (!m) throw new Error(`a section without a "name@version (license)" header: ${s.slice(0, 80)}`);
      return [m[1]!, { license: m[2]!, text: m[3]! }];
    }),
  );
}

describe('third-party notices', () => {
  test('dist/THIRD-PARTY-NOTICES.txt has the licence of every package the bundles hold', () => {
    const seen = bundledPackages();
    const listed = notices();
    const names = [...seen].map((p) => p.replace(/(.)@.*$/, '$1'));
    for (const name of ['commander', 'zod', 'chalk', 'cli-table3', 'conf', 'execa', 'undici']) expect(names, name).toContain(name);
    expect(names.some((n) => n.startsWith('@inquirer/'))).toBe(true);
    for (const p of seen) expect([...listed.keys()], p).toContain(p);
    for (const p of seen) {
      const { license, text } = listed.get(p)!;
      expect(text.trim(), p).not.toBe('');
      if (/^(MIT|ISC)$/.test(license)) expect(text, p).toContain('Permission');
    }
    // The ones named above are MIT or ISC, with their full licence text.
    for (const p of [...seen].filter((s) => /^(commander|zod|chalk|cli-table3|conf|execa|undici|@inquirer\/[^@]+)@/.test(s))) {
      expect(listed.get(p)!.license, p).toMatch(/^(MIT|ISC)$/);
      expect(listed.get(p)!.text, p).toMatch(/Permission (is hereby granted|to use, copy, modify)/);
    }
    // Sorted by name, each name@version once.
    const keys = [...listed.keys()];
    expect(keys).toEqual([...new Set(keys)]);
    const byName = keys.map((k) => k.replace(/(.)@.*$/, '$1'));
    expect(byName).toEqual([...byName].sort());
  });

  test("dist/bundled.json (the release SBOM's source) lists the same packages as the notices, with their licences, and every package the bundles show", () => {
    const listed = notices();
    const data = JSON.parse(readFileSync(join(DIST, 'bundled.json'), 'utf8')) as { name: string; version: string; license: string | null }[];
    expect(data.map((p) => `${p.name}@${p.version}`)).toEqual([...listed.keys()]);
    for (const p of data) expect(p.license, p.name).toBe(listed.get(`${p.name}@${p.version}`)!.license);
    for (const p of bundledPackages()) expect(data.map((d) => `${d.name}@${d.version}`)).toContain(p);
  });

  test('the package ships the notices, and not the build stamp', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('dist/');
    // Only these negations, which leave the notices in: the stamp, the single executable npm run package writes, and npm run release's files.
    expect(pkg.files.filter((f) => f.startsWith('!'))).toEqual(['!dist/build-stamp.json', '!dist/bin/', '!dist/release/']);
    expect(existsSync(join(ROOT, '.npmignore'))).toBe(false);
    expect(existsSync(NOTICES)).toBe(true);
  });
});
