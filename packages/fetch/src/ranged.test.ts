// Ranged mode (body.ts addSegment, ahead.ts offerSegments): a large body from an origin that
// serves ranges, read faster than one connection brings it, is fetched as several ranges at
// once, handed on in order, within the budget; a changed file is an error, never spliced bytes.
import { describe, it, expect, afterAll } from '@jest/globals';
import type http from 'node:http';
import { FetchAhead } from './ahead';
import { createFetcher, type Fetcher, type OpenedBody } from './fetcher';
import { FetchError } from './errors';
import { bytes, startOrigin, type TestOrigin } from './testing';

const fetchers: Fetcher[] = [];
const origins: TestOrigin[] = [];

function fetcher(idleTimeoutMs = 5000): Fetcher {
  const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs, retries: 3, retryBaseDelayMs: 5, userAgent: 'ap-ranged-test' });
  fetchers.push(f);
  return f;
}

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(origins.map((o) => o.close()));
});

const KiB = 1024;

interface PacedOptions {
  /** Each response sends 16 KiB pieces this far apart (a per-connection rate cap); null: all at once. */
  pieceMs: number | null;
  /** The pace is the origin's, shared by all its connections (a saturated link or a busy server). */
  sharedPace?: boolean;
  /** Validators: a strong ETag and/or Last-Modified (per file, from its version). */
  etag?: boolean;
  lastModified?: boolean;
  /** From this GET on (1-based, per file), the file is another version (other bytes, other validators). */
  changeAtGet?: number;
  /** Advertises `Accept-Ranges: bytes` but answers every GET with the whole body (200). */
  ignoreRanges?: boolean;
  /** The first ranged GET starting after byte 0 stops at half and closes its connection. */
  cutFirstSegment?: boolean;
}

interface PacedOrigin extends TestOrigin {
  inFlight: number;
  /** Most GETs of one file being answered at once. */
  maxInFlight: number;
  /** Responses whose connection closed before they were sent whole. */
  abandoned: number;
}

/** Serves `files[i]` at `/<i>` with Range, If-Match and If-Range, each response paced. */
async function pacedOrigin(files: Buffer[], opts: PacedOptions): Promise<PacedOrigin> {
  const state = { inFlight: 0, maxInFlight: 0, abandoned: 0 };
  const gets = new Map<number, number>();
  const perFile = new Map<number, number>();
  let segmentCut = false;
  // A shared pace is one clock for the whole origin: each tick sends one piece, for the
  // responses in turn, so a late timer (a loaded machine) slows one connection and three alike.
  const waiting: (() => void)[] = [];
  let ticking = false;
  const tick = () => {
    const next = waiting.shift();
    if (!next) return void (ticking = false);
    next();
    setTimeout(tick, opts.pieceMs!);
  };
  const later = (send: () => void) => {
    if (!opts.sharedPace) return void setTimeout(send, opts.pieceMs ?? 0);
    waiting.push(send);
    if (!ticking) {
      ticking = true;
      setTimeout(tick, opts.pieceMs!);
    }
  };
  const o = await startOrigin((req: http.IncomingMessage, res: http.ServerResponse) => {
    const index = Number(req.url!.slice(1));
    const n = (gets.get(index) ?? 0) + 1;
    gets.set(index, n);
    const version = opts.changeAtGet !== undefined && n >= opts.changeAtGet ? 2 : 1;
    const whole = version === 1 ? files[index]! : bytes(files[index]!.length, 1000 + index);
    const etag = opts.etag ? `"f${index}-v${version}"` : undefined;
    const lastModified = opts.lastModified ? new Date(Date.UTC(2026, 0, version)).toUTCString() : undefined;
    const headers: Record<string, string | number> = { 'accept-ranges': 'bytes' };
    if (etag) headers.etag = etag;
    if (lastModified) headers['last-modified'] = lastModified;
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch !== etag) return void res.writeHead(412).end();
    const ifRange = req.headers['if-range'];
    const r = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const ranged = r !== null && !opts.ignoreRanges && (ifRange === undefined || ifRange === etag || ifRange === lastModified);
    const start = ranged ? Number(r[1]) : 0;
    const end = ranged ? Number(r[2]) + 1 : whole.length;
    let body = whole.subarray(start, end);
    if (ranged) headers['content-range'] = `bytes ${start}-${end - 1}/${whole.length}`;
    headers['content-length'] = body.length;
    const cut = opts.cutFirstSegment && ranged && start > 0 && !segmentCut;
    if (cut) segmentCut = true;
    if (cut) body = body.subarray(0, Math.floor(body.length / 2));
    res.writeHead(ranged ? 206 : 200, headers);
    const inFile = (perFile.get(index) ?? 0) + 1;
    perFile.set(index, inFile);
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFile);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      state.inFlight--;
      perFile.set(index, perFile.get(index)! - 1);
    };
    res.once('close', () => {
      if (!done) state.abandoned++;
      finish();
    });
    if (opts.pieceMs === null && !cut) {
      finish();
      return void res.end(body);
    }
    let at = 0;
    const send = () => {
      if (res.destroyed) return;
      if (at >= body.length) {
        if (cut) return void res.destroy();
        finish();
        return void res.end();
      }
      const piece = body.subarray(at, at + 16 * KiB);
      at += piece.length;
      if (at === body.length && !cut) {
        // Done when its last byte is sent: the client may reuse the slot once it has read it.
        finish();
        return void res.end(piece);
      }
      res.write(piece);
      later(send);
    };
    send();
  });
  Object.defineProperties(o, {
    inFlight: { get: () => state.inFlight },
    maxInFlight: { get: () => state.maxInFlight },
    abandoned: { get: () => state.abandoned },
  });
  origins.push(o);
  return o as PacedOrigin;
}

