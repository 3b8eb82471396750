// The shape of src/, read from the sources with TypeScript's parser (no
// build): no circle of imports between files or between folders, no import
// from a folder to one in a layer above it, no function over the length
// limit (120 lines, and at most three over 80), and no private member of a
// library touched. Every kind of import
// counts: `import`, `import type`, `export … from`, `import()` and
// `import('…')` in a type. CONTRIBUTING ("Layout") says why the layers are
// what they are.
import { describe, expect, test } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../support/fixtures.js';

const SRC = join(ROOT, 'src');

/**
 * The folders of src/, top layer first. A folder may import from its own
 * layer and the layers below it, never from one above. `.` is src/ itself
 * (the Context type); `system` the clock and random ids; `commands/*` is
 * every command group.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['app', 'sea'],
  ['commands/*'],
  ['commands'],
  ['run', 'completion', 'sandbox'],
  ['scope', 'secret', 'prompts'],
  ['credentials'],
  ['config'],
  ['.'],
  ['http'],
  ['input', 'meta'],
  ['system', 'errors'],
  ['api', 'output', 'signing'],
];

/** Functions (declarations, methods, arrows, function expressions) longer than this many lines fail. */
const MAX_FUNCTION_LINES = 120;
/** Functions longer than this many lines are long: at most MAX_LONG_FUNCTIONS of them. */
const LONG_FUNCTION_LINES = 80;
const MAX_LONG_FUNCTIONS = 3;
/** Each may stay over the limit until it is split, and no longer than it is now. */
const LONG_FUNCTIONS: Record<string, number> = {};
/** Files that still touch a library's private member (a name starting with one underscore). */
const PRIVATE_MEMBER_FILES = new Set<string>([]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

const files = new Map(sourceFiles(SRC).map((f) => [relative(ROOT, f), ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true)]));

/** Every relative import of a file, as repository paths of .ts files. */
function importsOf(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  const add = (spec: string) => {
    if (spec.startsWith('.')) found.push(join(dirname(file), spec).replace(/\.js$/, '.ts'));
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) add(node.arguments[0].text);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) add(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((f) => files.has(f));
}

const graph = new Map([...files].map(([file, source]) => [file, importsOf(file, source)]));

/** The circles of a graph: its strongly connected components of more than one node (Tarjan). */
function circles(edges: Map<string, Iterable<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The folder a file belongs to for the layers: `commands/*` for every command group. */
function folderOf(file: string): string {
  const folder = relative('src', dirname(file)) || '.';
  return folder.startsWith('commands/') ? 'commands/*' : folder;
}

const layerOf = (folder: string) => LAYERS.findIndex((layer) => layer.includes(folder));

describe('imports', () => {
  test('the parser sees every kind of import (a control)', () => {
    expect(graph.get('src/app/execute.ts')).toEqual(expect.arrayContaining(['src/app/cli.ts', 'src/context.ts']));
    expect(graph.get('src/credentials/token.ts')).toEqual(expect.arrayContaining(['src/credentials/helper.ts', 'src/config/profile.ts']));
    expect(graph.get('src/app/execute.ts')).toContain('src/http/select-transport.ts'); // import()
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });

  test('no circle of imports between files', () => {
    expect(circles(graph)).toEqual([]);
  });

  test('no circle of imports between folders', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = relative('src', dirname(file)) || '.';
      const set = folders.get(from) ?? folders.set(from, new Set()).get(from)!;
      for (const t of targets) if ((relative('src', dirname(t)) || '.') !== from) set.add(relative('src', dirname(t)) || '.');
    }
    expect(circles(folders)).toEqual([]);
  });

  test('every folder has its layer, and no import runs up to a layer above', () => {
    const unplaced = [...new Set([...graph.keys()].map(folderOf))].filter((f) => layerOf(f) < 0);
    expect(unplaced, 'add each folder to LAYERS').toEqual([]);
    const upward = [...graph].flatMap(([file, targets]) => targets.filter((t) => layerOf(folderOf(t)) < layerOf(folderOf(file))).map((t) => `${file} -> ${t}`));
    expect(upward).toEqual([]);
  });
});

