// HTTP/2 to origins that offer it (h2.ts): streams of one connection, with every guarantee of
// HTTP/1.1 (the guard, timeouts, per-file headers) and HTTP/1.1 origins unchanged.
import { afterAll, describe, expect, it } from '@jest/globals';
import http2 from 'node:http2';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { bytes, readAll } from './testing';
import { expectOpenError, expectStreamError, fetchHarness, tableLookup } from './testing-fetcher';
import { filesHandler, makeTestCa, startTlsOrigin, type TlsHandler, type TlsOrigin } from './testing-tls';

const tlsCa = makeTestCa(['files.test', 'a.test', 'other.test', 'public.test', 'internal.test', 'rebind.test']);
const { fetcher, close } = fetchHarness();
const origins: TlsOrigin[] = [];
afterAll(async () => {
  await close();
  await Promise.all(origins.map((o) => o.close()));
});

async function origin(protocol: 'h2' | 'both' | 'http/1.1', handler: TlsHandler, host?: string, port?: number): Promise<TlsOrigin> {
  const o = await startTlsOrigin(tlsCa, protocol, handler, host, port);
  origins.push(o);
  return o;
}

const files = Array.from({ length: 40 }, (_, i) => bytes(1000 + i * 517, i + 1));
const trusting = (table: Record<string, string | string[]>, overrides = {}) => fetcher({ lookup: tableLookup(table), extraCa: [tlsCa.ca], ...overrides });

