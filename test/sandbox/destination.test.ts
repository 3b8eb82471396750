import { describe, expect, it } from 'vitest';
import { checkDestination } from '../../src/sandbox/ip.js';

const reasonOf = (url: string) => {
  const v = checkDestination(url);
  return v.ok ? 'ok' : v.reason;
};

describe('checkDestination', () => {
  it.each([
    'https://example.com/hooks',
    'https://hooks.example.com:8443/a?b=c#d',
    'https://8.8.8.8/x',
    'https://[2001:db8::1]/x',
    'https://[2606:4700::1111]/',
    'https://172.32.0.1/',
    'https://192.169.0.1/',
    'https://localhost.example.com/',
    'https://mylocalhost/',
    'https://[::ffff:8.8.8.8]/',
    // A local receiver for the sandbox's deliveries: http:// on a loopback host.
    'http://127.0.0.1:8080/hooks',
    'http://127.9.9.9/',
    'http://localhost:3000/in',
    'http://LOCALHOST./in',
    'http://[::1]:9000/x',
    'http://[::ffff:127.0.0.1]/',
  ])('accepts %s', (url) => expect(reasonOf(url)).toBe('ok'));

  it.each([
    ['http://example.com/hooks', 'not_https'],
    ['http://10.0.0.1/hooks', 'not_https'],
    ['http://api.localhost/', 'not_https'],
    ['http://0.0.0.0:8080/', 'not_https'],
    ['http://user:pw@127.0.0.1/', 'userinfo'],
    ['ftp://127.0.0.1/', 'not_https'],
    ['ftp://example.com/', 'not_https'],
    ['not a url', 'invalid_url'],
    ['https://user:pass@example.com/', 'userinfo'],
    ['https://user@example.com/', 'userinfo'],
    ['https://@example.com/', 'userinfo'],
    ['https://localhost/', 'localhost'],
    ['https://LOCALHOST./', 'localhost'],
    ['https://api.localhost/', 'localhost'],
    ['https://127.0.0.1/', 'loopback'],
    ['https://127.255.1.2:8443/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://2130706433/', 'loopback'],
    ['https://[::1]/', 'loopback'],
    ['https://[0:0:0:0:0:0:0:1]/', 'loopback'],
    ['https://10.1.2.3/', 'private'],
    ['https://172.16.0.1/', 'private'],
    ['https://172.31.255.255/', 'private'],
    ['https://192.168.1.1/', 'private'],
    ['https://[fc00::1]/', 'private'],
    ['https://[fd12:3456::1]/', 'private'],
    ['https://169.254.169.254/latest/meta-data', 'link-local'],
    ['https://[fe80::1]/', 'link-local'],
    ['https://[febf::1]/', 'link-local'],
    ['https://0.0.0.0/', 'unspecified'],
    ['https://[::]/', 'unspecified'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:7f00:1]/', 'loopback'],
    ['https://[::ffff:10.0.0.1]/', 'private'],
    ['https://[::ffff:169.254.1.1]/', 'link-local'],
    ['https://[::ffff:0.0.0.0]/', 'unspecified'],
    ['https://[::127.0.0.1]/', 'loopback'],
    ['https://[64:ff9b::192.168.0.1]/', 'private'],
    ['https://[2002:7f00:1::]/', 'loopback'],
    ['https://100.64.0.1/', 'shared'],
    ['https://224.0.0.1/', 'multicast'],
    ['https://255.255.255.255/', 'reserved'],
  ])('rejects %s (%s)', (url, reason) => expect(reasonOf(url)).toBe(reason));

  it('gives a message with every rejection', () => {
    const v = checkDestination('http://example.com');
    expect(v).toEqual({ ok: false, reason: 'not_https', message: 'destinationUrl must use https (http:// only on a loopback host, for a local receiver)' });
  });
});
