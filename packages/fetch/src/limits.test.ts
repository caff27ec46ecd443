import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from '@jest/globals';
import { FetchError } from './errors';
import { createFetcher, type Fetcher } from './fetcher';
import { RateWindow, TOO_SLOW } from './limits';
import { readAll, startOrigin, type TestOrigin } from './testing';

describe('RateWindow', () => {
  const rate = { bytes: 100, windowMs: 1000 };

  it('says nothing before a whole window has passed', () => {
    const w = new RateWindow(rate);
    expect(w.sample(0, 0, false)).toBeNull();
    expect(w.sample(999, 10, false)).toBeNull();
    expect(w.sample(1000, 10, false)).toBe(10);
  });

  it('judges every window, sliding, not only the first', () => {
    const w = new RateWindow(rate);
    const seen: Array<number | null> = [];
    // 500 bytes in the first second, then 10 bytes a second.
    const received = [0, 250, 500, 505, 510, 515, 520];
    received.forEach((bytes, i) => seen.push(w.sample(i * 500, bytes, false)));
    expect(seen).toEqual([null, null, null, null, 10, 10, 10]);
  });

  it('does not count time when we were the slow side', () => {
    const w = new RateWindow(rate);
    expect(w.sample(0, 0, false)).toBeNull();
    expect(w.sample(900, 0, true)).toBeNull();
    expect(w.sample(1500, 0, false)).toBeNull();
    expect(w.sample(1900, 5, false)).toBe(5);
  });
});

describe('a fetcher with a minimum rate', () => {
  const origins: TestOrigin[] = [];
  const fetchers: Fetcher[] = [];
  afterAll(async () => {
    for (const f of fetchers) f.close();
    await Promise.all(origins.map((o) => o.close()));
  });
  const fetcher = () => {
    const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 5000, retries: 1, retryBaseDelayMs: 5, userAgent: 'ap-test', minRate: { bytes: 1024, windowMs: 600 } });
    fetchers.push(f);
    return f;
  };

  it('cuts a body that trickles (one byte every 50 ms) with "origin too slow", after its retry', async () => {
    const o = await startOrigin((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const timer = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(timer));
    });
    origins.push(o);
    const started = Date.now();
    const opened = await fetcher().openBody(`${o.base}/slow`);
    const error = await readAll(opened.stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    expect((error as FetchError).userMessage).toBe(TOO_SLOW);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('leaves a fast body alone while its reader is the slow side', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 7);
    const o = await startOrigin((_req, res) => void res.writeHead(200, { 'content-length': String(body.length) }).end(body));
    origins.push(o);
    const opened = await fetcher().openBody(`${o.base}/fast`);
    // Nobody reads for two windows: the bytes wait in our buffers, the origin is not to blame.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await readAll(opened.stream)).length).toBe(body.length);
  });

  it('lets go of a body read to its end at once, not a window later (got does not destroy its stream)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const o = await startOrigin((_req, res) => void res.writeHead(200, { 'content-length': '4096' }).end(Buffer.alloc(4096)));
    origins.push(o);
    const f = fetcher();
    const refs: WeakRef<object>[] = [];
    const readOne = async (i: number) => {
      const opened = await f.openBody(`${o.base}/f${i}`);
      refs.push(new WeakRef(opened.stream));
      return (await readAll(opened.stream)).length;
    };
    for (let i = 0; i < 5; i++) expect(await readOne(i)).toBe(4096);
    await new Promise((r) => setTimeout(r, 10));
    gc();
    expect(refs.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });
});
