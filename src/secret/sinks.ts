// `--secret-to SINK` (docs/secrets.md): where the one-time secret goes,
// parsed and checked before anything is sent, so a destination that cannot
// work exits 2 with nothing sent. Reused per item by `rotate --from`
// (docs/fleet.md): parse once with idPlaceholder, then sinksFor(sinks, id)
// substitutes `{id}` and checks that item's paths before its request.
import { kindOf } from '../fs/atomic.js';
import { accessSync, constants, lstatSync, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { usageError } from '../errors/cli-error.js';
import { DOTENV_NAME, dotenvProblem } from './dotenv.js';

export type Sink =
  | { kind: 'file'; to: string; path: string; force: boolean }
  | { kind: 'env-file'; to: string; path: string; name: string }
  | { kind: 'exec'; to: string; command: string }
  /** `github-output:NAME` / `github-env:NAME`: appended to the file the runner names in GITHUB_OUTPUT / GITHUB_ENV ('' when unset). */
  | { kind: 'github'; to: string; variable: GitHubFile; path: string; name: string }
  | { kind: 'stdout'; to: 'stdout' };

export interface SinkSettings {
  /** Relative paths are taken from here. */
  cwd: string;
  /** PATH for exec: sinks' programs. */
  env: Record<string, string | undefined>;
  json: boolean;
  stdoutIsTTY: boolean;
  /** Standard output is /dev/null (or was closed). */
  stdoutDiscards?: boolean;
  /** --force: a file: sink may replace an existing regular file. */
  force: boolean;
  /** rotate --from: `{id}` in file: and env-file: paths is each item's endpoint id, checked per item by sinksFor. */
  idPlaceholder?: boolean;
}

const ID = '{id}';

export type GitHubFile = 'GITHUB_OUTPUT' | 'GITHUB_ENV';
const GITHUB_SINKS: Record<string, GitHubFile> = { 'github-output': 'GITHUB_OUTPUT', 'github-env': 'GITHUB_ENV' };
/** A name for a step output or an environment variable of later steps. */
export const GITHUB_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An endpoint id as it stands for `{id}` in such a name. */
export const safeNameId = (endpointId: string): string => endpointId.replace(/[^A-Za-z0-9_]/g, '_');
/**
 * Every form of a `--secret-to` value, as typed before its path, command or
 * name (shell completion offers these; parseSinkSpec reads each). `path`: what
 * follows is a file name (before `#NAME` for env-file:).
 */
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
    if (!GITHUB_NAME.test(shape))
      throw usageError(
        `--secret-to ${spec}: "${name}" is not a valid name`,
        `a name is letters, digits and _, not starting with a digit${s.idPlaceholder ? '; {id} stands for each endpoint id' : ''}`,
      );
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
    if (!DOTENV_NAME.test(name)) throw usageError(`--secret-to ${spec}: "${name}" is not a variable name`, 'a name is letters, digits and _, not starting with a digit');
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

/**
 * Every `--secret-to` value parsed and checked: a destination that cannot
 * work, or two that are the same, is a usage error (exit 2).
 */
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

/**
 * The sinks of one item of `rotate --from`: `{id}` replaced by its endpoint
 * id, and the paths that held it checked now (exit 2 before its request).
 */
export function sinksFor(sinks: readonly Sink[], endpointId: string, s: SinkSettings): Sink[] {
  return sinks.map((sink) => {
    if (!hasIdPlaceholder(sink)) return sink;
    const concrete = substituteId(sink, endpointId);
    checkSink(concrete, s);
    return concrete;
  });
}

/** `{id}` replaced; an id that is not a plain file name is refused. */
export function substituteId(sink: Sink, endpointId: string): Sink {
  if (!hasIdPlaceholder(sink)) return sink;
  if (sink.kind === 'github') {
    const name = sink.name.split(ID).join(safeNameId(endpointId));
    return { ...sink, name, to: `${sink.to.slice(0, sink.to.indexOf(':'))}:${name}` };
  }
  if (!/^[A-Za-z0-9._-]+$/.test(endpointId) || endpointId === '.' || endpointId === '..') {
    throw usageError(`endpoint id "${endpointId}" cannot stand for {id} in a file name`, 'use an exec: destination for it, which sees CHATCTL_ENDPOINT_ID');
  }
  if (sink.kind === 'file') {
    const path = sink.path.split(ID).join(endpointId);
    return { ...sink, path, to: `file:${path}` };
  }
  if (sink.kind === 'env-file') {
    const path = sink.path.split(ID).join(endpointId);
    return { ...sink, path, to: `env-file:${path}#${sink.name}` };
  }
  return sink;
}

/** The file-system, PATH and terminal checks of one sink. */
export function checkSink(sink: Sink, s: SinkSettings): void {
  switch (sink.kind) {
    case 'file':
      return checkFileTarget(sink.path, sink.force, sink.to);
    case 'env-file':
      return checkEnvFile(sink.path, sink.name, sink.to);
    case 'exec':
      return checkProgram(sink.command, s);
    case 'github':
      if (!GITHUB_NAME.test(sink.name)) throw usageError(`--secret-to ${sink.to}: "${sink.name}" is not a valid name`, 'a name is letters, digits and _, not starting with a digit');
      return checkGitHubFile(sink);
    case 'stdout':
      if (s.json)
        throw usageError(
          '--secret-to stdout cannot be used with --json (which --query implies): stdout holds the JSON document',
          'use file:, env-file: or exec:, or --json alone to receive the secret in the JSON',
        );
      if (s.stdoutIsTTY) throw usageError('--secret-to stdout is for capture, and standard output is a terminal', 'capture it, e.g. SECRET="$(chatctl … --secret-to stdout)", or use file:PATH');
      if (s.stdoutDiscards) throw usageError(STDOUT_DISCARDS, 'capture it, e.g. SECRET="$(chatctl … --secret-to stdout)", or use file:PATH');
      return;
  }
}

export const STDOUT_DISCARDS = 'standard output is /dev/null (or was closed), or another device that keeps nothing: the signing secret would be thrown away';

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
  let st: Stats;
  try {
    st = statSync(folder);
  } catch {
    throw usageError(`${what}: the folder ${folder} does not exist`);
  }
  if (!st.isDirectory()) throw usageError(`${what}: ${folder} is not a folder`);
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch {
    throw usageError(`${what}: the folder ${folder} is not writable`);
  }
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
export function envFileProblem(st: Stats): string | undefined {
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
  try {
    accessSync(sink.path, constants.W_OK);
  } catch {
    throw usageError(`${what}: ${sink.path} (${sink.variable}) is not writable`);
  }
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

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

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
