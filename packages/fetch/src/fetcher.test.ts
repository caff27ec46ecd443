import { describe, it, expect, afterAll, beforeAll } from '@jest/globals';
import { getEventListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { createFetcher, type Fetcher, type FetcherOptions } from './fetcher';
import { FetchError } from './errors';
import { createGuardedAgents, parseAllowList, type LookupFunction } from './guard';
import { bytes, fileHandler, freePort, readAll, startOrigin, type TestOrigin } from './testing';

const opened: Fetcher[] = [];
const origins: TestOrigin[] = [];

function fetcher(overrides: Partial<FetcherOptions> = {}): Fetcher {
  const f = createFetcher({
    allowPrivate: true,
    connectTimeoutMs: 2000,
    idleTimeoutMs: 2000,
    retryBaseDelayMs: 5,
    userAgent: 'ap-fetch-test',
    ...overrides,
  });
  opened.push(f);
  return f;
}

async function origin(handler: Parameters<typeof startOrigin>[0], host?: string): Promise<TestOrigin> {
  const o = await startOrigin(handler, host);
  origins.push(o);
  return o;
}

/** A resolver that answers from a table and records the names asked (no real DNS). */
function tableLookup(table: Record<string, string | string[]>): LookupFunction & { asked: string[] } {
  const asked: string[] = [];
  const fn = ((hostname: string, options: { all?: boolean }, callback: (err: NodeJS.ErrnoException | null, address: unknown, family?: number) => void) => {
    asked.push(hostname);
    const entry = table[hostname];
    if (entry === undefined) {
      const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      process.nextTick(callback, error, '', 0);
      return;
    }
    const list = (Array.isArray(entry) ? entry : [entry]).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const first = list[0]!;
    if (options.all) process.nextTick(callback, null, list);
    else process.nextTick(callback, null, first.address, first.family);
  }) as unknown as LookupFunction & { asked: string[] };
  fn.asked = asked;
  return fn;
}

async function expectStreamError(stream: NodeJS.ReadableStream): Promise<FetchError> {
  try {
    await readAll(stream);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchError);
    return error as FetchError;
  }
  throw new Error('stream ended without error');
}

async function expectOpenError(promise: Promise<unknown>): Promise<FetchError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(FetchError);
    return error as FetchError;
  }
  throw new Error('openBody resolved');
}

afterAll(async () => {
  for (const f of opened) f.close();
  await Promise.all(origins.map((o) => o.close()));
});

