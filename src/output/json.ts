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
