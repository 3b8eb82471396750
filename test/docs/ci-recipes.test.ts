// The CI recipes of docs/ci-systems.md, run as their runners would run them:
// the workflow files are read from the page itself, and each shell step runs
// in bash against `chatctl sandbox` (a real process), with the runner's
// environment simulated: GITHUB_ACTIONS, a fresh GITHUB_OUTPUT and
// GITHUB_ENV file per step (read back as the runner reads them, outputs and
// variables handed to later steps, `${{ … }}` filled in), or GitLab's CI
// variables and its echo of each script line. `gh` and `glab` are scripts on
// PATH that record their arguments and standard input. Steps that install
// (actions, npm install -g) are not run: chatctl is on PATH from this clone.
// Each step's stdout and stderr go to one file, in the order written, as the
// runner's log has them.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BIN, NODE, ROOT } from '../support/fixtures.js';
import { parseRunnerFile, runStep } from '../support/github-runner.js';
import { cleanupTempDirs, runInProcess, shellQuote, tempDir, workspace, baseEnv } from '../support/run.js';
import { control, startSandbox, type Sandbox } from '../support/sandbox.js';
import { parseYaml, type Yaml } from '../support/yaml-subset.js';
import { scaled } from '../support/slowdown.js';

const DOC = readFileSync(join(ROOT, 'docs', 'ci-systems.md'), 'utf8');

/** The first yaml block under the heading `## title`. */
function recipe(title: string): Record<string, any> {
  const start = DOC.indexOf(`\n## ${title}\n`);
  expect(start, `docs/ci-systems.md has a section "${title}"`).toBeGreaterThan(0);
  const end = DOC.indexOf('\n## ', start + 4);
  const section = DOC.slice(start, end < 0 ? undefined : end);
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  expect(block, `a yaml block in "${title}"`).not.toBeNull();
  return parseYaml(block![1]!) as Record<string, any>;
}

let sandbox: Sandbox;
const ws = workspace();
const bin = join(ws.root, 'bin');
const calls = join(ws.root, 'calls');

beforeAll(async () => {
  sandbox = await startSandbox(['--port', '0', '--json'], ws.home, ws.configDir);
  mkdirSync(bin);
  mkdirSync(calls);
  symlinkSync(BIN, join(bin, 'chatctl'));
  // gh and glab stand-ins: each call's arguments (one a line) and standard input, numbered.
  for (const tool of ['gh', 'glab']) {
    writeFileSync(
      join(bin, tool),
      `#!/bin/sh\nn=$(find ${shellQuote(calls)} -name '*.args' | wc -l | tr -d ' ')\nprintf '%s\\n' ${tool} "$@" > ${shellQuote(calls)}/$n.args\ncat > ${shellQuote(calls)}/$n.stdin\necho "${tool}: $1 $2 $3: done"\n`,
    );
    chmodSync(join(bin, tool), 0o755);
  }
}, scaled(30_000));
afterAll(async () => {
  await sandbox?.stop();
  cleanupTempDirs();
});

/** Every call of gh and glab so far, in order: its arguments and what it read. */
function recorded(): { args: string[]; stdin: string }[] {
  const n = readdirSync(calls).filter((f) => f.endsWith('.args')).length;
  return Array.from({ length: n }, (_, i) => ({
    args: readFileSync(join(calls, `${i}.args`), 'utf8')
      .trimEnd()
      .split('\n'),
    stdin: readFileSync(join(calls, `${i}.stdin`), 'utf8'),
  }));
}

const scope = () => ({
  CHATCTL_BASE_URL: sandbox.info.baseUrl,
  CHATCTL_ORG: sandbox.info.organizationId,
  CHATCTL_APP: sandbox.info.applicationId,
  CHATCTL_ENV: sandbox.info.environmentKey,
});

