// What chatctl prints of values it does not control: JSON, server text escaped for a terminal, shell words, --json
// documents, GitHub Actions' workflow commands.

export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a terminal obeys or hides beyond C0 (DEL, C1, bidi and zero-width marks, U+2028/2029): escaped in JSON strings and server text. */
const UNSAFE_CHARS = '\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff';
const UNSAFE = new RegExp(`[${UNSAFE_CHARS}]`, 'g');

const escapeUnsafeJson = (text: string): string => text.replace(UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** JSON.stringify(value, null, indent) without recursion: a server's answer may nest past its stack, and the secret must not be lost to it. */
export function stringifyJson(value: unknown, indent = 0): string {
  const gap = ' '.repeat(Math.min(10, Math.max(0, indent)));
  const nl = (depth: number) => (gap ? '\n' + gap.repeat(depth) : '');
  const top = withToJson(value, '');
  if (primitiveJson(top) === undefined) return 'null';
  const out: string[] = [];
  const inProgress = new Set<object>();
  // Last first: text to write, a value (its toJSON applied) to write, a container whose writing ends.
  const work: ({ text: string } | { v: unknown; depth: number } | { done: object })[] = [{ v: top, depth: 0 }];
  while (work.length > 0) {
    const w = work.pop()!;
    if ('text' in w) out.push(w.text);
    else if ('done' in w) inProgress.delete(w.done);
    else {
      const primitive = primitiveJson(w.v);
      if (primitive !== null)
        out.push(primitive ?? 'null'); // an array's omitted item
      else if (inProgress.has(w.v as object)) out.push('"[Circular]"');
      else if (Array.isArray(w.v) && w.v.length === 0) out.push('[]');
      else {
        const array = Array.isArray(w.v);
        const parts = array
          ? Array.from(w.v as unknown[], (item, i) => ({ head: (i > 0 ? ',' : '') + nl(w.depth + 1), v: withToJson(item, String(i)) }))
          : Object.keys(w.v as object)
              .map((key) => ({ key, v: withToJson((w.v as Record<string, unknown>)[key], key) }))
              .filter((m) => primitiveJson(m.v) !== undefined)
              .map((m, i) => ({ head: (i > 0 ? ',' : '') + nl(w.depth + 1) + JSON.stringify(m.key) + (gap ? ': ' : ':'), v: m.v }));
        inProgress.add(w.v as object);
        out.push(array ? '[' : '{');
        work.push({ done: w.v as object }, { text: (array || parts.length > 0 ? nl(w.depth) : '') + (array ? ']' : '}') });
        for (let i = parts.length - 1; i >= 0; i--) work.push({ v: parts[i]!.v, depth: w.depth + 1 }, { text: parts[i]!.head });
      }
    }
  }
  return escapeUnsafeJson(out.join(''));
}

const withToJson = (v: unknown, key: string): unknown =>
  v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(k: string): unknown }).toJSON(key) : v;

/** The JSON of a primitive; null for an object or array (or null itself, written as such); undefined for what JSON omits. */
function primitiveJson(v: unknown): string | null | undefined {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (typeof v === 'object') return v === null ? 'null' : null;
  return undefined;
}

export function previewJson(value: unknown, max = 200): string {
  let text: string;
  try {
    text = stringifyJson(value);
  } catch {
    return '(unprintable)';
  }
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** C0 but tab and newline, and UNSAFE: no server string may move the cursor, retitle the terminal, reorder or hide what is shown. */
const CONTROL = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f${UNSAFE_CHARS}]`, 'g');

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

/** One word for a POSIX shell, in single quotes, for commands chatctl suggests: an id from the server may hold `$(…)`. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : shellQuote(word);
}

export function endpointLabel(endpoint: Record<string, unknown>): string {
  const id = endpoint.id;
  return typeof id === 'string' || typeof id === 'number' ? escapeInline(String(id)) : '(no id)';
}

export interface JsonQuery {
  readonly expression: string;
  select(document: unknown): unknown;
}

/** The one JSON document a command prints: indented on a terminal; with --query, what it selects (a string bare, its controls escaped). */
export function jsonDocumentText(
  io: { readonly query?: JsonQuery | undefined; readonly stdout: { readonly isTTY: boolean } },
  value: unknown,
  layout: 'indent-on-tty' | 'one-line' = 'indent-on-tty',
): string {
  if (io.query) return selectedText(io.query.select(value));
  return stringifyJson(value, layout === 'indent-on-tty' && io.stdout.isTTY ? 2 : undefined) + '\n';
}

/** One line of a stream of JSON lines: with --query, each line queried by itself, one whose result is null left out. */
export function jsonLineText(io: { readonly query?: JsonQuery | undefined }, value: unknown): string {
  if (!io.query) return stringifyJson(value) + '\n';
  const selected = io.query.select(value);
  return selected === null || selected === undefined ? '' : selectedText(selected);
}

function selectedText(selected: unknown): string {
  return (typeof selected === 'string' ? escapeControl(selected) : stringifyJson(selected ?? null)) + '\n';
}

export const inGitHubActions = (env: Record<string, string | undefined>): boolean => env.GITHUB_ACTIONS === 'true';

/** A workflow command's data (after `::`): `%`, CR and LF escaped, as the runner unescapes them. */
const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/** An error annotation: `::error title=TITLE::MESSAGE`, the title escaped as a property (`:` and `,` end one). */
export const errorCommand = (title: string, message: string): string => `::error title=${escapeData(title).replace(/:/g, '%3A').replace(/,/g, '%2C')}::${escapeData(message)}\n`;

/** The `::add-mask::` lines for one value: the value, each of its lines (the log is matched line by line), its form in a JSON document. */
export function maskCommands(value: string): string {
  const forms = new Set<string>([value]);
  if (/[\r\n]/.test(value)) for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') forms.add(line);
  forms.add(escapeUnsafeJson(JSON.stringify(value).slice(1, -1)));
  let out = '';
  for (const form of forms) if (form !== '') out += `::add-mask::${escapeData(form)}\n`;
  return out;
}

export const ciReportWanted = (env: Record<string, string | undefined>, reportPath?: string): boolean => inGitHubActions(env) || Boolean(env.GITHUB_STEP_SUMMARY) || reportPath !== undefined;
