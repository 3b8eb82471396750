// Human output. Every string that came from the server passes through escapeInline before it reaches the terminal.
import Table from 'cli-table3';
import { escapeInline, previewJson } from './json.js';
import { type Palette, PLAIN } from './io.js';

const KNOWN_FIELDS = ['id', 'name', 'status', 'version', 'destinationUrl', 'eventTypes', 'createdAt', 'updatedAt'];

function formatValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return escapeInline(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map((v) => escapeInline(v)).join('\n');
  // Any depth: the record is the server's, and JSON.stringify overflows at a few thousand levels.
  if (typeof value === 'object') return escapeInline(previewJson(value, Number.MAX_SAFE_INTEGER));
  return escapeInline(String(value));
}

/** Beyond these, the table shows a pointer to --json: the record is the server's, of any size. */
const MAX_VALUE_CHARS = 1000;
const MAX_FIELDS = 60;

function capped(text: string): string {
  return text.length <= MAX_VALUE_CHARS ? text : `${text.slice(0, MAX_VALUE_CHARS)}… (${text.length - MAX_VALUE_CHARS} more characters; --json shows all)`;
}

/** cli-table3 options for a table not on a terminal: no box-drawing borders, columns two spaces apart. */
export const PLAIN_TABLE = {
  chars: { ...Object.fromEntries('top top-mid top-left top-right bottom bottom-mid bottom-left bottom-right left left-mid mid mid-mid right right-mid'.split(' ').map((k) => [k, ''])), middle: '  ' },
  style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
};

export function tableText(text: string, tty: boolean): string {
  return tty
    ? text
    : text
        .split('\n')
        .map((l) => l.trimEnd())
        .join('\n');
}

type TableTarget = { color: boolean; tty: boolean };

export function renderEndpoint(endpoint: Record<string, unknown>, target: TableTarget, columns = 100): string {
  const keys = [...KNOWN_FIELDS.filter((k) => k in endpoint), ...Object.keys(endpoint).filter((k) => !KNOWN_FIELDS.includes(k))];
  const shown = keys.slice(0, MAX_FIELDS);
  const keyWidth = Math.min(30, Math.max(4, ...shown.map((k) => escapeInline(k).length))) + 2;
  const cells = shown.map((key) => [capped(escapeInline(key)), capped(formatValue(endpoint[key]))] as const);
  const more = keys.length - shown.length;
  const tail = more > 0 ? `… and ${more} more fields (--json shows all)\n` : '';
  if (!target.tty) {
    // Key, then the value; a value's further lines under its first.
    const lines = cells.flatMap(([key, value]) => value.split('\n').map((v, i) => `${(i === 0 ? key : '').padEnd(keyWidth)}${v}`.trimEnd()));
    return lines.join('\n') + '\n' + tail;
  }
  const color = target.color;
  const widest = Math.max(1, ...cells.flatMap(([, v]) => v.split('\n').map((line) => line.length)));
  const valueWidth = Math.max(10, Math.min(widest + 2, Math.min(columns, 200) - keyWidth - 3));
  const table = new Table({ style: { head: [], border: color ? ['grey'] : [] }, colWidths: [keyWidth, valueWidth], wordWrap: true, wrapOnWordBoundary: false });
  for (const [key, value] of cells) table.push([key, value]);
  return table.toString() + '\n' + tail;
}

export function renderSecretBlock(secret: string, c: Palette = PLAIN, fingerprint?: string): string {
  return [
    '',
    c.yellow(c.bold('Signing secret (shown once: it will not be shown again, store it now):')),
    '',
    `    ${c.bold(escapeInline(secret))}`,
    '',
    ...(fingerprint ? [`Fingerprint: ${fingerprint}`, ''] : []),
    '',
  ].join('\n');
}

export function renderDelivery(fingerprint: string, delivered: readonly { to: string }[], c: Palette = PLAIN): string {
  if (delivered.length === 0) return '';
  const note = (to: string) => (to.startsWith('file:') || to.startsWith('env-file:') ? ' (mode 0600)' : '');
  return ['', c.bold(`Signing secret ${fingerprint} delivered to:`), ...delivered.map((d) => `  ${escapeInline(d.to)}${note(d.to)}`), ''].join('\n');
}

export function renderSummary(text: string, c: Palette): string {
  return c.green(text) + '\n';
}
