// action.yml, run as the GitHub Actions runner runs a composite action: the
// file is read (test/support/yaml-subset.ts), its inputs filled from `with:`
// and their defaults, `${{ inputs.* }}`, `${{ github.action_path }}` and
// `${{ steps.*.outputs.* }}` filled in where the runner fills them (env:
// values, output values), each `run:` step run with `shell: bash`'s
// command line and a fresh GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH file,
// which are read back after it as the runner reads them (outputs to the
// steps context, variables and PATH entries to later steps). The action's
// folder is this clone, as the runner's copy of the repository at the ref a
// workflow names; its install step finds it installed and built. Against
// `chatctl sandbox` (a real process); chatctl's own processes are real.
//
// What is checked: the outputs (new version, fingerprint), where the secret
// went, that the secret and the token appear in the log only on their
// ::add-mask:: line (which the runner turns into masks) and in no output,
// that no `run:` script has an expression in its text (so no input can
// become part of a command line), and the refusals made before anything is
// sent.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NODE, ROOT } from '../support/fixtures.js';
import { journalAged, parseRunnerFile, runStep } from '../support/github-runner.js';
import { cleanupTempDirs, runInProcess, baseEnv, tempDir, workspace } from '../support/run.js';
import { control, startSandbox, type Sandbox } from '../support/sandbox.js';
import { parseYaml } from '../support/yaml-subset.js';
import { scaled } from '../support/slowdown.js';

