// The checks every API request passes before routing: the bearer token, then
// the Origin and anti-forgery headers the API requires.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ApiFailure } from './envelopes.js';

/** One header's value; repeated headers arrive joined or as an array. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function checkBearer(headers: IncomingHttpHeaders, token: string): ApiFailure | null {
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(headerValue(headers, 'authorization') ?? '');
  if (!match)
    return new ApiFailure(401, 'authentication_required', 'an Authorization header with a bearer token is required', {
      header: 'Authorization',
    });
  // Equal-length digests: the comparison takes the same time for any guess.
  if (!timingSafeEqual(digest(match[1]!), digest(token))) return new ApiFailure(401, 'authentication_failed', 'the bearer token is not valid', {});
  return null;
}

export const BROWSER_HEADERS = ['origin', 'x-service-csrf'] as const;

export function checkBrowserHeaders(headers: IncomingHttpHeaders): ApiFailure | null {
  const missing = BROWSER_HEADERS.filter((name) => (headerValue(headers, name) ?? '').trim() === '');
  return missing.length ? new ApiFailure(403, 'permission_denied', `missing required header: ${missing.join(', ')}`, { missingHeaders: missing }) : null;
}
