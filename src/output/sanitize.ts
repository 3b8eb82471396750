// Server text is printed with control characters escaped, so no string from
// the server can move the cursor, recolour or retitle the terminal.
// C0 (except tab and newline), DEL and C1 become visible escapes.

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

export function escapeControl(text: string): string {
  return text.replace(CONTROL, (ch) => {
    const code = ch.charCodeAt(0);
    if (code === 0x1b) return '\\e';
    if (code === 0x0d) return '\\r';
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
  });
}

/** For values shown on one line (table cells, IDs): newlines and tabs too. */
export function escapeInline(text: string): string {
  return escapeControl(text).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
}