describe('probe', () => {
  it('uses HEAD when it gives a length, with metadata', async () => {
    const body = bytes(1234);
    const o = await origin(
      fileHandler(body, {
        etag: '"v1"',
        'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT',
        'content-disposition': 'attachment; filename="report.pdf"',
      }),
    );
    const result = await fetcher().probe(`${o.base}/files/a.bin`);
    expect(result).toEqual({
      ok: true,
      size: 1234,
      finalUrl: `${o.base}/files/a.bin`,
      etag: '"v1"',
      lastModified: 'Wed, 21 Oct 2015 07:28:00 GMT',
      contentDisposition: 'attachment; filename="report.pdf"',
      acceptRanges: true,
    });
    expect(o.requests.map((r) => r.method)).toEqual(['HEAD']);
    expect(o.requests[0]?.headers['user-agent']).toBe('ap-fetch-test');
  });

  it('falls back to GET Range: bytes=0-0 when HEAD answers 405', async () => {
    const file = fileHandler(bytes(5000), { 'content-disposition': "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt" });
    const o = await origin((req, res, origin) => {
      if (req.method === 'HEAD') {
        res.writeHead(405, { allow: 'GET' });
        res.end();
        return;
      }
      file(req, res, origin);
    });
    const result = await fetcher().probe(`${o.base}/x`);
    expect(result).toMatchObject({ ok: true, size: 5000, acceptRanges: true, contentDisposition: "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt" });
    expect(o.requests.map((r) => `${r.method} ${r.headers.range ?? ''}`)).toEqual(['HEAD ', 'GET bytes=0-0']);
  });

  it('falls back when HEAD has no Content-Length, or claims 0, or fails with 501', async () => {
    for (const head of ['no-length', 'zero', '501'] as const) {
      const file = fileHandler(bytes(777));
      const o = await origin((req, res, origin) => {
        if (req.method === 'HEAD') {
          if (head === '501') res.writeHead(501);
          else if (head === 'zero') res.writeHead(200, { 'content-length': 0 });
          else res.writeHead(200, { 'transfer-encoding': 'chunked' });
          res.end();
          return;
        }
        file(req, res, origin);
      });
      const result = await fetcher().probe(`${o.base}/x`);
      expect(result).toMatchObject({ ok: true, size: 777 });
      expect(o.requests.map((r) => r.method)).toEqual(['HEAD', 'GET']);
    }
  });

  it('takes the length of a 200 when the origin ignores Range, without downloading the body', async () => {
    const total = 64 * 1024 * 1024;
    let sent = 0;
    let finished = false;
    let closed!: () => void;
    const serverClosed = new Promise<void>((resolve) => (closed = resolve));
    const chunk = Buffer.alloc(64 * 1024, 1);
    const o = await origin((req, res) => {
      if (req.method === 'HEAD') {
        res.writeHead(405);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-length': total });
      res.on('close', () => {
        finished = res.writableFinished;
        closed();
      });
      const pump = (): void => {
        while (sent < total && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (sent >= total) res.end();
      };
      pump();
    });
    const result = await fetcher().probe(`${o.base}/big`);
    expect(result).toMatchObject({ ok: true, size: total, acceptRanges: false });
    await serverClosed;
    expect(finished).toBe(false); // the transfer was cut
    expect(sent).toBeLessThan(total / 4);
  });

  it('reports size null when nothing tells it (chunked, no length)', async () => {
    const o = await origin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.method === 'HEAD') return void res.end();
      res.write('some ');
      res.end('streamed text');
    });
    const result = await fetcher().probe(`${o.base}/stream`);
    expect(result).toMatchObject({ ok: true, size: null, acceptRanges: false, contentType: 'text/plain' });
  });

  it('reports size null for Content-Range: bytes 0-0/*', async () => {
    const o = await origin((req, res) => {
      if (req.method === 'HEAD') return void res.writeHead(405).end();
      res.writeHead(206, { 'content-range': 'bytes 0-0/*', 'content-length': 1 });
      res.end('x');
    });
    expect(await fetcher().probe(`${o.base}/`)).toMatchObject({ ok: true, size: null, acceptRanges: true });
  });

  it('reads an empty file from a 416 with Content-Range: bytes */0', async () => {
    const o = await origin(fileHandler(Buffer.alloc(0)));
    expect(await fetcher().probe(`${o.base}/empty`)).toMatchObject({ ok: true, size: 0 });
    expect(o.requests.map((r) => r.method)).toEqual(['HEAD', 'GET']);
  });

  it('returns the HTTP status as the error, not retried for 404', async () => {
    const o = await origin((_req, res) => void res.writeHead(404).end());
    const result = await fetcher().probe(`${o.base}/missing`);
    expect(result).toMatchObject({ ok: false, error: 'HTTP 404 Not Found' });
    expect(o.requests.map((r) => r.method)).toEqual(['HEAD', 'GET']); // the GET is not repeated
  });

  it('follows redirects (relative and absolute) and reports the final URL', async () => {
    const body = bytes(300);
    const o = await origin((req, res, origin) => {
      const m = /^\/r\/(\d+)$/.exec(req.url ?? '');
      if (m) {
        const n = Number(m[1]);
        const next = n === 0 ? '/file' : `/r/${n - 1}`;
        res.writeHead(302, { location: n % 2 ? next : `${origin.base}${next}` });
        return void res.end();
      }
      fileHandler(body)(req, res, origin);
    });
    const f = fetcher();
    expect(await f.probe(`${o.base}/r/4`)).toMatchObject({ ok: true, size: 300, finalUrl: `${o.base}/file` }); // 5 redirects
    const opened = await f.openBody(`${o.base}/r/4`);
    expect(opened.finalUrl).toBe(`${o.base}/file`);
    expect((await readAll(opened.stream)).equals(body)).toBe(true);

    const tooMany = await f.probe(`${o.base}/r/5`); // 6 redirects
    expect(tooMany).toMatchObject({ ok: false, error: 'too many redirects (more than 5)' });
    const error = await expectOpenError(f.openBody(`${o.base}/r/5`));
    expect(error.userMessage).toBe('too many redirects (more than 5)');
  });

  it('refuses redirects to other protocols', async () => {
    for (const location of ['ftp://example.com/file', 'file:///etc/passwd', 'data:text/plain,hello']) {
      const o = await origin((_req, res) => void res.writeHead(302, { location }).end());
      const result = await fetcher().probe(`${o.base}/`);
      expect(result).toMatchObject({ ok: false, error: `unsupported protocol ${new URL(location).protocol}` });
    }
  });
});

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

