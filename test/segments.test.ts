// A bin packed in segments (docs/segments.md): its ZIP is, byte for byte, the one one packer writes.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { finishSegments, packSegment, type BinFile, type SegmentedBin } from '@ap/archive';
import { onePackerZip } from './one-packer-zip';
import { partBuffers, startNumberedUpload } from '@ap/storage';
import { planPackSegments, planZip } from '@ap/zip';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readWithEveryReader } from './reader-matrix';
import { readZip } from './zip-readers';

const MiB = 1024 * 1024;
const PART = 8 * MiB;
const mtime = new Date('2026-03-01T10:00:00Z');
const tuning = { fetchConcurrency: 4, fetchBudgetBytes: 32 * MiB };
// About 50 MiB through S3 and the origin per test, three times over.
jest.setTimeout(180_000);

let stack: Stack;
let origin: Origin;
beforeAll(async () => {
  stack = await startStack({}, { workers: false });
  origin = await startOrigin();
});
afterAll(async () => {
  await origin.close();
  await stack.close();
});

/** Files whose bodies cross part and segment boundaries, with empty and tiny ones between. */
function inputs(prefix: string): { files: BinFile[]; bodies: Buffer[] } {
  const sizes = [3 * MiB + 17, 0, 13 * MiB + 5, 1, 21 * MiB + 333, ...Array.from({ length: 40 }, (_, i) => 40_000 + i * 977), 9 * MiB - 20, 2 * MiB];
  const bodies = sizes.map((size, i) => bytesOf(i + 7, size));
  const files = bodies.map((body, position): BinFile => {
    const name = `${prefix}-${position}.bin`;
    const url = origin.set(`/${prefix}/${name}`, { body, etag: `"e${position}"` });
    return { position, url, filename: null, size: BigInt(body.length), etag: `"e${position}"`, lastModified: null, entryName: name, crc32: null, crcPrefix: null, crcPrefixLen: null, aesMac: null, headers: null, sourceId: null };
  });
  return { files, bodies };
}

async function segmentedBin(prefix: string, segmentBytes: number): Promise<{ bin: SegmentedBin; bodies: Buffer[] }> {
  const { files, bodies } = inputs(prefix);
  const layout = planZip(files.map((f) => ({ name: f.entryName!, size: Number(f.size) })), { mtime });
  // Parts of 8 MiB (S3's least is 5 MiB) and segments of one or two parts: many boundaries in 60 MiB.
  const plan = planPackSegments(layout, PART, segmentBytes)!;
  const key = `segments/${prefix}.zip`;
  const uploadId = await startNumberedUpload(stack.ctx.store, key);
  return { bin: { jobId: 'no-job', zipId: 'no-zip', key, uploadId, layout, files, plan }, bodies };
}

const read = async (key: string) => {
  const { body } = await stack.ctx.store.read(key);
  const chunks: Buffer[] = [];
  for await (const c of body as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
};

describe('a bin packed in segments', () => {
  it.each([
    ['one part', PART],
    ['two parts', 2 * PART],
  ])('writes, segments of %s at once, the bytes one packer writes', async (_, segmentBytes) => {
    const { bin, bodies } = await segmentedBin(`s${segmentBytes}`, segmentBytes);
    expect(bin.plan.segments.length).toBeGreaterThanOrEqual(4);
    const signal = new AbortController().signal;
    const results = await Promise.all(bin.plan.segments.map((s) => packSegment(stack.ctx, bin, s.index, tuning, { signal })));
    const object = await finishSegments(stack.ctx, bin, { parts: results.flatMap((r) => r.parts), crcs: results.flatMap((r) => r.crcs) }, tuning, { signal });
    const segmented = await read(bin.key);
    const single = await onePackerZip(stack.ctx.fetcher, bin.files as BinFile[], mtime);
    expect(object.size).toBe(bin.layout.totalSize);
    expect(segmented.length).toBe(single.length);
    expect(segmented.equals(single)).toBe(true);
    const entries = bin.files.map((f, i) => ({ name: f.entryName!, size: bodies[i]!.length, sha256: sha256(bodies[i]!) }));
    expect(await readZip(segmented)).toEqual(entries);
    // The reader matrix over a segmented ZIP (test/reader-matrix.ts), once.
    if (segmentBytes === PART) expect(await readWithEveryReader(segmented, { kind: 'store', expected: entries, mtime })).toEqual({});
  });

  it('continues a segment from its stored parts: they are not sent again, and the ZIP is the same', async () => {
    const { bin } = await segmentedBin('again', PART * 2);
    const signal = new AbortController().signal;
    const results = await Promise.all(bin.plan.segments.map((s) => packSegment(stack.ctx, bin, s.index, tuning, { signal })));
    const first = results.find((r) => r.parts.length > 0)!;
    const sent: number[] = [];
    const again = await packSegment(stack.ctx, bin, first.index, tuning, { signal, stored: first.parts, onPart: async (p) => void sent.push(p.partNumber) });
    expect(sent).toEqual([]);
    expect(again).toEqual(first);
    const redone = results.map((r) => (r.index === first.index ? again : r));
    await finishSegments(stack.ctx, bin, { parts: redone.flatMap((r) => r.parts), crcs: redone.flatMap((r) => r.crcs) }, tuning, { signal });
    expect((await read(bin.key)).equals(await onePackerZip(stack.ctx.fetcher, bin.files as BinFile[], mtime))).toBe(true);
  });

  it("fills its parts in the process's pooled part buffers, segment after segment and in the finishing step: two in all, given back", async () => {
    const { bin } = await segmentedBin('pooled', PART * 2);
    const signal = new AbortController().signal;
    // The earlier tests' buffers out of the pool (held here), so each one this test uses is counted.
    const held: Buffer[] = [];
    while (partBuffers.idleSize >= PART) {
      const idle = partBuffers.idleSize;
      held.push(partBuffers.take(PART));
      if (partBuffers.idleSize === idle) break;
    }
    const before = { allocated: partBuffers.allocated, idle: partBuffers.idleSize };
    const results = [];
    for (const s of bin.plan.segments) results.push(await packSegment(stack.ctx, bin, s.index, tuning, { signal }));
    await finishSegments(stack.ctx, bin, { parts: results.flatMap((r) => r.parts), crcs: results.flatMap((r) => r.crcs) }, tuning, { signal });
    expect(bin.plan.partCount).toBeGreaterThan(4);
    // One filling while one is sent: buffers taken anew or from the idle ones, at most two.
    expect(partBuffers.allocated - before.allocated).toBeLessThanOrEqual(2);
    expect(partBuffers.idleSize - before.idle).toBeGreaterThanOrEqual(2 * PART);
    expect((await read(bin.key)).equals(await onePackerZip(stack.ctx.fetcher, bin.files as BinFile[], mtime))).toBe(true);
  });
});
