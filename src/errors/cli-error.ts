import { ERROR_CODES, type ApiErrorCode } from '../api/schemas.js';

// The one error family and the one table that turns an outcome into an exit status.

export const EXIT = {
  ok: 0,
  unexpected: 1,
  usage: 2,
  config: 3,
  auth: 4,
  permission: 5,
  notFound: 6,
  versionConflict: 7,
  conflict: 8,
  rejected: 9,
  limit: 10,
  rateLimited: 11,
  unavailable: 12,
  secretNotDelivered: 13,
  partial: 14,
  hangup: 129,
  interrupted: 130,
  terminated: 143,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit status a signal ends a run with (docs: `chatctl exit-codes`). */
export const SIGNAL_EXIT: Record<string, ExitCode> = { SIGHUP: EXIT.hangup, SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated };

/** chatctl's own `--json` error codes (docs/configuration.md, Output); a signal can still end an `interrupted` run with 129 or 143. */
export const EXIT_FOR_LOCAL_CODE = {
  usage_error: EXIT.usage,
  config_error: EXIT.config,
  network_error: EXIT.unavailable,
  timeout: EXIT.unavailable,
  invalid_response: EXIT.unexpected,
  secret_not_delivered: EXIT.secretNotDelivered,
  partial_failure: EXIT.partial,
  interrupted: EXIT.interrupted,
  signature_mismatch: EXIT.rejected, // webhooks verify
  timestamp_out_of_tolerance: EXIT.rejected,
  delivery_refused: EXIT.rejected, // webhooks trigger: the receiver refused, or could not be reached
  delivery_failed: EXIT.unavailable,
} as const satisfies Record<string, ExitCode>;

export const EXIT_CODE_ROWS: ReadonlyArray<readonly [ExitCode, string, string]> = [
  [0, 'success', ''],
  [1, 'unexpected failure, unreadable response, unknown code', 'internal_error, any code not listed here'],
  [2, 'usage: bad command line or input, nothing sent', ''],
  [3, 'configuration: no profile, scope, token or base URL; unreadable config', ''],
  [4, 'authentication', 'authentication_failed, authentication_required, reauthentication_required'],
  [5, 'permission', 'permission_denied'],
  [6, 'not found', 'resource_not_found, target_account_unavailable'],
  [7, 'version conflict: retry with the current version (the message names it; --expected-version last then uses it)', 'every code ending in _version_conflict'],
  [
    8,
    'conflict with the current state',
    'conflict, idempotency_conflict, every other code ending in _conflict, invitation_expired, attachment_upload_incomplete, attachment_not_ready, data_job_not_cancelable, data_job_not_ready, webhook_delivery_not_replayable',
  ],
  [9, "rejected by the server's rules", 'validation_failed, webhook_destination_rejected, message_moderation_rejected, message_reaction_type_not_allowed'],
  [10, 'limit reached', 'every code ending in _limit_reached, data_job_limit_exceeded'],
  [11, 'rate limited, retries exhausted', 'rate_limit_exceeded'],
  [12, 'unavailable: retries exhausted, network failure, timeout', 'service_unavailable'],
  [13, 'secret not delivered: the change was applied but the secret is not in hand', ''],
  [14, "partial: some items of a --from run failed (each item's own code is in its result line)", ''],
  [129, 'ended by SIGHUP (the terminal closed)', ''],
  [130, 'interrupted (Ctrl-C)', ''],
  [143, 'terminated (SIGTERM)', ''],
];

function ruleFor(code: ApiErrorCode): ExitCode {
  // The codes the rows name one by one (a single word), else the endings the rows give.
  const named = EXIT_CODE_ROWS.find((row) => row[2].split(', ').includes(code))?.[0];
  if (named !== undefined) return named;
  if (code.endsWith('_version_conflict')) return EXIT.versionConflict;
  if (code.endsWith('_conflict')) return EXIT.conflict;
  if (code.endsWith('_limit_reached')) return EXIT.limit;
  return EXIT.unexpected;
}

export const EXIT_FOR_API_CODE = Object.fromEntries(ERROR_CODES.map((code) => [code, ruleFor(code)])) as Record<ApiErrorCode, ExitCode>;

export const exitCodeForApiCode = (code: string): ExitCode => (Object.hasOwn(EXIT_FOR_API_CODE, code) ? EXIT_FOR_API_CODE[code as ApiErrorCode] : EXIT.unexpected);

const EXIT_FOR_STATUS = { 400: EXIT.rejected, 422: EXIT.rejected, 401: EXIT.auth, 403: EXIT.permission, 404: EXIT.notFound, 409: EXIT.conflict, 429: EXIT.rateLimited, 503: EXIT.unavailable };

/** For error bodies that are not a PublicErrorResponseDto. */
export const exitCodeForStatus = (status: number): ExitCode => (EXIT_FOR_STATUS as Record<number, ExitCode>)[status] ?? EXIT.unexpected;

export type ScopeValue = { value: string | null; source: string };
/** The scope a refused request (exit 5, 6) was sent to, for its hint (set by execute). */
export type ScopeOrigin = { profile: string } & Record<'organizationId' | 'applicationId' | 'environmentKey', ScopeValue>;

export interface RerunContext {
  /** ['webhooks', 'rotate', 'we_1']; create has no id. */
  words: [string, string] | [string, string, string];
  expectedVersion?: number | undefined;
  /** Flags to repeat after --expected-version, in order: [['--mode', 'overlap'], ['--yes']]. */
  flags: string[][];
  idempotencyKey?: string | undefined;
  now?: number | undefined;
}

interface ErrorFields {
  hint?: string | undefined;
  /** Already shown to the user (the sandbox reports its own start-up errors). */
  reported?: boolean;
  status?: number | null;
  requestId?: string | null;
  details?: unknown;
  /** The Idempotency-Key of a create or rotate that may have been applied: --json prints it beside "exitCode" for a re-run. */
  idempotencyKey?: string | undefined;
}

/** Commands throw these; one handler at the top prints them once and turns them into the exit status. */
export class CliError extends Error {
  readonly hint: string | undefined;
  readonly status: number | null;
  readonly requestId: string | null;
  readonly details: unknown;
  readonly reported: boolean;
  readonly idempotencyKey: string | undefined;
  rerun: RerunContext | undefined;
  /** Lines that replace explain.ts's, attached by code that knows more (exit 4: where the token came from). */
  explanation: string[] | undefined;
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
      error: { code: this.code, message: this.message, requestId: this.requestId, status: this.status, details: this.details },
      exitCode: this.exitCode,
      ...(this.idempotencyKey !== undefined ? { idempotencyKey: this.idempotencyKey } : {}),
    };
  }
}

/** By shape, not class: the lazily loaded bundles (dist/lazy/*.cjs) carry their own copy of the class. */
export function isCliError(err: unknown): err is CliError {
  const e = err as CliError;
  return err instanceof Error && e.name === 'CliError' && typeof e.code === 'string' && typeof e.exitCode === 'number' && typeof e.toJSON === 'function';
}

export const localError = (code: keyof typeof EXIT_FOR_LOCAL_CODE, message: string, fields: ErrorFields = {}) => new CliError(code, message, EXIT_FOR_LOCAL_CODE[code], fields);
export const usageError = (message: string, hint?: string) => localError('usage_error', message, { hint });
export const configError = (message: string, hint?: string) => localError('config_error', message, { hint });
export const invalidResponse = (message: string, fields: ErrorFields = {}) => localError('invalid_response', message, fields);
export const interrupted = () => localError('interrupted', 'interrupted');
