// An origin that serves each connection at a capped rate (a CDN, an object store, a rate-limited
// API): a file larger than the budget can hold ahead is fetched over several connections at once
// (docs/decisions.md#fetching-ahead), counted at the origin, and its bytes come out whole and in order.
import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { FetchAhead } from './ahead';
import { createFetcher, type Fetcher, type OpenedBody } from './fetcher';
import { bytes, startCappedOrigin, type CappedOrigin } from './testing';

const MiB = 1024 * 1024;
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
    // 4 MB/s per connection: a range of a slice (8 MiB) takes 2 s, longer than any measure of a moment.
    const file = bytes(64 * MiB, 7);
    const o = await startCappedOrigin([file], { bytesPerSecond: 4_000_000 });
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
