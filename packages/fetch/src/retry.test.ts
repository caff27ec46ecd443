// The retry loop (retry.ts) and the timeouts a retry follows.
import { describe, it, expect, afterAll } from '@jest/globals';
import { type LookupFunction } from './guard';
import { expectOpenError, expectStreamError, fetchHarness, tableLookup } from './testing-fetcher';
import { bytes, freePort, readAll } from './testing';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);

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