interface Step {
  name: string;
  id?: string;
  if?: string;
  shell?: string;
  env?: Record<string, string>;
  run?: string;
  uses?: string;
  with?: Record<string, string>;
}
interface Action {
  name: string;
  inputs: Record<string, { description: string; required: string; default?: string }>;
  outputs: Record<string, { description: string; value: string }>;
  runs: { using: string; steps: Step[] };
}
const ACTION = parseYaml(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as unknown as Action;

let sandbox: Sandbox;
const ws = workspace();
beforeAll(async () => {
  sandbox = await startSandbox(['--port', '0', '--json', '--endpoint-limit', '100'], ws.home, ws.configDir);
}, scaled(30_000));
afterAll(async () => {
  await sandbox?.stop();
  cleanupTempDirs();
});

const scope = () => ({ CHATCTL_BASE_URL: sandbox.info.baseUrl, CHATCTL_ORG: sandbox.info.organizationId, CHATCTL_APP: sandbox.info.applicationId, CHATCTL_ENV: sandbox.info.environmentKey });
const scopeInputs = () => ({ 'base-url': sandbox.info.baseUrl, organization: sandbox.info.organizationId, application: sandbox.info.applicationId, environment: sandbox.info.environmentKey });

let serial = 0;
/** A new endpoint in the sandbox, at version 1. */
async function newEndpoint(): Promise<string> {
  const n = ++serial;
  const r = await runInProcess(['webhooks', 'create', '--name', `action ${n}`, '--url', `https://receiver.example.com/action/${n}`, '--event', 'chat.message.created.v1', '--json'], {
    env: { ...baseEnv(ws), ...scope(), CHATCTL_TOKEN: sandbox.info.token },
    cwd: ws.cwd,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { data: { endpoint: { id: string } } }).data.endpoint.id;
}

async function currentSecret(id: string): Promise<{ version: number; secret: string }> {
  const found = (await control(sandbox.info).endpoints()).find((e) => e.id === id)!;
  return { version: found.version, secret: found.validSecrets[0]! };
}

const fingerprintOf = (secret: string) => `sha256:${createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16)}`;

interface ActionRun {
  /** The action's outcome: 0, or the status of the step that failed. */
  status: number | null;
  log: string;
  outputs: Record<string, string>;
  /** What the steps set with GITHUB_ENV, as later steps of the job see it. */
  env: Record<string, string>;
  workspace: string;
  /** The folders the steps added to PATH (GITHUB_PATH), first first. */
  path: string[];
  /** What the `uses: actions/upload-artifact` steps whose condition held would upload: their `with:`, filled. */
  uploads: Record<string, string>[];
}

/**
 * Runs action.yml's steps as the runner does, with `with` as the inputs and
 * `jobEnv` as the job's environment. After a step fails, only steps whose
 * `if:` holds `always()` run. A `uses:` step (the artifact upload) is not
 * run: what it would upload is recorded.
 */
function runAction(given: Record<string, string>, jobEnv: Record<string, string> = {}, actionPath = ROOT, workspaceDir = tempDir('gha-workspace')): ActionRun {
  const runnerTemp = tempDir('gha-runner-temp');
  const inputs = Object.fromEntries(Object.entries(ACTION.inputs).map(([name, spec]) => [name, given[name] ?? spec.default ?? '']));
  const context: Record<string, Record<string, unknown>> = { inputs, github: { action_path: actionPath }, steps: {} };
  const fill = (text: string): string =>
    text.replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_m, path: string) => {
      const found = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], context);
      if (found === undefined) return ''; // as the runner: an unset output is empty
      if (typeof found !== 'string') throw new Error(`\${{ ${path} }} is not a value this simulation knows`);
      return found;
    });
  const lookup = (path: string) => {
    const found = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], context);
    return found === undefined ? '' : found;
  };
  // The expressions action.yml's conditions use: `always()`, `A == 'text'`, joined by `&&`.
  const holds = (expr: string | undefined, failed: boolean): boolean => {
    if (expr === undefined) return !failed;
    const terms = expr
      .replace(/^\$\{\{\s*|\s*\}\}$/g, '')
      .split('&&')
      .map((t) => t.trim());
    if (failed && !terms.includes('always()')) return false;
    return terms.every((t) => {
      if (t === 'always()') return true;
      const m = /^([\w.-]+) == '([^']*)'$/.exec(t);
      if (!m) throw new Error(`an if: this simulation does not know: ${t}`);
      return lookup(m[1]!) === m[2];
    });
  };
  const fromEnvFiles: Record<string, string> = {};
  const pathEntries: string[] = [];
  const uploads: Record<string, string>[] = [];
  let log = '';
  let status: number | null = 0;
  for (const step of ACTION.runs.steps) {
    if (!holds(step.if, status !== 0)) continue;
    if (step.uses !== undefined) {
      expect(step.uses).toBe('actions/upload-artifact@v4');
      uploads.push(Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, fill(String(v))])));
      continue;
    }
    const files = tempDir('gha-files');
    const [GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH] = ['output', 'env', 'path'].map((f) => join(files, f)) as [string, string, string];
    for (const f of [GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH]) writeFileSync(f, '');
    const env: Record<string, string> = {
      HOME: ws.home,
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      GITHUB_WORKSPACE: workspaceDir,
      GITHUB_ACTION_PATH: actionPath,
      RUNNER_TEMP: runnerTemp,
      GITHUB_OUTPUT,
      GITHUB_ENV,
      GITHUB_PATH,
      CHATCTL_CONFIG_DIR: join(ws.home, 'runner-config'),
      ...jobEnv,
      // The job's PATH (or the runner's), after what earlier steps added.
      PATH: [...pathEntries, jobEnv.PATH ?? [dirname(NODE), '/usr/local/bin', '/usr/bin', '/bin'].join(':')].join(':'),
      ...fromEnvFiles,
      ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, fill(String(v))])),
    };
    const r = runStep(step.run!, env, workspaceDir);
    log += r.log;
    if (step.id) context.steps![step.id] = { outputs: Object.fromEntries(parseRunnerFile(readFileSync(GITHUB_OUTPUT, 'utf8'))) };
    Object.assign(fromEnvFiles, Object.fromEntries(parseRunnerFile(readFileSync(GITHUB_ENV, 'utf8'))));
    pathEntries.unshift(...readFileSync(GITHUB_PATH, 'utf8').split('\n').filter(Boolean).reverse());
    if (r.status !== 0 && status === 0) status = r.status;
  }
  const outputs = Object.fromEntries(Object.entries(ACTION.outputs).map(([name, o]) => [name, fill(o.value)]));
  return { status, log, outputs, env: fromEnvFiles, workspace: workspaceDir, path: pathEntries, uploads };
}

