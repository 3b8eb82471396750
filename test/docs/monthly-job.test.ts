// The monthly fleet job as docs/fleet.md and docs/ci.md show it, run twice
// (month one, then a month later on the manifest month one wrote) as
// written, end to end: bash runs the page's commands with the real
// bin/chatctl.js on PATH against a real `chatctl sandbox` process, whose
// clock is moved a month between runs (an overlap rotation refuses a second
// one for 24 hours). docs/ci.md's workflow runs its shell steps as a runner
// would, in a fresh clone of a local git repository each month, with `vault`
// a script that stores what it is given; steps that install or handle
// artifacts are not run.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { journalAged, runStep } from '../support/github-runner.js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BIN, NODE, ROOT } from '../support/fixtures.js';
import { cleanupTempDirs, SHARED_CACHE_DIR, tempDir, workspace } from '../support/run.js';
import { control, startSandbox, type Sandbox } from '../support/sandbox.js';
import { parseYaml } from '../support/yaml-subset.js';
import { scaled } from '../support/slowdown.js';

const MONTH_MS = 31 * 24 * 60 * 60 * 1000;
let sandbox: Sandbox;
const ws = workspace();
const bin = join(ws.root, 'bin');

beforeAll(async () => {
  sandbox = await startSandbox(['--port', '0', '--json'], ws.home, ws.configDir);
  mkdirSync(bin);
  symlinkSync(BIN, join(bin, 'chatctl'));
  // vault kv put -mount=secret webhooks/ID signing_secret=- : keeps standard input under $VAULT_STORE/webhooks/ID.
  writeFileSync(
    join(bin, 'vault'),
    '#!/bin/sh\nset -e\n[ "$1 $2 $3 $5" = "kv put -mount=secret signing_secret=-" ] || { echo "vault: unexpected arguments: $*" >&2; exit 2; }\nmkdir -p "$VAULT_STORE/$(dirname "$4")"\ncat > "$VAULT_STORE/$4"\n',
  );
  chmodSync(join(bin, 'vault'), 0o755);
}, scaled(30_000));
afterAll(async () => {
  await sandbox?.stop();
  cleanupTempDirs();
});

const PATH = () => `${bin}:${join(NODE, '..')}:/usr/local/bin:/usr/bin:/bin`;
const scope = () => ({
  CHATCTL_BASE_URL: sandbox.info.baseUrl,
  CHATCTL_ORG: sandbox.info.organizationId,
  CHATCTL_APP: sandbox.info.applicationId,
  CHATCTL_ENV: sandbox.info.environmentKey,
  CHATCTL_TOKEN: sandbox.info.token,
});

/** The section `## title` of a page, up to the next `## `. */
function section(page: string, title: string): string {
  const doc = readFileSync(join(ROOT, 'docs', page), 'utf8');
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, `docs/${page} has a section "${title}"`).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 4);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** bash -e -o pipefail, stdout and stderr into one log. */
/** A step's shell, as a runner runs it (support/github-runner.ts). */
const bash = runStep;

let created = 0;
/** n new endpoints (version 1), through the API. */
async function newEndpoints(n: number): Promise<string[]> {
  const { baseUrl, token, organizationId, applicationId, environmentKey } = sandbox.info;
  const ids: string[] = [];
  for (let k = 0; k < n; k++) {
    const i = ++created;
    const res = await fetch(`${baseUrl}/v1/organizations/${organizationId}/applications/${applicationId}/environments/${environmentKey}/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, origin: 'https://docs.example', 'x-service-csrf': '1', 'content-type': 'application/json', 'idempotency-key': `monthly-${i}` },
      body: JSON.stringify({ name: `monthly ${i}`, destinationUrl: `https://hooks.example.com/monthly/${i}`, eventTypes: ['chat.message.created.v1'] }),
    });
    expect(res.status).toBe(201);
    ids.push(((await res.json()) as { data: { endpoint: { id: string } } }).data.endpoint.id);
  }
  return ids;
}

/** Each endpoint's version and current secret. */
async function serverState(ids: string[]): Promise<Record<string, { version: number; secret: string }>> {
  const all = await control(sandbox.info).endpoints();
  return Object.fromEntries(ids.map((id) => [id, (({ version, validSecrets }) => ({ version, secret: validSecrets[0]! }))(all.find((e) => e.id === id)!)]));
}

async function nextMonth(): Promise<void> {
  const res = await fetch(`${sandbox.info.baseUrl}/_sandbox/clock`, { method: 'POST', headers: { authorization: `Bearer ${sandbox.info.token}` }, body: JSON.stringify({ advanceMs: MONTH_MS }) });
  expect(res.status).toBe(200);
}

const firstManifest = (ids: string[]) => ids.map((id) => JSON.stringify({ endpointId: id, expectedVersion: 1 }) + '\n').join('');
const manifestVersions = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => (JSON.parse(l) as { expectedVersion: number }).expectedVersion);

