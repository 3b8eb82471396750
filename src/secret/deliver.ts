// Where the one-time secret goes (`--secret-to`, docs/secrets.md): parsed and checked before anything is sent
// (exit 2), then delivered to each destination whole or not at all, each outcome recorded.
import { kindOf, randomBytes, readRegularFile, writeFileAtomic, writeFileAtomicAsync, attempt, works } from '../system/files.js';
import { accessSync, closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, readFileSync, readSync, type Stats, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { usageError } from '../errors/cli-error.js';
import { fingerprint } from './facts.js';
import { recoveryFolder } from './record.js';
import type { OutStream } from '../output/io.js';
import type { Scrubber } from '../output/scrub.js';

// `env-file:PATH#NAME`: pure functions on bytes, so a file in any encoding,
// with CRLF or without a final newline, comes back unchanged but for NAME's line.

/** A dotenv variable, a step output or an environment variable of later steps. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Written as it is; anything else is single-quoted (literal in dotenv parsers and shells alike). */
const PLAIN_VALUE = /^[A-Za-z0-9_+/=.:@%,~^-]*$/;

/** A line: its text is [start, textEnd), its terminator (\n or \r\n, or none) [textEnd, end). */
type Line = { start: number; textEnd: number; end: number };

function splitLines(content: Buffer): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < content.length) {
    const nl = content.indexOf(0x0a, start);
    if (nl === -1) {
      lines.push({ start, textEnd: content.length, end: content.length });
      break;
    }
    const textEnd = nl > start && content[nl - 1] === 0x0d ? nl - 1 : nl;
    lines.push({ start, textEnd, end: nl + 1 });
    start = nl + 1;
  }
  return lines;
}

/** Every `NAME=`, `NAME =` or `export NAME=` line, indented or not: where NAME and its value start. */
function* named(content: Buffer, name: string): Generator<{ line: Line; nameStart: number; valueStart: number }> {
  const re = new RegExp(`^([ \\t]*(?:export[ \\t]+)?)${name}[ \\t]*=[ \\t]*`);
  for (const line of splitLines(content)) {
    // latin1 maps bytes one to one, so indexes stay byte indexes; NAME is ASCII.
    const m = re.exec(content.toString('latin1', line.start, line.textEnd));
    if (m) yield { line, nameStart: line.start + m[1]!.length, valueStart: line.start + m[0].length };
  }
}

/** The value of every `NAME=` line, unquoted as setDotenvValue quotes it: what it wrote there, read back. */
function dotenvValuesOf(content: Buffer, name: string): Buffer[] {
  return [...named(content, name)].map(({ line, valueStart }) => {
    const value = content.subarray(valueStart, line.textEnd);
    return value.length >= 2 && value[0] === 0x27 && value[value.length - 1] === 0x27 ? value.subarray(1, -1) : value;
  });
}

/** What would make rewriting NAME unsafe: an existing NAME whose quoted value runs over several lines. */
export function dotenvProblem(content: Buffer, name: string): string | undefined {
  for (const { line, valueStart } of named(content, name)) {
    const value = content.toString('latin1', valueStart, line.textEnd);
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === '`') && !value.slice(1).includes(quote)) {
      return `${name} has a quoted value that runs over several lines; chatctl replaces single lines only`;
    }
  }
  return undefined;
}

