// The pure and file-system pieces of `--secret-to` (docs/secrets.md):
// sink parsing and checks, the dotenv rewrite, fingerprints, the writers.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describeKeepFailure,
  dotenvProblem,
  parseSinks,
  parseSinkSpec,
  programOf,
  setDotenvValue,
  type SinkSettings,
  sinksFor,
  substituteId,
  writeEnvFile,
  writeSecretFile,
} from '../../src/secret/deliver.js';
import { fingerprint } from '../../src/secret/facts.js';
import { prepareRecoveryFolder } from '../../src/secret/record.js';
import type { CliError } from '../../src/errors/cli-error.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chatctl-sinks-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const settings = (over: Partial<SinkSettings> = {}): SinkSettings => ({
  cwd: dir,
  env: { PATH: '/usr/bin:/bin' },
  json: false,
  stdoutIsTTY: false,
  force: false,
  ...over,
});

function usage(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect((e as CliError).exitCode, (e as Error).message).toBe(2);
    return `${(e as CliError).message} ${(e as CliError).hint ?? ''}`;
  }
  throw new Error('expected a usage error');
}

describe('fingerprint', () => {
  it('is sha256: and the first 16 lowercase hex digits of the SHA-256 of the UTF-8 bytes', () => {
    expect(fingerprint('abc')).toBe('sha256:ba7816bf8f01cfea');
    const s = 'whsec_é漢字😀';
    expect(fingerprint(s)).toBe(`sha256:${createHash('sha256').update(Buffer.from(s, 'utf8')).digest('hex').slice(0, 16)}`);
    expect(fingerprint('x')).toMatch(/^sha256:[0-9a-f]{16}$/);
  });
});

describe('parseSinkSpec', () => {
  it('reads the four kinds; file paths are made absolute from cwd; exec as given', () => {
    expect(parseSinkSpec('file:./a/../s', settings())).toEqual({ kind: 'file', to: `file:${join(dir, 's')}`, path: join(dir, 's'), force: false });
    expect(parseSinkSpec('env-file:.env#WEBHOOK_SECRET', settings())).toEqual({
      kind: 'env-file',
      to: `env-file:${join(dir, '.env')}#WEBHOOK_SECRET`,
      path: join(dir, '.env'),
      name: 'WEBHOOK_SECRET',
    });
    expect(parseSinkSpec('env-file:a#b.env#N', settings())).toMatchObject({ path: join(dir, 'a#b.env'), name: 'N' });
    expect(parseSinkSpec('exec:gh secret set X --repo o/r', settings())).toEqual({ kind: 'exec', to: 'exec:gh secret set X --repo o/r', command: 'gh secret set X --repo o/r' });
    expect(parseSinkSpec('stdout', settings())).toEqual({ kind: 'stdout', to: 'stdout' });
  });

  it('refuses bad specs, each with a way out', () => {
    expect(usage(() => parseSinkSpec('file:-', settings()))).toContain('--secret-to stdout');
    expect(usage(() => parseSinkSpec('env-file:-#N', settings()))).toContain('--secret-to stdout');
    usage(() => parseSinkSpec('file:', settings()));
    expect(usage(() => parseSinkSpec('env-file:.env', settings()))).toContain('#');
    for (const bad of ['1X', 'A-B', '', 'A B', 'É']) usage(() => parseSinkSpec(`env-file:.env#${bad}`, settings()));
    usage(() => parseSinkSpec('exec:', settings()));
    usage(() => parseSinkSpec('exec:   ', settings()));
    expect(usage(() => parseSinkSpec('./x.secret', settings()))).toContain('file:./x.secret');
    usage(() => parseSinkSpec('STDOUT', settings()));
    usage(() => parseSinkSpec('s3:bucket/key', settings()));
  });
});

