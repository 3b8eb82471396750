import { describe, expect, it } from 'vitest';
import { classifyAddress, isLoopbackHost, parseIPv4, parseIPv6 } from '../../src/sandbox/ip.js';

const hex = (b: number[] | null) => (b ? Buffer.from(b).toString('hex') : null);

describe('parseIPv6', () => {
  it.each([
    ['::', '00000000000000000000000000000000'],
    ['::1', '00000000000000000000000000000001'],
    ['[::1]', '00000000000000000000000000000001'],
    ['fe80::1%eth0', 'fe800000000000000000000000000001'],
    ['2001:db8::', '20010db8000000000000000000000000'],
    ['1:2:3:4:5:6:7:8', '00010002000300040005000600070008'],
    ['::ffff:1.2.3.4', '00000000000000000000ffff01020304'],
    ['1:2:3:4:5:6:1.2.3.4', '00010002000300040005000601020304'],
    ['::1.2.3.4', '00000000000000000000000001020304'],
  ])('parses %s', (text, bytes) => expect(hex(parseIPv6(text))).toBe(bytes));

  it.each(['', '1.2.3.4', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7::8', '12345::', 'g::', '::1.2.3', ':1:2'])('refuses %s', (text) => expect(parseIPv6(text)).toBeNull());
});

describe('parseIPv4', () => {
  it('takes strict dotted decimal only', () => {
    expect(parseIPv4('10.0.0.1')).toEqual([10, 0, 0, 1]);
    expect(parseIPv4('256.0.0.1')).toBeNull();
    expect(parseIPv4('010.0.0.1')).toBeNull();
    expect(parseIPv4('1.2.3')).toBeNull();
  });
});

describe('classifyAddress', () => {
  it('treats names and public addresses as public', () => {
    expect(classifyAddress('example.com')).toBeNull();
    expect(classifyAddress('1.1.1.1')).toBeNull();
    expect(classifyAddress('2001:4860:4860::8888')).toBeNull();
  });
});

describe('isLoopbackHost', () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1'])('%s is loopback', (h) => expect(isLoopbackHost(h)).toBe(true));
  it.each(['0.0.0.0', '::', '10.0.0.1', 'example.com', '192.168.0.1', ''])('%s is not', (h) => expect(isLoopbackHost(h)).toBe(false));
});
