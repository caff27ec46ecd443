// One attempt (client.ts): the SSRF guard on every connection and redirect, TLS, and a long-lived signal.
import { describe, it, expect, afterAll } from '@jest/globals';
import { getEventListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createGuardedAgents, parseAllowList } from './guard';
import { expectOpenError, fetchHarness, tableLookup } from './testing-fetcher';
import { bytes, fileHandler, readAll, type TestOrigin } from './testing';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);

describe('SSRF guard', () => {
  it('refuses loopback literal forms before connecting', async () => {
    const o = await origin((_req, res) => void res.end('secret'));
    const o6 = await origin((_req, res) => void res.end('secret'), '::1');
    const f = fetcher({ allowPrivate: false });
    const urls = [
      `http://127.0.0.1:${o.port}/`,
      `http://127.1:${o.port}/`,
      `http://2130706433:${o.port}/`,
      `http://0x7f000001:${o.port}/`,
      `http://0177.0.0.1:${o.port}/`,
      `http://[::ffff:127.0.0.1]:${o.port}/`,
      `http://localhost:${o.port}/`,
      `http://localhost.:${o.port}/`,
      `http://0.0.0.0:${o.port}/`,
      `http://0:${o.port}/`,
      `http://[::1]:${o6.port}/`,
      `http://[::]:${o6.port}/`,
    ];
    for (const url of urls) {
      const result = await f.probe(url);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error).toMatch(/^blocked: (resolves to )?an? (loopback|unspecified) address$/);
        expect(result.cause.retryable).toBe(false);
      }
      const error = await expectOpenError(f.openBody(url));
      expect(error.kind).toBe('blocked');
    }
    expect(o.connections).toBe(0);
    expect(o6.connections).toBe(0);
  });

  it('refuses names that resolve to private, metadata or mapped loopback addresses, at connect time', async () => {
    const o = await origin((_req, res) => void res.end('secret'));
    const lookup = tableLookup({
      'metadata.test': '169.254.169.254',
      'intranet.test': '10.0.0.1',
      'mapped.test': '::ffff:127.0.0.1',
      'loop.test': '127.0.0.1',
      'mixed.test': ['93.184.216.34', '127.0.0.1'],
      'nat64.test': '64:ff9b::7f00:1',
    });
    const f = fetcher({ allowPrivate: false, lookup });
    const expected: Record<string, string> = {
      'metadata.test': 'blocked: resolves to a cloud metadata address',
      'intranet.test': 'blocked: resolves to a private address',
      'mapped.test': 'blocked: resolves to a loopback address',
      'loop.test': 'blocked: resolves to a loopback address',
      'mixed.test': 'blocked: resolves to a loopback address',
      'nat64.test': 'blocked: resolves to a loopback (embedded in 64:ff9b::7f00:1) address',
    };
    for (const [name, message] of Object.entries(expected)) {
      const result = await f.probe(`http://${name}:${o.port}/file`);
      expect(result).toMatchObject({ ok: false, error: message });
      const error = await expectOpenError(f.openBody(`http://${name}:${o.port}/file`));
      expect(error.userMessage).toBe(message);
      expect(error.attempts).toBe(1); // not retried
    }
    expect(lookup.asked).toContain('loop.test'); // refused by the resolver step, not earlier
    expect(o.connections).toBe(0);
  });

  it('checks every redirect hop', async () => {
    const target = await origin((_req, res) => void res.end('secret'));
    const lookup = tableLookup({ 'public.test': '::1', 'internal.test': '127.0.0.1' });
    // The entry origin is on [::1], exempted through allowAddresses: it stands in for a public host.
    const entry = await origin((req, res) => {
      const to: Record<string, string> = {
        '/to-literal': `http://127.0.0.1:${target.port}/`,
        '/to-name': `http://internal.test:${target.port}/`,
        '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
        '/to-localhost': `http://localhost:${target.port}/`,
      };
      const location = to[req.url ?? ''];
      if (location) return void res.writeHead(302, { location }).end();
      res.end('fine');
    }, '::1');
    const f = fetcher({ allowPrivate: false, allowAddresses: ['::1'], lookup });
    const ok = await f.openBody(`http://public.test:${entry.port}/plain`);
    expect((await readAll(ok.stream)).toString()).toBe('fine');

    const cases: Record<string, string> = {
      '/to-literal': 'blocked: a loopback address',
      '/to-name': 'blocked: resolves to a loopback address',
      '/to-metadata': 'blocked: a cloud metadata address',
      '/to-localhost': 'blocked: resolves to a loopback address',
    };
    for (const [path, message] of Object.entries(cases)) {
      expect(await f.probe(`http://public.test:${entry.port}${path}`)).toMatchObject({ ok: false, error: message });
      const error = await expectOpenError(f.openBody(`http://public.test:${entry.port}${path}`));
      expect(error.userMessage).toBe(message);
    }
    expect(lookup.asked).toContain('internal.test');
    expect(target.connections).toBe(0);
  });

  it('the agents themselves refuse blocked literals and names (no reliance on the URL check)', async () => {
    const o = await origin((_req, res) => void res.end('secret'));
    const agents = createGuardedAgents({ guard: { allowPrivate: false, allowList: parseAllowList([]) }, lookup: tableLookup({ 'x.test': '127.0.0.1' }) });
    const get = (url: string) =>
      new Promise<Error>((resolve, reject) => {
        http.get(url, { agent: agents.http }, () => reject(new Error('connected'))).on('error', resolve);
      });
    expect((await get(`http://127.0.0.1:${o.port}/`)).message).toMatch(/^blocked: address 127\.0\.0\.1 is a loopback address/);
    expect((await get(`http://[::1]:${o.port}/`)).message).toMatch(/^blocked: address ::1 is a loopback address/);
    expect((await get(`http://x.test:${o.port}/`)).message).toMatch(/^blocked: x\.test resolves to 127\.0\.0\.1/);
    expect(o.connections).toBe(0);
    agents.http.destroy();
  });

  it('allows everything with allowPrivate', async () => {
    const o = await origin((_req, res) => void res.end('ok'));
    const f = fetcher({ allowPrivate: true, lookup: tableLookup({ 'loop.test': '127.0.0.1' }) });
    expect((await readAll((await f.openBody(`http://loop.test:${o.port}/`)).stream)).toString()).toBe('ok');
    expect((await readAll((await f.openBody(`http://127.1:${o.port}/`)).stream)).toString()).toBe('ok');
  });
});

