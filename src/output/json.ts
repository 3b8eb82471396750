// JSON.stringify without recursion. A server's answer can be nested as deep
// as its 1 MiB allows (JSON.parse copes; JSON.stringify overflows the stack
// at a few thousand levels), and a rendering failure after the server
// applied a change must never cost the one-time secret. Output is the same
// as JSON.stringify's for anything JSON.parse produced; besides, characters
// that JSON.stringify leaves raw but a terminal obeys or hides (DEL, C1
// controls, U+2028/2029, bidi and zero-width marks) are written as \uXXXX,
// which any JSON reader reads back as the same string.

/** A JSON object: not null, not an array. */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

const hex4 = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Escapes what a terminal would obey or hide; only ever found inside JSON strings. */
export function escapeUnsafeJson(text: string): string {
  return text.replace(UNSAFE, hex4);
}

type Frame =
  | { kind: 'array'; items: unknown[]; i: number; depth: number; owner: object }
  | { kind: 'object'; keys: string[]; obj: Record<string, unknown>; i: number; depth: number; wrote: boolean; owner: object };

/**
 * Serialises `value` like JSON.stringify(value, null, indent), iteratively.
 * Cycles (never in parsed JSON) become "[Circular]" instead of throwing.
 */
export function stringifyJson(value: unknown, indent?: number | string): string {
  const gap = typeof indent === 'number' ? ' '.repeat(Math.min(10, Math.max(0, indent))) : (indent ?? '').slice(0, 10);
  const writer = new JsonWriter(gap);
  if (!writer.emit(value, '', 0)) return 'null';
  writer.run();
  return escapeUnsafeJson(writer.text());
}

/** The text of one stringifyJson call, written with an explicit stack of open containers rather than recursion. */
class JsonWriter {
  private readonly out: string[] = [];
  private readonly stack: Frame[] = [];
  private readonly inProgress = new Set<object>();

  constructor(private readonly gap: string) {}

  text(): string {
    return this.out.join('');
  }

  private nl(depth: number): string {
    return this.gap ? '\n' + this.gap.repeat(depth) : '';
  }

  /** Writes a primitive, or opens a container (pushing its frame). Returns false for "omit" (undefined, functions). */
  emit(v: unknown, key: string, depth: number): boolean {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      v = (v as { toJSON(k: string): unknown }).toJSON(key);
    }
    const primitive = primitiveJson(v);
    if (primitive === undefined) return false; // undefined, function, symbol
    if (primitive !== null) {
      this.out.push(primitive);
      return true;
    }
    this.open(v as object, depth);
    return true;
  }

  private open(v: object, depth: number): void {
    if (this.inProgress.has(v)) {
      this.out.push('"[Circular]"');
      return;
    }
    if (Array.isArray(v) && v.length === 0) {
      this.out.push('[]');
      return;
    }
    this.inProgress.add(v);
    if (Array.isArray(v)) {
      this.out.push('[');
      this.stack.push({ kind: 'array', items: v, i: 0, depth: depth + 1, owner: v });
    } else {
      const obj = v as Record<string, unknown>;
      this.out.push('{');
      this.stack.push({ kind: 'object', keys: Object.keys(obj), obj, i: 0, depth: depth + 1, wrote: false, owner: obj });
    }
  }

  /** Writes every open container to its end. */
  run(): void {
    while (this.stack.length > 0) {
      const f = this.stack[this.stack.length - 1]!;
      const opened = f.kind === 'array' ? this.nextItem(f) : this.nextMember(f);
      if (opened) continue;
      this.inProgress.delete(f.owner);
      this.stack.pop();
    }
  }

  /** The array's next item, or its end (then false). */
  private nextItem(f: Extract<Frame, { kind: 'array' }>): boolean {
    if (f.i >= f.items.length) {
      this.out.push(this.nl(f.depth - 1) + ']');
      return false;
    }
    this.out.push((f.i > 0 ? ',' : '') + this.nl(f.depth));
    const at = f.i++;
    if (!this.emit(f.items[at], String(at), f.depth)) this.out.push('null');
    return true;
  }

  /** The object's next member that has a value, or its end (then false). */
  private nextMember(f: Extract<Frame, { kind: 'object' }>): boolean {
    while (f.i < f.keys.length) {
      const key = f.keys[f.i++]!;
      const v = f.obj[key];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      const mark = this.out.length;
      this.out.push((f.wrote ? ',' : '') + this.nl(f.depth) + JSON.stringify(key) + (this.gap ? ': ' : ':'));
      if (this.emit(v, key, f.depth)) {
        f.wrote = true;
        return true;
      }
      this.out.length = mark; // a toJSON that returned undefined: the key goes too
    }
    this.out.push((f.wrote ? this.nl(f.depth - 1) : '') + '}');
    return false;
  }
}

/** The JSON of a primitive; null for an object or array (or null itself, written as such); undefined for what JSON omits. */
function primitiveJson(v: unknown): string | null | undefined {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
    case 'bigint':
      return String(v);
    case 'object':
      return v === null ? 'null' : null;
    default:
      return undefined;
  }
}