/** The secret and the token appear in the log only on their own ::add-mask:: line, which comes before any other line holding them; and in no output. */
function expectMasked(run: ActionRun, values: string[]): void {
  const lines = run.log.split('\n');
  for (const value of values) {
    const holding = lines.flatMap((l, i) => (l.includes(value) ? [i] : []));
    expect(holding.length, `a mask line for ${value.slice(0, 6)}… in:\n${run.log}`).toBeGreaterThan(0);
    for (const i of holding) expect(lines[i]).toBe(`::add-mask::${value}`);
    for (const [name, out] of Object.entries(run.outputs)) expect(out, `output ${name}`).not.toContain(value);
  }
}

describe('action.yml', () => {
  test('is a composite action whose inputs and outputs are the documented ones; no run: script has an expression in its text, and the token reaches chatctl only through env:', () => {
    expect(ACTION.runs.using).toBe('composite');
    expect(Object.keys(ACTION.inputs).sort()).toEqual(
      [
        'endpoint-id',
        'expected-version',
        'mode',
        'manifest',
        'from',
        'every',
        'journal',
        'next-manifest',
        'escrow-recipient',
        'escrow-dir',
        'escrow-artifact',
        'secret-to',
        'token',
        'base-url',
        'organization',
        'application',
        'environment',
      ].sort(),
    );
    expect(Object.keys(ACTION.outputs).sort()).toEqual(['fingerprint', 'version']);
    for (const step of ACTION.runs.steps) {
      if (step.uses !== undefined) {
        // The one action used: the escrow's upload, only when there is something to upload.
        expect(step.uses, step.name).toBe('actions/upload-artifact@v4');
        expect(step.if).toBe("${{ always() && steps.rotate.outputs.escrowed == 'true' }}");
        continue;
      }
      expect(step.shell, step.name).toBe('bash');
      expect(step.run, step.name).not.toContain('${{');
    }
    const tokenUses = ACTION.runs.steps.flatMap((s) => Object.entries(s.env ?? {}).filter(([, v]) => String(v).includes('inputs.token')));
    expect(tokenUses).toEqual([['CHATCTL_TOKEN', '${{ inputs.token }}']]);
  });

  test("docs/ci-systems.md's `uses:` example gives only inputs the action has, every required one, and the token from a secret", () => {
    const doc = readFileSync(join(ROOT, 'docs', 'ci-systems.md'), 'utf8');
    const section = doc.slice(doc.indexOf('\n## GitHub Actions: the chatctl action\n'), doc.indexOf('\n## GitLab CI'));
    const workflow = parseYaml(/```yaml\n([\s\S]*?)```/.exec(section)![1]!) as { jobs: Record<string, { steps: { uses?: string; with?: Record<string, string> }[] }> };
    const step = Object.values(workflow.jobs)
      .flatMap((j) => j.steps)
      .find((s) => /\/chatctl@/.test(s.uses ?? ''))!;
    const given = Object.keys(step.with!);
    expect(given.filter((k) => !(k in ACTION.inputs))).toEqual([]);
    expect(Object.entries(ACTION.inputs).flatMap(([k, spec]) => (spec.required === 'true' && !given.includes(k) ? [k] : []))).toEqual([]);
    expect(step.with!.token).toMatch(/^\$\{\{ secrets\.\w+ \}\}$/);
  });

  test('one endpoint: rotated with overlap; the secret in GITHUB_ENV and a file, the outputs are the new version and its fingerprint; secret and token only masked', {
    timeout: scaled(120_000),
  }, async () => {
    const id = await newEndpoint();
    const file = join(tempDir('gha-secret'), 'webhook.secret');
    const run = runAction({ 'endpoint-id': id, 'expected-version': '1', mode: 'overlap', 'secret-to': `github-env:WEBHOOK_SECRET\n  file:${file}  \n\n`, token: sandbox.info.token, ...scopeInputs() });
    expect(run.status, run.log).toBe(0);
    const { version, secret } = await currentSecret(id);
    expect(version).toBe(2);
    expect(run.outputs).toEqual({ version: '2', fingerprint: fingerprintOf(secret) });
    expect(run.env.WEBHOOK_SECRET).toBe(secret);
    expect(readFileSync(file, 'utf8')).toBe(secret);
    // chatctl is on PATH for the job's later steps; the log says how it was installed.
    expect(run.path.some((d) => existsSync(join(d, 'chatctl')))).toBe(true);
    expect(run.log).toMatch(/^chatctl: installed (the single executable|the packed tarball|from source with npm ci)/m);
    expect(run.uploads).toEqual([]);
    expectMasked(run, [secret, sandbox.info.token]);
  });

  test("a manifest (--from) with a journal, the scope from the job's CHATCTL_* variables: every item rotated; the outputs map each endpoint to its version and fingerprint", {
    timeout: scaled(120_000),
  }, async () => {
    const ids = [await newEndpoint(), await newEndpoint()];
    const dir = tempDir('gha-fleet');
    const manifest = join(dir, 'fleet.ndjson');
    // No mode input: a line without its own mode rotates with overlap; one that names immediate is confirmed by the workflow.
    writeFileSync(manifest, [JSON.stringify({ endpointId: ids[0], expectedVersion: 1 }), JSON.stringify({ endpointId: ids[1], expectedVersion: 1, mode: 'immediate' })].join('\n') + '\n');
    mkdirSync(join(dir, 'secrets'));
    const run = runAction({ manifest, journal: join(dir, 'rotation.journal'), 'secret-to': `file:${dir}/secrets/{id}.whsec\ngithub-env:SECRET_{id}`, token: sandbox.info.token }, scope());
    expect(run.status, run.log).toBe(0);
    const after = await Promise.all(ids.map(currentSecret));
    expect(JSON.parse(run.outputs.version!)).toEqual(Object.fromEntries(ids.map((id) => [id, 2])));
    expect(JSON.parse(run.outputs.fingerprint!)).toEqual(Object.fromEntries(ids.map((id, i) => [id, fingerprintOf(after[i]!.secret)])));
    ids.forEach((id, i) => {
      expect(readFileSync(join(dir, 'secrets', `${id}.whsec`), 'utf8')).toBe(after[i]!.secret);
      expect(run.env[`SECRET_${id}`]).toBe(after[i]!.secret);
    });
    expect(readFileSync(join(dir, 'rotation.journal'), 'utf8')).not.toContain(after[0]!.secret);
    expectMasked(run, [...after.map((a) => a.secret), sandbox.info.token]);
  });

  test.each([
    ['no destination', { 'secret-to': '\n  \n' }, 'secret-to names no destination'],
    ['github-output:, which cannot leave the action', { 'secret-to': 'github-output:S' }, 'a step output set inside this action does not reach the workflow'],
    ['both an endpoint and a manifest', { 'secret-to': 'github-env:S', manifest: 'fleet.ndjson' }, 'give either manifest, or endpoint-id and expected-version, not both'],
    ['no expected version', { 'secret-to': 'github-env:S', 'expected-version': '' }, 'give endpoint-id and expected-version'],
  ])(
    'refused before anything is sent: %s (exit 2, an ::error:: line, no output)',
    async (_what, inputs, message) => {
      const id = await newEndpoint();
      await control(sandbox.info).clearRequests();
      const run = runAction({ 'endpoint-id': id, 'expected-version': '1', token: sandbox.info.token, ...scopeInputs(), ...inputs });
      expect(run.status).toBe(2);
      expect(run.log.split('\n').filter((l) => l.startsWith('::error title=chatctl::') && l.includes(message))).toHaveLength(1);
      expect(run.outputs).toEqual({ version: '', fingerprint: '' });
      expect(await control(sandbox.info).requests()).toEqual([]);
      expect(run.log).not.toContain(sandbox.info.token);
    },
    120_000,
  );

  test('escrow: a failed destination with escrow-recipient: exit 13, the encrypted copy (age -d opens it to the current secret) uploaded as the artifact; nothing uploaded when all went well', async () => {
    const identity = await generateX25519Identity();
    const recipient = await identityToRecipient(identity);
    const keyFile = join(tempDir('gha-key'), 'ops.key');
    writeFileSync(keyFile, `${identity}\n`, { mode: 0o600 });
    const id = await newEndpoint();
    const failing = 'exec:cat >/dev/null; echo "vault: sealed" >&2; exit 3';
    const run = runAction({ 'endpoint-id': id, 'expected-version': '1', 'secret-to': failing, 'escrow-recipient': `# on-call\n${recipient}\n`, token: sandbox.info.token, ...scopeInputs() });
    expect(run.status, run.log).toBe(13);
    const { secret } = await currentSecret(id);
    expect(run.uploads).toHaveLength(1);
    const upload = run.uploads[0]!;
    expect(upload.name).toBe('chatctl-escrow');
    expect(readdirSync(upload.path!).sort()).toEqual([`${id}-v2.age`, `${id}-v2.json`]);
    expect(execFileSync('age', ['-d', '-i', keyFile, join(upload.path!, `${id}-v2.age`)], { encoding: 'utf8' })).toBe(secret);
    // The job's log: the annotation names the endpoint and what the store said; the secret only on its mask line.
    expect(run.log).toMatch(new RegExp(`^::error title=chatctl webhooks rotate ${id} \\(exit 13\\)::.*the destination said: vault: sealed`, 'm'));
    expectMasked(run, [secret, sandbox.info.token]);

    const fine = runAction({ 'endpoint-id': await newEndpoint(), 'expected-version': '1', 'secret-to': 'github-env:S', 'escrow-recipient': recipient, token: sandbox.info.token, ...scopeInputs() });
    expect(fine.status, fine.log).toBe(0);
    expect(fine.uploads).toEqual([]);
  }, 120_000);

  test('an action folder with a packed tarball: installed with npm install --omit=dev (no npm ci), and the log says so', async () => {
    const folder = tempDir('gha-packed');
    mkdirSync(join(folder, 'scripts'));
    copyFileSync(join(ROOT, 'action.yml'), join(folder, 'action.yml'));
    copyFileSync(join(ROOT, 'scripts', 'action-outputs.mjs'), join(folder, 'scripts', 'action-outputs.mjs'));
    // What a release puts beside action.yml: npm pack's tarball of the built package.
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', folder], { cwd: ROOT, stdio: 'ignore' });
    const tarball = readdirSync(folder).find((n) => /^chatctl-.*\.tgz$/.test(n))!;
    // npm itself is replaced by a recorder that installs the tarball as npm
    // would (no registry: the tests reach no network); what is checked is
    // what the action asks of npm, and that the installed chatctl runs.
    const fakeBin = tempDir('gha-npm');
    const calls = join(fakeBin, 'calls');
    writeFileSync(
      join(fakeBin, 'npm'),
      `#!/bin/sh\necho "$*" >> '${calls}'\n[ "$1" = install ] || exit 9\nprefix=\nfor a; do [ "$prev" = --prefix ] && prefix="$a"; prev="$a"; last="$a"; done\nmkdir -p "$prefix/node_modules/chatctl"\ntar -xzf "$last" -C "$prefix/node_modules/chatctl" --strip-components=1\n`,
      { mode: 0o755 },
    );
    const id = await newEndpoint();
    const run = runAction(
      { 'endpoint-id': id, 'expected-version': '1', 'secret-to': 'github-env:S', token: sandbox.info.token, ...scopeInputs() },
      { PATH: `${fakeBin}:${dirname(NODE)}:/usr/bin:/bin` },
      folder,
    );
    expect(run.status, run.log).toBe(0);
    expect(run.log).toContain(`chatctl: installed the packed tarball ${tarball} with npm install --omit=dev`);
    const [call, ...others] = readFileSync(calls, 'utf8').trim().split('\n');
    expect(others).toEqual([]);
    expect(call).toMatch(/^install --prefix \S+ --omit=dev --ignore-scripts --no-save /);
    expect(call!.endsWith(join(folder, tarball))).toBe(true);
    expect(run.env.S).toBe((await currentSecret(id)).secret);
  }, 120_000);
});