describe('openBody', () => {
  const body = bytes(100_000, 7);

  it('streams the whole body with metadata, reusing one keep-alive connection', async () => {
    const o = await origin(fileHandler(body, { 'content-disposition': 'attachment; filename="data.bin"', etag: '"abc"' }));
    const f = fetcher();
    for (let i = 0; i < 3; i++) {
      const opened = await f.openBody(`${o.base}/data`, { expectedSize: body.length, ifMatch: '"abc"' });
      expect(opened).toMatchObject({
        status: 200,
        size: body.length,
        totalSize: body.length,
        rangeHonoured: true,
        contentDisposition: 'attachment; filename="data.bin"',
        etag: '"abc"',
        attempts: 1,
      });
      expect((await readAll(opened.stream)).equals(body)).toBe(true);
    }
    expect(o.requests[0]?.headers['if-match']).toBe('"abc"');
    expect(o.connections).toBe(1);
  });

  it('returns exactly the requested range', async () => {
    const o = await origin(fileHandler(body));
    const opened = await fetcher().openBody(`${o.base}/data`, { range: { start: 1000, end: 50_999 }, expectedSize: body.length });
    expect(opened).toMatchObject({ status: 206, size: 50_000, totalSize: body.length, rangeHonoured: true });
    expect((await readAll(opened.stream)).equals(body.subarray(1000, 51_000))).toBe(true);
    expect(o.requests[0]?.headers.range).toBe('bytes=1000-50999');
  });

  it('says so when the server ignores the range', async () => {
    const o = await origin((_req, res) => void res.writeHead(200, { 'content-length': body.length }).end(body));
    const opened = await fetcher().openBody(`${o.base}/data`, { range: { start: 10, end: 19 } });
    expect(opened).toMatchObject({ status: 200, rangeHonoured: false, size: body.length });
    opened.stream.destroy();
  });

  it('refuses a different range than asked', async () => {
    const o = await origin((_req, res) => void res.writeHead(206, { 'content-range': `bytes 0-9/${body.length}`, 'content-length': 10 }).end(body.subarray(0, 10)));
    const error = await expectOpenError(fetcher().openBody(`${o.base}/data`, { range: { start: 10, end: 19 } }));
    expect(error.kind).toBe('range');
  });

  it('errors on a body shorter than its Content-Length', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-length': 1000 });
      res.write(Buffer.alloc(500, 1), () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const opened = await fetcher().openBody(`${o.base}/short`);
    expect(opened.size).toBe(1000);
    const error = await expectStreamError(opened.stream);
    expect(error.userMessage).toBe('body shorter than declared length (500 of 1000 bytes)');
    expect(error.kind).toBe('length');
  });

  it('errors on a chunked body shorter or longer than the expected size', async () => {
    const o = await origin((req, res) => {
      res.writeHead(200, { 'transfer-encoding': 'chunked' });
      res.write(Buffer.alloc(600, 1));
      res.end(Buffer.alloc(req.url === '/long' ? 900 : 100, 2));
    });
    const f = fetcher();
    const long = await f.openBody(`${o.base}/long`, { expectedSize: 1000 });
    expect(long.size).toBe(1000);
    expect((await expectStreamError(long.stream)).userMessage).toBe('body longer than expected size (more than 1000 bytes)');
    const short = await f.openBody(`${o.base}/short`, { expectedSize: 1000 });
    expect((await expectStreamError(short.stream)).userMessage).toBe('body shorter than expected size (700 of 1000 bytes)');
    const exact = await f.openBody(`${o.base}/short`, { expectedSize: 700 });
    expect((await readAll(exact.stream)).length).toBe(700);
  });

  it('errors on a 206 without length that overruns the requested range', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(206, { 'content-range': 'bytes 0-99/1000', 'transfer-encoding': 'chunked' });
      res.end(Buffer.alloc(150));
    });
    const opened = await fetcher().openBody(`${o.base}/r`, { range: { start: 0, end: 99 } });
    expect((await expectStreamError(opened.stream)).userMessage).toBe('body longer than the requested range (more than 100 bytes)');
  });

  it('errors at open when the declared size differs from the probed one', async () => {
    const o = await origin(fileHandler(body));
    const error = await expectOpenError(fetcher().openBody(`${o.base}/data`, { expectedSize: 5 }));
    expect(error.kind).toBe('changed');
    expect(error.userMessage).toBe(`file changed since it was probed (size ${body.length} bytes, expected 5)`);
    const ranged = await expectOpenError(fetcher().openBody(`${o.base}/data`, { range: { start: 0, end: 1 }, expectedSize: 5 }));
    expect(ranged.kind).toBe('changed');
  });

  it('reports a 412 for If-Match as changed', async () => {
    const o = await origin((_req, res) => void res.writeHead(412).end());
    const error = await expectOpenError(fetcher().openBody(`${o.base}/x`, { ifMatch: '"old"' }));
    expect(error.userMessage).toBe('file changed since it was probed (ETag no longer matches)');
    expect(o.requests).toHaveLength(1);
  });

  it('pipes through stream.pipeline', async () => {
    const o = await origin(fileHandler(body));
    const opened = await fetcher().openBody(`${o.base}/data`);
    let n = 0;
    await pipeline(
      opened.stream,
      new Writable({
        write(chunk: Buffer, _e, cb) {
          n += chunk.length;
          cb();
        },
      }),
    );
    expect(n).toBe(body.length);
  });
});

