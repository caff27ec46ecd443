// Opening a body (open-body.ts): ranges, lengths, validators.
import { describe, it, expect, afterAll } from '@jest/globals';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { expectOpenError, expectStreamError, fetchHarness } from './testing-fetcher';
import { bytes, fileHandler, readAll } from './testing';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);

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