describe('an h2 origin', () => {
  it('carries many files, probed and read at once, as streams of one connection', async () => {
    const o = await origin('h2', filesHandler(files));
    const f = trusting({ 'files.test': '127.0.0.1' });
    const url = (i: number) => `https://files.test:${o.port}/${i}`;
    const probes = await Promise.all(files.map((_, i) => f.probe(url(i))));
    expect(probes.map((p) => (p.ok ? p.size : p.error))).toEqual(files.map((b) => b.length));
    const bodies = await Promise.all(files.map(async (_, i) => readAll((await f.openBody(url(i), { expectedSize: files[i]!.length })).stream)));
    bodies.forEach((body, i) => expect(body.equals(files[i]!)).toBe(true));
    const ranged = await f.openBody(url(7), { range: { start: 10, end: 99 }, expectedSize: files[7]!.length });
    expect((await readAll(ranged.stream)).equals(files[7]!.subarray(10, 100))).toBe(true);
    expect(o.requests.length).toBeGreaterThanOrEqual(81);
    expect(new Set(o.requests.map((r) => r.httpVersion))).toEqual(new Set(['2.0']));
    // The connection that asked for the protocol is the one the streams use.
    expect(o.connections).toBe(1);
  });

  it('counts streams against the per-host limit, all on one connection', async () => {
    const o = await origin('h2', filesHandler(files));
    const f = trusting({ 'files.test': '127.0.0.1' }, { hostConnections: 3 });
    const host = `files.test:${o.port}`;
    const opened = await Promise.all([0, 1, 2].map((i) => f.openBody(`https://${host}/${i}`)));
    expect(f.hosts.room(host)).toBe(false);
    for (const body of opened) await readAll(body.stream);
    expect(f.hosts.room(host)).toBe(true);
    expect(o.connections).toBe(1);
  });

  it('speaks HTTP/1.1 to an origin offering both when FETCH_HTTP2 is off, and h2 when on', async () => {
    const o = await origin('both', filesHandler(files));
    const off = trusting({ 'files.test': '127.0.0.1' }, { http2: false });
    const on = trusting({ 'files.test': '127.0.0.1' });
    for (const f of [off, on]) expect((await readAll((await f.openBody(`https://files.test:${o.port}/1`)).stream)).equals(files[1]!)).toBe(true);
    expect(o.requests.map((r) => r.httpVersion)).toEqual(['1.1', '2.0']);
  });

  it('falls back to HTTP/1.1, on the same connection, when an h2 origin stops offering h2', async () => {
    const before = await startTlsOrigin(tlsCa, 'h2', filesHandler(files));
    const f = trusting({ 'files.test': '127.0.0.1' });
    const url = `https://files.test:${before.port}/6`;
    expect((await readAll((await f.openBody(url)).stream)).equals(files[6]!)).toBe(true);
    await before.close();
    const after = await origin('http/1.1', filesHandler(files), '127.0.0.1', before.port);
    const opened = await f.openBody(url);
    expect((await readAll(opened.stream)).equals(files[6]!)).toBe(true);
    // The attempt that found h2 gone (and one on the old session, if its end was not seen yet).
    expect(opened.attempts).toBeGreaterThanOrEqual(2);
    expect(after.requests.map((r) => r.httpVersion)).toEqual(['1.1']);
    expect(after.connections).toBe(1);
  });

  it('refuses a name resolving to a private address, and a redirect to one, without connecting', async () => {
    const target = await origin('h2', filesHandler(files));
    const entry = await origin('h2', (_req, res) => void res.writeHead(302, { location: `https://internal.test:${target.port}/1` }).end(), '::1');
    const lookup = tableLookup({ 'files.test': '127.0.0.1', 'internal.test': '127.0.0.1', 'public.test': '::1' });
    // [::1] is allow-listed: it stands in for a public host.
    const f = fetcher({ allowPrivate: false, allowAddresses: ['::1'], lookup, extraCa: [tlsCa.ca] });
    expect(await f.probe(`https://files.test:${target.port}/1`)).toMatchObject({ ok: false, error: 'blocked: resolves to a loopback address' });
    const redirected = await expectOpenError(f.openBody(`https://public.test:${entry.port}/go`));
    expect(redirected.userMessage).toBe('blocked: resolves to a loopback address');
    expect(entry.requests.map((r) => r.httpVersion)).toEqual(['2.0']);
    expect(target.connections).toBe(0);
  });

  it('asks the guarded resolver again for each new connection (no rebinding past the check)', async () => {
    const o = await origin('h2', filesHandler(files), '::1');
    let asked = 0;
    const answers = ['::1', '127.0.0.1'];
    const lookup = ((hostname: string, options: { all?: boolean }, callback: (e: Error | null, a: unknown, f?: number) => void) => {
      const address = answers[Math.min(asked++, answers.length - 1)]!;
      const family = address.includes(':') ? 6 : 4;
      if (options.all) process.nextTick(callback, null, [{ address, family }]);
      else process.nextTick(callback, null, address, family);
    }) as unknown as import('./guard').LookupFunction;
    const f = fetcher({ allowPrivate: false, allowAddresses: ['::1'], lookup, extraCa: [tlsCa.ca], freeSocketTimeoutMs: 100 });
    const first = await f.openBody(`https://rebind.test:${o.port}/3`);
    expect((await readAll(first.stream)).equals(files[3]!)).toBe(true);
    await new Promise((r) => setTimeout(r, 400)); // the idle session closes
    const error = await expectOpenError(f.openBody(`https://rebind.test:${o.port}/3`));
    expect(error.userMessage).toBe('blocked: resolves to a loopback address');
    expect(o.connections).toBe(1);
  });

  it('sends a file’s own headers to its origin only, also over h2 redirects', async () => {
    const other = await origin('h2', filesHandler(files));
    const entry = await origin('h2', (req, res) => {
      if (req.url === '/same') return void res.writeHead(302, { location: '/2' }).end();
      if (req.url === '/away') return void res.writeHead(302, { location: `https://other.test:${other.port}/2` }).end();
      filesHandler(files)(req, res);
    });
    const f = trusting({ 'a.test': '127.0.0.1', 'other.test': '127.0.0.1' });
    const access = { headers: { Authorization: 'Bearer s3cret', 'Keep-Alive': 'timeout=5' } };
    for (const path of ['/same', '/away']) {
      const opened = await f.openBody(`https://a.test:${entry.port}${path}`, { access });
      expect((await readAll(opened.stream)).equals(files[2]!)).toBe(true);
    }
    expect(entry.requests.map((r) => r.headers.authorization)).toEqual(['Bearer s3cret', 'Bearer s3cret', 'Bearer s3cret']);
    expect(other.requests.map((r) => [r.httpVersion, r.headers.authorization])).toEqual([['2.0', undefined]]);
  });

  it('times out a stalled body and a silent response on a stream, and keeps the connection', async () => {
    const o = await origin('h2', (req, res) => {
      if (req.url === '/stall') {
        res.writeHead(200, { 'content-length': 1000 });
        return void res.write(Buffer.alloc(10));
      }
      if (req.url === '/silent') return;
      filesHandler(files)(req, res);
    });
    const f = trusting({ 'files.test': '127.0.0.1' }, { idleTimeoutMs: 300, retries: 0 });
    const stalled = await f.openBody(`https://files.test:${o.port}/stall`);
    expect((await expectStreamError(stalled.stream)).userMessage).toBe('timed out after 0.3 s (no data mid-body)');
    expect((await expectOpenError(f.openBody(`https://files.test:${o.port}/silent`))).userMessage).toBe('timed out after 0.3 s (no response)');
    const aborted = new AbortController();
    const cancelled = f.openBody(`https://files.test:${o.port}/silent`, { signal: aborted.signal });
    aborted.abort();
    expect((await expectOpenError(cancelled)).kind).toBe('aborted');
    expect((await readAll((await f.openBody(`https://files.test:${o.port}/4`)).stream)).equals(files[4]!)).toBe(true);
    expect(o.connections).toBe(1);
  });

  it('retries a stream the origin reset, on the same connection', async () => {
    let reset = 0;
    const o = await origin('h2', (req, res) => {
      if (reset++ === 0) return void (req as unknown as http2.Http2ServerRequest).stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      filesHandler(files)(req, res);
    });
    const f = trusting({ 'files.test': '127.0.0.1' });
    const opened = await f.openBody(`https://files.test:${o.port}/5`);
    expect((await readAll(opened.stream)).equals(files[5]!)).toBe(true);
    expect(opened.attempts).toBe(2);
    expect(o.connections).toBe(1);
  });

  it('times out a connection that never sends its SETTINGS', async () => {
    const server = tls.createServer({ cert: tlsCa.cert, key: tlsCa.key, ALPNProtocols: ['h2'] }, () => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const f = trusting({ 'files.test': '127.0.0.1' }, { connectTimeoutMs: 300, retries: 0 });
      const started = performance.now();
      const error = await expectOpenError(f.openBody(`https://files.test:${(server.address() as AddressInfo).port}/1`));
      expect(error.userMessage).toBe('timed out after 0.3 s (connecting)');
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      server.close();
    }
  });
});

describe('an HTTP/1.1-only TLS origin', () => {
  it('is read over HTTP/1.1, the connection that asked reused', async () => {
    const o = await origin('http/1.1', filesHandler(files));
    const f = trusting({ 'files.test': '127.0.0.1' });
    for (const i of [0, 1, 2]) {
      expect((await readAll((await f.openBody(`https://files.test:${o.port}/${i}`)).stream)).equals(files[i]!)).toBe(true);
    }
    const all = await Promise.all(files.slice(0, 6).map(async (_, i) => readAll((await f.openBody(`https://files.test:${o.port}/${i}`)).stream)));
    all.forEach((body, i) => expect(body.equals(files[i]!)).toBe(true));
    expect(new Set(o.requests.map((r) => r.httpVersion))).toEqual(new Set(['1.1']));
    expect(o.connections).toBeLessThanOrEqual(6);
    expect(o.requests.length).toBe(9);
  });
});
