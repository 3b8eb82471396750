// The fleet against the in-process sandbox, in-process too: endpoints made,
// a workspace with a secrets/ folder, and a `webhooks rotate …` runner on the
// sandbox's clock (so a month the sandbox moves is a month for chatctl).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { baseEnv, runInProcess, workspace, type InProcessResult } from '../../../../support/run.js';
import { endpointBody, sandbox } from '../../../../support/sandbox.js';

export async function fleetSandbox(n: number) {
  const s = await sandbox();
  const ws = workspace();
  const ids: string[] = [];
  for (let i = 1; i <= n; i++) {
    const r = await s.create(endpointBody(i));
    expect(r.status).toBe(201);
    ids.push(r.body.data.endpoint.id as string);
  }
  mkdirSync(join(ws.cwd, 'secrets'));
  const env = {
    ...baseEnv(ws),
    CI: 'true',
    ...s.scopeEnv,
  };
  /** Any chatctl command, in the workspace, on the sandbox's clock. */
  const cli = (argv: string[], o: { signal?: AbortSignal; onStdout?: (t: string) => void } = {}): Promise<InProcessResult> => runInProcess(argv, { env, cwd: ws.cwd, inject: { now: s.now }, ...o });
  /** `webhooks rotate …`. */
  const run = (args: string[], o: { signal?: AbortSignal; onStdout?: (t: string) => void } = {}) => cli(['webhooks', 'rotate', ...args], o);
  return { s, ws, ids, run, cli, path: (name: string) => join(ws.cwd, name) };
}