/** At most `max` characters of the JSON of `value`, for one-line displays. */
export function previewJson(value: unknown, max = 200): string {
  let text: string;
  try {
    text = stringifyJson(value);
  } catch {
    return '(unprintable)';
  }
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

// Server text is printed with control characters escaped, so no string from
// the server can move the cursor, recolour or retitle the terminal, and with
// the invisible ones escaped too, so none can reorder what is shown (bidi
// overrides, U+202E) or hide a difference (zero-width characters).
// C0 (except tab and newline), DEL, C1, line/paragraph separators, bidi
// controls and zero-width characters become visible escapes.

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

export function escapeControl(text: string): string {
  return text.replace(CONTROL, (ch) => {
    const code = ch.charCodeAt(0);
    if (code === 0x1b) return '\\e';
    if (code === 0x0d) return '\\r';
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** For values shown on one line (table cells, IDs, error messages): newlines and tabs too. */
export function escapeInline(text: string): string {
  return escapeControl(text).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
}

/**
 * One word for a POSIX shell, in single quotes, for commands chatctl
 * suggests: an id from the server can hold anything, `$(…)` included.
 */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** One word for a POSIX shell, quoted only when it needs to be (a path, a flag value, a variable's value). */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : shellQuote(word);
}

/** The endpoint's id for one-line messages, escaped; the record is the server's. */
export function endpointLabel(endpoint: Record<string, unknown>): string {
  const id = endpoint.id;
  return typeof id === 'string' || typeof id === 'number' ? escapeInline(String(id)) : '(no id)';
}

// The text of what --json prints: the one document of a command, or the
// lines of a stream; with --query (src/run/query.ts), what the expression
// selects from each. Every JSON document on stdout goes through here.

/** --query's expression, compiled and checked before anything is sent (src/run/query.ts). */
export interface JsonQuery {
  readonly expression: string;
  /** The selected value; throws when the expression cannot be applied to this document (a function given the wrong type). */
  select(document: unknown): unknown;
}

/**
 * The one JSON document a command prints, as text: indented on a terminal,
 * one line otherwise; or, with --query, the part the expression selects: a
 * string bare (its terminal controls escaped), anything else as JSON on one
 * line (null included). Every --json document goes through here or
 * jsonLineText, so --query applies to all of them.
 */
export function jsonDocumentText(
  io: { readonly query?: JsonQuery | undefined; readonly stdout: { readonly isTTY: boolean } },
  value: unknown,
  layout: 'indent-on-tty' | 'one-line' = 'indent-on-tty',
): string {
  if (io.query) return selectedText(io.query.select(value));
  return stringifyJson(value, layout === 'indent-on-tty' && io.stdout.isTTY ? 2 : undefined) + '\n';
}

/**
 * One line of a stream of JSON lines (`rotate --from`'s items and summary,
 * `webhooks listen`'s deliveries): with --query, each line is queried by
 * itself, and a line whose result is null is left out ('' here), so
 * `--query endpointId` lists ids and `--query summary` prints the summary alone.
 */
export function jsonLineText(io: { readonly query?: JsonQuery | undefined }, value: unknown): string {
  if (!io.query) return stringifyJson(value) + '\n';
  const selected = io.query.select(value);
  return selected === null || selected === undefined ? '' : selectedText(selected);
}

function selectedText(selected: unknown): string {
  return (typeof selected === 'string' ? escapeControl(selected) : stringifyJson(selected ?? null)) + '\n';
}

// GitHub Actions masks a value in a job's log once the workflow command
// `::add-mask::VALUE` has been printed: from then on the runner shows `***`
// wherever the value appears, and drops the command line itself. The value
// is written as the runner reads workflow-command data: `%` as `%25`, CR as
// `%0D`, LF as `%0A`. The log is matched line by line, so a value holding a
// line break is also masked line by line, and a value that JSON would
// escape (a quote, a backslash, a control character) is masked as the JSON
// document shows it too.

/** Whether this run is a GitHub Actions job step (the runner sets GITHUB_ACTIONS=true). */
export const inGitHubActions = (env: Record<string, string | undefined>): boolean => env.GITHUB_ACTIONS === 'true';

/** A workflow command's data (after `::`): `%`, CR and LF escaped, as the runner unescapes them. */
export const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/** A workflow command's property value (`title=…`): as data, and `:` and `,` too, which end a property. */
export const escapeProperty = (s: string) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** An error annotation: `::error title=TITLE::MESSAGE`, one line, both escaped. */
export const errorCommand = (title: string, message: string): string => `::error title=${escapeProperty(title)}::${escapeData(message)}\n`;

/** The `::add-mask::` lines for one value: the value, each of its lines, and its JSON-escaped form. */
export function maskCommands(value: string): string {
  const forms = new Set<string>([value]);
  if (/[\r\n]/.test(value)) for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') forms.add(line);
  forms.add(escapeUnsafeJson(JSON.stringify(value).slice(1, -1)));
  let out = '';
  for (const form of forms) if (form !== '') out += `::add-mask::${escapeData(form)}\n`;
  return out;
}

/** Whether a run has anything to tell its CI system (run/ci-report.ts, loaded only then): annotations, a step summary, a --report file. */
export const ciReportWanted = (env: Record<string, string | undefined>, reportPath?: string): boolean => inGitHubActions(env) || Boolean(env.GITHUB_STEP_SUMMARY) || reportPath !== undefined;
