import { describe, it, expect, afterAll } from '@jest/globals';
import type http from 'node:http';
import { FetchAhead, SharedBudget } from './ahead';
import { createFetcher, type Fetcher, type OpenedBody } from './fetcher';
import { FetchError } from './errors';
import { bytes, readAll, startOrigin, type TestOrigin } from './testing';

const fetchers: Fetcher[] = [];
const origins: TestOrigin[] = [];

function fetcher(idleTimeoutMs = 5000, retries = 3): Fetcher {
  const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs, retries, retryBaseDelayMs: 5, userAgent: 'ap-ahead-test' });
  fetchers.push(f);
  return f;
}

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(origins.map((o) => o.close()));
});

interface SlowOrigin extends TestOrigin {
  /** Most requests being answered at once. */
  maxInFlight: number;
  /** Requests being answered (this one included) as each arrived. */
  arrivals: number[];
  /** Responses whose connection closed before their body was sent whole. */
  abandoned: number;
  inFlight: number;
}

/**
 * Answers `/<index>` after `delayMs`, sending `files[index]` in 16 KiB pieces `pieceMs` apart,
 * with an ETag and Range support; `/<index>` listed in `cutForGood` always stops at half.
 */
async function slowOrigin(files: Buffer[], opts: { delayMs: number; pieceMs: number; cutForGood?: number[]; noRanges?: boolean }): Promise<SlowOrigin> {
  const state = { maxInFlight: 0, abandoned: 0, inFlight: 0, arrivals: [] as number[] };
  const o = await startOrigin((req: http.IncomingMessage, res: http.ServerResponse) => {
    const index = Number(req.url!.slice(1));
    const whole = files[index]!;
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    state.arrivals.push(state.inFlight);
    // In flight from the request's arrival until its last byte is sent (the client may reuse its
    // slot as soon as it has read that byte), or until its connection closes unfinished.
    let done = false;
    const finish = () => {
      done = true;
      state.inFlight--;
    };
    res.once('close', () => {
      if (done) return;
      state.inFlight--;
      state.abandoned++;
    });
    const r = opts.noRanges ? null : /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const start = r ? Number(r[1]) : 0;
    const end = r ? Number(r[2]) + 1 : whole.length;
    const body = whole.subarray(start, end);
    const cutAt = opts.cutForGood?.includes(index) ? Math.floor(body.length / 2) : body.length;
    setTimeout(() => {
      const headers: Record<string, string | number> = { 'content-length': body.length, etag: `"f${index}"`, 'accept-ranges': opts.noRanges ? 'none' : 'bytes' };
      if (r) headers['content-range'] = `bytes ${start}-${end - 1}/${whole.length}`;
      res.writeHead(r ? 206 : 200, headers);
      let at = 0;
      const send = () => {
        if (res.destroyed) return;
        if (at >= cutAt) {
          if (cutAt < body.length) return void res.destroy();
          finish();
          return void res.end();
        }
        const piece = body.subarray(at, Math.min(at + 16 * 1024, cutAt));
        at += piece.length;
        if (at === body.length) {
          finish();
          return void res.end(piece);
        }
        res.write(piece);
        setTimeout(send, opts.pieceMs);
      };
      send();
    }, opts.delayMs);
  });
  Object.defineProperties(o, {
    maxInFlight: { get: () => state.maxInFlight },
    abandoned: { get: () => state.abandoned },
    inFlight: { get: () => state.inFlight },
    arrivals: { get: () => state.arrivals },
  });
  origins.push(o);
  return o as SlowOrigin;
}

function aheadOver(f: Fetcher, base: string, files: Buffer[], options: { concurrency: number; budgetBytes: number; shared?: SharedBudget }) {
  return new FetchAhead<OpenedBody>(
    files.map((file, i) => ({ size: file.length, open: () => f.openBody(`${base}/${i}`, { expectedSize: file.length }) })),
    (opened) => opened.stream,
    { ...options, measure: true },
  );
}

const KiB = 1024;