describe('docs/fleet.md: the same command every month', () => {
  test('runs as written in month one and month two, no edit and no --force: every endpoint rotated each month, its secret in its env-file', { timeout: scaled(60_000) }, async () => {
    const block = /```sh\n([\s\S]*?)```/.exec(section('fleet.md', 'The same command every month (`--next-manifest`)'));
    expect(block, 'a sh block').not.toBeNull();
    const script = block![1]!;
    expect(script).toContain('--next-manifest fleet.ndjson');
    expect(script).not.toContain('--force');

    const ids = await newEndpoints(3);
    const dir = tempDir('fleet-md');
    writeFileSync(join(dir, 'fleet.ndjson'), firstManifest(ids));
    const env = { PATH: PATH(), HOME: dir, CHATCTL_CONFIG_DIR: join(dir, 'config'), CHATCTL_CACHE_DIR: SHARED_CACHE_DIR, CI: 'true', NO_COLOR: '1', ...scope() };
    for (const month of [1, 2]) {
      if (month === 2) await nextMonth();
      const r = bash(script, env, dir);
      expect(r.status, `month ${month}:\n${r.log}`).toBe(0);
      const state = await serverState(ids);
      for (const id of ids) {
        expect(state[id]!.version, `month ${month}: ${id}`).toBe(month + 1);
        expect(readFileSync(join(dir, 'secrets', `${id}.env`), 'utf8')).toBe(`WEBHOOK_SECRET=${state[id]!.secret}\n`);
      }
      expect(manifestVersions(readFileSync(join(dir, 'fleet.ndjson'), 'utf8'))).toEqual(ids.map(() => month + 1));
      const results = readFileSync(join(dir, 'results.ndjson'), 'utf8').trimEnd().split('\n');
      expect(JSON.parse(results.at(-1)!)).toEqual({ summary: { ok: 3, failed: 0, skipped: 0 } });
    }
  });
});

describe('docs/ci.md: the scheduled fleet workflow', () => {
  test('its shell steps run as written twice, a month apart, each in a fresh clone: both months succeed, the next manifest is committed back, the store holds every current secret', {
    timeout: scaled(90_000),
  }, async () => {
    const block = /```yaml\n([\s\S]*?)```/.exec(section('ci.md', 'A scheduled rotation of a fleet (GitHub Actions)'));
    expect(block, 'a yaml block').not.toBeNull();
    const wf = parseYaml(block![1]!) as Record<string, any>;
    const steps = wf.jobs.rotate.steps as { name?: string; uses?: string; run?: string; env?: Record<string, string>; if?: string }[];

    // The repository the workflow checks out: the first month's manifest on main.
    const ids = await newEndpoints(2);
    const root = tempDir('ci-md');
    const git = (args: string[], cwd: string) => {
      const r = spawnSync('git', args, { cwd, encoding: 'utf8', env: { PATH: PATH(), HOME: root, GIT_CONFIG_NOSYSTEM: '1' } });
      expect(r.status, `git ${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    const origin = join(root, 'origin.git');
    git(['init', '--quiet', '--bare', '--initial-branch=main', origin], root);
    const seed = join(root, 'seed');
    git(['clone', '--quiet', origin, seed], root);
    writeFileSync(join(seed, 'fleet.ndjson'), firstManifest(ids));
    git(['add', 'fleet.ndjson'], seed);
    git(['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'the fleet'], seed);
    git(['push', '--quiet', 'origin', 'HEAD:main'], seed);

    const store = join(root, 'vault');
    const context: Record<string, Record<string, string>> = { secrets: { CHAT_ADMIN_TOKEN: sandbox.info.token, VAULT_TOKEN: 'hvs.fake' }, vars: { VAULT_ADDR: 'http://127.0.0.1:1' } };
    const fill = (v: string) =>
      String(v).replace(/\$\{\{\s*([\w.]+)\s*\}\}/g, (_m, path: string) => {
        const [kind, name] = path.split('.') as [string, string];
        const found = context[kind]?.[name];
        if (found === undefined) throw new Error(`the workflow uses \${{ ${path} }}, which this simulation does not know`);
        return found;
      });
    for (const month of [1, 2]) {
      if (month === 2) await nextMonth();
      const work = join(root, `runner-${month}`);
      git(['clone', '--quiet', '--depth=1', `file://${origin}`, work], root); // actions/checkout
      // A month passes for chatctl too: the committed journal's times, as chatctl finds them a month on.
      if (month === 2) journalAged(join(work, 'rotation.journal'), MONTH_MS);
      const ran: string[] = [];
      for (const step of steps) {
        if (step.uses || /npm install -g/.test(step.run ?? '')) continue;
        const runnerTemp = tempDir('runner-temp');
        const env = {
          PATH: PATH(),
          HOME: root,
          CI: 'true',
          GITHUB_ACTIONS: 'true',
          GITHUB_REF_NAME: 'main',
          RUNNER_TEMP: runnerTemp,
          CHATCTL_CONFIG_DIR: join(work, '.chatctl'),
          CHATCTL_CACHE_DIR: SHARED_CACHE_DIR,
          GIT_CONFIG_NOSYSTEM: '1',
          VAULT_STORE: store,
          ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, fill(v)])),
          // The workflow's API and scope are a placeholder service: the sandbox stands in for it.
          ...(step.env?.CHATCTL_BASE_URL ? scope() : {}),
        };
        const r = bash(step.run!, env, work);
        expect(r.status, `month ${month}, step "${step.name}":\n${r.log}`).toBe(0);
        ran.push(step.name ?? '');
      }
      expect(ran).toEqual(['Rotate', 'Keep the next manifest and the journal']);
      const state = await serverState(ids);
      for (const id of ids) {
        expect(state[id]!.version, `month ${month}: ${id}`).toBe(month + 1);
        expect(readFileSync(join(store, 'webhooks', id), 'utf8')).toBe(state[id]!.secret);
      }
      // What next month's checkout finds on main.
      expect(manifestVersions(git(['show', 'main:fleet.ndjson'], origin))).toEqual(ids.map(() => month + 1));
    }
    expect(git(['log', '--format=%s', 'main'], origin).trimEnd().split('\n')).toEqual([
      'webhook secrets rotated: the next manifest and the journal',
      'webhook secrets rotated: the next manifest and the journal',
      'the fleet',
    ]);
    expect(existsSync(store) && readdirSync(join(store, 'webhooks')).sort()).toEqual([...ids].sort());
  });
});
