// An origin that serves each connection at a capped rate (a CDN, an object store, a rate-limited
// API): a file larger than the budget can hold ahead is fetched over several connections at once
// (docs/engine.md#fetching-ahead), counted at the origin, and its bytes come out whole and in order.
import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { FetchAhead } from './ahead';
import { createFetcher, type Fetcher, type OpenedBody } from './fetcher';
import { HostLimits } from './host-limits';
import { bytes, startCappedOrigin, type CappedOrigin } from './testing';

const KiB = 1024;
const MiB = 1024 * KiB;
const fetchers: Fetcher[] = [];
const origins: CappedOrigin[] = [];

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(origins.map((o) => o.close()));
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function fetcher(): Fetcher {
  const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 10_000, retries: 3, retryBaseDelayMs: 5, userAgent: 'ap-capped-test' });
  fetchers.push(f);
  return f;
}

async function readThrough(ahead: FetchAhead<OpenedBody>, count: number): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < count; i++) {
    const hash = createHash('sha256');
    for await (const chunk of (await ahead.take(i)).stream) hash.update(chunk as Buffer);
    hashes.push(hash.digest('hex'));
  }
  ahead.close();
  return hashes;
}

describe('a per-connection capped origin', () => {
  it('serves one 64 MiB file over several connections at once, within a 64 MiB budget', async () => {
    // 2 MB/s per connection (as curl sees such an origin): a slice (8 MiB) takes 4 s, longer than any measure of a moment.
    const file = bytes(64 * MiB, 7);
    const o = await startCappedOrigin([file], { bytesPerSecond: 2_000_000 });
    origins.push(o);
    const budgetBytes = 64 * MiB;
    const ahead = new FetchAhead<OpenedBody>([{ size: file.length, open: () => fetcher().openBody(`${o.base}/0`, { expectedSize: file.length }) }], (opened) => opened.stream, {
      concurrency: 8,
      budgetBytes,
      measure: true,
    });
    expect(await readThrough(ahead, 1)).toEqual([sha(file)]);
    expect(o.maxInFlight).toBeGreaterThanOrEqual(6);
    expect(o.maxInFlight).toBeLessThanOrEqual(8);
    expect(o.connections).toBeGreaterThanOrEqual(6);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
  }, 60_000);
});

describe('a per-connection capped origin, read by a consumer that pauses between parts', () => {
  it('gets ranged mode on all the same, and connections beyond the concurrency while they bring more, up to the host cap', async () => {
    // A stored job's consumer: the upload stops the ZIP for a moment after each part. Such a
    // pause once ended the probe as "no gain" (the body being read filled its 256 KiB lead).
    const file = bytes(40 * MiB, 9);
    const o = await startCappedOrigin([file], { bytesPerSecond: 2_000_000 });
    origins.push(o);
    const budgetBytes = 32 * MiB;
    const f = fetcher();
    const ahead = new FetchAhead<OpenedBody>([{ size: file.length, host: 'capped', open: () => f.openBody(`${o.base}/0`, { expectedSize: file.length }) }], (opened) => opened.stream, {
      concurrency: 4,
      budgetBytes,
      hosts: new HostLimits(8),
      measure: true,
    });
    const hash = createHash('sha256');
    let sincePause = 0;
    for await (const chunk of (await ahead.take(0)).stream) {
      hash.update(chunk as Buffer);
      sincePause += (chunk as Buffer).length;
      if (sincePause >= 4 * MiB) {
        sincePause = 0;
        await new Promise((r) => setTimeout(r, 150));
      }
    }
    ahead.close();
    expect(hash.digest('hex')).toBe(sha(file));
    expect(o.maxInFlight).toBeGreaterThan(4);
    expect(o.maxInFlight).toBeLessThanOrEqual(8);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
  }, 60_000);
});

