// node keyring-child.cjs get|set|delete SERVICE ACCOUNT (src/credentials/keyring.ts):
// one call to @napi-rs/keyring, one JSON line on stdout. The password comes on stdin, never argv (`ps` shows it).
'use strict';
const [op, service, account] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o));
const why = (e) =>
  String(e?.message || e)
    .split('\n')[0]
    .slice(0, 300);

function main() {
  let lib;
  try {
    lib = require('@napi-rs/keyring');
  } catch {
    return say({ ok: false, kind: 'unavailable', reason: `no prebuilt keyring binary for ${process.platform}-${process.arch}` });
  }
  let entry;
  try {
    // Linux: the Secret Service only, never the kernel's keyutils (lost at reboot).
    entry = new lib.Entry(service, account, { linux: { store: 'secret-service' } });
  } catch (e) {
    return say({ ok: false, kind: 'unavailable', reason: why(e) });
  }
  try {
    if (op === 'get') return say({ ok: true, value: entry.getPassword() ?? null });
    if (op === 'delete') return say({ ok: true, value: null, deleted: entry.deleteCredential() });
    if (op === 'set') {
      entry.setPassword(require('node:fs').readFileSync(0, 'utf8'));
      return say({ ok: true, value: null });
    }
    return say({ ok: false, kind: 'failed', reason: `unknown operation ${op}` });
  } catch (e) {
    const reason = why(e);
    return say({ ok: false, kind: /Platform|NoStorage|NoDefault|not available|ServiceUnknown|NameHasNoOwner|autolaunch/i.test(reason) ? 'unavailable' : 'failed', reason });
  }
}

main();
