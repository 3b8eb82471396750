// The manifest of `rotate --from FILE|-` (docs/fleet.md). Every line is checked
// before anything is sent, yet no manifest is held as items: the file is read
// twice in chunks (standard input, which cannot be, is kept as one buffer).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { LIMITS, type RotationMode } from '../../../api/schemas.js';
import { usageError } from '../../../errors/cli-error.js';

export interface ManifestItem {
  line: number;
  endpointId: string;
  expectedVersion: number;
  mode: RotationMode;
  /** The mode the line itself gave (absent when it came from --mode): the next manifest keeps it. */
  lineMode?: RotationMode;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Splits byte chunks into lines (text null: not valid UTF-8); `tooLong(line)` must throw past maxBytes. Also reads the journal. */
export function* splitLines(chunks: Iterable<Uint8Array>, maxBytes: number, tooLong: (line: number) => never): Iterable<{ text: string | null; line: number }> {
  let line = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const take = (tail: Uint8Array) => {
    line += 1;
    const bytes = pending.length ? Buffer.concat([...pending, tail]) : tail;
    pending = [];
    pendingBytes = 0;
    // A UTF-8 byte order mark at the start of the file is not part of the line.
    const body = line === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
    try {
      return { text: decoder.decode(body), line };
    } catch {
      return { text: null, line };
    }
  };
  for (const chunk of chunks) {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      if (pendingBytes + nl - start > maxBytes) tooLong(line + 1);
      yield take(chunk.subarray(start, nl));
      start = nl + 1;
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxBytes) tooLong(line + 1);
      // Copied: the reader reuses its buffer for the next chunk.
      pending.push(Buffer.from(chunk.subarray(start)));
    }
  }
  if (pendingBytes > 0) yield take(new Uint8Array(0));
}

export function* fileChunks(fd: number): Iterable<Uint8Array> {
  const buf = Buffer.alloc(64 * 1024);
  for (let position = 0; ; ) {
    const n = readSync(fd, buf, 0, buf.length, position);
    if (n <= 0) return;
    position += n;
    yield buf.subarray(0, n);
  }
}

/** Lines longer than this are refused: a manifest line is about 80 bytes. */
export const MAX_LINE_BYTES = 16 * 1024;
const FIELDS = new Set(['endpointId', 'expectedVersion', 'mode']);

const lineError = (line: number, problem: string) =>
  usageError(`manifest line ${line}: ${problem}`, 'each line is one JSON object: {"endpointId":"we_…","expectedVersion":N,"mode":"overlap"|"immediate"}');

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

/** Raw lines of a manifest, readable as many times as needed; name: for messages; checkUnchanged: before the second pass. */
export type ManifestSource = { readonly name: string; lines(): Iterable<{ text: string; line: number }>; checkUnchanged(): void; close(): void };

function* manifestLines(chunks: Iterable<Uint8Array>): Iterable<{ text: string; line: number }> {
  const tooLong = (line: number): never => {
    throw lineError(line, `longer than ${MAX_LINE_BYTES} bytes`);
  };
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

export const bufferSource = (name: string, bytes: Uint8Array): ManifestSource => ({ name, lines: () => manifestLines([bytes]), checkUnchanged() {}, close() {} });

/** The first pass: every line checked, an endpoint listed twice refused, `each` called with every item; how many, and how many immediate. */
export function checkManifest(source: ManifestSource, defaultMode: RotationMode | undefined, each: (item: ManifestItem) => void = () => {}): { count: number; immediate: number } {
  const seen = new Map<string, number>();
  let immediate = 0;
  for (const item of manifestItems(source, defaultMode)) {
    const first = seen.get(item.endpointId);
    if (first !== undefined) throw lineError(item.line, `endpoint ${JSON.stringify(item.endpointId)} is already on line ${first}; an endpoint is rotated once per run`);
    seen.set(item.endpointId, item.line);
    if (item.mode === 'immediate') immediate += 1;
    each(item);
  }
  if (seen.size === 0) throw usageError(`the manifest ${source.name} has no items`, 'each line is one JSON object: {"endpointId":"we_…","expectedVersion":N}');
  return { count: seen.size, immediate };
}

export function* manifestItems(source: ManifestSource, defaultMode: RotationMode | undefined): Iterable<ManifestItem> {
  for (const { text, line } of source.lines()) {
    const item = parseManifestLine(text, line, defaultMode);
    if (item) yield item;
  }
}
