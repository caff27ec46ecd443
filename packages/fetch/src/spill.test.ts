// Spilling ahead to disk (docs/engine.md#spilling-ahead-to-disk): from an origin without
// validators no body can be split into ranges, so the bodies fetched ahead go on to local disk
// beyond a short lead instead of waiting for their reader, and every connection stays busy.
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FetchAhead } from './ahead';
import { createFetcher, type Fetcher, type OpenedBody } from './fetcher';
import { SpillArea } from './spill-area';
import { bytes, startCappedOrigin, type CappedOrigin } from './testing';

const MiB = 1024 * 1024;
const fetchers: Fetcher[] = [];
const origins: CappedOrigin[] = [];
const roots: string[] = [];

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(origins.map((o) => o.close()));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function spillRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'spill-test-'));
  roots.push(root);
  return root;
}

/** The files in `dir` once their removals are done (their readers do not wait for them), up to 2 s. */
async function filesLeftIn(dir: string): Promise<string[]> {
  for (let waited = 0; waited < 2000 && readdirSync(dir).length > 0; waited += 50) await new Promise((r) => setTimeout(r, 50));
  return readdirSync(dir);
}

function fetcher(): Fetcher {
  const f = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 10_000, retries: 3, retryBaseDelayMs: 5, userAgent: 'ap-spill-test' });
  fetchers.push(f);
  return f;
}

/** Reads every body in order; the origin's busy connections (those that sent bytes) counted every 250 ms meanwhile. */
async function fetchAll(o: CappedOrigin, files: Buffer[], budgetBytes: number, spill: SpillArea | null) {
  const f = fetcher();
  const ahead = new FetchAhead<OpenedBody>(
    files.map((file, i) => ({ size: file.length, open: () => f.openBody(`${o.base}/${i}`, { expectedSize: file.length }) })),
    (opened) => opened.stream,
    { concurrency: 8, budgetBytes, spill, measure: true },
  );
  const busy: number[] = [];
  o.takeBusy();
  const sampler = setInterval(() => busy.push(o.takeBusy()), 250);
  const hashes: string[] = [];
  let fetchedAt = 0;
  for (let i = 0; i < files.length; i++) {
    const hash = createHash('sha256');
    for await (const chunk of (await ahead.take(i)).stream) hash.update(chunk as Buffer);
    hashes.push(hash.digest('hex'));
    if (fetchedAt === 0 && o.inFlight === 0) fetchedAt = busy.length;
  }
  clearInterval(sampler);
  ahead.close();
  // While the bodies came from the origin (the last ones may have arrived before their turn).
  const whileFetching = busy.slice(0, fetchedAt || busy.length).sort((a, b) => a - b);
  return { hashes, medianBusy: whileFetching[Math.floor(whileFetching.length / 2)] ?? 0, peakBuffered: ahead.peakBufferedBytes };
}

describe('an origin without validators, capped per connection', () => {
  // 8 files of 32 MiB with a 64 MiB budget, scaled to a quarter: the same bodies per slice.
  const files = Array.from({ length: 8 }, (_, i) => bytes(8 * MiB, 40 + i));
  const budgetBytes = 16 * MiB;

  it('keeps 7 of 8 connections busy, memory within the budget, the bytes whole and in order; no spill file is left', async () => {
    const o = await startCappedOrigin(files, { bytesPerSecond: 2_000_000, validators: 'none' });
    origins.push(o);
    const area = SpillArea.open(spillRoot(), 1024 * MiB);
    const { hashes, medianBusy, peakBuffered } = await fetchAll(o, files, budgetBytes, area);
    expect(hashes).toEqual(files.map(sha));
    expect(medianBusy).toBeGreaterThanOrEqual(7);
    expect(peakBuffered).toBeLessThanOrEqual(budgetBytes);
    expect(area.peakBytes).toBeGreaterThan(8 * MiB);
    expect(area.usedBytes).toBe(0);
    expect(await filesLeftIn(area.dir)).toEqual([]);
  }, 60_000);

  it('waits instead when the spill area is full, and completes', async () => {
    const o = await startCappedOrigin(files.slice(0, 4), { bytesPerSecond: 4_000_000, validators: 'none' });
    origins.push(o);
    const area = SpillArea.open(spillRoot(), 2 * MiB);
    const { hashes } = await fetchAll(o, files.slice(0, 4), budgetBytes, area);
    expect(hashes).toEqual(files.slice(0, 4).map(sha));
    expect(area.peakBytes).toBeGreaterThanOrEqual(2 * MiB);
    expect(area.peakBytes).toBeLessThan(3 * MiB); // over by a chunk per body at most
    expect(area.usedBytes).toBe(0);
    expect(await filesLeftIn(area.dir)).toEqual([]);
  }, 60_000);
});

describe('a spill area left behind', () => {
  it('is removed by the next process over the same directory when its process was killed; a running one is kept', async () => {
    const root = spillRoot();
    // A process that opens its area, writes a file in it, and is killed with SIGKILL.
    const script = `const { SpillArea } = await import(${JSON.stringify(new URL('./spill-area.ts', import.meta.url).pathname)});
      const a = SpillArea.open(process.argv[1], 1 << 20);
      (await import('node:fs')).writeFileSync(a.nextPath(), 'left');
      console.log(a.dir);
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, root], { stdio: ['ignore', 'pipe', 'inherit'] });
    const dir = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));
    const running = SpillArea.open(root, MiB);
    expect(existsSync(dir)).toBe(true); // its process still runs
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const next = SpillArea.open(root, MiB);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(running.dir)).toBe(true);
    expect(readdirSync(join(root, 'ap-fetch-spill')).sort()).toEqual([running.dir, next.dir].map((d) => d.split('/').at(-1)).sort());
  }, 30_000);
});

describe('an origin with Last-Modified and no ETag', () => {
  const file = bytes(8 * MiB, 50);
  const fetchOne = async (validators: 'last-modified' | 'recent') => {
    const o = await startCappedOrigin([file], { bytesPerSecond: 2_000_000, validators });
    origins.push(o);
    const f = fetcher();
    const ahead = new FetchAhead<OpenedBody>([{ size: file.length, open: () => f.openBody(`${o.base}/0`, { expectedSize: file.length }) }], (opened) => opened.stream, { concurrency: 4, budgetBytes: 4 * MiB });
    const hash = createHash('sha256');
    for await (const chunk of (await ahead.take(0)).stream) hash.update(chunk as Buffer);
    ahead.close();
    return { hash: hash.digest('hex'), maxInFlight: o.maxInFlight };
  };

  it('gets ranges on connections of their own when the date is a minute or more before the Date (a strong validator)', async () => {
    const { hash, maxInFlight } = await fetchOne('last-modified');
    expect(hash).toBe(sha(file));
    expect(maxInFlight).toBeGreaterThanOrEqual(3);
  }, 30_000);

  it('does not when the date is the Date itself (weak: a change within that second would not show)', async () => {
    const { hash, maxInFlight } = await fetchOne('recent');
    expect(hash).toBe(sha(file));
    expect(maxInFlight).toBe(1);
  }, 30_000);
});
