// `chatctl __complete SHELL [--line LINE] -- WORD… CURRENT`, on every TAB: answers from the build's
// tree and config.json without commander, HTTP stack or prompts. Output: a candidate a line (TAB
// and description optional), then ":file [PREFIX]", ":nospace" or ":none".
import { readFileSync } from 'node:fs';
import { EVENT_TYPES } from '../api/schemas.js';
import { configDir, configFile, parseConfigData, type ConfigData } from '../config/schema.js';
import { selectProfile } from '../config/profile.js';
import { resolveConnection } from '../scope/resolve.js';
import { scopeKey } from '../secret/record.js';
import { SINK_FORMS } from '../secret/deliver.js';
import type { CommandNode, OptionForm, OptionNode, ValueKind } from '../meta/tree.js';
import { knownEndpoints as inventory } from '../secret/inventory.js';
import type { ScopeFlags } from '../scope/resolve.js';

type KnownEndpoint = { id: string; name: string | null; detail?: string | undefined };

type Candidate = { value: string; description?: string | undefined };
export interface Completion {
  candidates: Candidate[];
  /** Let the shell complete file names: after `prefix` when given (the current word starts with it). */
  files: boolean;
  prefix?: string;
  /** The candidates are unfinished (`file:`): the shell adds no space after one. */
  nospace?: boolean;
}

/** Where values that are not in the tree come from, asked only when needed. */
export interface Sources {
  profiles(): string[];
  /** The endpoints known in the scope the line addresses whose id starts with `idPrefix`. */
  endpoints(globals: LineGlobals, idPrefix: string): KnownEndpoint[];
}

/** The global options of the line being completed that choose the profile and scope. */
type LineGlobals = ScopeFlags & { profile?: string | undefined };
const GLOBAL_NAMES: Record<string, keyof LineGlobals> = { '--profile': 'profile', '--base-url': 'baseUrl', '--org': 'org', '--app': 'app', '--env': 'env' };

