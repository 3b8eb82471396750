// What a run tells the CI system around it, black-box through the execute
// seam against the in-process sandbox: GitHub's `::error` annotations on
// stderr (one per failed item or command: endpoint, exit code, what an exec:
// destination said, the first next step), the step summary's Markdown table,
// and --report's JUnit XML; never a secret or the token, and --json's stdout
// unchanged.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { baseEnv, cleanupTempDirs, runInProcess, workspace } from '../support/run.js';
import { endpointBody, sandbox, T0 } from '../support/sandbox.js';
import { PYTHON } from '../support/python.js';
import { errorCommand } from '../../src/output/json.js';
import { commandOf, firstStep } from '../../src/system/ci-report.js';

afterAll(cleanupTempDirs);

async function setUp() {
  const sb = await sandbox();
  const ws = workspace();
  const summary = join(ws.root, 'step-summary.md');
  writeFileSync(summary, '');
  const run = (args: string[], extra: Record<string, string> = {}) =>
    runInProcess(args, {
      env: {
        ...baseEnv(ws),
        ...sb.scopeEnv,
        GITHUB_ACTIONS: 'true',
        GITHUB_STEP_SUMMARY: summary,
        ...extra,
      },
      cwd: ws.cwd,
      timeoutMs: 15_000,
      inject: { now: () => T0 },
    });
  const created = async (n: number) => {
    const r = await sb.create(endpointBody(n));
    expect(r.status).toBe(201);
    return r.body.data.endpoint.id as string;
  };
  const secrets = async () => ((await sb.control('endpoints')).body.data.endpoints as { validSecrets: string[] }[]).flatMap((e) => e.validSecrets);
  return { sb, ws, summary, run, created, secrets };
}

const errors = (text: string) => text.split('\n').filter((l) => l.startsWith('::error '));
// The store script fails the way a vault CLI does: a message on stderr, a status.
const FAILING = 'exec:cat >/dev/null; echo "vault: permission denied, path secret/webhooks" >&2; exit 3';

describe('rotate --from under GITHUB_ACTIONS=true', () => {
  test('--json: one ::error per failed item on stderr, stdout still one JSON line per item and the summary; the step summary has the table and totals', async () => {
    const t = await setUp();
    const ok = await t.created(1);
    const stale = await t.created(2);
    const broken = await t.created(3);
    writeFileSync(join(t.ws.cwd, 'secrets-ok'), '');
    writeFileSync(
      join(t.ws.cwd, 'fleet.ndjson'),
      [`{"endpointId":"${ok}","expectedVersion":1}`, `{"endpointId":"${stale}","expectedVersion":5}`, `{"endpointId":"${broken}","expectedVersion":1}`].join('\n') + '\n',
    );
    // Each item's destination by its id: the broken one's is the failing script.
    writeFileSync(join(t.ws.cwd, 'store.sh'), `#!/bin/sh\ncat >/dev/null\nif [ "$CHATCTL_ENDPOINT_ID" = "${broken}" ]; then echo "vault: permission denied, path secret/webhooks" >&2; exit 3; fi\n`, {
      mode: 0o755,
    });
    const r = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'exec:./store.sh', '--json']);
    expect(r.exitCode, r.stderr).toBe(14);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(4);
    expect(lines.at(-1)).toEqual({ summary: { ok: 1, failed: 2, skipped: 0 } });

    const annotations = errors(r.stderr);
    expect(annotations).toHaveLength(2);
    const conflict = annotations.find((a) => a.includes(stale))!;
    expect(conflict).toMatch(
      new RegExp(`^::error title=chatctl webhooks rotate ${stale} \\(exit 7\\)::endpoint ${stale}%3A|^::error title=chatctl webhooks rotate ${stale} \\(exit 7\\)::endpoint ${stale}: exit 7`),
    );
    expect(conflict).toContain('next: ');
    const kept = annotations.find((a) => a.includes(broken))!;
    expect(kept).toContain(`(exit 13)::endpoint ${broken}: exit 13`);
    expect(kept).toContain('the destination said: vault: permission denied, path secret/webhooks');
    expect(kept).toContain('next: re-run that endpoint alone with --idempotency-key');
    expect(kept).not.toContain('; or');

    const md = readFileSync(t.summary, 'utf8');
    expect(md).toContain('### chatctl webhooks rotate --from');
    expect(md).toContain('1 ok, 2 failed, 0 skipped');
    expect(md).toContain('| endpoint | outcome | version | fingerprint | exit code | next step |');
    const rows = md.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows).toHaveLength(3);
    // Failures first.
    expect(rows[2]).toMatch(new RegExp(`^\\| \`${ok}\` \\| rotated \\| 2 \\| \`sha256:[0-9a-f]{16}\` \\| 0 \\|`));
    expect(rows.find((l) => l.includes(broken))).toContain('| failed | 2 |');
    expect(rows.find((l) => l.includes(broken))).toContain('(the destination said: vault: permission denied, path secret/webhooks)');

    // (The ::add-mask:: lines name each secret for the runner to hide: nothing else may.)
    const shown = r.stderr
      .split('\n')
      .filter((l) => !l.startsWith('::add-mask::'))
      .join('\n');
    for (const secret of await t.secrets()) {
      expect(shown).not.toContain(secret);
      expect(md).not.toContain(secret);
    }
    expect(shown + md).not.toContain(t.sb.sb.token);
  });

  test('human output: the exec: destination printed on stderr as before, and its last line reaches the annotation', async () => {
    const t = await setUp();
    const id = await t.created(4);
    writeFileSync(join(t.ws.cwd, 'fleet.ndjson'), `{"endpointId":"${id}","expectedVersion":1}\n`);
    const r = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', FAILING]);
    expect(r.exitCode).toBe(14);
    expect(r.stderr).toContain('vault: permission denied, path secret/webhooks\n');
    const [a] = errors(r.stderr);
    expect(a).toContain('the destination said: vault: permission denied, path secret/webhooks');
  });

  test('--report FILE: JUnit XML, one testcase per item, a failure with the exit code and the next step; well-formed', async () => {
    const t = await setUp();
    const a = await t.created(5);
    const b = await t.created(6);
    writeFileSync(join(t.ws.cwd, 'fleet.ndjson'), `{"endpointId":"${a}","expectedVersion":1}\n{"endpointId":"${b}","expectedVersion":9}\n`);
    const r = await t.run(['webhooks', 'rotate', '--from', 'fleet.ndjson', '--mode', 'overlap', '--secret-to', 'file:{id}.whsec', '--report', 'report.xml'], {
      GITHUB_ACTIONS: '',
      GITHUB_STEP_SUMMARY: '',
    });
    expect(r.exitCode, r.stderr).toBe(14);
    expect(errors(r.stderr)).toEqual([]);
    const xml = readFileSync(join(t.ws.cwd, 'report.xml'), 'utf8');
    // Parsed by a real XML parser: what a CI system reading it does.
    const parsed = JSON.parse(
      execFileSync(
        PYTHON,
        [
          '-c',
          'import sys,json,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(json.dumps({"tests":r.get("tests"),"failures":r.get("failures"),"cases":[{"name":c.get("name"),"failure":(c.find("failure").get("type") if c.find("failure") is not None else None),"text":(c.find("failure").text if c.find("failure") is not None else None)} for c in r.iter("testcase")]}))',
          join(t.ws.cwd, 'report.xml'),
        ],
        { encoding: 'utf8' },
      ),
    );
    expect(parsed.tests).toBe('2');
    expect(parsed.failures).toBe('1');
    // One testcase per item, in the order the items finished (two run at once: either order).
    expect([...parsed.cases].sort((x: { name: string }, y: { name: string }) => (x.name === a ? -1 : y.name === a ? 1 : 0))).toEqual([
      { name: a, failure: null, text: null },
      { name: b, failure: 'exit 7', text: expect.stringContaining('next: ') },
    ]);
    expect(xml).not.toContain(readFileSync(join(t.ws.cwd, `${a}.whsec`), 'utf8').trim());
    // No temporary file left beside it.
    expect(execFileSync('ls', ['-a', t.ws.cwd], { encoding: 'utf8' })).not.toContain('.tmp');
  });
});

