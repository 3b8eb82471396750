// exec: destinations run from a worker thread (src/secret/exec-worker.ts):
// the same runExecSink, loaded from the built exec bundle, with its output,
// outcome and interrupt carried across. Needs dist/ (the build).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ExecWorker } from '../../src/secret/exec-worker.js';
import type { ExecSinkInput } from '../../src/secret/exec.js';

const BUNDLE = join(__dirname, '..', '..', 'dist', 'lazy', 'exec.cjs');
const dir = mkdtempSync(join(tmpdir(), 'chatctl-exec-worker-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const input = (command: string, over: Partial<ExecSinkInput> = {}): ExecSinkInput & { pieces: string[] } => {
  const pieces: string[] = [];
  return { command, secret: 'whsec_worker', cwd: dir, env: { PATH: process.env.PATH }, endpointId: 'we_1', fingerprint: 'fp', output: (t) => pieces.push(t), timeoutMs: 10_000, pieces, ...over };
};

describe('exec: from a worker thread', () => {
  test('the built bundle is there (the build ran)', () => {
    expect(existsSync(BUNDLE)).toBe(true);
  });

  test('runs the command with the secret on its input, its output carried back; a failure and an interrupt are the same errors as on the main thread', async () => {
    const worker = ExecWorker.start(BUNDLE)!;
    expect(worker).toBeDefined();
    await worker.ready;
    const ok = input(`cat > out; echo "stored $CHATCTL_ENDPOINT_ID"`);
    await worker.run(ok);
    expect(readFileSync(join(dir, 'out'), 'utf8')).toBe('whsec_worker');
    expect(ok.pieces.join('')).toBe('stored we_1\n');

    await expect(worker.run(input('cat >/dev/null; exit 3'))).rejects.toThrow('exited with status 3');
    await expect(worker.run(input('exit 0'))).rejects.toThrow(/without reading all of its input/);

    const ctl = new AbortController();
    const slow = input(`cat >/dev/null; : > started; sleep 30`, { signal: ctl.signal });
    const running = worker.run(slow);
    // Aborted once the command runs (it made its mark).
    for (let i = 0; i < 2000 && !existsSync(join(dir, 'started')); i++) await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    await expect(running).rejects.toThrow('was stopped: chatctl was interrupted');
    worker.idle();
  });
});
