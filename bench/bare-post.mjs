// The baseline for the rotate round trip: one bare node:http POST, nothing
// else. Usage: node bench/bare-post.mjs URL BODY TOKEN ['Name: value' …]
// Sends the headers chatctl sends (Authorization, Content-Type, Accept,
// Origin = the URL's origin, x-service-csrf: 1, plus any given), reads the
// whole answer and exits 0 on a 2xx, else 1.
import { request } from 'node:http';

const [url, body, token, ...extra] = process.argv.slice(2);
const u = new URL(url);
const headers = {
  Authorization: `Bearer ${token}`,
  'Content-Type': 'application/json',
  Accept: 'application/json',
  Origin: u.origin,
  'x-service-csrf': '1',
  'Content-Length': Buffer.byteLength(body),
};
for (const h of extra) {
  const i = h.indexOf(':');
  headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
}

const req = request(u, { method: 'POST', headers, agent: false }, (res) => {
  const chunks = [];
  res.on('data', (c) => chunks.push(c));
  res.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    if (res.statusCode < 200 || res.statusCode >= 300) {
      process.stderr.write(`bare-post: HTTP ${res.statusCode}: ${text}\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(text + '\n');
    }
  });
});
req.on('error', (err) => {
  process.stderr.write(`bare-post: ${err.message}\n`);
  process.exitCode = 1;
});
req.end(body);
