import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { EXIT_CODE_ROWS, EXIT_FOR_API_CODE, EXIT_FOR_LOCAL_CODE, exitCodeForApiCode, exitCodeForStatus, localError } from '../../src/errors/cli-error.js';

// The exit code of each of the spec's 59 error codes, as the contract's table
// (section 7 of the CLI contract, docs: `chatctl exit-codes`) gives it: a
// fixed list kept as data, not the table's rules written a second time.
const EXPECTED = JSON.parse(readFileSync(new URL('../support/data/exit-codes.json', import.meta.url), 'utf8')) as Record<string, number>;

describe('exit-code table', () => {
  it('maps exactly the 59 codes of the spec', () => {
    expect(ERROR_CODES).toHaveLength(59);
    expect(Object.keys(EXIT_FOR_API_CODE).sort()).toEqual([...ERROR_CODES].sort());
  });

  it('each code ends with the exit code the seed list gives it', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...ERROR_CODES].sort());
    expect(Object.fromEntries(ERROR_CODES.map((c) => [c, exitCodeForApiCode(c)]))).toEqual(EXPECTED);
  });

  it('unknown codes, and prototype names, are exit 1', () => {
    for (const code of ['nope', 'toString', '__proto__', 'constructor', '']) expect(exitCodeForApiCode(code)).toBe(1);
  });

  it('falls back on the HTTP status for unreadable error bodies', () => {
    expect([400, 422, 401, 403, 404, 409, 429, 503, 500, 502, 504, 418].map(exitCodeForStatus)).toEqual([9, 9, 4, 5, 6, 8, 11, 12, 1, 1, 1, 1]);
  });

  it('documents every exit code once', () => {
    expect(EXIT_CODE_ROWS.map((r) => r[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 129, 130, 143]);
  });

  it("chatctl's own error codes end with the statuses the table gives them", () => {
    expect(EXIT_FOR_LOCAL_CODE).toEqual({
      usage_error: 2,
      config_error: 3,
      network_error: 12,
      timeout: 12,
      invalid_response: 1,
      secret_not_delivered: 13,
      partial_failure: 14,
      interrupted: 130,
      signature_mismatch: 9,
      timestamp_out_of_tolerance: 9,
      delivery_refused: 9,
      delivery_failed: 12,
    });
    for (const code of Object.keys(EXIT_FOR_LOCAL_CODE) as (keyof typeof EXIT_FOR_LOCAL_CODE)[]) {
      const e = localError(code, 'm');
      expect([e.code, e.exitCode]).toEqual([code, EXIT_FOR_LOCAL_CODE[code]]);
    }
  });
});