/** Every function of src/ with its length in lines, named as in its file. */
function functionLengths(): { key: string; lines: number }[] {
  const out: { key: string; lines: number }[] = [];
  for (const [file, source] of files) {
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(node.end).line;
        out.push({ key: `${file} ${functionName(node, source)}`, lines: last - first + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

function functionName(node: ts.Node, source: ts.SourceFile): string {
  const named = (node as { name?: ts.Node }).name;
  if (named) return named.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return `<anonymous at line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}>`;
}

describe('functions', () => {
  test(`none is longer than ${MAX_FUNCTION_LINES} lines, and the listed long ones do not grow`, () => {
    const lengths = functionLengths();
    expect(lengths.find((f) => f.key === 'src/app/execute.ts execute')?.lines).toBeGreaterThan(10); // a control: functions are found
    const tooLong = lengths.filter((f) => f.lines > (LONG_FUNCTIONS[f.key] ?? MAX_FUNCTION_LINES)).map((f) => `${f.key}: ${f.lines} lines`);
    expect(tooLong).toEqual([]);
    const stale = Object.keys(LONG_FUNCTIONS).filter((key) => (lengths.find((f) => f.key === key)?.lines ?? 0) <= MAX_FUNCTION_LINES);
    expect(stale, 'within the limit now: remove from LONG_FUNCTIONS').toEqual([]);
  });

  test(`at most ${MAX_LONG_FUNCTIONS} are longer than ${LONG_FUNCTION_LINES} lines`, () => {
    const long = functionLengths()
      .filter((f) => f.lines > LONG_FUNCTION_LINES)
      .map((f) => `${f.key}: ${f.lines} lines`);
    expect(long.length, `split one of: ${long.join(', ')}`).toBeLessThanOrEqual(MAX_LONG_FUNCTIONS);
  });
});

/** What a file loads when it runs: its value imports (not `import type`, nor an import of types alone), and apart, its `import()`s. */
function runtimeImportsOf(file: string, source: ts.SourceFile): { now: string[]; later: string[] } {
  const now: string[] = [];
  const later: string[] = [];
  const path = (spec: string) => join(dirname(file), spec).replace(/\.js$/, '.ts');
  const typesOnly = (clause: ts.ImportClause | undefined) =>
    clause !== undefined &&
    (clause.isTypeOnly ||
      (!clause.name &&
        clause.namedBindings !== undefined &&
        ts.isNamedImports(clause.namedBindings) &&
        clause.namedBindings.elements.length > 0 &&
        clause.namedBindings.elements.every((e) => e.isTypeOnly)));
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.moduleSpecifier.text.startsWith('.') && !typesOnly(node.importClause))
      now.push(path(node.moduleSpecifier.text));
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && node.moduleSpecifier.text.startsWith('.') && !node.isTypeOnly)
      now.push(path(node.moduleSpecifier.text));
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0]) && node.arguments[0].text.startsWith('.'))
      later.push(path(node.arguments[0].text));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { now: now.filter((f) => files.has(f)), later: later.filter((f) => files.has(f)) };
}

const runtime = new Map([...files].map(([file, source]) => [file, runtimeImportsOf(file, source)]));

/** The files a run loads from `entries`: every value import, and of the `import()`s met on the way only those in `taken` (each must be met). */
function loadedFrom(entries: readonly string[], taken: readonly string[]): { files: string[]; folders: string[]; untaken: string[] } {
  const seen = new Set<string>();
  const met = new Set<string>();
  const todo = [...entries];
  while (todo.length) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const { now, later } = runtime.get(file)!;
    todo.push(...now);
    for (const t of later) met.add(t);
    todo.push(...later.filter((t) => taken.includes(t)));
  }
  expect(
    taken.filter((t) => !met.has(t)),
    'each taken import() is met on the way',
  ).toEqual([]);
  return { files: [...seen], folders: [...new Set([...seen].map((f) => dirname(f)))], untaken: [...met].filter((t) => !taken.includes(t)) };
}

/**
 * The files and folders one command passes through, counted as the modules
 * its run loads. CONTRIBUTING ("Layout") gives these figures: a change here
 * changes them there. Two counts each: from src/app/main.ts (the process
 * adapter, every command group's register.ts, the command) and from the
 * module its action imports with the client the factory gives it (the
 * command's own code).
 */
