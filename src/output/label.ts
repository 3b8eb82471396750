import { escapeInline } from './sanitize.js';

/** The endpoint's id for one-line messages, escaped; the record is the server's. */
export function endpointLabel(endpoint: Record<string, unknown>): string {
  const id = endpoint.id;
  return typeof id === 'string' || typeof id === 'number' ? escapeInline(String(id)) : '(no id)';
}
