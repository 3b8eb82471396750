// What scrubbing costs per output line (every line chatctl writes to stderr,
// and stdout of credentials, passes the scrubber): Scrubber.scrub on long
// lines of the kinds chatctl prints, this tree's src/output/scrub.ts against
// another commit's, alternated in one process (best of many rounds, as the
// machine may be shared).
//
//   node bench/scrub-line.mjs [--against REF]     (REF: a commit, default HEAD)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const at = process.argv.indexOf('--against');
const against = at > 0 ? process.argv[at + 1] : 'HEAD';
const tmp = mkdtempSync(join(tmpdir(), 'chatctl-scrub-bench-'));

/** The scrubber of the work tree, or of a commit (its scrubber as it was), bundled and imported. */
async function load(ref) {
  let entry = 'src/output/scrub.ts';
  if (ref) {
    const dir = join(tmp, 'ref', 'scrub');
    mkdirSync(dir, { recursive: true });
    const file = (path) => execFileSync('git', ['show', `${ref}:${path}`], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      writeFileSync(join(dir, 'scrub.ts'), file('src/output/scrub.ts'));
      entry = join(dir, 'scrub.ts');
    } catch {
      // Before the scrubber was one file: its folder src/output/scrub/.
      const names = execFileSync('git', ['ls-tree', '--name-only', `${ref}:src/output/scrub/`], { encoding: 'utf8' })
        .trim()
        .split('\n');
      for (const name of names) writeFileSync(join(dir, name), file(`src/output/scrub/${name}`));
      entry = join(dir, 'scrubber.ts');
    }
  }
  const outfile = join(tmp, `${ref ? 'ref' : 'tree'}.mjs`);
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile, logLevel: 'warning' });
  const { Scrubber } = await import(pathToFileURL(outfile).href);
  const r = new Scrubber();
  r.addToken('tok_e2e_Qm9vYmF6LXNlY3JldC10b2tlbg');
  r.addCredential('csrf_e2e_Zm9vYmFyYmF6');
  r.addSecret('whsec_e2e_c2lnbmluZy1zZWNyZXQtdmFsdWU9PQ');
  return r;
}

const json = JSON.stringify({ data: Array.from({ length: 120 }, (_, i) => ({ id: `we_${i}`, name: `endpoint ${i}`, url: `https://hooks.example.com/in/${i}`, version: i, status: 'active' })) });
const LINES = {
  'ASCII JSON, 10 KB': json,
  'ASCII message, 200 B': 'chatctl: rotated we_123 to version 4; the new secret went to file:/home/u/we_123.whsec (mode 0600), overlap ends 2026-11-29T12:00:00Z',
  'JSON with \\u escapes, 10 KB': json.replace(/e/g, '\\u0065'),
  'URL with & query, 2 KB': 'GET https://x.example/a?' + Array.from({ length: 100 }, (_, i) => `k${i}=v${i}`).join('&'),
  'accented text, 10 KB': 'Café résumé naïve – déjà vu. '.repeat(350),
  'CJK text, 10 KB': '中文文本测试。日本語のテキスト。'.repeat(330),
  'HTML error page, 2 KB': '<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>' + '<p class="x">upstream did not answer</p>'.repeat(45) + '</body></html>',
  'coloured table, 10 KB': Array.from({ length: 100 }, (_, i) => `\u001b[2m│\u001b[0m we_${i} \u001b[32mactive\u001b[0m \u001b[2m│\u001b[0m`).join('\n'),
};

try {
  const scrubbers = { [against]: await load(against), tree: await load(undefined) };
  const best = {};
  for (let round = 0; round < 15; round++) {
    for (const [name, text] of Object.entries(LINES)) {
      const n = Math.max(50, Math.round(300_000 / text.length));
      const order = round % 2 ? Object.keys(scrubbers).reverse() : Object.keys(scrubbers);
      for (const k of order) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < n; i++) scrubbers[k].scrub(text);
        const ns = Number(process.hrtime.bigint() - t0) / n;
        best[`${name}|${k}`] = Math.min(best[`${name}|${k}`] ?? Infinity, ns);
      }
    }
  }
  console.log('line'.padEnd(30), `${against} µs`.padStart(12), 'tree µs'.padStart(10), 'ratio'.padStart(7));
  for (const name of Object.keys(LINES)) {
    const b = best[`${name}|${against}`] / 1000;
    const a = best[`${name}|tree`] / 1000;
    console.log(name.padEnd(30), b.toFixed(1).padStart(12), a.toFixed(1).padStart(10), (a / b).toFixed(2).padStart(7));
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
