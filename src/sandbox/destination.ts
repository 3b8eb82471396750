// Where a webhook may point (422 webhook_destination_rejected otherwise).
// Judged on the WHATWG parse of the URL, which already turns 0x7f.1,
// 2130706433 and other IPv4 spellings into dotted decimal. Names are not
// resolved: a public name that resolves to a private address is accepted.
// One exception the real service would not make: `http://` on a loopback
// host, so that the sandbox can deliver to a receiver on this machine.
import { classifyAddress, isLoopbackHost, type AddressClass } from './ip.js';

export type DestinationRejection = 'invalid_url' | 'not_https' | 'userinfo' | 'localhost' | AddressClass;

export type DestinationVerdict = { ok: true } | { ok: false; reason: DestinationRejection; message: string };

const MESSAGES: Record<DestinationRejection, string> = {
  invalid_url: 'destinationUrl is not an absolute URL',
  not_https: 'destinationUrl must use https (http:// only on a loopback host, for a local receiver)',
  userinfo: 'destinationUrl must not contain a user name or password',
  localhost: 'destinationUrl must not point at localhost',
  unspecified: 'destinationUrl must not point at an unspecified address',
  loopback: 'destinationUrl must not point at a loopback address',
  private: 'destinationUrl must not point at a private address',
  shared: 'destinationUrl must not point at a shared (carrier-grade NAT) address',
  'link-local': 'destinationUrl must not point at a link-local address',
  multicast: 'destinationUrl must not point at a multicast address',
  reserved: 'destinationUrl must not point at a reserved address',
};

const reject = (reason: DestinationRejection): DestinationVerdict => ({ ok: false, reason, message: MESSAGES[reason] });

export function checkDestination(raw: string): DestinationVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return reject('invalid_url');
  }
  const localReceiver = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !localReceiver) return reject('not_https');
  // "https://@host" parses to an empty user name; the raw authority still has the "@".
  const authority = /^[a-z][a-z0-9+.-]*:[/\\]*([^/?#\\]*)/i.exec(raw.trim())?.[1] ?? '';
  if (url.username !== '' || url.password !== '' || authority.includes('@')) return reject('userinfo');
  if (localReceiver) return { ok: true };
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return reject('localhost');
  const addressClass = classifyAddress(host);
  return addressClass ? reject(addressClass) : { ok: true };
}
