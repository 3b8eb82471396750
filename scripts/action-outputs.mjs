// The outputs of the GitHub Action (action.yml) from what `chatctl webhooks
// rotate --json` printed, as lines for $GITHUB_OUTPUT: `version` and
// `fingerprint`. One endpoint: its new version and the new secret's
// fingerprint. A manifest (--from): JSON objects of endpoint id to new
// version and to fingerprint, for the items that ended ok. Nothing else of
// the answer is taken: with destinations given, it holds no secret, and the
// outputs never would.
//
//   node scripts/action-outputs.mjs RESULT_FILE >> "$GITHUB_OUTPUT"
import { readFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
let text = '';
try {
  text = readFileSync(file, 'utf8');
} catch {
  /* nothing printed: no outputs */
}
const docs = text
  .split('\n')
  .filter((line) => line.trim() !== '')
  .flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
const single = docs.length === 1 && docs[0]?.data?.endpoint ? docs[0].data : undefined;
const out = [];
if (single) {
  if (Number.isInteger(single.endpoint.version)) out.push(`version=${single.endpoint.version}`);
  const fp = single.secretDelivery?.[0]?.fingerprint;
  if (typeof fp === 'string' && /^sha256:[0-9a-f]+$/.test(fp)) out.push(`fingerprint=${fp}`);
} else {
  const items = docs.filter((d) => d && d.ok === true && typeof d.endpointId === 'string');
  if (items.length > 0) {
    const versions = Object.fromEntries(items.filter((d) => Number.isInteger(d.version)).map((d) => [d.endpointId, d.version]));
    const fingerprints = Object.fromEntries(items.filter((d) => typeof d.fingerprint === 'string' && /^sha256:[0-9a-f]+$/.test(d.fingerprint)).map((d) => [d.endpointId, d.fingerprint]));
    out.push(`version=${JSON.stringify(versions)}`, `fingerprint=${JSON.stringify(fingerprints)}`);
  }
}
process.stdout.write(out.map((line) => `${line}\n`).join(''));