describe('a single command under GITHUB_ACTIONS=true', () => {
  test('a failed rotate: one ::error with the endpoint, exit code and next step; a one-row step summary', async () => {
    const t = await setUp();
    const id = await t.created(7);
    const r = await t.run(['webhooks', 'rotate', id, '--expected-version', '4', '--mode', 'overlap', '--secret-to', 'file:new.whsec', '--json']);
    expect(r.exitCode).toBe(7);
    const [a, ...more] = errors(r.stderr);
    expect(more).toEqual([]);
    expect(a).toMatch(new RegExp(`^::error title=chatctl webhooks rotate ${id} \\(exit 7\\)::endpoint ${id}: exit 7; .*next: `));
    const md = readFileSync(t.summary, 'utf8');
    expect(md).toContain('### chatctl webhooks rotate');
    expect(md).toContain(`| \`${id}\` | failed |`);
  });

  test('a create that succeeds: no annotation, a "created" row with version and fingerprint', async () => {
    const t = await setUp();
    const r = await t.run(['webhooks', 'create', '--name', 'ci', '--url', 'https://hooks.example.com/ci/x', '--event', 'chat.message.created.v1', '--secret-to', 'file:c.whsec']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(errors(r.stderr + r.stdout)).toEqual([]);
    const md = readFileSync(t.summary, 'utf8');
    expect(md).toMatch(/\| `we_[^`]+` \| created \| 1 \| `sha256:[0-9a-f]{16}` \| 0 \|/);
    expect(md).not.toContain(readFileSync(join(t.ws.cwd, 'c.whsec'), 'utf8').trim());
  });

  test('a usage error (nothing sent) still gets its annotation', async () => {
    const t = await setUp();
    const r = await t.run(['webhooks', 'rotate', 'we_1', '--mode', 'sideways']);
    expect(r.exitCode).toBe(2);
    expect(errors(r.stderr)).toHaveLength(1);
    expect(errors(r.stderr)[0]).toContain('title=chatctl webhooks rotate we_1 (exit 2)::endpoint we_1: exit 2');
  });
});

describe('the pieces', () => {
  test("workflow command escaping: data escapes %, CR, LF; a property also ':' and ','", () => {
    expect(errorCommand('a: b, c%', 'x%y\r\nz: w, v')).toBe('::error title=a%3A b%2C c%25::x%25y%0D%0Az: w, v\n');
  });
  test('the first next step of a hint', () => {
    expect(firstStep('re-run with --journal j: it delivers; or put it where it belongs; or, to get a new secret, rotate')).toBe('re-run with --journal j: it delivers');
    expect(firstStep(undefined)).toBeUndefined();
  });
  test('the command and endpoint from argv, global flags and values skipped', () => {
    const globals = new Set(['--profile']);
    expect(commandOf(['--profile', 'prod', 'webhooks', 'rotate', 'we_9', '--expected-version', '3'], globals)).toEqual({ command: 'chatctl webhooks rotate', endpointId: 'we_9' });
    expect(commandOf(['webhooks', 'rotate', '--from', 'f.ndjson'], globals)).toEqual({ command: 'chatctl webhooks rotate', endpointId: undefined });
    expect(commandOf(['auth', 'status'], globals)).toEqual({ command: 'chatctl auth status', endpointId: undefined });
  });
});
