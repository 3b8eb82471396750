// The exit codes each command can end with, for its manual page (EXIT
// STATUS). Every command can also end with 0, 1 (unexpected), 2 (usage:
// a wrong flag or value) and by a signal (129, 130, 143). A command not
// listed here (the program itself, a group) gets the whole table.
import { EXIT } from '../errors/cli-error.js';

const { config, auth, permission, notFound, versionConflict, conflict, rejected, limit, rateLimited, unavailable, secretNotDelivered, partial } = EXIT;

/** What any request to the API can be answered with (the server's codes, retries, the network). */
const API = [config, auth, permission, notFound, versionConflict, conflict, rejected, limit, rateLimited, unavailable];

export const EXIT_STATUS_BY_COMMAND: Readonly<Record<string, readonly number[]>> = {
  'webhooks create': [...API, secretNotDelivered],
  'webhooks rotate': [...API, secretNotDelivered, partial],
  'webhooks reactivate': API,
  // What this machine saw: nothing is sent; an id never seen is 2; an unreadable config, 3.
  'webhooks list': [config],
  'webhooks show': [config],
  'webhooks fingerprint': [],
  'webhooks sign': [],
  'webhooks verify': [rejected],
  'webhooks trigger': API,
  'profile list': [config],
  'profile show': [config],
  'profile set': [config],
  'profile use': [config],
  'profile remove': [config],
  'auth login': [config],
  'auth logout': [config],
  'auth status': [config],
  'auth token': [config],
  doctor: [config, auth, unavailable],
  'exit-codes': [],
  completion: [],
  'completion install': [],
  version: [],
  sandbox: [],
};

const ALWAYS_BEFORE = [EXIT.ok, EXIT.unexpected, EXIT.usage];
const ALWAYS_AFTER = [EXIT.hangup, EXIT.interrupted, EXIT.terminated];

/** The codes `chatctl PATH` can end with, in order; undefined: any of the table. */
export function exitStatusOf(path: readonly string[]): number[] | undefined {
  const own = EXIT_STATUS_BY_COMMAND[path.join(' ')];
  return own === undefined ? undefined : [...new Set([...ALWAYS_BEFORE, ...own, ...ALWAYS_AFTER])].sort((a, b) => a - b);
}
