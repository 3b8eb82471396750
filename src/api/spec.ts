// The closed lists and limits of the management API's specification, written once.
// Everything that checks input, maps error codes or completes words imports
// them from here, so a change to the spec is a change to one file.

export const EVENT_TYPES = [
  'chat.channel.created.v1',
  'chat.channel.updated.v1',
  'chat.channel_membership.added.v1',
  'chat.channel_membership.reactivated.v1',
  'chat.channel_membership.updated.v1',
  'chat.channel_membership.removed.v1',
  'chat.message.created.v1',
  'chat.message.updated.v1',
  'chat.message.deleted.v1',
  'chat.message.reply_created.v1',
  'chat.message.reply_updated.v1',
  'chat.message.reply_deleted.v1',
  'chat.message.reaction_added.v1',
  'chat.message.reaction_removed.v1',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const ROTATION_MODES = ['overlap', 'immediate'] as const;
export type RotationMode = (typeof ROTATION_MODES)[number];

export const LIMITS = {
  nameMin: 1,
  nameMax: 80,
  destinationUrlMax: 2048,
  versionMin: 1,
  versionMax: Number.MAX_SAFE_INTEGER, // 9007199254740991
} as const;

export const ERROR_CODES = [
  'validation_failed',
  'authentication_failed',
  'authentication_required',
  'reauthentication_required',
  'permission_denied',
  'resource_not_found',
  'idempotency_conflict',
  'target_account_unavailable',
  'organization_owner_removal_conflict',
  'organization_owner_role_conflict',
  'organization_role_conflict',
  'membership_conflict',
  'invitation_conflict',
  'invitation_expired',
  'application_name_conflict',
  'application_settings_version_conflict',
  'environment_settings_version_conflict',
  'app_user_version_conflict',
  'channel_type_conflict',
  'channel_type_version_conflict',
  'channel_type_limit_reached',
  'channel_conflict',
  'channel_version_conflict',
  'channel_membership_conflict',
  'channel_membership_version_conflict',
  'channel_membership_limit_reached',
  'message_conflict',
  'message_version_conflict',
  'channel_read_state_conflict',
  'thread_reply_limit_reached',
  'message_reaction_type_not_allowed',
  'message_reaction_limit_reached',
  'thread_read_state_conflict',
  'credential_limit_reached',
  'credential_lifecycle_conflict',
  'device_registration_conflict',
  'device_registration_version_conflict',
  'device_registration_limit_reached',
  'attachment_upload_incomplete',
  'attachment_not_ready',
  'attachment_limit_reached',
  'moderation_relationship_limit_reached',
  'moderation_blocklist_limit_reached',
  'moderation_case_resolution_conflict',
  'message_moderation_rejected',
  'retention_policy_version_conflict',
  'data_job_not_cancelable',
  'data_job_not_ready',
  'data_job_limit_exceeded',
  'webhook_endpoint_conflict',
  'webhook_endpoint_version_conflict',
  'webhook_endpoint_limit_reached',
  'webhook_destination_rejected',
  'webhook_secret_rotation_conflict',
  'webhook_delivery_not_replayable',
  'conflict',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
] as const;
export type ApiErrorCode = (typeof ERROR_CODES)[number];

/** The path prefix of every operation (organization, application, environment), segments unencoded. */
export interface Scope {
  organizationId: string;
  applicationId: string;
  environmentKey: string;
}

/** Builds a path with every segment percent-encoded (docs/configuration.md, what goes on the wire). */
export function scopedPath(scope: Scope, ...rest: string[]): string {
  const segments = ['v1', 'organizations', scope.organizationId, 'applications', scope.applicationId, 'environments', scope.environmentKey, ...rest];
  return '/' + segments.map(encodeURIComponent).join('/');
}
