// Probing sizes (probe.ts): HEAD, the ranged GET fallback, redirects.
import { describe, it, expect, afterAll } from '@jest/globals';
import { expectOpenError, fetchHarness } from './testing-fetcher';
import { bytes, fileHandler, readAll } from './testing';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);

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
