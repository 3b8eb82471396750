// What chatctl lets onto the wire: a base URL (https, or http only for
// loopback, so a token never travels in clear text) and header values.
import { configError } from '../errors/cli-error.js';

const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** Loopback as docs/configuration.md defines it: narrower on purpose than the sandbox's (src/sandbox/ip.ts). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h === '[::1]' || LOOPBACK_V4.test(h);
}

export function checkBaseUrl(raw: string, fail: (message: string, hint?: string) => Error): { href: string; origin: string } {
  if (!URL.canParse(raw)) throw fail(`base URL "${raw}" is not an absolute URL`);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw fail(`base URL "${raw}" must use https`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw fail(`refusing http: base URL "${raw}": the token would travel in clear text`, 'use https, or http only with localhost, 127.0.0.0/8 or [::1]');
  }
  if (url.username || url.password) throw fail('base URL must not contain credentials');
  if (url.search || url.hash) throw fail('base URL must not have a query or fragment');
  const href = url.origin + url.pathname.replace(/\/+$/, '');
  return { href, origin: url.origin };
}

/** Whether a value can travel in an HTTP header: no control characters, nothing beyond Latin-1. */
export function isHeaderSafe(value: string): boolean {
  return !/[\u0000-\u001f\u007f]/.test(value) && !/[^\u0000-\u00ff]/.test(value);
}

export function checkHeaderValue(value: string, label: string): void {
  if (!isHeaderSafe(value)) throw configError(`the ${label} contains characters that cannot be sent in an HTTP header`);
}