describe('parseSinks: every destination checked before sending', () => {
  it('file: a new path in an existing, writable folder', () => {
    expect(parseSinks(['file:new'], settings())).toHaveLength(1);
    usage(() => parseSinks(['file:no/such/folder/x'], settings()));
    writeFileSync(join(dir, 'plain'), '');
    usage(() => parseSinks(['file:plain/x'], settings())); // the "folder" is a file
  });

  it('file: an existing regular file needs --force; anything else is refused even with it', () => {
    writeFileSync(join(dir, 'old'), 'x');
    expect(usage(() => parseSinks(['file:old'], settings()))).toContain('--force');
    expect(parseSinks(['file:old'], settings({ force: true }))).toMatchObject([{ force: true }]);
    symlinkSync(join(dir, 'old'), join(dir, 'link'));
    mkdirSync(join(dir, 'sub'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    for (const [name, kind] of [
      ['link', 'symbolic link'],
      ['sub', 'folder'],
      ['fifo', 'FIFO'],
    ]) {
      expect(usage(() => parseSinks([`file:${name}`], settings({ force: true })))).toContain(kind);
    }
    expect(usage(() => parseSinks(['file:/dev/null'], settings({ force: true })))).toContain('device');
  });

  it('--force without a file: destination is a usage error', () => {
    usage(() => parseSinks(['stdout'], settings({ force: true })));
    usage(() => parseSinks([], settings({ force: true })));
  });

  it('env-file: an existing file must be regular, ours, with no group/other bits, and hold NAME on one line', () => {
    const env = join(dir, '.env');
    expect(parseSinks([`env-file:${env}#A`], settings())).toHaveLength(1); // absent: created later
    writeFileSync(env, 'A=1\n', { mode: 0o600 });
    expect(parseSinks([`env-file:${env}#A`], settings())).toHaveLength(1);
    chmodSync(env, 0o640);
    expect(usage(() => parseSinks([`env-file:${env}#A`], settings()))).toContain('0640');
    chmodSync(env, 0o604);
    usage(() => parseSinks([`env-file:${env}#A`], settings()));
    chmodSync(env, 0o600);
    writeFileSync(env, 'A="multi\nline"\n');
    expect(usage(() => parseSinks([`env-file:${env}#A`], settings()))).toContain('several lines');
    expect(parseSinks([`env-file:${env}#B`], settings())).toHaveLength(1); // another name is fine
    symlinkSync(env, join(dir, 'link.env'));
    expect(usage(() => parseSinks([`env-file:link.env#A`], settings()))).toContain('symbolic link');
  });

  it('exec: a plain program name must be on PATH (from the given env); shell words and paths are judged as such', () => {
    expect(parseSinks(['exec:sh -c "cat >/dev/null"'], settings())).toHaveLength(1);
    expect(usage(() => parseSinks(['exec:no-such-program-xyz --flag'], settings()))).toContain('no-such-program-xyz');
    usage(() => parseSinks(['exec:sh'], settings({ env: {} }))); // no PATH at all
    usage(() => parseSinks(['exec:sh'], settings({ env: { PATH: join(dir, 'empty') } })));
    const tool = join(dir, 'bin', 'mytool');
    mkdirSync(join(dir, 'bin'));
    writeFileSync(tool, '#!/bin/sh\ncat >/dev/null\n', { mode: 0o755 });
    expect(parseSinks(['exec:mytool'], settings({ env: { PATH: `/nonexistent:${join(dir, 'bin')}` } }))).toHaveLength(1);
    expect(parseSinks(['exec:./bin/mytool arg'], settings())).toHaveLength(1);
    usage(() => parseSinks(['exec:./bin/missing'], settings()));
    chmodSync(tool, 0o644);
    usage(() => parseSinks(['exec:mytool'], settings({ env: { PATH: join(dir, 'bin') } })));
    // The shell decides these: builtins, assignments, quoting, expansions.
    for (const c of ['read -r X; echo ok', 'FOO=1 anything', '"$TOOL" x', 'cd /tmp && cat', '{ cat; } >/dev/null', '! false']) {
      expect(parseSinks([`exec:${c}`], settings({ env: {} })), c).toHaveLength(1);
    }
  });

  it('programOf picks the first word when it is a plain name', () => {
    expect(programOf('gh secret set X')).toBe('gh');
    expect(programOf('  vault kv put secret/x value=-')).toBe('vault');
    expect(programOf('cat>/dev/null')).toBe('cat');
    expect(programOf('/usr/bin/env x')).toBe('/usr/bin/env');
    expect(programOf('X=1 cmd')).toBeUndefined();
    expect(programOf('echo hi')).toBeUndefined();
    expect(programOf("'gh' x")).toBeUndefined();
  });

  it('stdout: not with --json, not onto a terminal', () => {
    expect(parseSinks(['stdout'], settings())).toEqual([{ kind: 'stdout', to: 'stdout' }]);
    expect(usage(() => parseSinks(['stdout'], settings({ json: true })))).toContain('--json');
    expect(usage(() => parseSinks(['stdout'], settings({ stdoutIsTTY: true })))).toContain('terminal');
  });

  it('the same destination twice is refused (file: and env-file: on one path too)', () => {
    usage(() => parseSinks(['stdout', 'stdout'], settings()));
    usage(() => parseSinks(['file:a', `file:${join(dir, 'a')}`], settings()));
    usage(() => parseSinks(['file:a', 'env-file:a#N'], settings()));
    usage(() => parseSinks(['exec:cat >/dev/null', 'exec:cat >/dev/null'], settings()));
    expect(parseSinks(['file:a', 'file:b', 'env-file:c#N', 'exec:cat >/dev/null', 'stdout'], settings())).toHaveLength(5);
  });
});

describe('{id} for rotate --from', () => {
  it('is checked per item and substituted in file: and env-file: paths', () => {
    const sinks = parseSinks(['file:out/{id}.whsec', 'env-file:{id}.env#S', 'exec:cat >/dev/null'], settings({ idPlaceholder: true }));
    mkdirSync(join(dir, 'out'));
    const mine = sinksFor(sinks, 'we_1', settings({ idPlaceholder: true }));
    expect(mine.map((s) => s.to)).toEqual([`file:${join(dir, 'out', 'we_1.whsec')}`, `env-file:${join(dir, 'we_1.env')}#S`, 'exec:cat >/dev/null']);
    writeFileSync(join(dir, 'out', 'we_2.whsec'), 'old');
    usage(() => sinksFor(sinks, 'we_2', settings({ idPlaceholder: true }))); // that item's file exists
    usage(() => substituteId(sinks[0]!, '../etc'));
    usage(() => substituteId(sinks[0]!, '..'));
  });

  it('without idPlaceholder, {id} is an ordinary part of the path', () => {
    const [sink] = parseSinks(['file:{id}.whsec'], settings());
    expect(sink!.to).toBe(`file:${join(dir, '{id}.whsec')}`);
  });
});

describe('setDotenvValue', () => {
  const set = (text: string, name = 'S', value = 'whsec_abc+/=') => setDotenvValue(Buffer.from(text, 'latin1'), name, value).toString('latin1');

  it('appends NAME=<secret> to an empty or unrelated file, keeping every byte', () => {
    expect(set('')).toBe('S=whsec_abc+/=\n');
    expect(set('A=1\n# c\n')).toBe('A=1\n# c\nS=whsec_abc+/=\n');
    expect(set('A=1')).toBe('A=1\nS=whsec_abc+/=\n');
    expect(set('A=1\r\nB=2\r\n')).toBe('A=1\r\nB=2\r\nS=whsec_abc+/=\r\n');
    expect(set('A=\xff\xfe raw bytes\n')).toBe('A=\xff\xfe raw bytes\nS=whsec_abc+/=\n');
  });

  it('replaces every NAME= line, keeping its indentation, export and line end', () => {
    expect(set('A=1\nS=old\nB=2\n')).toBe('A=1\nS=whsec_abc+/=\nB=2\n');
    expect(set('S = "old" # note\r\nB=2')).toBe('S=whsec_abc+/=\r\nB=2');
    expect(set('  export S=old\nS=older')).toBe('  export S=whsec_abc+/=\nS=whsec_abc+/=');
    expect(set('SS=1\nS_X=2\n#S=3\n')).toBe('SS=1\nS_X=2\n#S=3\nS=whsec_abc+/=\n');
  });

  it('quotes what a dotenv parser would read otherwise, refuses what no line can carry', () => {
    expect(set('', 'S', 'a b#c$d')).toBe("S='a b#c$d'\n");
    expect(() => set('', 'S', "it's")).toThrow();
    expect(() => set('', 'S', 'a\nb')).toThrow();
    expect(() => set('', '1S', 'x')).toThrow();
  });

  it('dotenvProblem finds a multi-line quoted value of NAME only', () => {
    expect(dotenvProblem(Buffer.from('S="a\nb"\n'), 'S')).toContain('several lines');
    expect(dotenvProblem(Buffer.from('S="a b"\nT="x\ny"\n'), 'S')).toBeUndefined();
  });
});

describe('writers', () => {
  it('file: a new 0600 file with exactly the secret, whatever the umask; an existing one is not touched without force', async () => {
    const old = process.umask(0o000);
    try {
      await writeSecretFile(join(dir, 's'), 'whsec_x', false);
    } finally {
      process.umask(old);
    }
    expect(readFileSync(join(dir, 's'), 'utf8')).toBe('whsec_x');
    expect(statSync(join(dir, 's')).mode & 0o777).toBe(0o600);
    await expect(writeSecretFile(join(dir, 's'), 'whsec_y', false)).rejects.toThrow(/EEXIST/);
    expect(readFileSync(join(dir, 's'), 'utf8')).toBe('whsec_x');
  });

  it('file --force: a symlink, FIFO or directory that appeared since the check is refused, the temporary file removed', async () => {
    writeFileSync(join(dir, 'target'), 'keep');
    symlinkSync(join(dir, 'target'), join(dir, 'link'));
    await expect(writeSecretFile(join(dir, 'link'), 'whsec_x', true)).rejects.toThrow(/symbolic link/);
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await expect(writeSecretFile(join(dir, 'fifo'), 'whsec_x', true)).rejects.toThrow(/FIFO/);
    expect(readFileSync(join(dir, 'target'), 'utf8')).toBe('keep');
    expect(readdirSync(dir).sort()).toEqual(['fifo', 'link', 'target']);
  });

  it('env-file: a FIFO that appeared since the check is refused at once, not opened and waited on', async () => {
    const fifo = join(dir, '.env');
    execFileSync('mkfifo', [fifo]);
    // Only a writer would end a blocking open, so one comes, late enough
    // (20 s) that the check below cannot mistake it for none, soon enough
    // that a hang ends within the test. It leaves a mark just before it
    // opens: an open that waited for it returns after the mark is made.
    const marked = join(dir, 'writer-came');
    const writer = spawn('/bin/sh', ['-c', 'sleep 20; : > "$2"; exec 3>"$1"; sleep 0.2', 'unblock', fifo, marked], { stdio: 'ignore' });
    const exited = new Promise((r) => writer.once('exit', r));
    try {
      await expect(writeEnvFile(fifo, 'S', 'whsec_x')).rejects.toThrow(/FIFO/);
      expect(existsSync(marked)).toBe(false);
    } finally {
      writer.kill('SIGKILL');
      await exited;
    }
  });

  it('env-file: created 0600, rewritten in place of the old one, refused when it became group-readable', async () => {
    const env = join(dir, '.env');
    await writeEnvFile(env, 'S', 'whsec_1');
    expect(readFileSync(env, 'utf8')).toBe('S=whsec_1\n');
    expect(statSync(env).mode & 0o777).toBe(0o600);
    writeFileSync(env, 'A=1\nS=whsec_1\nB=2', { mode: 0o600 });
    await writeEnvFile(env, 'S', 'whsec_2');
    expect(readFileSync(env, 'utf8')).toBe('A=1\nS=whsec_2\nB=2');
    chmodSync(env, 0o644);
    await expect(writeEnvFile(env, 'S', 'whsec_3')).rejects.toThrow(/0644/);
    expect(readFileSync(env, 'utf8')).toBe('A=1\nS=whsec_2\nB=2');
    expect(readdirSync(dir)).toEqual(['.env']);
  });

  it("recovered/ is trusted as the config folder is: a link, a folder others can write or another user's is refused, naming why; one others can read is tightened to 700", () => {
    const cfg = join(dir, 'cfg');
    const recovered = join(cfg, 'recovered');
    mkdirSync(cfg, { mode: 0o700 });
    const keep = () => prepareRecoveryFolder(cfg);
    const refusal = (): string => {
      try {
        keep();
      } catch (err) {
        return describeKeepFailure(err, cfg);
      }
      throw new Error('kept');
    };
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, recovered);
    expect(refusal()).toBe(`${recovered}: is a symbolic link; secrets are kept only in a folder of its own (remove the link)`);
    expect(readdirSync(elsewhere)).toEqual([]);
    rmSync(recovered);
    mkdirSync(recovered);
    chmodSync(recovered, 0o777);
    expect(refusal()).toBe(`${recovered}: can be written by group or others (mode 777); check its contents, then chmod 700 it`);
    chmodSync(recovered, 0o720);
    expect(refusal()).toContain('(mode 720)');
    expect(readdirSync(recovered)).toEqual([]);
    chmodSync(recovered, 0o755);
    expect(keep().dir).toBe(recovered);
    expect(statSync(recovered).mode & 0o777).toBe(0o700);
    if (process.geteuid?.() === 0) {
      chownSync(recovered, 4242, 4242);
      expect(refusal()).toBe(`${recovered}: belongs to another user (uid 4242), not to you (uid 0)`);
      expect(readdirSync(recovered)).toEqual([]);
    }
  });
});