describe('retries', () => {
  it('retries a 503 and succeeds', async () => {
    let calls = 0;
    const o = await origin((_req, res) => {
      calls++;
      if (calls === 1) return void res.writeHead(503).end('busy');
      res.end('ok');
    });
    const opened = await fetcher().openBody(`${o.base}/`);
    expect(opened.attempts).toBe(2);
    expect((await readAll(opened.stream)).toString()).toBe('ok');
    expect(o.requests).toHaveLength(2);
  });

  it('gives up after 3 retries of a 500', async () => {
    const o = await origin((_req, res) => void res.writeHead(500).end());
    const error = await expectOpenError(fetcher().openBody(`${o.base}/`));
    expect(error.userMessage).toBe('HTTP 500 Internal Server Error');
    expect(error.attempts).toBe(4);
    expect(o.requests).toHaveLength(4);
  });

  it('does not retry a 404', async () => {
    const o = await origin((_req, res) => void res.writeHead(404).end());
    const error = await expectOpenError(fetcher().openBody(`${o.base}/`));
    expect(error.userMessage).toBe('HTTP 404 Not Found');
    expect(error.retryable).toBe(false);
    expect(o.requests).toHaveLength(1);
  });

  it('honours Retry-After on a 429', async () => {
    const times: number[] = [];
    const o = await origin((_req, res) => {
      times.push(Date.now());
      if (times.length === 1) return void res.writeHead(429, { 'retry-after': '1' }).end();
      res.end('ok');
    });
    const opened = await fetcher().openBody(`${o.base}/`);
    expect((await readAll(opened.stream)).toString()).toBe('ok');
    expect(times).toHaveLength(2);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(950);
  });

  it('does not wait for a Retry-After beyond the cap', async () => {
    const o = await origin((_req, res) => void res.writeHead(429, { 'retry-after': '3600' }).end());
    const error = await expectOpenError(fetcher({ retryAfterCapMs: 10_000 }).openBody(`${o.base}/`));
    expect(error.userMessage).toBe('HTTP 429 Too Many Requests');
    expect(error.retryAfterMs).toBe(3_600_000);
    expect(o.requests).toHaveLength(1);
  });

  it('reports a refused connection after retrying', async () => {
    const port = await freePort();
    const error = await expectOpenError(fetcher().openBody(`http://127.0.0.1:${port}/`));
    expect(error.userMessage).toBe('connection refused');
    expect(error.attempts).toBe(4);
    expect(await fetcher({ retries: 0 }).probe(`http://127.0.0.1:${port}/`)).toMatchObject({ ok: false, error: 'connection refused' });
  });

  it('retries a connection reset before the response', async () => {
    let calls = 0;
    const o = await origin((req, res) => {
      calls++;
      if (calls === 1) return void req.socket.destroy();
      res.end('ok');
    });
    const opened = await fetcher().openBody(`${o.base}/`);
    expect((await readAll(opened.stream)).toString()).toBe('ok');
    expect(opened.attempts).toBe(2);
  });

  it('continues a body cut midway from its last byte, and errors once the retries are spent', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-length': 1000 });
      res.write(Buffer.alloc(100), () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const opened = await fetcher({ retries: 2 }).openBody(`${o.base}/`);
    const error = await expectStreamError(opened.stream);
    expect(error.userMessage).toMatch(/connection|shorter/);
    // The first GET, then two continuations from byte 100 (the origin ignores Range: the
    // whole body again, its first 100 bytes skipped, cut again before byte 200).
    expect(o.requests.map((r) => r.headers.range)).toEqual([undefined, 'bytes=100-999', 'bytes=100-999']);
  });
});

