import { describe, it, expect, afterAll } from '@jest/globals';
import type http from 'node:http';
import { createFetcher, type Fetcher, type FetcherOptions } from './fetcher';
import { FetchError } from './errors';
import type { BodyStream } from './body';
import { bytes, readAll, startOrigin, type TestOrigin } from './testing';

const opened: Fetcher[] = [];
const origins: TestOrigin[] = [];

function fetcher(overrides: Partial<FetcherOptions> = {}): Fetcher {
  const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 2000, retryBaseDelayMs: 5, userAgent: 'ap-fetch-test', ...overrides });
  opened.push(f);
  return f;
}

afterAll(async () => {
  for (const f of opened) f.close();
  await Promise.all(origins.map((o) => o.close()));
});

interface Misbehaviour {
  /** The first GET sends this many bytes, then: */
  cutAt?: number;
  /** 'reset' closes the connection; 'stall' sends nothing more (and keeps it open). */
  how?: 'reset' | 'stall';
  /** The object's ETag / Last-Modified; `changeAfterFirst` gives the later requests a new one. */
  etag?: string;
  lastModified?: string;
  changeAfterFirst?: boolean;
  /** Answers Range with the whole body (200). */
  noRanges?: boolean;
}

/** A file server honouring Range, If-Match and If-Range, whose first GET misbehaves. */
async function misbehavingOrigin(body: Buffer, m: Misbehaviour): Promise<TestOrigin> {
  let gets = 0;
  const o = await startOrigin((req: http.IncomingMessage, res: http.ServerResponse) => {
    gets++;
    const changed = m.changeAfterFirst && gets > 1;
    const etag = m.etag && (changed ? `"${m.etag.replace(/"/g, '')}-2"` : m.etag);
    const lastModified = m.lastModified && (changed ? new Date(Date.parse(m.lastModified) + 1000).toUTCString() : m.lastModified);
    const headers: Record<string, string | number> = { 'accept-ranges': m.noRanges ? 'none' : 'bytes' };
    if (etag) headers.etag = etag;
    if (lastModified) headers['last-modified'] = lastModified;
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch !== etag) return void res.writeHead(412).end();
    const ifRange = req.headers['if-range'];
    const rangeOk = !m.noRanges && (ifRange === undefined || ifRange === etag || ifRange === lastModified);
    const r = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (r && rangeOk) {
      const start = Number(r[1]);
      const end = Number(r[2]);
      res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${body.length}` });
      if (gets === 1 && m.cutAt !== undefined) return void res.write(body.subarray(start, start + m.cutAt), () => setTimeout(() => res.socket?.destroy(), 10));
      return void res.end(body.subarray(start, end + 1));
    }
    res.writeHead(200, { ...headers, 'content-length': body.length });
    if (gets === 1 && m.cutAt !== undefined) {
      res.write(body.subarray(0, m.cutAt), () => {
        if (m.how !== 'stall') setTimeout(() => res.socket?.destroy(), 10);
      });
      return;
    }
    res.end(body);
  });
  origins.push(o);
  return o;
}

describe('a body cut midway', () => {
  const body = bytes(400_000, 7);

  it('is continued with a ranged GET from the last byte, If-Match on the ETag', async () => {
    const o = await misbehavingOrigin(body, { cutAt: 200_000, etag: '"v1"' });
    const got = await fetcher().openBody(`${o.base}/f`);
    expect((await readAll(got.stream)).equals(body)).toBe(true);
    expect(o.requests).toHaveLength(2);
    expect(o.requests[1]!.headers).toMatchObject({ range: 'bytes=200000-399999', 'if-match': '"v1"' });
    expect((got.stream as BodyStream).continuations).toBe(1);
  });

  it('is continued after an idle stall', async () => {
    const o = await misbehavingOrigin(body, { cutAt: 150_000, how: 'stall', etag: '"v1"' });
    const started = Date.now();
    const got = await fetcher({ idleTimeoutMs: 300 }).openBody(`${o.base}/f`);
    expect((await readAll(got.stream)).equals(body)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(o.requests[1]!.headers.range).toBe('bytes=150000-399999');
  });

  it('continues a requested range within that range', async () => {
    const o = await misbehavingOrigin(body, { cutAt: 100_000, etag: '"v1"' });
    const part = await fetcher().openBody(`${o.base}/f`, { range: { start: 1000, end: 300_999 } });
    expect((await readAll(part.stream)).equals(body.subarray(1000, 301_000))).toBe(true);
    expect(o.requests.map((r) => r.headers.range)).toEqual(['bytes=1000-300999', 'bytes=101000-300999']);
  });

  it('is an error, not spliced bytes, when the object changed (If-Match answers 412)', async () => {
    const o = await misbehavingOrigin(body, { cutAt: 200_000, etag: '"v1"', changeAfterFirst: true });
    const got = await fetcher().openBody(`${o.base}/f`);
    const error = await readAll(got.stream).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    expect((error as FetchError).kind).toBe('changed');
    expect(o.requests).toHaveLength(2); // a changed object is not retried
  });

  it('uses If-Range on Last-Modified without an ETag: a changed object (200) is an error', async () => {
    const lastModified = new Date(Date.UTC(2026, 0, 1)).toUTCString();
    const same = await misbehavingOrigin(body, { cutAt: 100_000, lastModified });
    const ok = await fetcher().openBody(`${same.base}/f`);
    expect((await readAll(ok.stream)).equals(body)).toBe(true);
    expect(same.requests[1]!.headers['if-range']).toBe(lastModified);

    const changed = await misbehavingOrigin(body, { cutAt: 100_000, lastModified, changeAfterFirst: true });
    const bad = await fetcher().openBody(`${changed.base}/f`);
    const error = (await readAll(bad.stream).catch((e: unknown) => e)) as FetchError;
    expect(error.kind).toBe('changed');
  });

  it('skips the bytes already received when the origin ignores Range', async () => {
    const o = await misbehavingOrigin(body, { cutAt: 123_457, etag: '"v1"', noRanges: true });
    const got = await fetcher().openBody(`${o.base}/f`);
    expect((await readAll(got.stream)).equals(body)).toBe(true);
    expect(o.requests).toHaveLength(2);
  });

  it('a body held back unread is closed before it can time out and continued when read, uncharged', async () => {
    const o = await misbehavingOrigin(body, { etag: '"v1"' });
    const got = await fetcher({ idleTimeoutMs: 200 }).openBody(`${o.base}/f`);
    const stream = got.stream as BodyStream;
    // Nobody reads for 4 idle timeouts: the buffer fills and the connection is let go.
    stream.pause();
    await new Promise((r) => setTimeout(r, 800));
    expect(stream.received).toBeLessThan(body.length);
    expect((await readAll(stream)).equals(body)).toBe(true);
    expect(stream.continuations).toBe(0);
    expect(o.requests.length).toBe(2);
    expect(o.requests[1]!.headers.range).toBe(`bytes=${o.requests[1]!.headers.range!.split('=')[1]!.split('-')[0]}-399999`);
  });
});

describe('a body whose signal aborts', () => {
  const body = bytes(400_000, 13);
  /** Resolves with the error the stream ends with, or null if it has none within `ms`. */
  const errorWithin = (stream: BodyStream, ms: number) =>
    new Promise<Error | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), ms);
      stream.once('error', (err) => {
        clearTimeout(timer);
        resolve(err);
      });
    });

  // A body with nothing in flight (all of it read ahead, or its connection let go while held)
  // has no request to carry the abort: unless the body itself listens, whoever waits on it
  // (a packer whose upload failed) waits for ever.
  it('errors at once when all of it is buffered and no request is open', async () => {
    const o = await misbehavingOrigin(body, { etag: '"v1"' });
    const abort = new AbortController();
    const stream = (await fetcher({ idleTimeoutMs: 30_000 }).openBody(`${o.base}/f`, { signal: abort.signal })).stream as BodyStream;
    stream.readAhead = body.length;
    stream.pause();
    for (let waited = 0; !stream.fetched && waited < 5000; waited += 5) {
      stream.read(stream.readableLength + 1);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(stream.fetched).toBe(true);
    abort.abort(new Error('the upload failed'));
    const err = await errorWithin(stream, 1000);
    expect(err).toBeInstanceOf(FetchError);
    expect((err as FetchError).kind).toBe('aborted');
  });

  it('errors at once when its held connection was let go (parked)', async () => {
    const o = await misbehavingOrigin(body, { etag: '"v1"' });
    const abort = new AbortController();
    const stream = (await fetcher({ idleTimeoutMs: 200 }).openBody(`${o.base}/f`, { signal: abort.signal })).stream as BodyStream;
    stream.pause();
    await new Promise((r) => setTimeout(r, 800));
    expect(stream.received).toBeLessThan(body.length);
    expect(stream.requests).toBe(0);
    abort.abort(new Error('the upload failed'));
    const err = await errorWithin(stream, 1000);
    expect((err as FetchError).kind).toBe('aborted');
    expect(o.requests).toHaveLength(1);
  });
});

describe('reading a body read ahead', () => {
  const body = bytes(2_000_000, 11);

  it('hands over the buffered chunks one at a time, as they came, not joined into one new buffer', async () => {
    const o = await misbehavingOrigin(body, { etag: '"v1"' });
    const stream = (await fetcher({ idleTimeoutMs: 30_000 }).openBody(`${o.base}/f`)).stream as BodyStream;
    const arrived: Buffer[] = [];
    const push = stream.push.bind(stream);
    stream.push = (chunk: Buffer | null) => (chunk && arrived.push(chunk), push(chunk));
    stream.readAhead = body.length;
    stream.pause();
    for (let waited = 0; !stream.fetched && waited < 5000; waited += 5) {
      // Asks for more without taking any (the source may have paused at the high-water mark).
      stream.read(stream.readableLength + 1);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(stream.readableLength).toBe(body.length);
    // A partial read first: the rest of that chunk comes next, then the others whole.
    const head = stream.read(100) as Buffer;
    const read: Buffer[] = [head];
    for await (const chunk of stream as AsyncIterable<Buffer>) read.push(chunk);
    expect(Buffer.concat(read).equals(body)).toBe(true);
    expect(arrived.length).toBeGreaterThan(1);
    expect(read.map((c) => c.length)).toEqual([100, arrived[0]!.length - 100, ...arrived.slice(1).map((c) => c.length)]);
    // The very buffers that arrived (views on their memory), not copies.
    read.slice(2).forEach((chunk, i) => expect(chunk.buffer).toBe(arrived[i + 1]!.buffer));
  });
});
