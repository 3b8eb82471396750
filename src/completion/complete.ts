// `chatctl __complete -- WORD… CURRENT`: the hidden entry point the shell
// scripts call on every TAB. It answers from the tree the build wrote
// (dist/tree.json) and reads config.json for profile names; it loads no
// commander, no HTTP stack, no prompts. Output: one candidate a line, with
// an optional TAB and description, then a last line ":file" (let the shell
// complete file names) or ":none".
import { readFileSync } from 'node:fs';
import { EVENT_TYPES } from '../api/spec.js';
import { configDir, configFile } from '../config/paths.js';
import type { CommandNode, OptionNode, ValueKind } from '../meta/tree.js';

export interface Candidate {
  value: string;
  description?: string | undefined;
}
export interface Completion {
  candidates: Candidate[];
  files: boolean;
}

export function profileNames(env: NodeJS.ProcessEnv): string[] {
  try {
    const data = JSON.parse(readFileSync(configFile(configDir(env)), 'utf8')) as { profiles?: Record<string, unknown> };
    return data.profiles && typeof data.profiles === 'object' ? Object.keys(data.profiles).sort() : [];
  } catch {
    return [];
  }
}

function findOption(nodes: CommandNode[], word: string): OptionNode | undefined {
  for (const n of nodes) {
    const o = n.options.find((opt) => opt.flags.includes(word));
    if (o) return o;
  }
  return undefined;
}

export function complete(root: CommandNode, words: string[], current: string, profiles: () => string[]): Completion {
  const path: CommandNode[] = [root];
  let positionals = 0;
  let pendingOption: OptionNode | undefined;
  let afterDoubleDash = false;
  for (const w of words) {
    const node = path[path.length - 1]!;
    if (pendingOption) {
      pendingOption = undefined;
      continue;
    }
    if (!afterDoubleDash && w === '--') {
      afterDoubleDash = true;
      continue;
    }
    if (!afterDoubleDash && w.startsWith('-') && w.length > 1) {
      if (w.includes('=')) continue;
      const o = findOption(path, w);
      if (o?.takesValue) pendingOption = o;
      continue;
    }
    const sub = positionals === 0 ? node.commands.find((c) => c.name === w || c.aliases.includes(w)) : undefined;
    if (sub) path.push(sub);
    else positionals++;
  }
  const node = path[path.length - 1]!;

  if (pendingOption) return values(pendingOption.valueKind, pendingOption.choices, current, profiles);

  if (current.startsWith('-') && !afterDoubleDash) {
    const eq = current.indexOf('=');
    if (eq > 0) {
      const o = findOption(path, current.slice(0, eq));
      if (!o?.takesValue) return { candidates: [], files: false };
      const inner = values(o.valueKind, o.choices, current.slice(eq + 1), profiles);
      return { candidates: inner.candidates.map((c) => ({ ...c, value: current.slice(0, eq + 1) + c.value })), files: false };
    }
    const seen = new Set<string>();
    const candidates: Candidate[] = [];
    for (const n of [...path].reverse()) {
      for (const o of n.options) {
        const long = o.flags.find((f) => f.startsWith('--')) ?? o.flags[0]!;
        if (seen.has(long)) continue;
        seen.add(long);
        if (long.startsWith(current)) candidates.push({ value: long, description: o.description });
      }
    }
    return { candidates, files: false };
  }

  if (positionals === 0 && node.commands.length > 0) {
    // A command with subcommands may take an argument too (`completion install` and `completion bash`).
    const first = node.arguments[0];
    const own = first ? values(first.valueKind, first.choices, current, profiles).candidates : [];
    return {
      candidates: [...node.commands.filter((c) => c.name.startsWith(current)).map((c) => ({ value: c.name, description: c.description })), ...own],
      files: false,
    };
  }
  const arg = node.arguments[positionals];
  if (arg) return values(arg.valueKind, arg.choices, current, profiles);
  return { candidates: [], files: false };
}

function values(kind: ValueKind, choices: string[] | undefined, current: string, profiles: () => string[]): Completion {
  switch (kind) {
    case 'file':
      return { candidates: [], files: true };
    case 'choices':
      return { candidates: (choices ?? []).filter((c) => c.startsWith(current)).map((value) => ({ value })), files: false };
    case 'profiles':
      return {
        candidates: profiles()
          .filter((p) => p.startsWith(current))
          .map((value) => ({ value })),
        files: false,
      };
    case 'events': {
      // A comma-separated list: complete its last item, keeping the ones before it.
      const cut = current.lastIndexOf(',') + 1;
      const head = current.slice(0, cut);
      const chosen = new Set(head.split(',').filter(Boolean));
      const last = current.slice(cut);
      return {
        candidates: EVENT_TYPES.filter((e) => e.startsWith(last) && !chosen.has(e)).map((e) => ({ value: head + e })),
        files: false,
      };
    }
    default:
      return { candidates: [], files: false };
  }
}

export function formatCompletion(c: Completion, withDescriptions: boolean): string {
  const lines = c.candidates.map((x) => (withDescriptions && x.description ? `${x.value}\t${x.description.replace(/\s+/g, ' ')}` : x.value));
  lines.push(c.files ? ':file' : ':none');
  return lines.join('\n') + '\n';
}

/** Entry point used by bin/chatctl.js: argv is everything after `__complete`. */
export function runComplete(argv: string[], tree: CommandNode, env: NodeJS.ProcessEnv, write: (s: string) => void): void {
  const shell = argv[0] ?? 'bash';
  const rest = argv[1] === '--' ? argv.slice(2) : argv.slice(1);
  const current = rest.length ? rest[rest.length - 1]! : '';
  const words = rest.slice(0, -1);
  write(
    formatCompletion(
      complete(tree, words, current, () => profileNames(env)),
      shell !== 'bash',
    ),
  );
}
