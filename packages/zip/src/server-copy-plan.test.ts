import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { planZip, renderSegment, type ZipLayout } from './layout';
import { planServerCopy, S3_PART_LIMITS, uploadedBytes, type PartLimits, type PlannedPart } from './server-copy-plan';

const MiB = 1024 * 1024;
// The limits scaled down, so that random layouts cross them often.
const small: PartLimits = { minPartBytes: 100, maxCopyBytes: 300, maxUploadBytes: 250, maxParts: 10_000 };

function zipBytes(layout: ZipLayout, bodies: Buffer[]): Buffer {
  return Buffer.concat(layout.segments.map((s) => (s.kind === 'data' ? bodies[s.entry]! : renderSegment(layout, s, (e) => e * 7919))));
}

/** The bytes the parts make: uploads cut from the ZIP's bytes, copies from the objects alone. */
function assemble(parts: readonly PlannedPart[], whole: Buffer, bodies: Buffer[]): Buffer {
  return Buffer.concat(parts.map((p) => (p.kind === 'upload' ? whole.subarray(p.start, p.start + p.length) : bodies[p.entry]!.subarray(p.objectStart, p.objectStart + p.length))));
}

function checkLimits(parts: readonly PlannedPart[], limits: PartLimits): void {
  parts.forEach((p, i) => {
    if (i < parts.length - 1) expect(p.length).toBeGreaterThanOrEqual(limits.minPartBytes);
    if (p.kind === 'copy') expect(p.length).toBeLessThanOrEqual(limits.maxCopyBytes);
    else expect(p.length).toBeLessThanOrEqual(limits.maxUploadBytes);
  });
  expect(parts.length).toBeLessThanOrEqual(limits.maxParts);
}

describe('the parts of a server-side assembly', () => {
  it('make the ZIP\'s bytes, within S3\'s part limits, for random layouts', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ size: fc.nat({ max: 1200 }), copyable: fc.boolean(), name: fc.string({ maxLength: 12 }) }), { maxLength: 12 }), (entries) => {
        const layout = planZip(entries.map((e, i) => ({ name: `${i}${e.name}`, size: e.size })), { mtime: new Date(2024, 0, 1) });
        const bodies = entries.map((e, i) => Buffer.alloc(e.size, (i * 37 + 11) & 0xff).fill(i & 0xff, 0, Math.min(e.size, 3)));
        const whole = zipBytes(layout, bodies);
        const parts = planServerCopy(layout, (entry) => entries[entry]!.copyable, small)!;
        expect(assemble(parts, whole, bodies).equals(whole)).toBe(true);
        checkLimits(parts, small);
        for (const p of parts) if (p.kind === 'copy') expect(entries[p.entry]!.copyable).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('uploads only records and the slices that reach the part minimum when every body is copyable', () => {
    const layout = planZip(Array.from({ length: 3 }, (_, i) => ({ name: `big-${i}.bin`, size: 64 * MiB })), { mtime: new Date(0) });
    const parts = planServerCopy(layout, () => true)!;
    checkLimits(parts, S3_PART_LIMITS);
    expect(parts.map((p) => p.kind)).toEqual(['upload', 'copy', 'upload', 'copy', 'upload', 'copy', 'upload']);
    // Each of the three part minimums is reached with object bytes; the rest is records.
    expect(uploadedBytes(parts)).toBeLessThan(3 * 5 * MiB + 1000);
  });

  it('copies a body longer than the copy maximum in several ranges', () => {
    const layout = planZip([{ name: 'huge', size: 12 * 1024 * MiB }], { mtime: new Date(0) });
    const parts = planServerCopy(layout, () => true)!;
    checkLimits(parts, S3_PART_LIMITS);
    expect(parts.filter((p) => p.kind === 'copy')).toHaveLength(3);
  });

  it('uploads a copyable body too short to leave a copy of the part minimum', () => {
    const layout = planZip([{ name: 'a', size: 150 }, { name: 'b', size: 10 }], { mtime: new Date(0) });
    expect(planServerCopy(layout, () => true, { ...small, maxUploadBytes: 1000 })).toEqual([{ kind: 'upload', start: 0, length: layout.totalSize }]);
  });

  it('is null past the part count maximum', () => {
    const layout = planZip(Array.from({ length: 5 }, (_, i) => ({ name: `${i}`, size: 400 })), { mtime: new Date(0) });
    expect(planServerCopy(layout, () => true, { ...small, maxParts: 8 })).toBeNull();
  });
});
