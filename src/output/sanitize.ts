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
