// One error family. Commands throw these; one handler at the top (main.ts)
// prints them once and turns them into the exit status.
import { EXIT_FOR_LOCAL_CODE, type ExitCode, type LocalErrorCode } from './exit-codes.js';

/** A scope value and where it came from, as `auth status` describes it. */
export interface ScopeValue {
  value: string | null;
  source: string;
}

/** The scope a refused request was sent to, for the hints of 5 and 6 (set by execute). */
export interface ScopeOrigin {
  profile: string;
  organizationId: ScopeValue;
  applicationId: ScopeValue;
  environmentKey: ScopeValue;
}

export interface RerunContext {
  /** The command words and the endpoint id: ['webhooks', 'rotate', 'we_1'] (create has none: ['webhooks', 'create']). */
  words: [string, string] | [string, string, string];
  /** The version the command sent (create sends none). */
  expectedVersion?: number | undefined;
  /** Flags to repeat after --expected-version, in order: [['--mode', 'overlap'], ['--yes']]. */
  flags: string[][];
  /** The Idempotency-Key the request carried (create, rotate): a re-run of the same request repeats it. */
  idempotencyKey?: string | undefined;
  /** The clock when the error was caught, for "in 3 h". */
  now?: number | undefined;
}

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
  /**
   * What the error means next, in lines printed under the message (human
   * mode), attached by the code that knows more than the thrower: on an
   * authentication failure (exit 4), where the token that was sent came from
   * (src/credentials/origin.ts). Before the lines errors/explain.ts works out.
   */
  explanation: string[] | undefined;
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