describe('FetchAhead against a slow origin', () => {
  it('keeps archive order and runs requests concurrently', async () => {
    const files = Array.from({ length: 24 }, (_, i) => bytes((i % 3 === 0 ? 40 : 3) * KiB + i, i + 1));
    const o = await slowOrigin(files, { delayMs: 40, pieceMs: 2 });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: 6, budgetBytes: 4 << 20 });
    for (let i = 0; i < files.length; i++) {
      const opened = await ahead.take(i);
      expect((await readAll(opened.stream)).equals(files[i]!)).toBe(true);
    }
    expect(o.maxInFlight).toBeGreaterThan(1);
    expect(o.maxInFlight).toBeLessThanOrEqual(6);
    ahead.close();
  });

  it('never buffers more than the budget, with a slow consumer and large bodies', async () => {
    const files = [...Array.from({ length: 20 }, (_, i) => bytes(100 * KiB, i + 1)), bytes(3 << 20, 99), ...Array.from({ length: 10 }, (_, i) => bytes(60 * KiB, i + 50))];
    const o = await slowOrigin(files, { delayMs: 5, pieceMs: 0 });
    const budgetBytes = 1 << 20;
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: 4, budgetBytes });
    let maxSeen = 0;
    for (let i = 0; i < files.length; i++) {
      const opened = await ahead.take(i);
      const chunks: Buffer[] = [];
      for await (const chunk of opened.stream) {
        chunks.push(chunk as Buffer);
        maxSeen = Math.max(maxSeen, ahead.bufferedBytes());
        await new Promise((r) => setTimeout(r, 1)); // a consumer slower than the origin
      }
      expect(Buffer.concat(chunks).equals(files[i]!)).toBe(true);
      expect(ahead.reservedBytes).toBeLessThanOrEqual(budgetBytes + 64 * KiB);
    }
    expect(ahead.peakBufferedBytes).toBeGreaterThan(200 * KiB); // it did read ahead
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
    expect(maxSeen).toBeLessThanOrEqual(budgetBytes);
    ahead.close();
  });

  it('reports a body that fails midway on that body only, after its continuations', async () => {
    const files = Array.from({ length: 6 }, (_, i) => bytes(64 * KiB, i + 1));
    const o = await slowOrigin(files, { delayMs: 10, pieceMs: 1, cutForGood: [2] });
    const ahead = aheadOver(fetcher(5000, 1), o.base, files, { concurrency: 3, budgetBytes: 1 << 20 });
    const outcomes: string[] = [];
    for (let i = 0; i < files.length; i++) {
      const opened = await ahead.take(i);
      try {
        expect((await readAll(opened.stream)).equals(files[i]!)).toBe(true);
        outcomes.push('ok');
      } catch (error) {
        expect(error).toBeInstanceOf(FetchError);
        outcomes.push((error as FetchError).kind);
      }
    }
    expect(outcomes).toEqual(['ok', 'ok', 'length', 'ok', 'ok', 'ok']);
    // The cut body: its first GET and one continuation (retries 1), each cut again.
    expect(o.requests.filter((r) => r.url === '/2').map((r) => r.headers.range)).toEqual([undefined, 'bytes=32768-65535']);
    ahead.close();
  });

  it('lets a large body ahead read only a short lead until the consumer waits on the network, then its reservation', async () => {
    // Slices of 1 MiB: the second file does not fit in one, so it is read ahead in part.
    const files = [bytes(512 * KiB, 1), bytes(3 << 20, 2)];
    const budget = { concurrency: 2, budgetBytes: 2 << 20 };
    const settled = async (ahead: FetchAhead<OpenedBody>, atLeast: number) => {
      for (let i = 0; i < 100 && ahead.bufferedBytes() < atLeast; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      return ahead.bufferedBytes();
    };

    // A fast origin, the consumer not waiting on it: the first file whole, the second 256 KiB.
    const fast = await slowOrigin(files, { delayMs: 0, pieceMs: 0 });
    const calm = aheadOver(fetcher(), fast.base, files, budget);
    const first = await calm.take(0);
    expect(await settled(calm, 512 * KiB + 256 * KiB)).toBeLessThanOrEqual(512 * KiB + 256 * KiB + 64 * KiB);
    expect((await readAll(first.stream)).equals(files[0]!)).toBe(true);
    expect((await readAll((await calm.take(1)).stream)).equals(files[1]!)).toBe(true);
    calm.close();

    // 16 KiB every 2 ms: reading the first file waits on the network, and the second then
    // fills its reservation (1 MiB, less a chunk's slack) over its one connection (no ranges).
    const slow = await slowOrigin(files, { delayMs: 0, pieceMs: 2, noRanges: true });
    const bound = aheadOver(fetcher(), slow.base, files, budget);
    expect((await readAll((await bound.take(0)).stream)).equals(files[0]!)).toBe(true);
    expect(await settled(bound, 900 * KiB)).toBeGreaterThan(900 * KiB);
    expect((await readAll((await bound.take(1)).stream)).equals(files[1]!)).toBe(true);
    bound.close();
  });

  it('frees the connection of a body read whole ahead before the consumer reads it', async () => {
    // Each body fills its reservation exactly: its source must still be let to end.
    const files = Array.from({ length: 3 }, (_, i) => bytes(100 * KiB, i + 1));
    const o = await slowOrigin(files, { delayMs: 5, pieceMs: 0 });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: 1, budgetBytes: 1 << 20 });
    for (let i = 0; i < 100 && o.arrivals.length < files.length; i++) await new Promise((r) => setTimeout(r, 10));
    // One connection: the next request opened only once the body before it had ended.
    expect(o.arrivals).toEqual([1, 1, 1]);
    for (let i = 0; i < files.length; i++) expect((await readAll((await ahead.take(i)).stream)).equals(files[i]!)).toBe(true);
    ahead.close();
  });

  it('does not let requests of unknown size hold a slice each while they wait for their headers', async () => {
    // Slices of 1 MiB; bodies of 200 KiB whose size is known only from their responses. The
    // consumer reads nothing yet: the bodies fetched ahead sit in the budget (16 x 200 KiB fit).
    const files = Array.from({ length: 16 }, (_, i) => bytes(200 * KiB, i + 1));
    // Answers 100 ms late: the four requests of a round are all in flight when the last arrives.
    const o = await slowOrigin(files, { delayMs: 100, pieceMs: 0 });
    const f = fetcher();
    const ahead = new FetchAhead<OpenedBody>(
      files.map((_, i) => ({ size: null, open: () => f.openBody(`${o.base}/${i}`, {}) })),
      (opened) => opened.stream,
      { concurrency: 4, budgetBytes: 4 << 20, measure: true },
    );
    for (let i = 0; i < 200 && o.arrivals.length < files.length; i++) await new Promise((r) => setTimeout(r, 10));
    // The last four requests still went at once: a request not yet answered reserves a short
    // lead, not a slice (with a slice each, the 2.4 MiB of bodies already in leave room for one).
    expect(o.arrivals).toHaveLength(files.length);
    expect(Math.max(...o.arrivals.slice(-4))).toBe(4);
    for (let i = 0; i < files.length; i++) expect((await readAll((await ahead.take(i)).stream)).equals(files[i]!)).toBe(true);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(4 << 20);
    ahead.close();
  });

  it('holds archives sharing a budget to it together, each body next in line opened with a short lead', async () => {
    const files = Array.from({ length: 10 }, (_, i) => bytes(512 * KiB, i + 1));
    const o = await slowOrigin(files, { delayMs: 5, pieceMs: 1 });
    const shared = new SharedBudget(1 << 20);
    // On its own each would reserve up to 2 MiB (four bodies of 512 KiB).
    const archives = [0, 1].map(() => aheadOver(fetcher(), o.base, files, { concurrency: 4, budgetBytes: 4 << 20, shared }));
    let peakShared = 0;
    let peakSum = 0;
    await Promise.all(
      archives.map(async (ahead) => {
        for (let i = 0; i < files.length; i++) {
          const opened = await ahead.take(i);
          const chunks: Buffer[] = [];
          for await (const chunk of opened.stream) {
            chunks.push(chunk as Buffer);
            peakShared = Math.max(peakShared, shared.usedBytes);
            peakSum = Math.max(peakSum, archives[0]!.reservedBytes + archives[1]!.reservedBytes);
            await new Promise((r) => setTimeout(r, 2)); // consumers slower than the origin
          }
          expect(Buffer.concat(chunks).equals(files[i]!)).toBe(true);
        }
        ahead.close();
      }),
    );
    expect(peakShared).toBe(peakSum);
    expect(peakShared).toBeGreaterThan(512 * KiB); // they did read ahead
    expect(peakShared).toBeLessThanOrEqual((1 << 20) + 2 * 256 * KiB);
    expect(shared.usedBytes).toBe(0);
  });

  it('closes every request opened ahead when the client stops reading', async () => {
    const files = Array.from({ length: 30 }, (_, i) => bytes(256 * KiB, i + 1));
    const o = await slowOrigin(files, { delayMs: 5, pieceMs: 20 });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: 5, budgetBytes: 8 << 20 });
    const first = await ahead.take(0);
    // The client reads one chunk, then goes away: the archive is abandoned.
    for await (const _chunk of first.stream) break;
    expect(o.inFlight).toBeGreaterThan(1);
    ahead.close();
    for (let i = 0; i < 100 && o.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(o.inFlight).toBe(0);
    expect(o.abandoned).toBeGreaterThan(1);
    // Nothing past the window was ever asked for.
    expect(o.requests.length).toBeLessThanOrEqual(5 + 1);
  });
});
