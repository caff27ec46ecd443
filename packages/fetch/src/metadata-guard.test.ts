import { afterAll, describe, expect, it } from '@jest/globals';
import { checkDestination } from './destination';
import { FetchError } from './errors';
import { createFetcher, type Fetcher } from './fetcher';
import { checkUrl, classifyAddress, parseAllowList, verdictFor, type LookupFunction } from './guard';
import { readAll, startOrigin, type TestOrigin } from './testing';

const METADATA = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'];
const openToPrivate = { allowPrivate: true, allowList: [] };

/** Resolves every name to `address`, as a hostile DNS answer would. */
function resolvesTo(address: string): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (err: null, address: unknown, family?: number) => void) => {
    const family = address.includes(':') ? 6 : 4;
    if (options.all) process.nextTick(callback, null, [{ address, family }]);
    else process.nextTick(callback, null, address, family);
  }) as unknown as LookupFunction;
}

describe('cloud metadata addresses stay refused with ALLOW_PRIVATE_URLS=true', () => {
  it.each(METADATA)('refuses %s, also embedded or allow-listed', (address) => {
    expect(verdictFor(address, openToPrivate).allowed).toBe(false);
    expect(verdictFor(address, openToPrivate).label).toBe('cloud metadata');
    expect(classifyAddress(address, parseAllowList(['0.0.0.0/0', '::/0'])).allowed).toBe(false);
    const error = checkUrl(new URL(`http://${address.includes(':') ? `[${address}]` : address}/latest/`), openToPrivate);
    expect(error?.kind).toBe('blocked');
    expect(error?.message).toContain('refused always');
  });

  it('refuses the IPv4-mapped and NAT64 forms of a metadata address', () => {
    expect(verdictFor('::ffff:169.254.169.254', openToPrivate).allowed).toBe(false);
    expect(verdictFor('64:ff9b::a9fe:a9fe', openToPrivate).allowed).toBe(false);
  });

  it('still opens loopback and private ranges', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '::1', '192.168.0.9']) expect(verdictFor(address, openToPrivate).allowed).toBe(true);
  });

  it('refuses a webhook destination that resolves to a metadata address', async () => {
    const verdict = await checkDestination(new URL('http://meta.test/hook'), { allowPrivate: true, lookup: resolvesTo('169.254.169.254') });
    expect(verdict).toEqual({ ok: false, error: expect.stringContaining('cloud metadata') });
    expect(await checkDestination(new URL('http://loop.test/hook'), { allowPrivate: true, lookup: resolvesTo('127.0.0.1') })).toEqual({ ok: true, private: true });
  });
});

describe('the fetcher with allowPrivate', () => {
  const fetchers: Fetcher[] = [];
  const origins: TestOrigin[] = [];
  afterAll(async () => {
    for (const f of fetchers) f.close();
    await Promise.all(origins.map((o) => o.close()));
  });

  it('refuses a name that resolves to a metadata address, and fetches from loopback', async () => {
    const o = await startOrigin((_req, res) => void res.end('ok'));
    origins.push(o);
    const toMetadata = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 2000, retries: 0, userAgent: 'ap-test', lookup: resolvesTo('169.254.169.254') });
    const toLoopback = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 2000, retries: 0, userAgent: 'ap-test', lookup: resolvesTo('127.0.0.1') });
    fetchers.push(toMetadata, toLoopback);
    const error = await toMetadata.openBody(`http://metadata.test:${o.port}/latest/`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    expect((error as FetchError).kind).toBe('blocked');
    expect((error as FetchError).userMessage).toBe('blocked: resolves to a cloud metadata address');
    expect(o.requests).toHaveLength(0);
    expect((await readAll((await toLoopback.openBody(`http://loop.test:${o.port}/`)).stream)).toString()).toBe('ok');
  });
});
