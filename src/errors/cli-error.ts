// One error family. Commands throw these; one handler at the top (main.ts)
// prints them once and turns them into the exit status.
import { EXIT_FOR_LOCAL_CODE, type ExitCode, type LocalErrorCode } from './exit-codes.js';
import type { RerunContext, TokenOrigin } from './explain.js';
import type { ScopeOrigin } from './hints.js';

export type { LocalErrorCode };

export interface ErrorFields {
  /** What to do about it, printed under the message in human mode. */
  hint?: string | undefined;
  /** Already shown to the user (the sandbox reports its own start-up errors). */
  reported?: boolean;
  status?: number | null;
  requestId?: string | null;
  details?: unknown;
  /**
   * create and rotate: the Idempotency-Key of a request that may have been
   * applied (timeout after sending, exhausted 503s, a response cut short,
   * the deadline, an interrupt after sending). With --json it is printed
   * beside "exitCode", so a script can re-run with --idempotency-key.
   */
  idempotencyKey?: string | undefined;
}

export class CliError extends Error {
  readonly hint: string | undefined;
  readonly status: number | null;
  readonly requestId: string | null;
  readonly details: unknown;
  readonly reported: boolean;
  readonly idempotencyKey: string | undefined;
  /** The command that failed, set by the command that caught it, for the re-run line (errors/explain.ts). */
  rerun: RerunContext | undefined;
  /** On an authentication failure (exit 4): where the token that was sent came from, for the next step (errors/explain.ts). */
  credential: TokenOrigin | undefined;
  /** On a refusal for permission or an unknown resource (exit 5, 6): the scope the request was for, for the next step (errors/hints.ts). */
  scope: ScopeOrigin | undefined;

  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: ExitCode,
    fields: ErrorFields = {},
  ) {
    super(message);
    this.name = 'CliError';
    this.hint = fields.hint;
    this.status = fields.status ?? null;
    this.requestId = fields.requestId ?? null;
    this.details = fields.details ?? null;
    this.reported = fields.reported ?? false;
    this.idempotencyKey = fields.idempotencyKey;
  }

  toJSON(): object {
    return {
      error: {
        code: this.code,
        message: this.message,
        requestId: this.requestId,
        status: this.status,
        details: this.details,
      },
      exitCode: this.exitCode,
      ...(this.idempotencyKey !== undefined ? { idempotencyKey: this.idempotencyKey } : {}),
    };
  }
}

/**
 * Recognises a CliError by its shape, not its class: the lazily loaded
 * bundles (dist/lazy/*.cjs) carry their own copy of the class.
 */
export function isCliError(err: unknown): err is CliError {
  return (
    err instanceof Error && err.name === 'CliError' && typeof (err as CliError).code === 'string' && typeof (err as CliError).exitCode === 'number' && typeof (err as CliError).toJSON === 'function'
  );
}

/** One of chatctl's own errors, its exit status from EXIT_FOR_LOCAL_CODE. */
export const localError = (code: LocalErrorCode, message: string, fields: ErrorFields = {}) => new CliError(code, message, EXIT_FOR_LOCAL_CODE[code], fields);

export const usageError = (message: string, hint?: string) => localError('usage_error', message, { hint });

export const configError = (message: string, hint?: string) => localError('config_error', message, { hint });

export const invalidResponse = (message: string, fields: ErrorFields = {}) => localError('invalid_response', message, fields);

export const interrupted = () => localError('interrupted', 'interrupted');