describe('https', () => {
  const dir = new URL('./fixtures/', import.meta.url);
  const cert = readFileSync(new URL('test-cert.pem', dir));
  const key = readFileSync(new URL('test-key.pem', dir));

  async function httpsOrigin(handler: http.RequestListener): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
    let connections = 0;
    const server = https.createServer({ cert, key }, handler);
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      connections: () => connections,
      close: () => new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    };
  }

  it('fetches over TLS with SNI through the guarded agent, reusing the connection', async () => {
    const body = bytes(20_000, 3);
    let sni: string | undefined;
    const o = await httpsOrigin((req, res) => {
      sni = (req.socket as import('node:tls').TLSSocket).servername || undefined;
      fileHandler(body)(req, res, undefined as unknown as TestOrigin);
    });
    try {
      const f = fetcher({ lookup: tableLookup({ 'files.test': '127.0.0.1' }), extraCa: [cert] });
      expect(await f.probe(`https://files.test:${o.port}/a`)).toMatchObject({ ok: true, size: 20_000 });
      const opened = await f.openBody(`https://files.test:${o.port}/a`, { range: { start: 5, end: 10_004 } });
      expect((await readAll(opened.stream)).equals(body.subarray(5, 10_005))).toBe(true);
      expect(sni).toBe('files.test');
      expect(o.connections()).toBe(1);
      // Without the extra CA the certificate is not trusted: final, not retried.
      const untrusted = await fetcher({ lookup: tableLookup({ 'files.test': '127.0.0.1' }) }).probe(`https://files.test:${o.port}/a`);
      expect(untrusted).toMatchObject({ ok: false, error: 'TLS certificate not trusted (self-signed)' });
      if (!untrusted.ok) expect(untrusted.cause.attempts).toBe(1);
    } finally {
      await o.close();
    }
  });

  it('guards https connections and http<->https redirects the same way', async () => {
    const o = await httpsOrigin((_req, res) => void res.end('secret'));
    const entry = await origin((_req, res) => void res.writeHead(301, { location: `https://files.test:${o.port}/` }).end(), '::1');
    try {
      const lookup = tableLookup({ 'files.test': '127.0.0.1', 'public.test': '::1' });
      const f = fetcher({ allowPrivate: false, allowAddresses: ['::1'], lookup, extraCa: [cert] });
      expect(await f.probe(`https://files.test:${o.port}/`)).toMatchObject({ ok: false, error: 'blocked: resolves to a loopback address' });
      expect(await f.probe(`http://public.test:${entry.port}/`)).toMatchObject({ ok: false, error: 'blocked: resolves to a loopback address' });
      expect(o.connections()).toBe(0);
    } finally {
      await o.close();
    }
  });
});

describe('a long-lived signal', () => {
  it('keeps no abort listener once each request has ended (a resumed bin makes dozens with one signal)', async () => {
    const body = bytes(5000);
    const o = await origin((req, res, origin) => {
      if (req.url === '/missing') return void res.writeHead(404).end();
      fileHandler(body)(req, res, origin);
    });
    const f = fetcher();
    const bin = new AbortController();
    const listeners = () => getEventListeners(bin.signal, 'abort').length;
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 12; i++) {
        expect(await f.probe(`${o.base}/a`, { signal: bin.signal })).toMatchObject({ ok: true, size: 5000 });
        const whole = await f.openBody(`${o.base}/a`, { signal: bin.signal });
        expect((await readAll(whole.stream)).length).toBe(5000);
        const ranged = await f.openBody(`${o.base}/a`, { signal: bin.signal, range: { start: 10, end: 99 }, expectedSize: 5000 });
        expect((await readAll(ranged.stream)).length).toBe(90);
        expect(await f.probe(`${o.base}/missing`, { signal: bin.signal })).toMatchObject({ ok: false });
        const dropped = await f.openBody(`${o.base}/a`, { signal: bin.signal });
        dropped.stream.destroy();
      }
      await new Promise((r) => setImmediate(r));
      expect(listeners()).toBe(0);
      // A body in flight still follows the signal: its request does, and so does the body
      // itself (it ends on the signal even with no request open).
      const inFlight = await f.openBody(`${o.base}/a`, { signal: bin.signal });
      expect(listeners()).toBe(2);
      bin.abort();
      await expect(readAll(inFlight.stream)).rejects.toThrow();
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
