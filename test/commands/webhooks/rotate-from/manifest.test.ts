import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bufferSource, checkManifest, fileSource, manifestItems, MAX_LINE_BYTES, parseManifestLine, type ManifestItem } from '../../../../src/commands/webhooks/rotate-from/manifest.js';
import { isCliError } from '../../../../src/errors/cli-error.js';

const dir = mkdtempSync(join(tmpdir(), 'chatctl-manifest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const text = (s: string) => bufferSource('test', Buffer.from(s, 'utf8'));

/** The usage error (exit 2) a check throws, or a failure if it does not. */
function refusal(f: () => unknown): { message: string; exitCode: number } {
  try {
    f();
  } catch (err) {
    if (isCliError(err)) return { message: err.message, exitCode: err.exitCode };
    throw err;
  }
  throw new Error('expected a usage error');
}

describe('parseManifestLine', () => {
  it('reads the three fields, the mode falling back on --mode', () => {
    expect(parseManifestLine('{"endpointId":"we_1","expectedVersion":3}', 7, 'overlap')).toEqual({ line: 7, endpointId: 'we_1', expectedVersion: 3, mode: 'overlap' });
    expect(parseManifestLine(' {"endpointId":"we_1","expectedVersion":3,"mode":"immediate"}\r', 1, 'overlap')).toMatchObject({ mode: 'immediate' });
  });

  it('skips blank lines and # comments', () => {
    for (const l of ['', '   ', '\r', '# a comment', '   # indented comment']) expect(parseManifestLine(l, 1, 'overlap')).toBeNull();
  });

  it.each([
    ['{"endpointId":"we_1"', 'not valid JSON'],
    ['[1,2]', 'not a JSON object'],
    ['"we_1"', 'not a JSON object'],
    ['{"endpointId":"we_1","expectedVersion":1,"expected_version":2}', 'unknown field "expected_version"'],
    ['{"expectedVersion":1}', '"endpointId" must be a non-empty string'],
    ['{"endpointId":"","expectedVersion":1}', '"endpointId" must be a non-empty string'],
    ['{"endpointId":7,"expectedVersion":1}', '"endpointId" must be a non-empty string'],
    ['{"endpointId":"..","expectedVersion":1}', 'is not a valid endpoint id'],
    ['{"endpointId":"a/b","expectedVersion":1}', 'is not a valid endpoint id'],
    ['{"endpointId":"a\\u001bb","expectedVersion":1}', 'is not a valid endpoint id'],
    ['{"endpointId":"we_1"}', '"expectedVersion" is missing'],
    ['{"endpointId":"we_1","expectedVersion":0}', '"expectedVersion" must be a whole number'],
    ['{"endpointId":"we_1","expectedVersion":1.5}', '"expectedVersion" must be a whole number'],
    ['{"endpointId":"we_1","expectedVersion":"3"}', '"expectedVersion" must be a whole number'],
    ['{"endpointId":"we_1","expectedVersion":9007199254740993}', '"expectedVersion" must be a whole number'],
    ['{"endpointId":"we_1","expectedVersion":1,"mode":"later"}', '"mode" must be "overlap" or "immediate"'],
  ])('%s → exit 2, %s, naming the line', (line, problem) => {
    const r = refusal(() => parseManifestLine(line, 12, 'overlap'));
    expect(r.exitCode).toBe(2);
    expect(r.message).toContain('manifest line 12: ');
    expect(r.message).toContain(problem);
  });

  it('without "mode" or --mode, the line is refused', () => {
    expect(refusal(() => parseManifestLine('{"endpointId":"we_1","expectedVersion":1}', 3, undefined)).message).toBe('manifest line 3: no "mode", and no --mode to default to');
  });
});

describe('checkManifest (the first pass)', () => {
  it('counts items and immediate ones, calls back for each, and names the first bad line', () => {
    const seen: ManifestItem[] = [];
    const check = checkManifest(text('# fleet\n{"endpointId":"a","expectedVersion":1}\n\n{"endpointId":"b","expectedVersion":2,"mode":"immediate"}\n'), 'overlap', (i) => seen.push(i));
    expect(check).toEqual({ count: 2, immediate: 1 });
    expect(seen.map((i) => [i.line, i.endpointId])).toEqual([
      [2, 'a'],
      [4, 'b'],
    ]);
    const r = refusal(() => checkManifest(text('{"endpointId":"a","expectedVersion":1}\n\n{"endpointId":"b"}\n{"endpointId":"c","expectedVersion":1}'), 'overlap'));
    expect(r.message).toContain('manifest line 3: ');
  });

  it('refuses an endpoint listed twice, naming both lines', () => {
    const r = refusal(() => checkManifest(text('{"endpointId":"a","expectedVersion":1}\n{"endpointId":"b","expectedVersion":1}\n{"endpointId":"a","expectedVersion":2}\n'), 'overlap'));
    expect(r.message).toBe('manifest line 3: endpoint "a" is already on line 1; an endpoint is rotated once per run');
  });

  it('refuses a manifest with no items', () => {
    expect(refusal(() => checkManifest(text('# nothing\n\n'), 'overlap')).message).toContain('has no items');
  });

  it('a last line without a newline is a line; a UTF-8 byte order mark is not part of the first', () => {
    const check = checkManifest(
      bufferSource('t', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"endpointId":"a","expectedVersion":1}\n{"endpointId":"b","expectedVersion":1}')])),
      'overlap',
    );
    expect(check.count).toBe(2);
  });

  it('invalid UTF-8 and over-long lines are refused with their line number', () => {
    const bad = Buffer.concat([Buffer.from('{"endpointId":"a","expectedVersion":1}\n{"endpointId":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","expectedVersion":1}\n')]);
    expect(refusal(() => checkManifest(bufferSource('t', bad), 'overlap')).message).toBe('manifest line 2: not valid UTF-8');
    const long = `{"endpointId":"a","expectedVersion":1}\n{"endpointId":"${'x'.repeat(MAX_LINE_BYTES)}","expectedVersion":1}\n`;
    expect(refusal(() => checkManifest(text(long), 'overlap')).message).toContain(`manifest line 2: longer than ${MAX_LINE_BYTES} bytes`);
  });
});

describe('files: two passes, read in chunks', () => {
  it('reads a file larger than a chunk twice, lines split across chunk boundaries intact', () => {
    const path = join(dir, 'big.ndjson');
    const n = 5000;
    const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ endpointId: `we_${String(i).padStart(6, '0')}`, expectedVersion: (i % 9) + 1 }));
    writeFileSync(path, '# header\n' + lines.join('\n') + '\n');
    const source = fileSource(path);
    try {
      expect(checkManifest(source, 'overlap').count).toBe(n);
      source.checkUnchanged();
      let k = 0;
      for (const item of manifestItems(source, 'overlap')) {
        expect(item).toEqual({ line: k + 2, endpointId: `we_${String(k).padStart(6, '0')}`, expectedVersion: (k % 9) + 1, mode: 'overlap' });
        k++;
      }
      expect(k).toBe(n);
    } finally {
      source.close();
    }
  });

  it('notices a file changed between the passes', () => {
    const path = join(dir, 'changing.ndjson');
    writeFileSync(path, '{"endpointId":"a","expectedVersion":1}\n');
    const source = fileSource(path);
    try {
      checkManifest(source, 'overlap');
      writeFileSync(path, '{"endpointId":"a","expectedVersion":1}\n{"endpointId":"b","expectedVersion":1}\n');
      expect(refusal(() => source.checkUnchanged()).message).toContain('changed while it was being checked');
    } finally {
      source.close();
    }
  });

  it('refuses a missing file and a folder with exit 2', () => {
    expect(refusal(() => fileSource(join(dir, 'nope.ndjson'))).message).toContain('ENOENT');
    expect(refusal(() => fileSource(dir)).message).toContain('not a regular file');
  });
});
