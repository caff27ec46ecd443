// The ZIP is the same whatever the fetch plan (docs/engine.md#fetching-ahead): one connection
// at a time, a budget smaller than a file (its ranges fetched at once), or a budget holding every
// file, from an origin capping each connection, with sizes known (stored jobs) or not.
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeArchive } from '@ap/archive';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFetcher, SpillArea, type Fetcher, type FetchAheadOptions } from '@ap/fetch';
import { newZipOutput } from '@ap/zip';
import { bytes, startCappedOrigin, type CappedOrigin } from '../packages/fetch/src/testing';
import { readWithYauzl } from '../packages/zip/src/testing';

const KiB = 1024;
const MiB = 1024 * KiB;
const files = [200 * KiB, 3 * MiB + 17, 1, 24 * MiB + 5, 64 * KiB].map((size, i) => bytes(size, 100 + i));
let origin: CappedOrigin;
/** The same files without ETag or Last-Modified: no body can be split into ranges. */
let plainOrigin: CappedOrigin;
let fetcher: Fetcher;
const spillRoot = mkdtempSync(join(tmpdir(), 'fetch-plans-spill-'));

beforeAll(async () => {
  origin = await startCappedOrigin(files, { bytesPerSecond: 8_000_000 });
  plainOrigin = await startCappedOrigin(files, { bytesPerSecond: 4_000_000, validators: 'none' });
  fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 10_000, retries: 3, retryBaseDelayMs: 5, userAgent: 'ap-plans-test' });
});

afterAll(async () => {
  fetcher.close();
  await Promise.all([origin.close(), plainOrigin.close()]);
  rmSync(spillRoot, { recursive: true, force: true });
});

async function zipOf(plan: FetchAheadOptions, sizes: 'known' | 'unknown', from = origin): Promise<Buffer> {
  const zip = newZipOutput(null);
  const chunks: Buffer[] = [];
  const drained = pipeline(zip.outputStream, new Writable({ write: (chunk: Buffer, _e, cb) => (chunks.push(chunk), cb()) }));
  await writeArchive(
    zip,
    files.map((file, position) => ({ position, url: `${from.base}/${position}`, filename: `f${position}.bin`, size: sizes === 'known' ? BigInt(file.length) : null, entryName: null })),
    { fetcher, mtime: new Date(Date.UTC(2026, 0, 2)), failOnUrlError: true, archiveLimit: Infinity, signal: new AbortController().signal, onBrokenBody: async () => undefined, fetchAhead: plan },
  );
  zip.end();
  await drained;
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('fetch plans', () => {
  it('write the same ZIP bytes', async () => {
    const plans: FetchAheadOptions[] = [
      { concurrency: 1, budgetBytes: 64 * MiB },
      { concurrency: 8, budgetBytes: 4 * MiB },
      { concurrency: 8, budgetBytes: 64 * MiB },
    ];
    const first = await zipOf(plans[0]!, 'known');
    const entries = await readWithYauzl(first);
    expect(entries.map((e) => e.name)).toEqual(files.map((_, i) => `f${i}.bin`));
    entries.forEach((e, i) => expect(e.data.equals(files[i]!)).toBe(true));
    for (const plan of plans.slice(1)) expect(sha(await zipOf(plan, 'known'))).toBe(sha(first));
    expect(sha(await zipOf(plans[2]!, 'unknown'))).toBe(sha(first));
    // The wide plans had several connections at once.
    expect(origin.maxInFlight).toBeGreaterThanOrEqual(4);
  }, 120_000);

  it('write the same ZIP bytes when the bodies ahead spill to disk (an origin without validators)', async () => {
    const inMemory = await zipOf({ concurrency: 8, budgetBytes: 64 * MiB }, 'known');
    const area = SpillArea.open(spillRoot, 256 * MiB);
    expect(sha(await zipOf({ concurrency: 8, budgetBytes: 4 * MiB, spill: area }, 'known', plainOrigin))).toBe(sha(inMemory));
    expect(area.spilledBytes).toBeGreaterThan(0);
    expect(area.usedBytes).toBe(0);
    for (let waited = 0; waited < 2000 && readdirSync(area.dir).length > 0; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(readdirSync(area.dir)).toEqual([]);
  }, 120_000);
});