describe('the path of a command', () => {
  /** The client the factory gives (src/commands/app.ts imports it when asked for one) and the direct transport (src/app/execute.ts imports it). */
  const client = ['src/http/api-client.ts', 'src/http/client.ts'];
  const transport = 'src/http/select-transport.ts';
  /** What a single rotate's run function imports when it runs. */
  const rotate = ['src/input/parse.ts', 'src/commands/webhooks/secret-request.ts'];
  const count = (r: { files: string[]; folders: string[] }) => ({ files: r.files.length, folders: r.folders.length });
  /** Upper bounds, not exact counts: a path that gets shorter passes; one that grows past them fails. */
  const atMost = (r: { files: string[]; folders: string[] }, most: { files: number; folders: number }) => {
    const c = count(r);
    expect(c.files, `${c.files} files`).toBeLessThanOrEqual(most.files);
    expect(c.folders, `${c.folders} folders`).toBeLessThanOrEqual(most.folders);
  };

  test('webhooks rotate --json with CHATCTL_TOKEN, no proxy: the action, the client, the direct transport', () => {
    const run = loadedFrom(['src/app/main.ts'], [...client, transport, ...rotate]);
    expect(run.files).not.toContain('src/commands/webhooks/rotate-from/command.ts'); // a control: an import() not taken is not followed
    expect(run.untaken).toEqual(expect.arrayContaining(['src/http/proxy.ts', 'src/output/render.ts', 'src/credentials/keyring.ts']));
    atMost(run, { files: 53, folders: 22 });
    atMost(loadedFrom(['src/commands/webhooks/rotate.ts', transport], [...client, ...rotate]), { files: 20, folders: 9 });
  });

  test('webhooks rotate, every import() of its module followed (--escrow, exec: destinations, tables, CI reports): at most 25 files in 9 folders', () => {
    const all = (file: string, seen = new Set<string>()): Set<string> => {
      if (seen.has(file)) return seen;
      seen.add(file);
      for (const next of [...runtime.get(file)!.now, ...runtime.get(file)!.later]) all(next, seen);
      return seen;
    };
    const files = [...all('src/commands/webhooks/rotate.ts')];
    expect(files).not.toContain('src/commands/webhooks/rotate-from/command.ts'); // --from is given to rotate.ts by register.ts, not imported
    atMost({ files, folders: [...new Set(files.map((f) => dirname(f)))] }, { files: 25, folders: 9 });
  });

  test('webhooks rotate --from with CHATCTL_TOKEN, no proxy', () => {
    atMost(loadedFrom(['src/app/main.ts'], [...client, transport, 'src/commands/webhooks/rotate-from/command.ts']), { files: 59, folders: 23 });
    atMost(loadedFrom(['src/commands/webhooks/rotate-from/command.ts', transport], client), { files: 25, folders: 8 });
  });
});

describe('libraries', () => {
  test("no library's private member (a name starting with one underscore) is read or written", () => {
    const touched = new Set<string>();
    for (const [file, source] of files) {
      const visit = (node: ts.Node): void => {
        const name = ts.isPropertyAccessExpression(node) ? node.name.text : ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) ? node.name.text : undefined;
        if (name !== undefined && /^_[^_]/.test(name)) touched.add(file);
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect([...touched].filter((f) => !PRIVATE_MEMBER_FILES.has(f))).toEqual([]);
    expect(
      [...PRIVATE_MEMBER_FILES].filter((f) => !touched.has(f)),
      'no longer touches one: remove from PRIVATE_MEMBER_FILES',
    ).toEqual([]);
  });
});

describe('finding the tests of a command', () => {
  test('test/commands/webhooks/rotate/README.md names every test file that runs `webhooks rotate`, and only files that exist', () => {
    const index = readFileSync(join(ROOT, 'test/commands/webhooks/rotate/README.md'), 'utf8');
    const listed = [...index.matchAll(/^- \[`([^`]+)`\]/gm)].map((m) => m[1]!);
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.test.ts') ? [`${dir}/${e.name}`] : []));
    const running = walk('test')
      .filter((f) => /'webhooks', 'rotate'|webhooks rotate|\['rotate'|fleetSandbox\(/.test(readFileSync(join(ROOT, f), 'utf8')))
      .map((f) => f.slice('test/'.length))
      .sort();
    expect(listed.sort()).toEqual(running);
  });
});

describe("CONTRIBUTING's room-finder", () => {
  const contributing = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');

  test('starts with the layout, whose layer table is LAYERS, top to bottom', () => {
    expect(contributing.match(/^## .*/m)?.[0]).toBe('## Layout');
    const rows = [...contributing.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) =>
      [...m[2]!.matchAll(/`([^`]+)`/g)].map((f) => (f[1] === 'src/context.ts' ? '.' : f[1]!.replace('<group>', '*').replace(/\/$/, ''))),
    );
    expect(rows).toEqual(LAYERS.map((l) => [...l]));
  });

  test('every path it names exists (what the bench writes aside)', () => {
    const named = new Set([...contributing.matchAll(/`((?:src|test|docs|scripts|bench|bin)\/[^`\s]+)`/g)].map((m) => m[1]!));
    const missing = [...named].filter((p) => !p.startsWith('bench/results/') && !/[<*]/.test(p) && !existsSync(join(ROOT, p)));
    expect(missing).toEqual([]);
    expect(named.size).toBeGreaterThan(30); // a control: the paths are found
  });
});