function readConfig(env: NodeJS.ProcessEnv): ConfigData | undefined {
  try {
    const parsed = parseConfigData(JSON.parse(readFileSync(configFile(configDir(env)), 'utf8')));
    return 'data' in parsed ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The endpoints this machine saw (src/secret/inventory.ts) in `scope` ("org/app/env") whose id starts with `idPrefix`, by id. */
export function knownEndpoints(configDir: string, scope: string, idPrefix = ''): KnownEndpoint[] {
  return inventory(configDir, scope)
    .filter((e) => e.id.startsWith(idPrefix))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The endpoints known in the scope the line would address; none when that scope cannot be worked out. */
export function endpointsFor(env: NodeJS.ProcessEnv, globals: LineGlobals, config = readConfig(env) ?? {}, idPrefix = ''): KnownEndpoint[] {
  try {
    const conn = resolveConnection(globals, env, selectProfile(globals, env, config));
    return knownEndpoints(configDir(env), scopeKey(conn.scope), idPrefix);
  } catch {
    return [];
  }
}

function findOption(nodes: CommandNode[], word: string): OptionNode | undefined {
  return nodes.map((n) => n.options.find((o) => o.flags.includes(word))).find((o) => o !== undefined);
}

const none = (): Completion => ({ candidates: [], files: false });

/** What the words typed so far amount to: the command, its arguments, the flags given, the option awaiting a value. */
interface Walk {
  path: CommandNode[];
  positionals: number;
  pendingOption: OptionNode | undefined;
  afterDoubleDash: boolean;
  flags: Set<string>;
  globals: LineGlobals;
}

function walk(root: CommandNode, words: string[]): Walk {
  const w: Walk = { path: [root], positionals: 0, pendingOption: undefined, afterDoubleDash: false, flags: new Set(), globals: {} };
  let pendingGlobal: keyof LineGlobals | undefined;
  for (const word of words) {
    const node = w.path[w.path.length - 1]!;
    if (w.pendingOption) {
      w.pendingOption = undefined;
      if (pendingGlobal) w.globals[pendingGlobal] = word;
      pendingGlobal = undefined;
      continue;
    }
    if (!w.afterDoubleDash && word === '--') {
      w.afterDoubleDash = true;
      continue;
    }
    if (!w.afterDoubleDash && word.startsWith('-') && word.length > 1) {
      const eq = word.indexOf('=');
      const flag = eq > 0 ? word.slice(0, eq) : word;
      const o = findOption(w.path, flag);
      const long = o?.flags.find((f) => f.startsWith('--')) ?? flag;
      w.flags.add(long);
      const global = GLOBAL_NAMES[long];
      if (eq > 0) {
        if (global) w.globals[global] = word.slice(eq + 1);
        continue;
      }
      if (o?.takesValue) {
        w.pendingOption = o;
        pendingGlobal = global;
      }
      continue;
    }
    const sub = w.positionals === 0 ? node.commands.find((c) => c.name === word || c.aliases.includes(word)) : undefined;
    if (sub) w.path.push(sub);
    else w.positionals++;
  }
  return w;
}

/** The forms of the command the line is in (`rotate we_1` or `rotate --from f`): an option of another form is not offered. */
function formsInUse(node: CommandNode, w: Walk): Set<OptionForm> {
  const used = new Set<OptionForm>();
  if (w.positionals > 0) used.add('argument');
  for (const o of node.options) if (o.form && o.form !== 'argument' && w.flags.has(o.form)) used.add(o.form);
  return used;
}

const fitsForms = (o: OptionNode, used: Set<OptionForm>) => o.form === undefined || [...used].every((f) => f === o.form);

export function complete(root: CommandNode, words: string[], current: string, sources: Sources): Completion {
  const w = walk(root, words);
  const { path } = w;
  const node = path[path.length - 1]!;
  const used = formsInUse(node, w);

  if (w.pendingOption) return values(w.pendingOption.valueKind, w.pendingOption.choices, current, sources, w);

  if (current.startsWith('-') && !w.afterDoubleDash) {
    const eq = current.indexOf('=');
    if (eq > 0) {
      const o = findOption(path, current.slice(0, eq));
      if (!o?.takesValue) return none();
      const head = current.slice(0, eq + 1);
      const inner = values(o.valueKind, o.choices, current.slice(eq + 1), sources, w);
      return { ...inner, candidates: inner.candidates.map((c) => ({ ...c, value: head + c.value })), ...(inner.files ? { prefix: head + (inner.prefix ?? '') } : {}) };
    }
    const seen = new Set<string>();
    const candidates: Candidate[] = [];
    for (const n of [...path].reverse()) {
      for (const o of n.options) {
        const long = o.flags.find((f) => f.startsWith('--')) ?? o.flags[0]!;
        if (seen.has(long)) continue;
        seen.add(long);
        if (n === node && !fitsForms(o, used)) continue;
        if (long.startsWith(current)) candidates.push({ value: long, description: o.description });
      }
    }
    return { candidates, files: false };
  }

  if (w.positionals === 0 && node.commands.length > 0) {
    // A command with subcommands may take an argument too (`completion install` and `completion bash`).
    const first = node.arguments[0];
    const own = first ? values(first.valueKind, first.choices, current, sources, w).candidates : [];
    return { candidates: [...node.commands.filter((c) => c.name.startsWith(current)).map((c) => ({ value: c.name, description: c.description })), ...own], files: false };
  }
  const arg = node.arguments[w.positionals];
  // `rotate --from FILE` names no endpoint: its argument belongs to the other form.
  if (!arg || (w.positionals === 0 && [...used].some((f) => f !== 'argument'))) return none();
  return values(arg.valueKind, arg.choices, current, sources, w);
}

function values(kind: ValueKind, choices: string[] | undefined, current: string, sources: Sources, w: Walk): Completion {
  switch (kind) {
    case 'file':
      return { candidates: [], files: true };
    case 'choices':
    case 'profiles': {
      const list = kind === 'profiles' ? sources.profiles() : (choices ?? []);
      return { candidates: list.filter((c) => c.startsWith(current)).map((value) => ({ value })), files: false };
    }
    case 'events': {
      // A comma-separated list: complete its last item, keeping the ones before it.
      const cut = current.lastIndexOf(',') + 1;
      const head = current.slice(0, cut);
      const chosen = new Set(head.split(',').filter(Boolean));
      const last = current.slice(cut);
      return { candidates: EVENT_TYPES.filter((e) => e.startsWith(last) && !chosen.has(e)).map((e) => ({ value: head + e })), files: false };
    }
    case 'sinks': {
      // After `file:` or `env-file:` a path; before, the forms themselves.
      const typed = SINK_FORMS.find((s) => s.form.endsWith(':') && current.startsWith(s.form));
      if (typed) return typed.path ? { candidates: [], files: true, prefix: typed.form } : none();
      const candidates = SINK_FORMS.filter((s) => s.form.startsWith(current)).map((s) => ({ value: s.form, description: s.help }));
      return { candidates, files: false, nospace: candidates.some((c) => c.value.endsWith(':')) };
    }
    case 'endpoints': {
      const known = sources.endpoints(w.globals, current).filter((e) => e.id.startsWith(current));
      return { candidates: known.map((e) => ({ value: e.id, description: e.name !== null && e.detail ? `${e.name} (${e.detail})` : (e.name ?? e.detail) })), files: false };
    }
    default:
      return none();
  }
}

export function formatCompletion(c: Completion, withDescriptions: boolean): string {
  const lines = c.candidates.map((x) => (withDescriptions && x.description ? `${x.value}\t${x.description.replace(/\s+/g, ' ')}` : x.value));
  lines.push(c.files ? (c.prefix ? `:file ${c.prefix}` : ':file') : c.nospace ? ':nospace' : ':none');
  return lines.join('\n') + '\n';
}

/** bash splits `file:./s` at COMP_WORDBREAKS into `file`, `:`, `./s`: words with no space between them on the line are joined again; `hidden` is what bash keeps out of the current word. */
export function bashWords(words: string[], current: string, line: string): { words: string[]; current: string; hidden: string } {
  const all = [...words, current];
  const joined: string[] = [];
  // The command's own name comes first on the line, before the words given.
  let pos = line.search(/\s/);
  if (pos < 0) return { words, current, hidden: '' };
  for (let i = 0; i < all.length; i++) {
    const w = all[i]!;
    const at = i === all.length - 1 ? line.length - w.length : line.indexOf(w, pos);
    if (at < pos || (i === all.length - 1 && !line.endsWith(w))) return { words, current, hidden: '' };
    if (joined.length > 0 && at === pos && i > 0) joined[joined.length - 1] += w;
    else joined.push(w);
    pos = at + w.length;
  }
  const whole = joined.pop()!;
  return { words: joined, current: whole, hidden: whole.slice(0, whole.length - current.length) };
}

/** A completion as bash sees the current word: `hidden` (what bash keeps out of it) taken off every candidate and prefix. */
function forBash(c: Completion, hidden: string): Completion {
  if (hidden === '') return c;
  const prefix = c.prefix?.startsWith(hidden) ? c.prefix.slice(hidden.length) : c.prefix;
  const candidates = c.candidates.filter((x) => x.value.startsWith(hidden)).map((x) => ({ ...x, value: x.value.slice(hidden.length) }));
  return { ...c, candidates, ...(prefix !== undefined ? { prefix } : {}) };
}

/** The entry point of dist/complete.cjs (bin/chatctl.js): argv is everything after `__complete`. */
export function runComplete(argv: string[], tree: CommandNode, env: NodeJS.ProcessEnv, write: (s: string) => void): void {
  const shell = argv[0] ?? 'bash';
  const line = argv[1] === '--line' ? (argv[2] ?? '') : undefined;
  const at = line === undefined ? 1 : 3;
  const rest = argv[at] === '--' ? argv.slice(at + 1) : argv.slice(at);
  let current = rest.length ? rest[rest.length - 1]! : '';
  let words = rest.slice(0, -1);
  let hidden = '';
  if (line !== undefined) ({ words, current, hidden } = bashWords(words, current, line));
  // config.json is read once, and only by a completion that needs it.
  let config: { data: ConfigData | undefined } | undefined;
  const cfg = () => (config ??= { data: readConfig(env) }).data;
  const sources: Sources = { profiles: () => Object.keys(cfg()?.profiles ?? {}).sort(), endpoints: (globals, idPrefix) => endpointsFor(env, globals, cfg() ?? {}, idPrefix) };
  write(formatCompletion(forBash(complete(tree, words, current, sources), hidden), shell !== 'bash'));
}
