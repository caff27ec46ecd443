import { describe, expect, it } from '@jest/globals';
import { partSizeFor } from '@ap/storage';
import { crc32, MAX_UPLOAD_PARTS, planPackSegments, planZip, ZipEncryption } from '@ap/zip';
import { combinedCrcs, segmentPlanOf } from './segments';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const mtime = new Date('2026-01-01T00:00:00Z');

describe('planning a bin\'s segments', () => {
  it('keeps a 200 GB bin with 1 GiB segments within S3\'s 10,000 parts of at least 5 MiB, numbered in order', () => {
    const layout = planZip(Array.from({ length: 200 }, (_, i) => ({ name: `f${i}.bin`, size: 1e9 + i * 7919 })), { mtime });
    const plan = segmentPlanOf(layout, GiB)!;
    expect(plan.partSize).toBe(partSizeFor(layout.totalSize));
    expect(plan.partCount).toBeLessThanOrEqual(MAX_UPLOAD_PARTS);
    expect(plan.partSize).toBeGreaterThanOrEqual(5 * MiB);
    // Segments are whole parts, end to end, each at most SEGMENT_BYTES.
    let next = 1;
    let at = 0;
    for (const s of plan.segments) {
      expect(s.firstPart).toBe(next);
      expect(s.start).toBe(at);
      expect(s.start).toBe((s.firstPart - 1) * plan.partSize);
      expect(s.end - s.start).toBeLessThanOrEqual(GiB);
      next = s.lastPart + 1;
      at = s.end;
    }
    expect(next - 1).toBe(plan.partCount);
    expect(at).toBe(layout.totalSize);
    // 20 MiB parts: segments of 51 parts (1020 MiB).
    expect(plan.partSize).toBe(20 * MiB);
    expect(plan.segments.length).toBe(Math.ceil(layout.totalSize / (51 * plan.partSize)));
    // The last part (central directory) and each descriptor of a body that began in an earlier segment.
    expect(plan.finishingParts).toContain(plan.partCount);
    for (const e of layout.entries) {
      const part = Math.floor(e.descriptorOffset / plan.partSize) + 1;
      const segment = plan.segments.find((s) => s.firstPart <= part && part <= s.lastPart)!;
      if (e.dataOffset < segment.start) expect(plan.finishingParts).toContain(part);
    }
    expect(plan.finishingParts.length).toBeLessThan(plan.partCount / 20);
  });

  it('leaves a bin of at most SEGMENT_BYTES x 2, and an encrypted one, to one packer', () => {
    const small = planZip([{ name: 'a', size: 2 * GiB - 200 }], { mtime });
    expect(segmentPlanOf(small, GiB)).toBeNull();
    const big = planZip([{ name: 'a', size: 3 * GiB }], { mtime });
    expect(segmentPlanOf(big, GiB)).not.toBeNull();
    const encryption = new ZipEncryption('password-123', Buffer.alloc(32, 1), 1);
    expect(planPackSegments(planZip([{ name: 'a', size: 3 * GiB }], { mtime, encryption }), 8 * MiB, GiB)).toBeNull();
  });

  it('combines the partial CRC-32s of a body\'s segments into its CRC-32, and refuses a gap', () => {
    const body = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 31) & 255));
    const layout = planZip([{ name: 'a', size: 1000 }, { name: 'empty', size: 0 }], { mtime });
    const pieces = [
      { entry: 0, from: 0, to: 300, crc: crc32(body.subarray(0, 300)) },
      { entry: 0, from: 300, to: 1000, crc: crc32(body.subarray(300)) },
    ];
    expect(combinedCrcs(layout, pieces)).toEqual(new Map([[0, crc32(body)], [1, 0]]));
    expect(() => combinedCrcs(layout, pieces.slice(1))).toThrow(/cover 0 of its 1000/);
  });
});
