import { describe, it, expect } from '@jest/globals';
import { classifyAddress, checkUrl, isLocalhostName, parseAllowList } from './guard';
import { parseContentRange, parseRetryAfter } from './headers';

describe('classifyAddress', () => {
  const blocked: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.100.100.200', 'cloud metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['64:ff9b::a00:1', 'private (embedded in 64:ff9b::a00:1)'],
    ['64:ff9b::7f00:1', 'loopback (embedded in 64:ff9b::7f00:1)'],
    ['2002:a00:1::1', 'private (embedded in 2002:a00:1::1)'],
    ['2002:7f00:1::', 'loopback (embedded in 2002:7f00:1::)'],
    ['::7f00:1', 'IPv4-compatible'],
    ['2001::1', 'Teredo'],
    ['64:ff9b:1::808:808', 'NAT64'],
    ['2001:db8::1', 'reserved'],
    ['not-an-ip', 'invalid'],
  ];
  it.each(blocked)('refuses %s (%s)', (address, label) => {
    const verdict = classifyAddress(address);
    expect(verdict.allowed).toBe(false);
    expect(verdict.label).toBe(label);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '64:ff9b::808:808', '2002:808:808::1', '::ffff:8.8.8.8'])(
    'allows public %s',
    (address) => {
      expect(classifyAddress(address).allowed).toBe(true);
    },
  );

  it('honours an allow list (CIDR or single address)', () => {
    const allowList = parseAllowList(['::1', '10.1.0.0/16']);
    expect(classifyAddress('::1', allowList).allowed).toBe(true);
    expect(classifyAddress('10.1.2.3', allowList).allowed).toBe(true);
    expect(classifyAddress('10.2.0.1', allowList).allowed).toBe(false);
    expect(classifyAddress('127.0.0.1', allowList).allowed).toBe(false);
  });
});

describe('checkUrl (up-front check of each hop)', () => {
  const guard = { allowPrivate: false, allowList: [] };
  it.each([
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://localhost/',
    'http://localhost./',
    'http://LOCALHOST../',
    'http://app.localhost/',
    'http://0/',
    'http://[::]/',
    'https://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/',
  ])('blocks %s', (url) => {
    const error = checkUrl(new URL(url), guard);
    expect(error?.kind).toBe('blocked');
    expect(error?.userMessage).toMatch(/^blocked: /);
    expect(error?.retryable).toBe(false);
  });

  it.each(['ftp://example.com/x', 'file:///etc/passwd', 'data:text/plain,hi', 'gopher://x/'])('refuses the protocol of %s', (url) => {
    const error = checkUrl(new URL(url), { allowPrivate: true, allowList: [] });
    expect(error?.kind).toBe('protocol');
    expect(error?.userMessage).toBe(`unsupported protocol ${new URL(url).protocol}`);
  });

  it('lets names through (checked at connect time) and everything with allowPrivate', () => {
    expect(checkUrl(new URL('http://example.com/'), guard)).toBeUndefined();
    expect(checkUrl(new URL('http://127.0.0.1/'), { allowPrivate: true, allowList: [] })).toBeUndefined();
  });

  it('knows localhost names', () => {
    expect(isLocalhostName('localhost.')).toBe(true);
    expect(isLocalhostName('x.LocalHost')).toBe(true);
    expect(isLocalhostName('localhost.example.com')).toBe(false);
    expect(isLocalhostName('notlocalhost')).toBe(false);
  });

  it('gives a short public message and a detailed log message', () => {
    const error = checkUrl(new URL('http://10.0.0.5/'), guard);
    expect(error?.userMessage).toBe('blocked: a private address');
    expect(error?.message).toBe('blocked: address 10.0.0.5 is a private address (set ALLOW_PRIVATE_URLS=true for development)');
  });
});

describe('header parsing', () => {
  it('parses Content-Range', () => {
    expect(parseContentRange('bytes 0-0/1234')).toEqual({ start: 0, end: 0, total: 1234 });
    expect(parseContentRange('bytes 10-19/*')).toEqual({ start: 10, end: 19, total: null });
    expect(parseContentRange('bytes */0')).toEqual({ total: 0 });
    expect(parseContentRange('bytes 5-4/10')).toBeUndefined();
    expect(parseContentRange('bytes 0-10/10')).toBeUndefined();
    expect(parseContentRange('items 0-1/2')).toBeUndefined();
    expect(parseContentRange(undefined)).toBeUndefined();
  });

  it('parses Retry-After (seconds or HTTP date)', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Tue, 01 Jan 2029 00:00:10 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
