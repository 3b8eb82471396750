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
  const out: string[] = [];
  const stack: Frame[] = [];
  const inProgress = new Set<object>();
  const nl = (depth: number) => (gap ? '\n' + gap.repeat(depth) : '');

  /** Writes a primitive, or opens a container (pushing its frame). Returns false for "omit" (undefined, functions). */
  const emit = (v: unknown, key: string, depth: number): boolean => {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      v = (v as { toJSON(k: string): unknown }).toJSON(key);
    }
    switch (typeof v) {
      case 'string':
        out.push(JSON.stringify(v));
        return true;
      case 'number':
        out.push(Number.isFinite(v) ? String(v) : 'null');
        return true;
      case 'boolean':
        out.push(String(v));
        return true;
      case 'bigint':
        out.push(String(v));
        return true;
      case 'object':
        break;
      default:
        return false; // undefined, function, symbol
    }
    if (v === null) {
      out.push('null');
      return true;
    }
    if (inProgress.has(v)) {
      out.push('"[Circular]"');
      return true;
    }
    if (Array.isArray(v)) {
      if (v.length === 0) {
        out.push('[]');
        return true;
      }
      out.push('[');
      inProgress.add(v);
      stack.push({ kind: 'array', items: v, i: 0, depth: depth + 1, owner: v });
      return true;
    }
    const obj = v as Record<string, unknown>;
    out.push('{');
    inProgress.add(obj);
    stack.push({ kind: 'object', keys: Object.keys(obj), obj, i: 0, depth: depth + 1, wrote: false, owner: obj });
    return true;
  };

  if (!emit(value, '', 0)) return 'null';
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.kind === 'array') {
      if (f.i < f.items.length) {
        out.push((f.i > 0 ? ',' : '') + nl(f.depth));
        const at = f.i++;
        if (!emit(f.items[at], String(at), f.depth)) out.push('null');
        continue;
      }
      out.push(nl(f.depth - 1) + ']');
    } else {
      let opened = false;
      while (f.i < f.keys.length) {
        const key = f.keys[f.i++]!;
        const v = f.obj[key];
        if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
        const mark = out.length;
        out.push((f.wrote ? ',' : '') + nl(f.depth) + JSON.stringify(key) + (gap ? ': ' : ':'));
        if (emit(v, key, f.depth)) {
          f.wrote = true;
          opened = true;
          break;
        }
        out.length = mark; // a toJSON that returned undefined: the key goes too
      }
      if (opened) continue;
      out.push((f.wrote ? nl(f.depth - 1) : '') + '}');
    }
    inProgress.delete(f.owner);
    stack.pop();
  }
  return escapeUnsafeJson(out.join(''));
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