/** The file with every `NAME=` line set to `NAME=<value>` (its indentation and `export ` kept), or one such line appended; all other bytes unchanged. */
export function setDotenvValue(content: Buffer, name: string, secret: string): Buffer {
  if (!NAME.test(name)) throw new Error(`invalid variable name ${name}`);
  if (!PLAIN_VALUE.test(secret) && /['\r\n]/.test(secret)) throw new Error('the secret holds a quote or a line break, which a dotenv line cannot carry safely');
  const value = PLAIN_VALUE.test(secret) ? secret : `'${secret}'`;
  const parts: Buffer[] = [];
  let last = 0;
  for (const at of named(content, name)) {
    parts.push(content.subarray(last, at.nameStart), Buffer.from(`${name}=${value}`, 'utf8'));
    last = at.line.textEnd; // the line's own terminator (or none) stays
  }
  if (parts.length > 0) return Buffer.concat([...parts, content.subarray(last)]);
  const first = splitLines(content)[0];
  const eol = first && first.end - first.textEnd === 2 ? '\r\n' : '\n';
  const needsBreak = content.length > 0 && content[content.length - 1] !== 0x0a;
  return Buffer.concat([content, Buffer.from(`${needsBreak ? eol : ''}${name}=${value}${eol}`, 'utf8')]);
}

export type Sink =
  | { kind: 'file'; to: string; path: string; force: boolean }
  | { kind: 'env-file'; to: string; path: string; name: string }
  | { kind: 'exec'; to: string; command: string }
  /** Appended to the file the runner names in GITHUB_OUTPUT / GITHUB_ENV ('' when unset). */
  | { kind: 'github'; to: string; variable: 'GITHUB_OUTPUT' | 'GITHUB_ENV'; path: string; name: string }
  | { kind: 'stdout'; to: 'stdout' };

/** `stdoutDiscards`: stdout is /dev/null (or was closed); `idPlaceholder` (rotate --from): `{id}` is each item's endpoint id, checked per item by sinksFor. */
export type SinkSettings = { cwd: string; env: Record<string, string | undefined>; json: boolean; stdoutIsTTY: boolean; stdoutDiscards?: boolean; force: boolean; idPlaceholder?: boolean };

const ID = '{id}';
const GITHUB_SINKS: Record<string, 'GITHUB_OUTPUT' | 'GITHUB_ENV'> = { 'github-output': 'GITHUB_OUTPUT', 'github-env': 'GITHUB_ENV' };
const NAME_HINT = 'a name is letters, digits and _, not starting with a digit';

/** Every form of a `--secret-to` value (shell completion offers these); `path`: a file name follows. */
export const SINK_FORMS: readonly { form: string; path: boolean; help: string }[] = [
  { form: 'file:', path: true, help: 'a new file holding the secret, mode 0600' },
  { form: 'env-file:', path: true, help: 'PATH#NAME: the line NAME=secret in a dotenv file' },
  { form: 'exec:', path: false, help: 'COMMAND: run by /bin/sh with the secret on its stdin' },
  { form: 'stdout', path: false, help: 'the secret alone on stdout, for $(...) capture' },
  ...Object.keys(GITHUB_SINKS).map((name) => ({ form: `${name}:`, path: false, help: `NAME: a GitHub Actions ${name === 'github-output' ? 'step output' : 'variable of later steps'}` })),
];
const STDOUT_HINT = 'to send the secret to standard output (for $(…) capture), use --secret-to stdout';

/** One `--secret-to` value, parsed (not yet checked against the file system). */
export function parseSinkSpec(spec: string, s: Pick<SinkSettings, 'cwd' | 'force'> & { env?: SinkSettings['env']; idPlaceholder?: boolean }): Sink {
  if (spec === 'stdout') return { kind: 'stdout', to: 'stdout' };
  const colon = spec.indexOf(':');
  const variable = colon > 0 ? GITHUB_SINKS[spec.slice(0, colon)] : undefined;
  if (variable) {
    const name = spec.slice(colon + 1);
    // With --from, `{id}` stands for each endpoint id (made safe); the name as a whole is checked per item.
    const shape = s.idPlaceholder ? name.split(ID).join('x') : name;
    if (!NAME.test(shape)) throw usageError(`--secret-to ${spec}: "${name}" is not a valid name`, `${NAME_HINT}${s.idPlaceholder ? '; {id} stands for each endpoint id' : ''}`);
    const file = s.env?.[variable];
    return { kind: 'github', to: spec, variable, path: file ? resolve(s.cwd, file) : '', name };
  }
  if (spec.startsWith('file:')) {
    const path = filePath(spec.slice(5), `--secret-to ${spec}`, s.cwd);
    return { kind: 'file', to: `file:${path}`, path, force: s.force };
  }
  if (spec.startsWith('env-file:')) {
    const rest = spec.slice(9);
    const hash = rest.lastIndexOf('#');
    if (hash === -1) throw usageError(`--secret-to ${spec}: give the variable to set after #`, 'e.g. --secret-to env-file:.env#WEBHOOK_SECRET');
    const name = rest.slice(hash + 1);
    if (!NAME.test(name)) throw usageError(`--secret-to ${spec}: "${name}" is not a variable name`, NAME_HINT);
    const path = filePath(rest.slice(0, hash), `--secret-to ${spec}`, s.cwd);
    return { kind: 'env-file', to: `env-file:${path}#${name}`, path, name };
  }
  if (spec.startsWith('exec:')) {
    const command = spec.slice(5);
    if (command.trim() === '') throw usageError('--secret-to exec: needs a command', 'e.g. --secret-to "exec:gh secret set WEBHOOK_SECRET --repo owner/repo"');
    return { kind: 'exec', to: spec, command };
  }
  const looksLikePath = !/^[a-z-]+:/.test(spec);
  throw usageError(
    `--secret-to ${spec}: unknown destination`,
    `use file:PATH, env-file:PATH#NAME, exec:COMMAND, github-output:NAME, github-env:NAME or stdout${looksLikePath && spec !== '' && spec !== '-' ? ` (a file: --secret-to file:${spec})` : ''}`,
  );
}

function filePath(raw: string, what: string, cwd: string): string {
  if (raw === '') throw usageError(`${what}: needs a path`);
  if (raw === '-') throw usageError(`${what}: "-" is not a file name here`, STDOUT_HINT);
  return resolve(cwd, raw);
}

/** `--secret-file PATH`: the same as `--secret-to file:PATH`, with its own flag in messages. */
export function secretFileSpec(path: string): string {
  if (path === '') throw usageError('--secret-file needs a path');
  if (path === '-') throw usageError('--secret-file -: "-" is not a file name here', STDOUT_HINT);
  return `file:${path}`;
}

export const hasIdPlaceholder = (sink: Sink): boolean => (sink.kind === 'github' ? sink.name.includes(ID) : (sink.kind === 'file' || sink.kind === 'env-file') && sink.path.includes(ID));

/** Every `--secret-to` value parsed and checked: a destination that cannot work, or two that are the same, is a usage error (exit 2). */
export function parseSinks(specs: readonly string[], s: SinkSettings): Sink[] {
  const sinks = specs.map((spec) => parseSinkSpec(spec, s));
  // The runner's file is checked once, even when the name waits for each item's id.
  for (const sink of sinks) if (sink.kind === 'github' && s.idPlaceholder && hasIdPlaceholder(sink)) checkGitHubFile(sink);
  const seen = new Set<string>();
  for (const sink of sinks) {
    const key = sink.kind === 'file' || sink.kind === 'env-file' ? `path:${sink.path}` : sink.to;
    if (seen.has(key)) throw usageError(`--secret-to ${sink.to} is given twice`, 'each destination gets the secret once');
    seen.add(key);
    if (!(s.idPlaceholder && hasIdPlaceholder(sink))) checkSink(sink, s);
  }
  if (s.force && !sinks.some((k) => k.kind === 'file')) throw usageError('--force goes with --secret-file or --secret-to file:');
  return sinks;
}

/** The sinks of one item of `rotate --from`: `{id}` replaced by its endpoint id, and those checked now (exit 2 before its request). */
export function sinksFor(sinks: readonly Sink[], endpointId: string, s: SinkSettings): Sink[] {
  return sinks.map((sink) => {
    if (!hasIdPlaceholder(sink)) return sink;
    const concrete = substituteId(sink, endpointId);
    checkSink(concrete, s);
    return concrete;
  });
}

/** `{id}` replaced (made safe in a name); an id that is not a plain file name is refused in a path. */
export function substituteId(sink: Sink, endpointId: string): Sink {
  if (!hasIdPlaceholder(sink)) return sink;
  if (sink.kind === 'github') {
    const name = sink.name.split(ID).join(endpointId.replace(/[^A-Za-z0-9_]/g, '_'));
    return { ...sink, name, to: `${sink.to.slice(0, sink.to.indexOf(':'))}:${name}` };
  }
  if (!/^[A-Za-z0-9._-]+$/.test(endpointId) || endpointId === '.' || endpointId === '..') {
    throw usageError(`endpoint id "${endpointId}" cannot stand for {id} in a file name`, 'use an exec: destination for it, which sees CHATCTL_ENDPOINT_ID');
  }
  if (sink.kind !== 'file' && sink.kind !== 'env-file') return sink;
  const path = sink.path.split(ID).join(endpointId);
  return sink.kind === 'file' ? { ...sink, path, to: `file:${path}` } : { ...sink, path, to: `env-file:${path}#${sink.name}` };
}

function checkSink(sink: Sink, s: SinkSettings): void {
  const capture = 'capture it, e.g. SECRET="$(chatctl … --secret-to stdout)", or use file:PATH';
  switch (sink.kind) {
    case 'file':
      return checkFileTarget(sink.path, sink.force, sink.to);
    case 'env-file':
      return checkEnvFile(sink.path, sink.name, sink.to);
    case 'exec':
      return checkProgram(sink.command, s);
    case 'github':
      if (!NAME.test(sink.name)) throw usageError(`--secret-to ${sink.to}: "${sink.name}" is not a valid name`, NAME_HINT);
      return checkGitHubFile(sink);
    case 'stdout':
      if (s.json)
        throw usageError(
          '--secret-to stdout cannot be used with --json (which --query implies): stdout holds the JSON document',
          'use file:, env-file: or exec:, or --json alone to receive the secret in the JSON',
        );
      if (s.stdoutIsTTY) throw usageError('--secret-to stdout is for capture, and standard output is a terminal', capture);
      if (s.stdoutDiscards) throw usageError(STDOUT_DISCARDS, capture);
      return;
  }
}

const STDOUT_DISCARDS = 'standard output is /dev/null (or was closed), or another device that keeps nothing: the signing secret would be thrown away';

function lstatOrUndefined(path: string, what: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw usageError(`cannot use ${what}: ${code ?? 'error'}`);
  }
}

function checkFolder(path: string, what: string): void {
  const folder = dirname(path);
  const st = attempt(() => statSync(folder));
  if (!st) throw usageError(`${what}: the folder ${folder} does not exist`);
  if (!st.isDirectory()) throw usageError(`${what}: ${folder} is not a folder`);
  if (!works(() => accessSync(folder, constants.W_OK | constants.X_OK))) throw usageError(`${what}: the folder ${folder} is not writable`);
}

/** A file chatctl will create or, with `force`, replace: a regular file or absent, in a folder this user can write. */
export function checkFileTarget(path: string, force: boolean, what: string): void {
  const st = lstatOrUndefined(path, what);
  if (st) {
    if (!st.isFile()) throw usageError(`${what}: ${path} is ${kindOf(st)}; only a regular file is replaced, even with --force`);
    if (!force) throw usageError(`${what}: ${path} already exists`, 'choose a new path, or add --force to replace it');
  }
  checkFolder(path, what);
}

/** An existing dotenv file must be a regular file of this user's, with no group or other permissions. */
function envFileProblem(st: Stats): string | undefined {
  if (!st.isFile()) return `is ${kindOf(st)}`;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && st.uid !== uid) return 'is owned by another user';
  if ((st.mode & 0o077) !== 0) return `has mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}; it must have no group or other permissions (chmod 600)`;
  return undefined;
}

