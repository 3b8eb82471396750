// What a prompt accepts, checked as the answer is typed: the request's own
// rules (src/api/schemas.ts), and for the destination URL the rule a server
// applies to where it sends signed deliveries: https, with http:// only for a
// receiver on this machine, and no user name or password in the URL. A
// refused answer is asked again at the prompt instead of costing a request.
import { destinationUrlSchema, nameSchema } from '../api/schemas.js';
import { isLoopbackHost } from '../http/wire-checks.js';

const firstIssue = (r: { success: boolean; error?: { issues: { message: string }[] } }) => (r.success ? true : (r.error?.issues[0]?.message ?? 'invalid'));

/** true, or what is wrong with a typed endpoint name (1 to 80 characters). */
export function promptedNameIssue(value: string): true | string {
  return firstIssue(nameSchema().safeParse(value));
}

/** true, or what is wrong with a typed destination URL. */
export function promptedUrlIssue(value: string): true | string {
  const shape = firstIssue(destinationUrlSchema().safeParse(value));
  if (shape !== true) return shape;
  const url = new URL(value);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'must use https:// (http:// only for a receiver on this machine: localhost, 127.0.0.1, [::1])';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  return true;
}
