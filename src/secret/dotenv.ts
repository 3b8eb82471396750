// `env-file:PATH#NAME` (docs/secrets.md): the line NAME=<secret> is set in a
// dotenv file, every other line kept byte for byte. Pure functions on bytes,
// so a file in any encoding, with CRLF or without a final newline, comes back
// unchanged but for that one line.

export const DOTENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Written as it is; anything else is single-quoted (literal in dotenv parsers and shells alike). */
const PLAIN_VALUE = /^[A-Za-z0-9_+/=.:@%,~^-]*$/;

interface Line {
  start: number;
  /** Index after the line's text, before its terminator. */
  textEnd: number;
  /** Index after the terminator (\n or \r\n), or textEnd for a last line without one. */
  end: number;
}

function splitLines(content: Buffer): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < content.length) {
    const nl = content.indexOf(0x0a, start);
    if (nl === -1) {
      lines.push({ start, textEnd: content.length, end: content.length });
      break;
    }
    const textEnd = nl > start && content[nl - 1] === 0x0d ? nl - 1 : nl;
    lines.push({ start, textEnd, end: nl + 1 });
    start = nl + 1;
  }
  return lines;
}

/** `NAME=`, `NAME =`, `export NAME=`, indented or not: where NAME starts, or -1. */
function nameAt(content: Buffer, line: Line, name: string): { nameStart: number; valueStart: number } | undefined {
  // latin1 maps bytes one to one, so indexes stay byte indexes; NAME is ASCII.
  const text = content.toString('latin1', line.start, line.textEnd);
  const m = new RegExp(`^([ \\t]*(?:export[ \\t]+)?)${name}[ \\t]*=[ \\t]*`).exec(text);
  if (!m) return undefined;
  return { nameStart: line.start + m[1]!.length, valueStart: line.start + m[0].length };
}

/** The value as it would be written, or an Error saying why it cannot be. */
export function dotenvValue(secret: string): string | Error {
  if (PLAIN_VALUE.test(secret)) return secret;
  if (!/['\r\n]/.test(secret)) return `'${secret}'`;
  return new Error('the secret holds a quote or a line break, which a dotenv line cannot carry safely');
}

/**
 * The value of every `NAME=` line, unquoted as `dotenvValue` quotes it (a
 * plain value as it is, a single-quoted one without its quotes): what
 * `setDotenvValue` wrote there, read back. Empty when NAME is not set.
 */
export function dotenvValuesOf(content: Buffer, name: string): Buffer[] {
  const values: Buffer[] = [];
  for (const line of splitLines(content)) {
    const at = nameAt(content, line, name);
    if (!at) continue;
    const value = content.subarray(at.valueStart, line.textEnd);
    const quoted = value.length >= 2 && value[0] === 0x27 && value[value.length - 1] === 0x27;
    values.push(quoted ? value.subarray(1, -1) : value);
  }
  return values;
}

/**
 * Problems that would make rewriting NAME unsafe, found before anything is
 * sent: an existing NAME whose quoted value runs over several lines.
 */
export function dotenvProblem(content: Buffer, name: string): string | undefined {
  for (const line of splitLines(content)) {
    const at = nameAt(content, line, name);
    if (!at) continue;
    const value = content.toString('latin1', at.valueStart, line.textEnd);
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === '`') && !value.slice(1).includes(quote)) {
      return `${name} has a quoted value that runs over several lines; chatctl replaces single lines only`;
    }
  }
  return undefined;
}

/**
 * The file with every `NAME=` line set to `NAME=<value>` (its indentation and
 * `export ` kept), or one such line appended; all other bytes unchanged.
 */
export function setDotenvValue(content: Buffer, name: string, secret: string): Buffer {
  if (!DOTENV_NAME.test(name)) throw new Error(`invalid variable name ${name}`);
  const value = dotenvValue(secret);
  if (value instanceof Error) throw value;
  const lines = splitLines(content);
  const parts: Buffer[] = [];
  let found = false;
  let last = 0;
  for (const line of lines) {
    const at = nameAt(content, line, name);
    if (!at) continue;
    found = true;
    parts.push(content.subarray(last, at.nameStart), Buffer.from(`${name}=${value}`, 'utf8'));
    last = line.textEnd; // the line's own terminator (or none) stays
  }
  if (found) {
    parts.push(content.subarray(last));
    return Buffer.concat(parts);
  }
  const eol = lines.length > 0 && lines[0]!.end - lines[0]!.textEnd === 2 ? '\r\n' : '\n';
  const needsBreak = content.length > 0 && content[content.length - 1] !== 0x0a;
  return Buffer.concat([content, Buffer.from(`${needsBreak ? eol : ''}${name}=${value}${eol}`, 'utf8')]);
}
