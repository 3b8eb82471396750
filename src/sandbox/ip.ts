// Literal IP addresses (no DNS) and where a webhook may point. IPv6 forms that embed an IPv4
// address are judged by it, so `::ffff:127.0.0.1` is as much loopback as `127.0.0.1`.
type AddressClass = 'unspecified' | 'loopback' | 'private' | 'shared' | 'link-local' | 'multicast' | 'reserved';

/** Strict dotted decimal (what the WHATWG URL parser serializes to). */
export function parseIPv4(text: string): number[] | null {
  const parts = text.split('.');
  return parts.length === 4 && parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255) ? parts.map(Number) : null;
}

/** Any RFC 4291 text form, with or without brackets or a zone id; 16 bytes. Read by the WHATWG URL parser, which writes an IPv4 tail as hex. */
export function parseIPv6(text: string): number[] | null {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (s.includes('%')) s = s.slice(0, s.indexOf('%'));
  const url = `http://[${s}]`;
  // Only address characters: the URL parser would drop tabs and line breaks, and trim spaces.
  if (!s.includes(':') || !/^[0-9a-f:.]+$/i.test(s) || !URL.canParse(url)) return null;
  const [head = [], rest = []] = new URL(url).hostname
    .slice(1, -1)
    .split('::')
    .map((part) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []));
  const words = [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

function classifyIPv4(b: readonly number[]): AddressClass | null {
  const [a = 0, c = 0] = b;
  if (a === 0) return 'unspecified'; // 0.0.0.0/8, "this network"
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168)) return 'private';
  if (a === 100 && c >= 64 && c <= 127) return 'shared'; // carrier-grade NAT, 100.64/10
  if (a === 169 && c === 254) return 'link-local';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved'; // includes 255.255.255.255
  return null;
}

const zeros = (b: readonly number[], from: number, to: number) => b.slice(from, to).every((x) => x === 0);

/** The IPv4 address an IPv6 address stands for, if it is one of the embedding forms. */
function embeddedIPv4(b: readonly number[]): number[] | null {
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12); // ::ffff:a.b.c.d (mapped)
  if (zeros(b, 0, 12)) return b.slice(12); // ::a.b.c.d (compatible, deprecated)
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) return b.slice(12); // ::ffff:0:a.b.c.d (translated)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(b, 4, 12)) return b.slice(12); // 64:ff9b::/96 (NAT64)
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6); // 2002::/16 (6to4)
  return null;
}

function classifyIPv6(b: readonly number[]): AddressClass | null {
  if (zeros(b, 0, 16)) return 'unspecified';
  if (zeros(b, 0, 15) && b[15] === 1) return 'loopback';
  const v4 = embeddedIPv4(b);
  if (v4) return classifyIPv4(v4);
  const [first = 0, second = 0] = b;
  if ((first & 0xfe) === 0xfc) return 'private'; // fc00::/7, unique local
  if (first === 0xfe && (second & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (first === 0xfe && (second & 0xc0) === 0xc0) return 'private'; // fec0::/10, old site-local
  if (first === 0xff) return 'multicast';
  return null;
}

/** The class of a literal address (either family), or null for a public address or a name. */
export function classifyAddress(host: string): AddressClass | null {
  const v4 = parseIPv4(host);
  if (v4) return classifyIPv4(v4);
  const v6 = parseIPv6(host);
  return v6 && classifyIPv6(v6);
}

/** Whether a host (name or literal) is this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || classifyAddress(h) === 'loopback';
}

type DestinationRejection = 'invalid_url' | 'not_https' | 'userinfo' | 'localhost' | AddressClass;

const REJECTIONS: Record<DestinationRejection, string> = {
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

/**
 * Judged on the WHATWG parse, which already turns 0x7f.1 and 2130706433 into dotted decimal; names are not resolved.
 * Unlike the real service, `http://` on a loopback host passes, so that the sandbox can deliver to a local receiver.
 */
export function checkDestination(raw: string): { ok: true } | { ok: false; reason: DestinationRejection; message: string } {
  const reject = (reason: DestinationRejection) => ({ ok: false as const, reason, message: REJECTIONS[reason] });
  if (!URL.canParse(raw)) return reject('invalid_url');
  const url = new URL(raw);
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