function aheadOver(f: Fetcher, base: string, files: Buffer[], options: { concurrency: number; budgetBytes: number }, sizes: 'known' | 'unknown' = 'known') {
  return new FetchAhead<OpenedBody>(
    files.map((file, i) => ({
      size: sizes === 'known' ? file.length : null,
      open: () => f.openBody(`${base}/${i}`, sizes === 'known' ? { expectedSize: file.length } : {}),
    })),
    (opened) => opened.stream,
    { ...options, measure: true },
  );
}

/** Reads a body to its end (or its error), checking the budget at every chunk. */
async function readBody(ahead: FetchAhead<OpenedBody>, stream: NodeJS.ReadableStream, budget: number): Promise<{ bytes: Buffer; error: unknown }> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      expect(ahead.bufferedBytes()).toBeLessThanOrEqual(budget);
    }
    return { bytes: Buffer.concat(chunks), error: null };
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error };
  }
}

/** GETs of `/<index>` with a range that does not start at the main response's first byte. */
function segmentRequests(o: TestOrigin, index: number) {
  return o.requests.filter((r) => r.url === `/${index}` && r.headers.range !== undefined);
}

// 4 connections, 512 KiB budget: slices (and segments) of 128 KiB.
const CONCURRENCY = 4;
const BUDGET = 512 * KiB;
const SLICE = BUDGET / CONCURRENCY;

