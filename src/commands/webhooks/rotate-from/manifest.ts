// The manifest of `webhooks rotate --from FILE|-` (docs/fleet.md): one
// JSON object per line, {"endpointId","expectedVersion","mode"?}; blank lines
// and lines starting with # are skipped. Every line is checked before
// anything is sent, yet a manifest of any length is never held in memory as
// items: the file is read twice, once to check every line and once to feed
// the workers, each time in 64 KiB chunks. Standard input cannot be read
// twice, so `-` is kept as one buffer (about 60 bytes a line).
import { closeSync, fstatSync, openSync } from 'node:fs';
import { LIMITS, type RotationMode } from '../../../api/schemas.js';
import { usageError } from '../../../errors/cli-error.js';
import { fileChunks, splitLines } from './lines.js';

export interface ManifestItem {
  /** 1-based line number in the manifest. */
  line: number;
  endpointId: string;
  expectedVersion: number;
  mode: RotationMode;
  /** The mode the line itself gave (absent when it came from --mode): the next manifest keeps it (next-manifest.ts). */
  lineMode?: RotationMode;
}

/** Lines longer than this are refused: a manifest line is about 80 bytes. */
export const MAX_LINE_BYTES = 16 * 1024;
const FIELDS = new Set(['endpointId', 'expectedVersion', 'mode']);

const lineError = (line: number, problem: string) =>
  usageError(`manifest line ${line}: ${problem}`, 'each line is one JSON object: {"endpointId":"we_…","expectedVersion":N,"mode":"overlap"|"immediate"}');

/** One line of text, already split: an item, or null for a blank or comment line. */
export function parseManifestLine(text: string, line: number, defaultMode: RotationMode | undefined): ManifestItem | null {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw lineError(line, 'not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw lineError(line, 'not a JSON object');
  const o = value as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !FIELDS.has(k));
  if (unknown.length) throw lineError(line, `unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (allowed: endpointId, expectedVersion, mode)`);

  const id = o.endpointId;
  if (typeof id !== 'string' || id === '') throw lineError(line, '"endpointId" must be a non-empty string');
  if (id === '.' || id === '..' || id.length > 255 || /[\u0000-\u001f\u007f-\u009f/\\]/.test(id)) throw lineError(line, `"endpointId" ${JSON.stringify(id.slice(0, 80))} is not a valid endpoint id`);

  const v = o.expectedVersion;
  if (v === undefined) throw lineError(line, '"expectedVersion" is missing');
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < LIMITS.versionMin || v > LIMITS.versionMax)
    throw lineError(line, `"expectedVersion" must be a whole number from ${LIMITS.versionMin} to ${LIMITS.versionMax}`);

  const m = o.mode ?? defaultMode;
  if (m === undefined) throw lineError(line, 'no "mode", and no --mode to default to');
  if (m !== 'overlap' && m !== 'immediate') throw lineError(line, `"mode" must be "overlap" or "immediate"`);
  return { line, endpointId: id, expectedVersion: v, mode: m, ...(o.mode !== undefined ? { lineMode: m } : {}) };
}

/** Raw lines of a manifest, readable as many times as needed. */
export interface ManifestSource {
  /** For messages: the path, or "standard input". */
  readonly name: string;
  lines(): Iterable<{ text: string; line: number }>;
  /** Throws if the file changed since it was opened (checked before the second pass). */
  checkUnchanged(): void;
  close(): void;
}

const tooLong = (line: number): never => {
  throw lineError(line, `longer than ${MAX_LINE_BYTES} bytes`);
};

function* manifestLines(chunks: Iterable<Uint8Array>): Iterable<{ text: string; line: number }> {
  for (const { text, line } of splitLines(chunks, MAX_LINE_BYTES, tooLong)) {
    if (text === null) throw lineError(line, 'not valid UTF-8');
    yield { text, line };
  }
}

/** A manifest file: opened once (a rename between passes changes nothing), read from the start each pass. */
export function fileSource(path: string): ManifestSource {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw usageError(`cannot read the manifest ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const opened = fstatSync(fd);
  if (!opened.isFile()) {
    closeSync(fd);
    throw usageError(`the manifest ${path} is not a regular file`, 'to read it from a pipe, use --from - and feed it on standard input');
  }
  return {
    name: path,
    lines: () => manifestLines(fileChunks(fd)),
    checkUnchanged() {
      const now = fstatSync(fd);
      if (now.size !== opened.size || now.mtimeMs !== opened.mtimeMs) throw usageError(`the manifest ${path} changed while it was being checked; nothing was sent`);
    },
    close: () => closeSync(fd),
  };
}

/** Standard input (or any text in hand), kept as one buffer. */
export function bufferSource(name: string, bytes: Uint8Array): ManifestSource {
  return {
    name,
    lines: () => manifestLines([bytes]),
    checkUnchanged() {},
    close() {},
  };
}

export interface ManifestCheck {
  /** Items (lines that are neither blank nor comments). */
  count: number;
  /** How many of them rotate with mode immediate. */
  immediate: number;
}

/**
 * The first pass: every line parsed and checked, duplicates refused, and
 * `each` called with every item (for checks that need more than the line,
 * such as its secret's destination). Throws a usage error naming the line.
 */
export function checkManifest(source: ManifestSource, defaultMode: RotationMode | undefined, each: (item: ManifestItem) => void = () => {}): ManifestCheck {
  // endpointId → line: an endpoint listed twice would be rotated twice.
  const seen = new Map<string, number>();
  let count = 0;
  let immediate = 0;
  for (const { text, line } of source.lines()) {
    const item = parseManifestLine(text, line, defaultMode);
    if (!item) continue;
    const first = seen.get(item.endpointId);
    if (first !== undefined) throw lineError(line, `endpoint ${JSON.stringify(item.endpointId)} is already on line ${first}; an endpoint is rotated once per run`);
    seen.set(item.endpointId, line);
    count += 1;
    if (item.mode === 'immediate') immediate += 1;
    each(item);
  }
  if (count === 0) throw usageError(`the manifest ${source.name} has no items`, 'each line is one JSON object: {"endpointId":"we_…","expectedVersion":N}');
  return { count, immediate };
}

/** The second pass: the items again, one at a time, as the workers ask for them. */
export function* manifestItems(source: ManifestSource, defaultMode: RotationMode | undefined): Iterable<ManifestItem> {
  for (const { text, line } of source.lines()) {
    const item = parseManifestLine(text, line, defaultMode);
    if (item) yield item;
  }
}