describe('timeouts', () => {
  it('times out a server that never answers', async () => {
    const o = await origin(() => {});
    const started = Date.now();
    const error = await expectOpenError(fetcher({ idleTimeoutMs: 300, retries: 1 }).openBody(`${o.base}/`));
    expect(error.userMessage).toBe('timed out after 0.3 s (no response)');
    expect(error.retryable).toBe(true);
    expect(error.attempts).toBe(2);
    expect(Date.now() - started).toBeLessThan(3000);
    // A probe counts its HEAD as the first attempt: HEAD + one GET here.
    const probe = await fetcher({ idleTimeoutMs: 300, retries: 1 }).probe(`${o.base}/`);
    expect(probe).toMatchObject({ ok: false, error: 'timed out after 0.3 s (no response)' });
    if (!probe.ok) expect(probe.cause.attempts).toBe(2);
    expect(o.requests.map((r) => r.method)).toEqual(['GET', 'GET', 'HEAD', 'GET']);
  });

  it('times out a body that stalls', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-length': 1000 });
      res.write(Buffer.alloc(100));
    });
    const opened = await fetcher({ idleTimeoutMs: 300 }).openBody(`${o.base}/`);
    const error = await expectStreamError(opened.stream);
    expect(error.userMessage).toBe('timed out after 0.3 s (no data mid-body)');
    expect(error.url).toBe(`${o.base}/`);
  });

  it('times out a DNS lookup that hangs', async () => {
    const hang = (() => {}) as unknown as LookupFunction;
    const result = await fetcher({ connectTimeoutMs: 200, retries: 0, lookup: hang }).probe('http://slow.test/');
    expect(result).toMatchObject({ ok: false, error: 'timed out after 0.2 s (DNS lookup)' });
    if (!result.ok) expect(result.cause.attempts).toBe(1); // the HEAD was the only attempt allowed
  });

  it('reports an unknown host without retrying', async () => {
    const lookup = tableLookup({});
    const result = await fetcher({ lookup }).probe('http://nowhere.test/');
    expect(result).toMatchObject({ ok: false, error: 'host not found' });
    expect(lookup.asked).toEqual(['nowhere.test']);
  });

  it('cancels with an AbortSignal', async () => {
    const o = await origin(() => {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await expectOpenError(fetcher().openBody(`${o.base}/`, { signal: controller.signal }));
    expect(error.userMessage).toBe('cancelled');
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

describe('invalid input', () => {
  let f: Fetcher;
  beforeAll(() => {
    f = fetcher();
  });
  it('rejects unparsable URLs and other protocols', async () => {
    expect(await f.probe('not a url')).toMatchObject({ ok: false, error: 'invalid URL' });
    expect(await f.probe('ftp://example.com/x')).toMatchObject({ ok: false, error: 'unsupported protocol ftp:' });
    expect((await expectOpenError(f.openBody('file:///etc/passwd'))).userMessage).toBe('unsupported protocol file:');
  });
});

describe('error messages a user reads', () => {
  it('say what happened in words, never a bare error code, for failures got wraps as ERR_GOT_REQUEST_ERROR', async () => {
    const o = await origin((_req, res) => void res.end('never reached'));
    // Resolvers failing with errors that carry no code (got then wraps them with its generic code).
    const failing = (make: () => Error) =>
      ((_hostname: string, _options: unknown, callback: (err: Error) => void) => process.nextTick(callback, make())) as unknown as LookupFunction;
    const cases: [string, () => Error, RegExp][] = [
      ['a plain Error', () => new Error('resolver exploded'), /^request failed \(an unexpected error in the HTTP client\)$/],
      ['an error wrapping a refused connection', () => new Error('wrapped', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }), /^connection refused$/],
      ['an error wrapping an unknown host', () => new Error('wrapped', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }) }), /^host not found$/],
    ];
    for (const [what, make, expected] of cases) {
      const f = fetcher({ lookup: failing(make), retries: 0 });
      const probed = await f.probe(`http://name.test:${o.port}/x`);
      expect({ what, ok: probed.ok }).toEqual({ what, ok: false });
      if (!probed.ok) {
        expect({ what, error: probed.error }).toEqual({ what, error: expect.stringMatching(expected) });
        expect(probed.error).not.toMatch(/ERR_|\bE[A-Z]{4,}\b/);
      }
      const error = await expectOpenError(f.openBody(`http://name.test:${o.port}/x`));
      expect(error.userMessage).toMatch(expected);
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
      // A body in flight still follows the signal.
      const inFlight = await f.openBody(`${o.base}/a`, { signal: bin.signal });
      expect(listeners()).toBe(1);
      bin.abort();
      await expect(readAll(inFlight.stream)).rejects.toThrow();
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
