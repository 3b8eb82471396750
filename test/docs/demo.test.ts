// `npm run demo`: every line it prints is what happened (the --json command's
// real output, the sandbox's real answers), reactivate meets a really
// deactivated endpoint, and nothing is left behind on any exit: not when it
// ends, not when its reader goes away (`npm run demo | head -3`), not on a
// signal. Each run gets its own TMPDIR and an environment marker, so "left
// behind" is checked exactly: no file in that TMPDIR, no process carrying
// the marker.
import { afterAll, describe, it, type ExpectStatic } from 'vitest';
import { spawn } from 'node:child_process';
import { execa } from 'execa';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ROOT } from '../support/fixtures.js';
import { waitFor } from '../support/run.js';

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function isolated() {
  const tmp = mkdtempSync(join(tmpdir(), 'chatctl-demo-test-'));
  temps.push(tmp);
  const mark = randomUUID();
  // NODE_DISABLE_COMPILE_CACHE: on Node 22+, npm turns on Node's module
  // compile cache, which would put npm's own node-compile-cache/ in TMPDIR.
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp, CHATCTL_DEMO_TEST_MARK: mark, NO_COLOR: '1', NODE_DISABLE_COMPILE_CACHE: '1' };
  for (const k of Object.keys(env)) if (k.startsWith('CHATCTL_') && k !== 'CHATCTL_DEMO_TEST_MARK') delete env[k];
  return { tmp, mark, env };
}

/** Processes (of this user) whose environment carries the marker. */
function marked(mark: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').includes(`CHATCTL_DEMO_TEST_MARK=${mark}`)) {
        found.push(`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ')}`);
      }
    } catch {
      /* gone, or not ours */
    }
  }
  return found;
}

async function settled(expect: ExpectStatic, mark: string, tmp: string) {
  // Exiting processes may take a moment to be reaped.
  await waitFor(() => marked(mark).length === 0 && readdirSync(tmp).length === 0, 5_000, 'no marked process and no file in TMPDIR').catch(() => undefined);
  expect(marked(mark)).toEqual([]);
  expect(readdirSync(tmp)).toEqual([]);
}