/** The runner's file: named by its variable, and a regular file this run can append to (or absent, in a writable folder). */
function checkGitHubFile(sink: Extract<Sink, { kind: 'github' }>): void {
  const what = `--secret-to ${sink.to}`;
  if (sink.path === '') throw usageError(`${what}: ${sink.variable} is not set`, `${sink.variable} names the runner's file; it is set inside a GitHub Actions step`);
  // Not followed through a symbolic link: the append refuses one too (O_NOFOLLOW).
  const st = lstatOrUndefined(sink.path, `${what} (${sink.variable}=${sink.path})`);
  if (!st) return checkFolder(sink.path, what);
  if (!st.isFile()) throw usageError(`${what}: ${sink.path} (${sink.variable}) is ${kindOf(st)}, not a file to append to`);
  if (!works(() => accessSync(sink.path, constants.W_OK))) throw usageError(`${what}: ${sink.path} (${sink.variable}) is not writable`);
}

function checkEnvFile(path: string, name: string, what: string): void {
  const st = lstatOrUndefined(path, what);
  if (st) {
    const problem = envFileProblem(st);
    if (problem) throw usageError(`${what}: ${path} ${problem}`);
    let content: Buffer;
    try {
      content = readFileSync(path);
    } catch (err) {
      throw usageError(`${what}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const bad = dotenvProblem(content, name);
    if (bad) throw usageError(`${what}: ${bad}`);
  }
  checkFolder(path, what);
}

/** Words the shell runs itself: nothing to find on PATH. */
const SHELL_WORDS = new Set(
  (
    '. : [ ! { } alias bg break cd command continue eval exec exit export false fg getopts hash jobs kill ' +
    'printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset wait echo ' +
    'if then else elif fi case esac for while until do done in function select time local'
  ).split(' '),
);

/** COMMAND's first word when it is a plain program name (or path) to look for; undefined when the shell decides. */
export function programOf(command: string): string | undefined {
  const m = /^\s*([^\s;&|<>()]+)/.exec(command);
  if (!m) return undefined;
  const word = m[1]!;
  // Quoted, expanded, an assignment (VAR=x cmd), a glob, a brace group: not a plain name.
  if (/["'\\$`*?[\]{}~=#!]/.test(word)) return undefined;
  if (SHELL_WORDS.has(word)) return undefined;
  return word;
}

const isExecutable = (path: string) => attempt(() => statSync(path).isFile()) === true && works(() => accessSync(path, constants.X_OK));

function checkProgram(command: string, s: SinkSettings): void {
  const program = programOf(command);
  if (program === undefined) return;
  if (program.includes('/')) {
    if (!isExecutable(resolve(s.cwd, program))) throw usageError(`--secret-to exec:…: ${program} is not an executable file`);
    return;
  }
  const dirs = (s.env.PATH ?? '').split(':');
  if (s.env.PATH !== undefined && dirs.some((d) => isExecutable(join(resolve(s.cwd, d || '.'), program)))) return;
  throw usageError(`--secret-to exec:…: "${program}" was not found on PATH`, 'install it, or give its full path');
}

/** Where the secret goes, decided before anything is sent: the sinks, else (`fallback`) the JSON document on stdout or the terminal. */
export type SecretPlan = { sinks: Sink[]; fallback?: 'json' | 'tty' };

type SecretPlanInput = Omit<SinkSettings, 'idPlaceholder'> & {
  secretTo?: readonly string[] | undefined;
  secretFile?: string | undefined;
  /** --query: the JSON output is cut down to what an expression selects, so it cannot carry the secret. */
  query?: boolean;
  dryRun: boolean;
  /** CI is set (the run-state's): no secret on a terminal either. */
  ci?: boolean | undefined;
  /** rotate: what `{id}` in a path stands for; create (the id is not known before the answer) refuses `{id}`. */
  endpointId?: string | undefined;
};

/** The sinks given, else the JSON (--json), else the terminal (stdout a TTY and CI not set); anything else is exit 2, so a run that could not deliver the secret never asks for one. */
export function planSecret(input: SecretPlanInput): SecretPlan {
  const specs = [...(input.secretFile !== undefined ? [secretFileSpec(input.secretFile)] : []), ...(input.secretTo ?? [])];
  const parsed = parseSinks(specs, { ...input, idPlaceholder: true });
  const withId = input.endpointId === undefined ? parsed.find(hasIdPlaceholder) : undefined;
  if (withId)
    throw usageError(
      `--secret-to ${withId.to}: {id} stands for the endpoint id, which is not known before the server answers`,
      'name the file itself; {id} can be used with webhooks rotate, which knows the endpoint id',
    );
  const sinks = input.endpointId !== undefined ? sinksFor(parsed, input.endpointId, input) : parsed;
  if (sinks.length > 0) return { sinks };
  if (input.json) {
    // --query's part of the document could leave the secret out after the server made it.
    if (input.query && !input.dryRun)
      throw usageError(
        '--query prints part of the JSON output, which is no place for the signing secret',
        'say where the secret goes with --secret-to (file:PATH, env-file:PATH#NAME, exec:COMMAND, github-output:NAME); the JSON then holds "secret": null and where it went. For $(…) capture of the secret itself: --secret-to stdout, without --json and --query',
      );
    if (input.stdoutDiscards && !input.dryRun)
      throw usageError(`${STDOUT_DISCARDS} with the JSON document`, 'say where it goes with --secret-to (file:PATH, env-file:PATH#NAME, exec:COMMAND), or send stdout somewhere it is kept');
    return { sinks, fallback: 'json' };
  }
  const ci = Boolean(input.ci);
  // A dry run sends nothing, so no secret comes back to place.
  if (input.dryRun || (input.stdoutIsTTY && !ci)) return { sinks, fallback: 'tty' };
  throw usageError(
    ci ? 'refusing to print the signing secret: CI is set, and a job log keeps whatever is printed' : 'refusing to print the signing secret: standard output is not a terminal',
    'say where it goes with --secret-to (file:PATH — or --secret-file PATH —, env-file:PATH#NAME, exec:COMMAND, or stdout for $(…) capture), or use --json to receive it in the JSON output',
  );
}

/** Whether a `file:` (or every NAME line of an `env-file:`) holds exactly the secret `fp`; read as readRegularFile reads, whatever it has become since. */
export function sinkHolds(sink: Sink, fp: string): boolean {
  if (sink.kind !== 'file' && sink.kind !== 'env-file') return false;
  const bytes = readRegularFile(sink.path);
  if (bytes === undefined) return false;
  const values = sink.kind === 'file' ? [bytes] : dotenvValuesOf(bytes, sink.name);
  return values.length > 0 && values.every((v) => fingerprint(v) === fp);
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** `file:` — a new file 0600 holding exactly the secret, or with force a regular file replaced atomically; `offLoop`: its fsyncs on the thread pool. */
export async function writeSecretFile(path: string, secret: string, force: boolean, offLoop = false): Promise<void> {
  await (offLoop ? writeFileAtomicAsync : writeFileAtomic)(path, secret, { how: force ? 'replace' : 'exclusive' });
}

/** `env-file:` — NAME=<secret> set in the dotenv file (created if absent), rewritten atomically, 0600. */
export async function writeEnvFile(path: string, name: string, secret: string, offLoop = false): Promise<void> {
  let content = Buffer.alloc(0);
  let fd: number | undefined;
  try {
    // Non-blocking: a FIFO put there since the check would hold the open (and every signal) until a writer came.
    fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw Object.assign(new Error(`${path} is now a symbolic link`), { code });
    if (code !== 'ENOENT') throw err;
  }
  if (fd !== undefined) {
    try {
      const problem = envFileProblem(fstatSync(fd));
      if (problem) throw Object.assign(new Error(`${path} ${problem}`), { code: 'EPERM' });
      content = readFileSync(fd);
      // Checked before sending too, but the file may have changed since.
      const bad = dotenvProblem(content, name);
      if (bad) throw new Error(`${path}: ${bad}`);
    } finally {
      closeSync(fd);
    }
  }
  await (offLoop ? writeFileAtomicAsync : writeFileAtomic)(path, setDotenvValue(content, name, secret));
}

/**
 * `github-*:NAME`: `NAME<<DELIM`, the secret, `DELIM` appended in one write, DELIM random and not in the secret
 * (nothing can end the value early); read back, and cut off again if short, so the runner never reads half a value.
 */
export function appendGitHubValue(path: string, name: string, secret: string): void {
  let delimiter: string;
  do delimiter = `ghadelimiter_${randomBytes(16).toString('hex')}`;
  while (secret.includes(delimiter));
  const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | NOFOLLOW, 0o600);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw Object.assign(new Error(`${path} is now ${kindOf(st)}`), { code: 'ENOTREG' });
    const before = st.size;
    // A file whose last line is unfinished would swallow the first line of the block.
    const last = Buffer.alloc(1);
    const lead = before > 0 && readSync(fd, last, 0, 1, before - 1) === 1 && last[0] !== 0x0a ? '\n' : '';
    const block = Buffer.from(`${lead}${name}<<${delimiter}\n${secret}\n${delimiter}\n`, 'utf8');
    try {
      const written = writeSync(fd, block);
      if (written !== block.length) throw new Error(`only ${written} of ${block.length} bytes could be appended to ${path} (a full disk, or a file size limit)`);
      const back = Buffer.alloc(block.length);
      const read = readSync(fd, back, 0, block.length, before);
      if (read !== block.length || !back.equals(block)) throw Object.assign(new Error(`${path} does not hold the value just appended (another writer?)`), { code: 'EIO' });
    } catch (err) {
      let undone = '; the file was cut back to its size before';
      try {
        ftruncateSync(fd, before);
      } catch (cut) {
        undone = `; cutting the file back to its size before failed too (${(cut as NodeJS.ErrnoException).code ?? 'error'}): ${path} may hold part of the value`;
      }
      if (err instanceof Error) err.message += undone;
      throw err;
    }
  } finally {
    attempt(() => closeSync(fd)); // already failing
  }
}

const errnoCode = (err: unknown) => (typeof (err as NodeJS.ErrnoException)?.code === 'string' ? (err as NodeJS.ErrnoException).code : undefined);
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

const COMMON_ERRNO = { EACCES: 'permission denied', EROFS: 'read-only file system', ENOSPC: 'no space left on the device', EDQUOT: 'disk quota exceeded', EIO: 'input/output error' };
const KEEP_FAILURES: Record<string, string> = {
  ...COMMON_ERRNO,
  EPERM: 'operation not permitted',
  EEXIST: 'a file stands where the folder should be',
  ENOTDIR: 'a file stands where a folder should be',
  ENOENT: 'no such file or directory',
};
/** For a destination: what the error most likely means there. */
const FAILURES: Record<string, string> = { ...COMMON_ERRNO, EPIPE: 'the reader went away (closed pipe)', EEXIST: 'the file exists now', ENOENT: 'the folder no longer exists' };

/** Why no recovery copy could be written, naming the folder: the plain meaning of the error, not describeFailure's guesses for a destination. */
export function describeKeepFailure(err: unknown, configDir: string): string {
  const code = errnoCode(err);
  return `${recoveryFolder(configDir)}: ${code && KEEP_FAILURES[code] ? `${KEEP_FAILURES[code]} (${code})` : messageOf(err)}`;
}

export function describeFailure(err: unknown): string {
  const code = errnoCode(err);
  if (code && FAILURES[code]) return `${FAILURES[code]} (${code})`;
  const message = messageOf(err);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

const EXEC_TIMEOUT_MS = 60_000;
/** How much of a failed exec: command's output its failure carries. */
const EXEC_OUTPUT_TAIL_BYTES = 4096;

/** Stdout is scrubbed of the credentials: a secret holding one would arrive there mangled. */
export const CREDENTIAL_IN_SECRET = 'the secret contains the bearer token or the x-service-csrf value, which are never written to stdout';

export interface DeliverDeps {
  cwd: string;
  env: Record<string, string | undefined>;
  /** Where the `stdout` sink writes (confirmed writes, so a closed pipe is a failure). */
  stdout: OutStream;
  /** Where an exec: command's output goes, scrubbed of every known secret. */
  stderr: OutStream;
  scrubber: Scrubber;
  /** Aborted on a signal: a running exec: command is stopped, the rest skipped. */
  signal?: AbortSignal | undefined;
  execTimeoutMs?: number | undefined;
  /** rotate --from: `{id}` replaced by the endpoint id. */
  idPlaceholder?: boolean | undefined;
  /** rotate --from: fsyncs on the thread pool, so the loop reads other items' answers meanwhile. */
  offLoop?: boolean | undefined;
  /** A resumed delivery: a file: or env-file: already holding exactly this secret counts as delivered. */
  skipHeld?: boolean | undefined;
  /** --json: stderr holds JSON lines only; an exec: command's output is not shown, its tail kept for the failure's `output`. */
  captureExecOutput?: boolean | undefined;
  /** A CI report: the failure carries that tail also when the output was shown. */
  keepExecOutput?: boolean | undefined;
}

export type Delivered = { to: string; fingerprint: string };

/** `output`: exec: only, when kept: the last 4,096 bytes of the command's output, secrets and token blanked. */
export type DeliveryFailure = { to: string; reason: string; output?: string };

/** Resolves once the stream accepted the text; rejects with its error, or on `signal` (a reader that never reads must not hold the secret hostage). */
export function writeConfirmed(stream: OutStream, text: string, signal?: AbortSignal): Promise<void> {
  if (!stream.writeConfirmed) {
    stream.write(text);
    return Promise.resolve();
  }
  const written = stream.writeConfirmed(text);
  if (!signal) return written;
  if (signal.aborted) return Promise.reject(new Error('interrupted before it was written'));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(new Error('interrupted while the reader was not reading'));
    signal.addEventListener('abort', onAbort, { once: true });
    written.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

type Item = { endpointId: string; secret: string };

/** Every sink in order; a failure of one does not stop the others. Exit 0 only if all hold it; nothing prints the secret but its destination. */
export async function deliverAll(sinks: readonly Sink[], item: Item, deps: DeliverDeps): Promise<{ fingerprint: string; delivered: Delivered[]; failures: DeliveryFailure[] }> {
  deps.scrubber.addSecret(item.secret);
  const fp = fingerprint(item.secret);
  const outcome = { fingerprint: fp, delivered: [] as Delivered[], failures: [] as DeliveryFailure[] };
  for (const given of sinks) {
    let sink = given;
    try {
      if (deps.signal?.aborted) throw new Error('not attempted: chatctl was interrupted');
      if (deps.idPlaceholder) sink = substituteId(given, item.endpointId);
      if (!(deps.skipHeld && sinkHolds(sink, fp))) await deliverOne(sink, item, fp, deps);
      outcome.delivered.push({ to: sink.to, fingerprint: fp });
    } catch (err) {
      const output = (err as { execOutput?: unknown } | undefined)?.execOutput;
      outcome.failures.push({ to: sink.to, reason: describeFailure(err), ...(typeof output === 'string' ? { output } : {}) });
    }
  }
  return outcome;
}

async function deliverOne(sink: Sink, item: Item, fp: string, deps: DeliverDeps): Promise<void> {
  switch (sink.kind) {
    case 'file':
      return writeSecretFile(sink.path, item.secret, sink.force, deps.offLoop);
    case 'env-file':
      return writeEnvFile(sink.path, sink.name, item.secret, deps.offLoop);
    case 'github':
      return appendGitHubValue(sink.path, sink.name, item.secret);
    case 'stdout':
      if (deps.scrubber.holdsCredential(item.secret)) throw new Error(CREDENTIAL_IN_SECRET);
      return writeConfirmed(deps.stdout, `${item.secret}\n`, deps.signal);
    case 'exec':
      return deliverExec(sink.command, item, fp, deps);
  }
}

async function deliverExec(command: string, item: Item, fp: string, deps: DeliverDeps): Promise<void> {
  const { runExec } = await import('./exec-worker.js');
  const scrubber = deps.scrubber.stream();
  // The tail kept: at most EXEC_OUTPUT_TAIL_BYTES UTF-16 units (each at least a byte) once scrubbed.
  let kept = '';
  const show = (clean: string) => {
    if (!deps.captureExecOutput) deps.stderr.write(clean);
    if (deps.captureExecOutput || deps.keepExecOutput) kept = (kept + clean).slice(-EXEC_OUTPUT_TAIL_BYTES);
  };
  const flush = () => {
    const rest = scrubber.end();
    if (rest) show(rest);
  };
  try {
    await runExec({
      command,
      secret: item.secret,
      cwd: deps.cwd,
      env: deps.env,
      endpointId: item.endpointId,
      fingerprint: fp,
      output: (text) => {
        const clean = scrubber.push(text);
        if (clean) show(clean);
      },
      timeoutMs: deps.execTimeoutMs ?? EXEC_TIMEOUT_MS,
      signal: deps.signal,
    });
  } catch (err) {
    if (deps.captureExecOutput || deps.keepExecOutput) {
      flush();
      throw Object.assign(err instanceof Error ? err : new Error(String(err)), { execOutput: lastBytes(kept, EXEC_OUTPUT_TAIL_BYTES) });
    }
    throw err;
  } finally {
    flush();
  }
}

/** The last `max` bytes of text in UTF-8, starting at a whole character. */
export function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}
