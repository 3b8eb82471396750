// The constants, argv, response bodies and tables the CLI tests
// share. One value each: tests refer to them symbolically.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'chatctl.js');
export const NODE = process.execPath;
export const PKG_VERSION: string = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
export const USER_AGENT = `chatctl/${PKG_VERSION} node/${process.versions.node}`;

/**
 * Distinctive: any occurrence on stderr is a leak. test/secret/destinations
 * wraps it at character 12 (`TOKEN.slice(0, 12)`), so its shape matters there.
 */
export const TOKEN = 'tok_e2e_Qm9vYmF6LXNlY3JldC10b2tlbg';
export const SECRET = 'whsec_e2e_c2lnbmluZy1zZWNyZXQtdmFsdWU9PQ';
export const CSRF = 'csrf_e2e_Zm9vYmFyYmF6';
export const ORG = 'org_1';
export const APP = 'app_1';
export const ENV = 'prod';
export const E0 = 'chat.message.created.v1';
export const PREFIX = `/v1/organizations/${ORG}/applications/${APP}/environments/${ENV}`;
export const CREATE_PATH = `${PREFIX}/webhook-endpoints`;
export const rotatePath = (id: string) => `${PREFIX}/webhook-endpoints/${id}/secret/rotate`;
export const reactivatePath = (id: string) => `${PREFIX}/webhook-endpoints/${id}/reactivate`;

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** argv of the three operations (the faults and fuzz tests' defaults). */
export const CREATE = ['webhooks', 'create', '--name', 'n', '--url', 'https://hooks.example.com/in', '--event', E0];
export const ROTATE = ['webhooks', 'rotate', 'we_1', '--expected-version', '4', '--mode', 'overlap'];
export const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '4'];

/** Every exit code the table allows (plus 130/143 for signals). */
export const ALLOWED_EXIT = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 130, 143]);

// ---------------------------------------------------------------- scope

/** The environment naming a full scope against a server. */
export function scopeEnv(baseUrl: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    CHATCTL_BASE_URL: baseUrl,
    CHATCTL_TOKEN: TOKEN,
    CHATCTL_ORG: ORG,
    CHATCTL_APP: APP,
    CHATCTL_ENV: ENV,
    ...extra,
  };
}

/** scopeEnv plus CHATCTL_CSRF_TOKEN (the faults and fuzz tests send one). */
export function csrfScopeEnv(baseUrl: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return scopeEnv(baseUrl, { CHATCTL_CSRF_TOKEN: CSRF, ...extra });
}

// ---------------------------------------------------------------- bodies

export function endpointRecord(id = 'we_1', extra: Record<string, unknown> = {}) {
  return {
    id,
    name: 'orders hook',
    destinationUrl: 'https://hooks.example.com/in',
    eventTypes: [E0],
    version: 2,
    futureField: { nested: [1, 'two', null] },
    ...extra,
  };
}

/** A create/rotate answer; `endpoint` adds to (or overrides) the endpoint record. */
export function secretBody(secret: string | null = SECRET, secretAvailable = secret !== null, id = 'we_1', endpoint: Record<string, unknown> = {}) {
  return {
    data: { endpoint: endpointRecord(id, endpoint), secret, secretAvailable },
    meta: { requestId: 'req_srv_secret_1' },
  };
}

export function mutationBody(id = 'we_1', changed = true) {
  return {
    data: { endpoint: endpointRecord(id, { version: 3 }), changed },
    meta: { requestId: 'req_srv_mut_1', nextCursor: { opaque: 'c1' } },
  };
}

export function errorBody(code: string, message = `server says ${code}`, details: Record<string, unknown> = { hint: 'h' }) {
  return { error: { code, message, requestId: `req_err_${code}`, details } };
}

/** Case-insensitive header lookup on a plain object. */
export function headerOf(headers: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : headers[key];
}

// ---------------------------------------------------------------- exit codes

const AUTH = ['authentication_failed', 'authentication_required', 'reauthentication_required'];
const STATE_8 = [
  'conflict',
  'idempotency_conflict',
  'invitation_expired',
  'attachment_upload_incomplete',
  'attachment_not_ready',
  'data_job_not_cancelable',
  'data_job_not_ready',
  'webhook_delivery_not_replayable',
];
const RULES_9 = ['validation_failed', 'webhook_destination_rejected', 'message_moderation_rejected', 'message_reaction_type_not_allowed'];

/** The exit-code table, written independently of the CLI. null = no row names it. */
export function exitCodeForApiCode(code: string): number | null {
  if (code === 'internal_error') return 1;
  if (AUTH.includes(code)) return 4;
  if (code === 'permission_denied') return 5;
  if (code === 'resource_not_found' || code === 'target_account_unavailable') return 6;
  if (code.endsWith('_version_conflict')) return 7;
  if (STATE_8.includes(code) || code.endsWith('_conflict')) return 8;
  if (RULES_9.includes(code)) return 9;
  if (code.endsWith('_limit_reached') || code === 'data_job_limit_exceeded') return 10;
  if (code === 'rate_limit_exceeded') return 11;
  if (code === 'service_unavailable') return 12;
  return null;
}

/** The exit-code table's fallback for bodies that are not a PublicErrorResponseDto. */
export function exitCodeForStatus(status: number): number {
  switch (status) {
    case 400:
    case 422:
      return 9;
    case 401:
      return 4;
    case 403:
      return 5;
    case 404:
      return 6;
    case 409:
      return 8;
    case 429:
      return 11;
    case 503:
      return 12;
    default:
      return 1;
  }
}