// Every run has its own TMPDIR and marker: they run side by side.
describe.concurrent('npm run demo', () => {
  it('prints what happened: the --json output as sent, the rotation rehearsed with `webhooks listen` as the receiver, a real deactivation, then a reactivation that changes it', async ({ expect }) => {
    const { tmp, mark, env } = isolated();
    const { stdout: out } = await execa(process.execPath, [join(ROOT, 'scripts', 'demo.mjs')], { cwd: ROOT, env, extendEnv: false, timeout: 120_000, stripFinalNewline: false });
    const lines = out.split('\n');

    // The create step shows its --json command, and right under it that command's real stdout.
    const createAt = lines.findIndex((l) => l.startsWith('$ chatctl webhooks create ') && l.endsWith(' --json'));
    // After the sandbox, scope and receiver lines, a blank line and the step's title.
    expect(createAt).toBe(5);
    const envelope = JSON.parse(lines[createAt + 1]!);
    expect(Object.keys(envelope)).toEqual(['data', 'meta']);
    const id = envelope.data.endpoint.id as string;
    expect(envelope.data.endpoint.version).toBe(1);
    expect(envelope.data.secret).toBeNull(); // it went to the file
    expect(out).not.toMatch(/whsec_|sbx_/); // no secret, no token

    expect(out).toContain(`$ chatctl webhooks rotate ${id} --expected-version 1 --mode overlap --secret-file `);
    expect(out).toContain(`Rotated the signing secret of ${id} (mode overlap).`);

    // The rehearsal, in order: `webhooks listen` is the receiver, and each of its lines names the secret files that matched by fingerprint.
    const oldFp = envelope.data.secretDelivery[0].fingerprint as string;
    const [newFp, newestFp] = [...out.matchAll(/^Signing secret (sha256:[0-9a-f]{16}) delivered to:$/gm)].map((m) => m[1]!);
    expect([oldFp, newFp, newestFp].every((f) => /^sha256:[0-9a-f]{16}$/.test(f ?? ''))).toBe(true);
    const at = (x: string) => x.replace(/[.()]/g, '\\$&');
    const delivery = (status: number, verdict: string) => new RegExp(`^listener \\| \\S+ ${status} msg_\\S+ chat\\.message\\.created\\.v1 ${verdict}`);
    const rehearsal = [
      new RegExp(`^listener \\| listening on http://127\\.0\\.0\\.1:\\d+/ \\(port \\d+\\), verifying with old\\.whsec \\(${oldFp}\\); Ctrl-C stops it$`),
      // Before the rotation: one secret matches.
      delivery(204, at(`verified: old.whsec (${oldFp}) signature 1 of 1; timestamp `)),
      new RegExp(`^Rotated the signing secret of ${id} \\(mode overlap\\)\\.$`),
      // During the overlap: signed with both, the new secret first; the old file alone matches the second.
      delivery(204, at(`verified: old.whsec (${oldFp}) signature 2 of 2; timestamp `)),
      /^listener \| chatctl webhooks listen stopped: 2 received, 2 verified, 0 refused$/,
      // Both files held: both match, each by its own signature.
      delivery(204, at(`verified: old.whsec (${oldFp}) signature 2 of 2, new.whsec (${newFp}) signature 1 of 2; timestamp `)),
      new RegExp(`^Rotated the signing secret of ${id} \\(mode immediate\\)\\.$`),
      // The new file rewritten by the rotation is read again at the next delivery.
      new RegExp(`${delivery(204, at(`verified: new.whsec (${newestFp}) signature 1 of 1; timestamp `)).source}\\d+ s old; new\\.whsec changed: now ${newestFp}$`),
      /^\$ rm new\.whsec$/,
      /^Not accepted: chat\.message\.created\.v1 was sent to http:\/\/127\.0\.0\.1:\d+\/hooks, and the receiver answered 401 in \d+ ms\.$/,
      /^\(exit 9, as expected\)$/,
      // The old file alone is refused, and the missing file is said.
      new RegExp(
        `${delivery(401, at(`refused (no_matching_signature): none of the 1 signatures matches old.whsec (${oldFp}); timestamp `)).source}\\d+ s old; new\\.whsec skipped: the file is missing$`,
      ),
      /^listener \| chatctl webhooks listen stopped: 3 received, 2 verified, 1 refused$/,
    ];
    let at0 = -1;
    for (const pattern of rehearsal) {
      const next = lines.findIndex((l, i) => i > at0 && pattern.test(l));
      expect(next, String(pattern)).toBeGreaterThan(at0);
      at0 = next;
    }
    expect(lines.filter((l) => / msg_\S+ chat\.message\.created\.v1 /.test(l) && l.startsWith('listener | '))).toHaveLength(5);
    expect(out).not.toContain('demo: that step failed');
    expect(out).toContain('demo: the rotation rehearsal went as planned');

    // The deactivation is a real request with the sandbox's real answer.
    const answerLine = lines[lines.findIndex((l) => /^POST \S+\/deactivate /.test(l)) + 1]!;
    const [, status, body] = /^-> (\d{3}) (.*)$/.exec(answerLine)!;
    expect(status).toBe('200');
    const deactivated = JSON.parse(body!);
    expect(deactivated.data).toMatchObject({ changed: true, endpoint: { id, status: 'inactive', version: 4 } });

    expect(out).toContain(`$ chatctl webhooks reactivate ${id} --expected-version 4\nReactivated webhook endpoint ${id}.\n`);
    expect(out).toMatch(/\nstatus +active\nversion +5\n/);
    // Tables are plain when stdout is not a terminal.
    expect(out).not.toMatch(/[┌┐└┘│─┼]/);
    expect(lines.at(-2)).toBe('demo: create, rotate, deactivate and reactivate all succeeded');
    await settled(expect, mark, tmp);
  });

  it('`npm run demo | head -3` leaves no process and no file behind', async ({ expect }) => {
    const { tmp, mark, env } = isolated();
    const { stdout: out } = await execa('sh', ['-c', 'npm run --silent demo | head -3; npm run demo 2>/dev/null | head -3'], {
      cwd: ROOT,
      env,
      extendEnv: false,
      timeout: 120_000,
      stripFinalNewline: false,
    });
    expect(out.split('\n').filter((l) => l.startsWith('chatctl demo: the sandbox'))).toHaveLength(1);
    await settled(expect, mark, tmp);
  });

  // Where the reader leaves: during the demo's own lines (3: the npm runs
  // above, --silent adding no line of npm's own), between two chatctl runs
  // (8), and inside a run's own output (12).
  it.for([8, 12])('`node scripts/demo.mjs | head -%i` (the reader leaves mid-run) leaves nothing behind', async (n, { expect }) => {
    const { tmp, mark, env } = isolated();
    const { stdout: out } = await execa('sh', ['-c', `node scripts/demo.mjs | head -${n}; echo "status \${PIPESTATUS:-}"`], {
      cwd: ROOT,
      env,
      extendEnv: false,
      timeout: 120_000,
      stripFinalNewline: false,
    });
    expect(out.split('\n').length).toBeGreaterThanOrEqual(n);
    await settled(expect, mark, tmp);
  });

  // The signal lands at the demo's first chatctl run: the demo prints the
  // command line and starts the run in one step, so the run (and the
  // sandbox, the receiver and the temporary folder) is there when the signal
  // is handled, and the demo has cost no more than it must to get there.
  it.for([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)('%s in the middle of a run: exit %i, nothing left behind', async ([signal, code], { expect }) => {
    const { tmp, mark, env } = isolated();
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'demo.mjs')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    const exited = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('$ chatctl webhooks create ')) resolve();
      }),
    );
    child.kill(signal);
    expect(await exited).toBe(code);
    expect(out).not.toContain('all succeeded');
    await settled(expect, mark, tmp);
  });
});