describe('a per-connection capped origin, a budget whose slices are no larger than a probe lead', () => {
  it('leaves the probe room for its ranges: bodies ahead read at most half their reservation while it measures', async () => {
    // A packer's fetch budget of 16 MiB (FETCH_BUDGET_BYTES 32 MiB, less two 8 MiB parts) over 8
    // connections: 2 MiB slices. The bodies ahead filled them while the probe measured (a 2 MiB
    // lead), the probe found no budget for its two ranges, and ranged mode stayed off: one
    // connection moved bytes, the others held full slices (0.12 of curl in bench:origins:sweep).
    const files = Array.from({ length: 8 }, (_, i) => bytes(12 * MiB, 20 + i));
    const o = await startCappedOrigin(files, { bytesPerSecond: 4_000_000 });
    origins.push(o);
    const f = fetcher();
    const budgetBytes = 16 * MiB;
    const ahead = new FetchAhead<OpenedBody>(
      files.map((file, i) => ({ size: file.length, host: 'capped', open: () => f.openBody(`${o.base}/${i}`, { expectedSize: file.length }) })),
      (opened) => opened.stream,
      { concurrency: 8, budgetBytes, hosts: new HostLimits(16), measure: true },
    );
    expect(await readThrough(ahead, files.length)).toEqual(files.map(sha));
    // Ranges split off the first body, the one being read when the first probe ran (a
    // continuation of a main response runs to the body's last byte). Without room for them the
    // next probe came 5 s later, once the first body was read through over one connection.
    const ranges = o.requests.filter((r) => {
      const m = /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? '');
      return r.url === '/0' && m !== null && Number(m[2]) < 12 * MiB - 1;
    });
    expect(ranges.length).toBeGreaterThanOrEqual(2);
    expect(o.maxInFlight).toBeGreaterThan(8);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
  }, 60_000);
});

describe('a per-connection capped origin, ranges well within a second', () => {
  it('gets ranges no larger than the budget over every connection growth may add, kept on by the probe', async () => {
    // A 4 MiB budget over 4 connections, 8 to the host: at most 512 KiB a range. Slice-sized
    // ranges (1 MiB) filled the budget beside the body's own response and left growth's
    // connections no room. A 512 KiB range takes 0.13 s at 4 MB/s: a probe of two segments had
    // its connections idle for most of its second, found no gain, and ranged mode stayed off.
    const file = bytes(24 * MiB, 11);
    const o = await startCappedOrigin([file], { bytesPerSecond: 4_000_000 });
    origins.push(o);
    const budgetBytes = 4 * MiB;
    const ahead = new FetchAhead<OpenedBody>([{ size: file.length, host: 'capped', open: () => fetcher().openBody(`${o.base}/0`, { expectedSize: file.length }) }], (opened) => opened.stream, {
      concurrency: 4,
      budgetBytes,
      hosts: new HostLimits(8),
      measure: true,
    });
    expect(await readThrough(ahead, 1)).toEqual([sha(file)]);
    // Ranges of the body (a continuation of the main response runs to the last byte).
    const ranges = o.requests.map((r) => /^bytes=(\d+)-(\d+)$/.exec(r.headers.range ?? '')).filter((m) => m !== null && Number(m[2]) < file.length - 1);
    expect(ranges.length).toBeGreaterThan(4);
    expect(Math.max(...ranges.map((m) => Number(m![2]) - Number(m![1]) + 1))).toBeLessThanOrEqual(budgetBytes / 8);
    expect(o.maxInFlight).toBeLessThanOrEqual(8);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
  }, 60_000);
});

describe('a per-connection capped origin, the archive\'s last bodies', () => {
  it('splits bodies beyond the next two once every body has been opened (the end game), and their bytes come out whole and in order', async () => {
    // 8 files of 3.5 MiB at 1 MB/s per connection, 4 connections and growth to 8: the bodies
    // opened last would otherwise come over one connection each while those read first free theirs.
    const files = Array.from({ length: 8 }, (_, i) => bytes(3.5 * MiB + i, 50 + i));
    const o = await startCappedOrigin(files, { bytesPerSecond: 1_000_000 });
    origins.push(o);
    // Room for every body whole (28 MiB) and a few ranges beside them.
    const budgetBytes = 32 * MiB;
    const f = fetcher();
    const ahead = new FetchAhead<OpenedBody>(
      files.map((file, i) => ({ size: file.length, host: 'capped', open: () => f.openBody(`${o.base}/${i}`, { expectedSize: file.length }) })),
      (opened) => opened.stream,
      { concurrency: 4, budgetBytes, hosts: new HostLimits(8), measure: true },
    );
    const rangesOf = (index: number) => o.requests.filter((r) => r.url === `/${index}` && r.headers.range !== undefined).length;
    // While the consumer reads body i, ranges asked for bodies i + 2 and later: before the end
    // game only the body being read and the next one are split, so none (a body's first range
    // comes once the one two before it has ended).
    let splitBeyondNextTwo = 0;
    const hashes: string[] = [];
    for (let i = 0; i < files.length; i++) {
      const body = await ahead.take(i);
      const hash = createHash('sha256');
      let beyond = 0;
      for await (const chunk of body.stream) {
        hash.update(chunk as Buffer);
        beyond = 0;
        for (let j = i + 2; j < files.length; j++) beyond += rangesOf(j);
      }
      splitBeyondNextTwo += beyond;
      hashes.push(hash.digest('hex'));
    }
    ahead.close();
    expect(hashes).toEqual(files.map(sha));
    expect(splitBeyondNextTwo).toBeGreaterThan(0);
    expect(o.maxInFlight).toBeLessThanOrEqual(8);
    expect(ahead.peakBufferedBytes).toBeLessThanOrEqual(budgetBytes);
  }, 60_000);
});