/** A section of docs/ci-systems.md, to its next `## `. */
function docSection(title: string): string {
  const doc = readFileSync(join(ROOT, 'docs', 'ci-systems.md'), 'utf8');
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, title).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 4);
  return doc.slice(start, end === -1 ? undefined : end);
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...baseEnv(ws), GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  });

describe("docs/ci-systems.md's fleet workflow with the action", () => {
  // Its action step and its commit step, month after month, each month on a
  // fresh runner (a fresh clone, an empty config folder); a store failure in
  // month two leaves the secret in the escrow artifact, which `recover`
  // delivers; checkout and setup-node are the runner's. A month passes for
  // the sandbox by its clock, and for chatctl (`every`, and whether a run
  // finishes an unfinished one) by the journal: its times are moved back a
  // month, as a month-old journal's would be.
  test('three months, a store failure in month two: the next manifest and the journal committed back each month, the failed secret escrowed, recovered, and month three rotates all', async () => {
    const section = docSection('GitHub Actions: a fleet with the action');
    const workflow = parseYaml(/```yaml\n([\s\S]*?)```/.exec(section)![1]!) as unknown as { jobs: Record<string, { steps: Step[] }> };
    const steps = Object.values(workflow.jobs)[0]!.steps;
    const action = steps.find((s) => /\/chatctl@/.test(s.uses ?? ''))!;
    const keep = steps.find((s) => s.run !== undefined && /git push/.test(s.run))!;
    expect(keep.if).toBe('always()');
    expect(Object.keys(action.with!).filter((k) => !(k in ACTION.inputs))).toEqual([]);

    const identity = await generateX25519Identity();
    const recipient = await identityToRecipient(identity);
    const keyFile = join(tempDir('gha-key'), 'ops.key');
    writeFileSync(keyFile, `${identity}\n`, { mode: 0o600 });
    const vars: Record<string, string> = {
      ESCROW_RECIPIENT: recipient,
      CHATCTL_BASE_URL: sandbox.info.baseUrl,
      CHATCTL_ORG: sandbox.info.organizationId,
      CHATCTL_APP: sandbox.info.applicationId,
      CHATCTL_ENV: sandbox.info.environmentKey,
    };
    const secrets: Record<string, string> = { CHATCTL_TOKEN: sandbox.info.token };
    const given = Object.fromEntries(
      Object.entries(action.with!).map(([k, v]) => [k, String(v).replace(/\$\{\{ (vars|secrets)\.(\w+) \}\}/g, (_m, kind: string, name: string) => (kind === 'vars' ? vars : secrets)[name]!)]),
    );

    // The repository: the manifest, and the store script the workflow names.
    const ids = [await newEndpoint(), await newEndpoint(), await newEndpoint()];
    const root = tempDir('gha-fleet-repo');
    const store = join(root, 'store');
    mkdirSync(store);
    git(root, 'init', '--quiet', '--bare', 'origin.git');
    git(root, 'clone', '--quiet', 'origin.git', 'seed');
    const seed = join(root, 'seed');
    mkdirSync(join(seed, 'scripts'));
    writeFileSync(join(seed, 'fleet.ndjson'), ids.map((id) => `${JSON.stringify({ endpointId: id, expectedVersion: 1 })}\n`).join(''));
    writeFileSync(
      join(seed, 'scripts', 'store-secret.sh'),
      `#!/bin/sh\nif [ -e "$STORE/fail-$CHATCTL_ENDPOINT_ID" ]; then echo "store: permission denied for $CHATCTL_ENDPOINT_ID" >&2; exit 3; fi\ncat > "$STORE/$CHATCTL_ENDPOINT_ID"\n`,
      { mode: 0o755 },
    );
    git(seed, 'add', '.');
    git(seed, 'commit', '--quiet', '-m', 'the fleet');
    git(seed, 'push', '--quiet', 'origin', 'HEAD:main');

    const month = async (n: number) => {
      if (n > 1) {
        const res = await fetch(`${sandbox.info.baseUrl}/_sandbox/clock`, {
          method: 'POST',
          headers: { authorization: `Bearer ${sandbox.info.token}` },
          body: JSON.stringify({ advanceMs: 31 * 24 * 60 * 60 * 1000 }),
        });
        expect(res.status).toBe(200);
      }
      const clone = join(root, `month-${n}`);
      git(root, 'clone', '--quiet', '--branch', 'main', 'origin.git', clone);
      if (n > 1) journalAged(join(clone, 'rotation.journal'), 31 * 24 * 60 * 60 * 1000);
      const runner = { CHATCTL_CONFIG_DIR: tempDir('gha-fresh-runner'), STORE: store };
      const run = runAction(given, runner, ROOT, clone);
      const kept = runStep(
        keep.run!,
        { ...baseEnv(ws), ...runner, GITHUB_REF_NAME: 'main', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
        clone,
      );
      expect(kept.status, kept.log).toBe(0);
      const pushed = execFileSync('git', ['--git-dir', join(root, 'origin.git'), 'show', 'main:fleet.ndjson'], { encoding: 'utf8' });
      const journal = execFileSync('git', ['--git-dir', join(root, 'origin.git'), 'show', 'main:rotation.journal'], { encoding: 'utf8' });
      return {
        run,
        next: pushed
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { endpointId: string; expectedVersion: number }),
        journal,
      };
    };
    const storeHoldsCurrent = async (id: string) => expect(readFileSync(join(store, id), 'utf8')).toBe((await currentSecret(id)).secret);

    const one = await month(1);
    expect(one.run.status, one.run.log).toBe(0);
    expect(one.next.map((l) => l.expectedVersion)).toEqual([2, 2, 2]);
    for (const id of ids) await storeHoldsCurrent(id);
    expect(one.run.uploads).toEqual([]);

    // Month two: the store refuses the second endpoint.
    writeFileSync(join(store, `fail-${ids[1]}`), '');
    const two = await month(2);
    expect(two.run.status).toBe(14);
    expect(two.next.map((l) => l.expectedVersion)).toEqual([3, 3, 3]);
    expect(two.run.log).toMatch(new RegExp(`^::error title=chatctl webhooks rotate ${ids[1]} \\(exit 13\\)::.*the destination said: store: permission denied`, 'm'));
    expect(two.run.uploads).toHaveLength(1);
    const escrowed = join(two.run.uploads[0]!.path!, `${ids[1]}-v3.age`);
    const current = (await currentSecret(ids[1]!)).secret;
    expect(execFileSync('age', ['-d', '-i', keyFile, escrowed], { encoding: 'utf8' })).toBe(current);
    for (const committed of [two.journal, execFileSync('git', ['--git-dir', join(root, 'origin.git'), 'log', '-p', 'main'], { encoding: 'utf8' })]) expect(committed).not.toContain(current);
    expectMasked(two.run, [current, sandbox.info.token]);

    // The store is fixed; on another machine (a fresh config folder) the secret is recovered into it.
    rmSync(join(store, `fail-${ids[1]}`));
    const elsewhere = workspace();
    const recovered = await runInProcess(['webhooks', 'recover', escrowed, '--identity', keyFile, '--secret-to', `exec:${join(root, 'month-2', 'scripts', 'store-secret.sh')}`], {
      env: { ...baseEnv(elsewhere), STORE: store },
      cwd: elsewhere.cwd,
    });
    expect(recovered.exitCode, recovered.stderr).toBe(0);
    await storeHoldsCurrent(ids[1]!);

    const three = await month(3);
    expect(three.run.status, three.run.log).toBe(0);
    expect(three.next.map((l) => l.expectedVersion)).toEqual([4, 4, 4]);
    for (const id of ids) await storeHoldsCurrent(id);
  }, 300_000);
});
