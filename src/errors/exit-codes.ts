// The one table that turns an outcome into an exit status.
// `satisfies Record<ApiErrorCode, ExitCode>` makes the compiler prove that
// every error code of the spec is mapped, and to a documented exit code.
import type { ApiErrorCode } from '../api/spec.js';

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

/**
 * The codes chatctl itself uses in `--json` error lines (docs/configuration.md, Output;
 * and partial_failure for a --from run), each with its exit status: the one
 * place a local error's status is decided. A signal can still end an
 * `interrupted` run with 129 or 143 (src/app/execute.ts).
 */
export const EXIT_FOR_LOCAL_CODE = {
  usage_error: EXIT.usage,
  config_error: EXIT.config,
  network_error: EXIT.unavailable,
  timeout: EXIT.unavailable,
  invalid_response: EXIT.unexpected,
  secret_not_delivered: EXIT.secretNotDelivered,
  partial_failure: EXIT.partial,
  interrupted: EXIT.interrupted,
  // webhooks verify: the signature or its timestamp refused.
  signature_mismatch: EXIT.rejected,
  timestamp_out_of_tolerance: EXIT.rejected,
  // webhooks trigger: the sandbox delivered, and the receiver refused it or could not be reached.
  delivery_refused: EXIT.rejected,
  delivery_failed: EXIT.unavailable,
} as const satisfies Record<string, ExitCode>;
export type LocalErrorCode = keyof typeof EXIT_FOR_LOCAL_CODE;

export const EXIT_FOR_API_CODE = {
  validation_failed: EXIT.rejected,
  authentication_failed: EXIT.auth,
  authentication_required: EXIT.auth,
  reauthentication_required: EXIT.auth,
  permission_denied: EXIT.permission,
  resource_not_found: EXIT.notFound,
  idempotency_conflict: EXIT.conflict,
  target_account_unavailable: EXIT.notFound,
  organization_owner_removal_conflict: EXIT.conflict,
  organization_owner_role_conflict: EXIT.conflict,
  organization_role_conflict: EXIT.conflict,
  membership_conflict: EXIT.conflict,
  invitation_conflict: EXIT.conflict,
  invitation_expired: EXIT.conflict,
  application_name_conflict: EXIT.conflict,
  application_settings_version_conflict: EXIT.versionConflict,
  environment_settings_version_conflict: EXIT.versionConflict,
  app_user_version_conflict: EXIT.versionConflict,
  channel_type_conflict: EXIT.conflict,
  channel_type_version_conflict: EXIT.versionConflict,
  channel_type_limit_reached: EXIT.limit,
  channel_conflict: EXIT.conflict,
  channel_version_conflict: EXIT.versionConflict,
  channel_membership_conflict: EXIT.conflict,
  channel_membership_version_conflict: EXIT.versionConflict,
  channel_membership_limit_reached: EXIT.limit,
  message_conflict: EXIT.conflict,
  message_version_conflict: EXIT.versionConflict,
  channel_read_state_conflict: EXIT.conflict,
  thread_reply_limit_reached: EXIT.limit,
  message_reaction_type_not_allowed: EXIT.rejected,
  message_reaction_limit_reached: EXIT.limit,
  thread_read_state_conflict: EXIT.conflict,
  credential_limit_reached: EXIT.limit,
  credential_lifecycle_conflict: EXIT.conflict,
  device_registration_conflict: EXIT.conflict,
  device_registration_version_conflict: EXIT.versionConflict,
  device_registration_limit_reached: EXIT.limit,
  attachment_upload_incomplete: EXIT.conflict,
  attachment_not_ready: EXIT.conflict,
  attachment_limit_reached: EXIT.limit,
  moderation_relationship_limit_reached: EXIT.limit,
  moderation_blocklist_limit_reached: EXIT.limit,
  moderation_case_resolution_conflict: EXIT.conflict,
  message_moderation_rejected: EXIT.rejected,
  retention_policy_version_conflict: EXIT.versionConflict,
  data_job_not_cancelable: EXIT.conflict,
  data_job_not_ready: EXIT.conflict,
  data_job_limit_exceeded: EXIT.limit,
  webhook_endpoint_conflict: EXIT.conflict,
  webhook_endpoint_version_conflict: EXIT.versionConflict,
  webhook_endpoint_limit_reached: EXIT.limit,
  webhook_destination_rejected: EXIT.rejected,
  webhook_secret_rotation_conflict: EXIT.conflict,
  webhook_delivery_not_replayable: EXIT.conflict,
  conflict: EXIT.conflict,
  rate_limit_exceeded: EXIT.rateLimited,
  internal_error: EXIT.unexpected,
  service_unavailable: EXIT.unavailable,
} as const satisfies Record<ApiErrorCode, ExitCode>;

/** A code the spec does not list is an unknown code: exit 1. */
export function exitCodeForApiCode(code: string): ExitCode {
  return Object.hasOwn(EXIT_FOR_API_CODE, code) ? EXIT_FOR_API_CODE[code as ApiErrorCode] : EXIT.unexpected;
}

/** For error bodies that are not a PublicErrorResponseDto. */
export function exitCodeForStatus(status: number): ExitCode {
  switch (status) {
    case 400:
    case 422:
      return EXIT.rejected;
    case 401:
      return EXIT.auth;
    case 403:
      return EXIT.permission;
    case 404:
      return EXIT.notFound;
    case 409:
      return EXIT.conflict;
    case 429:
      return EXIT.rateLimited;
    case 503:
      return EXIT.unavailable;
    default:
      return EXIT.unexpected;
  }
}

/** The rows `chatctl exit-codes` prints and the README carries. */
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
