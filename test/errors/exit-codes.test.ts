import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/api/spec.js';
import { EXIT_CODE_ROWS, EXIT_FOR_API_CODE, EXIT_FOR_LOCAL_CODE, exitCodeForApiCode, exitCodeForStatus } from '../../src/errors/exit-codes.js';
import { localError } from '../../src/errors/cli-error.js';

// The exit-code table's rules, restated independently of the table in code.
function expectedExit(code: string): number {
  if (['authentication_failed', 'authentication_required', 'reauthentication_required'].includes(code)) return 4;
  if (code === 'permission_denied') return 5;
  if (code === 'resource_not_found' || code === 'target_account_unavailable') return 6;
  if (code.endsWith('_version_conflict')) return 7;
  if (
    code.endsWith('_conflict') ||
    ['conflict', 'invitation_expired', 'attachment_upload_incomplete', 'attachment_not_ready', 'data_job_not_cancelable', 'data_job_not_ready', 'webhook_delivery_not_replayable'].includes(code)
  )
    return 8;
  if (['validation_failed', 'webhook_destination_rejected', 'message_moderation_rejected', 'message_reaction_type_not_allowed'].includes(code)) return 9;
  if (code.endsWith('_limit_reached') || code === 'data_job_limit_exceeded') return 10;
  if (code === 'rate_limit_exceeded') return 11;
  if (code === 'service_unavailable') return 12;
  return 1;
}

describe('exit-code table', () => {
  it('maps exactly the 59 codes of the spec', () => {
    expect(ERROR_CODES).toHaveLength(59);
    expect(Object.keys(EXIT_FOR_API_CODE).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each(ERROR_CODES.map((c) => [c]))("%s follows the table's rule", (code) => {
    expect(exitCodeForApiCode(code)).toBe(expectedExit(code));
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
