// From raw request bytes to a JSON value: media type, size, encoding, syntax.
// Pure; the HTTP layer only collects the bytes.
import type { Checked } from './validation.js';

export const MAX_BODY_BYTES = 64 * 1024;

export interface RawBody {
  contentType: string | undefined;
  bytes: Buffer;
  /** More than MAX_BODY_BYTES arrived (bytes holds only a prefix). */
  tooLarge: boolean;
}

const bodyProblem = (problem: string): Checked<never> => ({
  ok: false,
  problems: [{ field: 'body', location: 'body', problem }],
});

export function isJsonMediaType(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

export function parseJsonBody(raw: RawBody): Checked<unknown> {
  if (!isJsonMediaType(raw.contentType))
    return {
      ok: false,
      problems: [{ field: 'Content-Type', location: 'header', problem: 'must be application/json' }],
    };
  if (raw.tooLarge || raw.bytes.length > MAX_BODY_BYTES) return bodyProblem(`must be at most ${MAX_BODY_BYTES} bytes`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw.bytes);
  } catch {
    return bodyProblem('is not valid UTF-8');
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return bodyProblem(text.trim() === '' ? 'is required' : 'is not valid JSON');
  }
}