describe('ranged mode', () => {
  it('gives the bytes of the file, in order, for many sizes and segment boundaries', async () => {
    // The first file is long enough for ranged mode to be found worth it; it stays on for the rest.
    const sizes = [24 * SLICE, 2 * SLICE, 2 * SLICE + 1, 3 * SLICE - 1, 3 * SLICE, 5 * SLICE + 12_345, 9 * SLICE + 7, 1_000_003];
    const files = sizes.map((size, i) => bytes(size, i + 1));
    const o = await pacedOrigin(files, { pieceMs: 4, etag: true });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    for (let i = 0; i < files.length; i++) {
      const { bytes: got, error } = await readBody(ahead, (await ahead.take(i)).stream, BUDGET);
      expect(error).toBeNull();
      expect(got.length).toBe(files[i]!.length);
      expect(got.equals(files[i]!)).toBe(true);
    }
    ahead.close();
    // Segments were asked for (the long first file always has several; how many the later,
    // short files get depends on timing), each with the validator, within the file.
    const ranged = o.requests.filter((r) => r.headers.range !== undefined);
    expect(segmentRequests(o, 0).length).toBeGreaterThan(1);
    for (const r of ranged) expect(r.headers['if-match']).toBe(`"f${r.url.slice(1)}-v1"`);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(BUDGET);
  });

  it('has several range requests of one file in flight at once, and never buffers more than the budget', async () => {
    const file = bytes(24 * SLICE + 99, 42);
    const o = await pacedOrigin([file], { pieceMs: 5, etag: true });
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET }, 'unknown');
    const opened = await ahead.take(0);
    // A consumer slower at times than the origin, so segments wait their turn in memory; it
    // keeps up until ranged mode is on, since a probe that sees the read-ahead fill finds no gain.
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const chunk of opened.stream) {
      chunks.push(chunk as Buffer);
      if (o.maxInFlight >= 3 && ++n % 20 === 0) await new Promise((r) => setTimeout(r, 30));
    }
    expect(Buffer.concat(chunks).equals(file)).toBe(true);
    expect(o.maxInFlight).toBeGreaterThanOrEqual(3);
    expect(o.maxInFlight).toBeLessThanOrEqual(CONCURRENCY);
    expect(ahead.peakBufferedBytes).toBeGreaterThan(SLICE); // segments did wait in memory
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(BUDGET);
    ahead.close();
  });

  it('takes the connections of bodies waiting further ahead for the body being read', async () => {
    const files = Array.from({ length: 4 }, (_, i) => bytes(12 * SLICE + i, 60 + i));
    const o = await pacedOrigin(files, { pieceMs: 4, etag: true });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    for (let i = 0; i < files.length; i++) {
      const { bytes: got, error } = await readBody(ahead, (await ahead.take(i)).stream, BUDGET);
      expect(error).toBeNull();
      expect(got.equals(files[i]!)).toBe(true);
    }
    ahead.close();
    // The first file was split although every connection had been given to a file at first.
    expect(segmentRequests(o, 0).length).toBeGreaterThanOrEqual(3);
  });

  it('is a "changed" error, never spliced bytes, when the ETag changes between ranges', async () => {
    const file = bytes(16 * SLICE, 5);
    const o = await pacedOrigin([file], { pieceMs: 4, etag: true, changeAtGet: 3 });
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, BUDGET);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as FetchError).kind).toBe('changed');
    expect((error as FetchError).userMessage).toMatch(/^file changed while it was fetched/);
    expect(got.length).toBeLessThan(file.length);
    expect(got.equals(file.subarray(0, got.length))).toBe(true);
    expect(o.requests.length).toBeGreaterThanOrEqual(3);
    ahead.close();
  });

  it('is a "changed" error when only Last-Modified (no ETag) changes between ranges (If-Range)', async () => {
    const file = bytes(16 * SLICE, 6);
    const o = await pacedOrigin([file], { pieceMs: 4, lastModified: true, changeAtGet: 3 });
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, BUDGET);
    expect((error as FetchError).kind).toBe('changed');
    expect(got.equals(file.subarray(0, got.length))).toBe(true);
    const ranged = segmentRequests(o, 0);
    expect(ranged.length).toBeGreaterThanOrEqual(1);
    expect(ranged[0]!.headers['if-range']).toBe(new Date(Date.UTC(2026, 0, 1)).toUTCString());
    ahead.close();
  });

  it('goes on over one connection when the origin answers a range with the whole body (200)', async () => {
    const file = bytes(16 * SLICE + 3, 8);
    const o = await pacedOrigin([file], { pieceMs: 2, etag: true, ignoreRanges: true });
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, BUDGET);
    expect(error).toBeNull();
    expect(got.equals(file)).toBe(true);
    // Tried once (the segments opened together), then no more ranges; nothing left open.
    expect(segmentRequests(o, 0).length).toBeGreaterThanOrEqual(1);
    expect(segmentRequests(o, 0).length).toBeLessThanOrEqual(CONCURRENCY - 1);
    ahead.close();
    for (let i = 0; i < 50 && o.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(o.inFlight).toBe(0);
  });

  it('continues a segment cut midway', async () => {
    const file = bytes(12 * SLICE + 5, 9);
    const o = await pacedOrigin([file], { pieceMs: 4, etag: true, cutFirstSegment: true });
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, BUDGET);
    expect(error).toBeNull();
    expect(got.equals(file)).toBe(true);
    // The first segment [a, b] was cut at half: a continuation from there to b, with If-Match.
    const ranges = segmentRequests(o, 0).map((r) => /^bytes=(\d+)-(\d+)$/.exec(r.headers.range!)!.slice(1).map(Number) as [number, number]);
    const [a, b] = ranges[0]!;
    const half = a + Math.floor((b - a + 1) / 2);
    expect(ranges.some(([s, e]) => e === b && s === half)).toBe(true);
    expect(o.abandoned).toBeGreaterThanOrEqual(1);
    ahead.close();
  });

  it('leaves no request open when the consumer stops reading', async () => {
    const files = [bytes(40 * SLICE, 11), bytes(40 * SLICE, 12)];
    const o = await pacedOrigin(files, { pieceMs: 10, etag: true });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    const opened = await ahead.take(0);
    let read = 0;
    for await (const chunk of opened.stream) {
      read += (chunk as Buffer).length;
      if (o.maxInFlight >= 3 && read > SLICE) break; // ranged, then the client goes away
    }
    expect(o.maxInFlight).toBeGreaterThanOrEqual(3);
    ahead.close();
    // Well before any idle timeout (5 s): every response was dropped.
    for (let i = 0; i < 50 && o.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(o.inFlight).toBe(0);
    expect(ahead.reservedBytes).toBe(0);
  });
});

