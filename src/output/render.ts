// Human output. Every string that came from the server passes through
// escapeInline before it reaches the terminal.
import Table from 'cli-table3';
import { escapeInline } from './sanitize.js';
import { palette } from './colors.js';

const KNOWN_FIELDS = ['id', 'name', 'status', 'version', 'destinationUrl', 'eventTypes', 'createdAt', 'updatedAt'];

export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return escapeInline(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map((v) => escapeInline(v)).join('\n');
  if (typeof value === 'object') return escapeInline(JSON.stringify(value));
  return escapeInline(String(value));
}

/** The endpoint as a two-column table: known fields first, then the rest. */
export function renderEndpoint(endpoint: Record<string, unknown>, color: boolean): string {
  const table = new Table({
    style: { head: [], border: color ? ['grey'] : [] },
    wordWrap: true,
  });
  const keys = [...KNOWN_FIELDS.filter((k) => k in endpoint), ...Object.keys(endpoint).filter((k) => !KNOWN_FIELDS.includes(k))];
  for (const key of keys) table.push({ [escapeInline(key)]: formatValue(endpoint[key]) });
  return table.toString() + '\n';
}

export function endpointLabel(endpoint: Record<string, unknown>): string {
  const id = endpoint.id;
  return typeof id === 'string' || typeof id === 'number' ? escapeInline(String(id)) : '(no id)';
}

export function renderSecretBlock(secret: string, color = false): string {
  const c = palette(color);
  return [
    '',
    c.yellow.bold('Signing secret (shown once: it will not be shown again, store it now):'),
    '',
    `    ${c.bold(escapeInline(secret))}`,
    '',
    '',
  ].join('\n');
}

/** The one-line result above the table, in green on a colour terminal. */
export function renderSummary(text: string, color: boolean): string {
  return palette(color).green(text) + '\n';
}