/** A new endpoint in the sandbox, at version 1. */
async function newEndpoint(n: number): Promise<string> {
  const r = await runInProcess(['webhooks', 'create', '--name', `ci ${n}`, '--url', `https://receiver.example.com/ci/${n}`, '--event', 'chat.message.created.v1', '--json'], {
    env: { ...baseEnv(ws), ...scope(), CHATCTL_TOKEN: sandbox.info.token },
    cwd: ws.cwd,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { data: { endpoint: { id: string } } }).data.endpoint.id;
}

async function endpoint(id: string) {
  const found = (await control(sandbox.info).endpoints()).find((e) => e.id === id);
  expect(found?.id, `the sandbox has endpoint ${id}`).toBe(id);
  return found!;
}

const runnerPath = () => `${bin}:${join(NODE, '..')}:/usr/local/bin:/usr/bin:/bin`;

describe('GitHub Actions recipe', () => {
  test('the scheduled overlap rotation runs; the secret reaches gh secret set; in the log it appears only in its ::add-mask:: line, before any other output', { timeout: scaled(60_000) }, async () => {
    const wf = recipe('GitHub Actions: a scheduled rotation with overlap');
    expect(wf.on.schedule[0].cron).toMatch(/^[\d*/ ,-]+$/);
    expect(wf.defaults.run.shell).toBe('bash');
    const job = wf.jobs.rotate as { env: Record<string, string>; steps: { name?: string; id?: string; uses?: string; env?: Record<string, string>; run?: string }[] };
    expect(job.steps.map((s) => s.run ?? '').join('\n')).toContain('--mode overlap');

    const id = await newEndpoint(1);
    const job_ = tempDir('gha');
    const context: Record<string, Record<string, any>> = {
      vars: {
        ...scope(),
        WEBHOOK_ENDPOINT_ID: id,
        WEBHOOK_ENDPOINT_VERSION: '1',
        WEBHOOK_RECEIVER_REPO: 'acme/receiver',
      },
      secrets: { CHATCTL_TOKEN: sandbox.info.token, SECRETS_ADMIN_TOKEN: 'ghp_fake_admin_token' },
      steps: {},
    };
    const fill = (value: Yaml): string =>
      String(value).replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_m, path: string) => {
        const found = path.split('.').reduce<any>((at, key) => at?.[key], context);
        if (typeof found !== 'string') throw new Error(`the recipe uses \${{ ${path} }}, which this simulation does not know`);
        return found;
      });
    const fillAll = (env: Record<string, Yaml> | undefined) => Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, fill(v)]));

    const fromEnvFiles: Record<string, string> = {};
    let log = '';
    const ran: string[] = [];
    for (const step of job.steps) {
      if (step.uses) continue; // checkout, setup-node: Node.js is on PATH already
      if (/npm install -g/.test(step.run ?? '')) continue; // chatctl is on PATH from this clone
      const files = tempDir('runner-files');
      const GITHUB_OUTPUT = join(files, 'output');
      const GITHUB_ENV = join(files, 'env');
      writeFileSync(GITHUB_OUTPUT, '');
      writeFileSync(GITHUB_ENV, '');
      const env = {
        PATH: runnerPath(),
        HOME: job_,
        CI: 'true',
        GITHUB_ACTIONS: 'true',
        GITHUB_REPOSITORY: 'acme/rotator',
        GITHUB_WORKSPACE: job_,
        RUNNER_TEMP: files,
        GITHUB_OUTPUT,
        GITHUB_ENV,
        ...fromEnvFiles,
        ...fillAll(job.env),
        ...fillAll(step.env),
      };
      const r = runStep(step.run!, env, job_);
      log += r.log;
      expect(r.status, `step "${step.name}" failed:\n${r.log}`).toBe(0);
      ran.push(step.name ?? '');
      if (step.id) context.steps![step.id] = { outputs: Object.fromEntries(parseRunnerFile(readFileSync(GITHUB_OUTPUT, 'utf8'))) };
      Object.assign(fromEnvFiles, Object.fromEntries(parseRunnerFile(readFileSync(GITHUB_ENV, 'utf8'))));
    }
    expect(ran).toEqual(['Rotate', 'Store the secret and the new version']);

    // Rotated once, with overlap: the old secret still verifies, beside the new one.
    const after = await endpoint(id);
    expect(after.version).toBe(2);
    expect(after.previousSecretExpiresAt).not.toBeNull();
    expect(after.validSecrets).toHaveLength(2);
    const secret = after.validSecrets[0]!;

    // gh got the secret on its standard input, and the new version.
    expect(recorded().slice(-2)).toEqual([
      { args: ['gh', 'secret', 'set', 'WEBHOOK_SECRET', '--repo', 'acme/receiver'], stdin: secret },
      { args: ['gh', 'variable', 'set', 'WEBHOOK_ENDPOINT_VERSION', '--body', '2', '--repo', 'acme/rotator'], stdin: '' },
    ]);

    // The log: the secret only inside its ::add-mask:: line, and that line before any other output; the token likewise.
    const lines = log.split('\n');
    const firstOther = lines.findIndex((l) => l !== '' && !l.startsWith('::add-mask::'));
    for (const value of [secret, sandbox.info.token]) {
      const holding = lines.flatMap((l, i) => (l.includes(value) ? [i] : []));
      expect(holding.length, `${value === secret ? 'the secret' : 'the token'} in the log:\n${log}`).toBeGreaterThan(0);
      for (const i of holding) expect(lines[i]).toBe(`::add-mask::${value}`);
      expect(holding[0]!).toBeLessThan(firstOther);
    }
    // What a reader of the log sees once the runner has applied the masks.
    const masked = lines.filter((l) => l.startsWith('::add-mask::')).map((l) => l.slice(12));
    const shown = lines
      .filter((l) => !l.startsWith('::add-mask::'))
      .map((l) => masked.reduce((t, v) => t.split(v).join('***'), l))
      .join('\n');
    expect(shown).toContain(`Rotated ${id}; the previous secret works until ${after.previousSecretExpiresAt}`);
    expect(shown).toContain('Stored the new secret in acme/receiver (version 2)');
  });
});