describe('an origin answering 429 with Retry-After', () => {
  it('gets no more connections than it had when it refused, and none new before Retry-After', async () => {
    // It serves 3 responses at once and refuses more (Retry-After: 1 s); 40 files of 64 KiB at 2 MB/s each.
    const files = Array.from({ length: 40 }, (_, i) => bytes(64 * KiB, 30 + i));
    const o = await startCappedOrigin(files, { bytesPerSecond: 2_000_000, refuseAbove: 3 });
    origins.push(o);
    const f = fetcher();
    const host = new URL(o.base).host;
    // What the client did, in its own order: the origin alone cannot tell a request sent before
    // the client read a 429 from one sent after (both arrive after the refusal), so this watches
    // the one gate every request passes (HostLimits) and the push-backs it was told of.
    const opens: { at: number; openBefore: number }[] = [];
    const refusals: { at: number; open: number; retryAfterMs: number }[] = [];
    let open = 0;
    const opened = f.hosts.opened.bind(f.hosts);
    const pushedBack = f.hosts.pushedBack.bind(f.hosts);
    f.hosts.opened = (h: string) => {
      const end = opened(h);
      if (h !== host) return end;
      opens.push({ at: performance.now(), openBefore: open });
      open++;
      let ended = false;
      return () => {
        if (!ended) open--;
        ended = true;
        end();
      };
    };
    f.hosts.pushedBack = (h: string, retryAfterMs?: number) => {
      if (h === host) refusals.push({ at: performance.now(), open, retryAfterMs: retryAfterMs ?? 0 });
      pushedBack(h, retryAfterMs);
    };
    const ahead = new FetchAhead<OpenedBody>(
      files.map((file, i) => ({ size: file.length, host, open: () => f.openBody(`${o.base}/${i}`, { expectedSize: file.length }) })),
      (opened) => opened.stream,
      { concurrency: 8, budgetBytes: 64 * MiB, hosts: f.hosts },
    );
    expect(await readThrough(ahead, files.length)).toEqual(files.map(sha));
    expect(o.refusals).toBeGreaterThanOrEqual(1);
    expect(refusals.length).toBe(o.refusals);
    expect(refusals.every((r) => r.retryAfterMs === 1000)).toBe(true);
    // No request opened while a Retry-After was in force.
    const during = opens.filter((q) => refusals.some((r) => q.at > r.at && q.at < r.at + r.retryAfterMs));
    expect(during).toEqual([]);
    // Never more open at once after the first refusal than were open when it came.
    const first = refusals[0]!;
    expect(Math.max(0, ...opens.filter((q) => q.at > first.at).map((q) => q.openBefore + 1))).toBeLessThanOrEqual(first.open);
    expect(opens.length).toBeGreaterThan(files.length);
  }, 60_000);
});

describe('HostLimits', () => {
  it('halves what a host pushing back gets, opens nothing new before Retry-After, and gives none back at once', async () => {
    const limits = new HostLimits(16);
    const ends = Array.from({ length: 8 }, () => limits.opened('a.example'));
    expect(limits.room('a.example')).toBe(true);
    limits.pushedBack('a.example', 200);
    expect(limits.allowed('a.example')).toBe(4);
    for (const end of ends.slice(0, 6)) end();
    // 2 open, 4 allowed, but Retry-After holds every new one.
    let woken = false;
    expect(limits.room('a.example', () => (woken = true))).toBe(false);
    expect(limits.room('b.example')).toBe(true);
    await new Promise((r) => setTimeout(r, 250));
    expect(woken).toBe(true);
    expect(limits.room('a.example')).toBe(true);
    limits.pushedBack('a.example');
    expect(limits.allowed('a.example')).toBe(1);
    // Good answers right after a push-back give nothing back (a calm period first).
    for (let i = 0; i < 20; i++) limits.succeeded('a.example');
    expect(limits.allowed('a.example')).toBe(1);
    for (const end of ends) end();
  });

  it('lets a retry waiting for room go when its request is cancelled', async () => {
    const limits = new HostLimits(2);
    const ends = [limits.opened('c.example'), limits.opened('c.example')];
    const abort = new AbortController();
    const waiting = limits.whenRoom('c.example', abort.signal);
    abort.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    for (const end of ends) end();
    await expect(limits.whenRoom('c.example', undefined)).resolves.toBeUndefined();
  });
});