describe('ranged mode stays off', () => {
  it('when two more connections bring the bytes no faster (a pace shared by every connection)', async () => {
    // 16 KiB per 10 ms: slow enough that a loaded machine's late timers and busy core do not
    // decide the probe (at 4 ms a loaded run found no gain where each connection had its own pace).
    // Slices of 512 KiB: the rate before the probe is measured until one has come (0.3 s); with
    // the suite's 128 KiB slices that was 0.1 s, which one pause of a loaded run halved, and the
    // probe found a gain from the shared pace (29 segments, in CI).
    const budgetBytes = 4 * BUDGET;
    const file = bytes(64 * SLICE, 31);
    const segmentsFrom = async (sharedPace: boolean) => {
      const o = await pacedOrigin([file], { pieceMs: 10, sharedPace, etag: true });
      const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes });
      const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, budgetBytes);
      expect(error).toBeNull();
      expect(got.equals(file)).toBe(true);
      ahead.close();
      // Segments end before the file does (the main response, continued, runs to its end).
      return segmentRequests(o, 0).filter((r) => !r.headers.range!.endsWith(`-${file.length - 1}`)).length;
    };
    // Each connection paced on its own: the probe's two connections bring more, and ranged mode stays on.
    const own = await segmentsFrom(false);
    // One pace for all: what the probe's two connections take in its second (segments of about
    // a second each at a third of the pace, two or three per connection as one ends and the next
    // opens), and no more (the next probe waits 5 s, past the file's end). Own pace: 13.
    const shared = await segmentsFrom(true);
    expect(own).toBeGreaterThan(8);
    expect(shared).toBeLessThanOrEqual(6);
  });

  it('for a body of unknown length (chunked), which cannot be split', async () => {
    const file = bytes(12 * SLICE + 1, 77);
    const o = await startOrigin((_req, res) => {
      res.writeHead(200, { etag: '"u"', 'accept-ranges': 'bytes' });
      let at = 0;
      const send = () => {
        if (res.destroyed) return;
        const piece = file.subarray(at, at + 16 * KiB);
        at += piece.length;
        if (at >= file.length) return void res.end(piece);
        res.write(piece);
        setTimeout(send, 4);
      };
      send();
    });
    origins.push(o);
    const ahead = aheadOver(fetcher(), o.base, [file], { concurrency: CONCURRENCY, budgetBytes: BUDGET }, 'unknown');
    const { bytes: got, error } = await readBody(ahead, (await ahead.take(0)).stream, BUDGET);
    expect(error).toBeNull();
    expect(got.equals(file)).toBe(true);
    expect(o.requests).toHaveLength(1);
    ahead.close();
  });

  it('when bodies arrive faster than they are read', async () => {
    const files = Array.from({ length: 3 }, (_, i) => bytes(16 * SLICE, 20 + i));
    const o = await pacedOrigin(files, { pieceMs: null, etag: true });
    const ahead = aheadOver(fetcher(), o.base, files, { concurrency: CONCURRENCY, budgetBytes: BUDGET });
    for (let i = 0; i < files.length; i++) {
      const chunks: Buffer[] = [];
      // A consumer slower than the origin: it never waits for bytes.
      for await (const chunk of (await ahead.take(i)).stream) {
        chunks.push(chunk as Buffer);
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(Buffer.concat(chunks).equals(files[i]!)).toBe(true);
    }
    ahead.close();
    // No segment (a range ending before the file does): continuations of parked bodies only.
    expect(o.requests.filter((r) => r.headers.range !== undefined && !r.headers.range.endsWith(`-${16 * SLICE - 1}`))).toEqual([]);
  });
});