describe('GitLab CI recipe', () => {
  test('the scheduled rotation runs; the secret goes to glab on its standard input and nowhere in the log', { timeout: scaled(60_000) }, async () => {
    const pipeline = recipe('GitLab CI: the same schedule');
    const job = pipeline['rotate-webhook-secret'] as { rules: { if: string }[]; before_script: string[]; script: string[] };
    expect(job.rules[0]!.if).toContain('$CI_PIPELINE_SOURCE == "schedule"');
    expect(job.before_script.join('\n')).toContain('npm install -g'); // not run: chatctl is on PATH from this clone

    const id = await newEndpoint(2);
    const dir = tempDir('gitlab');
    // As GitLab's runner does: each line echoed with "$ ", then run, in one bash with -e and pipefail.
    const script = job.script.map((line) => `printf '%s\\n' ${shellQuote(`$ ${line.trimEnd()}`)}\n${line}`).join('\n');
    const r = runStep(
      script,
      {
        PATH: runnerPath(),
        HOME: dir,
        CI: 'true',
        GITLAB_CI: 'true',
        CI_PIPELINE_SOURCE: 'schedule',
        CI_PROJECT_PATH: 'acme/rotator',
        ...scope(),
        CHATCTL_TOKEN: sandbox.info.token,
        WEBHOOK_ENDPOINT_ID: id,
        WEBHOOK_ENDPOINT_VERSION: '1',
        WEBHOOK_RECEIVER_PROJECT: 'acme/receiver',
        GITLAB_TOKEN: 'glpat-fake-token',
      },
      dir,
    );
    expect(r.status, r.log).toBe(0);

    const after = await endpoint(id);
    expect(after.version).toBe(2);
    expect(after.validSecrets).toHaveLength(2);
    const secret = after.validSecrets[0]!;
    expect(recorded().slice(-2)).toEqual([
      { args: ['glab', 'variable', 'update', 'WEBHOOK_SECRET', '--masked', '--protected', '--repo', 'acme/receiver'], stdin: secret },
      { args: ['glab', 'variable', 'update', 'WEBHOOK_ENDPOINT_VERSION', '2', '--repo', 'acme/rotator'], stdin: '' },
    ]);
    expect(r.log).not.toContain(secret);
    expect(r.log).not.toContain(sandbox.info.token);
    expect(r.log).not.toContain('::add-mask::');
    expect(r.log).toContain(`Rotated ${id} to version 2; fingerprint sha256:`);
    // The artifact holds no secret.
    const artifact = readFileSync(join(dir, 'rotate.json'), 'utf8');
    expect(artifact).not.toContain(secret);
    expect(JSON.parse(artifact).data.secret).toBeNull();
  });
});

describe('github-output: when the file cannot take the whole value', () => {
  test('a file size limit hit mid-block: the file is cut back to its size before, the secret kept, exit 13', { timeout: scaled(60_000) }, async () => {
    const id = await newEndpoint(3);
    const dir = tempDir('limit');
    const output = join(dir, 'output');
    const before = 'earlier=' + 'x'.repeat(391) + '\n'; // 400 bytes: the block crosses the 512-byte limit
    writeFileSync(output, before);
    // A real process: the limit (ulimit -f, in 512-byte blocks) and SIGXFSZ ignored, so the write falls short.
    const command = `trap '' XFSZ; ulimit -f 1; exec ${shellQuote(NODE)} ${shellQuote(BIN)} webhooks rotate ${id} --expected-version 1 --mode overlap --secret-to github-output:S --json`;
    const r = spawnSync('/bin/sh', ['-c', command], {
      cwd: dir,
      env: { PATH: runnerPath(), HOME: dir, ...scope(), CHATCTL_TOKEN: sandbox.info.token, GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status, r.stderr).toBe(13);
    expect(readFileSync(output, 'utf8')).toBe(before);
    const error = JSON.parse(r.stderr.split('\n').find((l) => l.startsWith('{'))!) as {
      error: { details: { endpointId: string; version: number; recoveredPath: string; failed: { to: string; reason: string }[] } };
    };
    expect(error.error.details).toMatchObject({ endpointId: id, version: 2, failed: [{ to: 'github-output:S' }] });
    expect(error.error.details.failed[0]!.reason).toContain('cut back to its size before');
    expect(readFileSync(error.error.details.recoveredPath, 'utf8')).toBe((await endpoint(id)).validSecrets[0]);
  });
});
