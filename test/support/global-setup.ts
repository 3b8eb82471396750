// Runs once in vitest's main process, before any worker starts.
//
// - One V8 compile-cache folder for every chatctl process the whole run
//   starts, as a user's runs share theirs (only the first start of each
//   bundle compiles it, not the first in each worker).
//   test/launcher/compile-cache.test.ts gives each of its runs a folder of its
//   own, empty, to test the cache itself.
// - A private certificate authority the workers trust, as a machine whose
//   NODE_EXTRA_CA_CERTS names it does: Node reads that variable when a
//   process starts, so it is set here, before the workers are started. Runs
//   through execute() in a worker then reach TLS servers that present it
//   (test/http/proxy-tls.test.ts) without a process of their own; the
//   tests of the variable itself, and of a certificate nobody trusts, start
//   chatctl with an environment of their own.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

/** The name only the test proxy resolves (to 127.0.0.1); in the certificate too. */
export const PROXY_ALIAS = 'api.chatctl.test';

declare module 'vitest' {
  export interface ProvidedContext {
    compileCacheDir: string;
    /** A certificate (and its key) for 127.0.0.1, localhost and PROXY_ALIAS that every worker trusts. */
    trustedTls: { cert: string; key: string };
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'chatctl-test-run-'));
  const cacheDir = join(dir, 'compile-cache');
  const cert = join(dir, 'trusted-cert.pem');
  const key = join(dir, 'trusted-key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', `subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:${PROXY_ALIAS}`, '-keyout', key, '-out', cert],
    { stdio: 'ignore' },
  );
  process.env.NODE_EXTRA_CA_CERTS = cert;
  project.provide('compileCacheDir', cacheDir);
  project.provide('trustedTls', { cert, key });
  return () => rmSync(dir, { recursive: true, force: true });
}
