import { describe, expect, it } from '@jest/globals';
import { planZip, sliceRange } from './layout';
import { crcsNeededUpfront, crcStart, planCrc, streamEtag } from './stream-plan';

const mtime = new Date('2026-01-02T03:04:05Z');
const layout = planZip(
  [
    { name: 'a.bin', size: 1000 },
    { name: 'empty', size: 0 },
    { name: 'b.bin', size: 5000 },
  ],
  { mtime },
);
const validators = [
  { etag: '"a"', lastModified: null },
  { etag: null, lastModified: null },
  { etag: null, lastModified: 'Mon, 01 Jan 2026 00:00:00 GMT' },
];

describe('streamEtag', () => {
  it('is stable and strong, and changes with any validator, name, size or mtime', () => {
    const tag = streamEtag(layout, validators);
    expect(tag).toMatch(/^"s-[A-Za-z0-9_-]{32}"$/);
    expect(streamEtag(planZip(layout.entries.map((e) => ({ name: e.name.toString(), size: e.size })), { mtime }), validators)).toBe(tag);
    expect(streamEtag(layout, [{ etag: '"a2"', lastModified: null }, validators[1]!, validators[2]!])).not.toBe(tag);
    expect(streamEtag(planZip([{ name: 'a.bin', size: 1001 }, { name: 'empty', size: 0 }, { name: 'b.bin', size: 5000 }], { mtime }), validators)).not.toBe(tag);
    expect(streamEtag(planZip(layout.entries.map((e) => ({ name: e.name.toString(), size: e.size })), { mtime: new Date('2026-01-03') }), validators)).not.toBe(tag);
  });
});

describe('crcsNeededUpfront', () => {
  const none = () => false;
  it('asks nothing for headers and bodies', () => {
    expect(crcsNeededUpfront(layout, sliceRange(layout, 0, layout.entries[0]!.descriptorOffset - 1), none)).toEqual([]);
  });
  it('asks for an entry whose descriptor is in the range but not its body', () => {
    const d = layout.entries[0]!.descriptorOffset;
    expect(crcsNeededUpfront(layout, sliceRange(layout, d, d + 3), none)).toEqual([0]);
  });
  it('learns in-stream an entry whose body reaches its descriptor in the range', () => {
    expect(crcsNeededUpfront(layout, sliceRange(layout, layout.entries[0]!.dataOffset + 10, layout.entries[2]!.dataOffset + 5), none)).toEqual([]);
  });
  it('asks for every non-empty entry in a central-directory-only range, unless known', () => {
    expect(crcsNeededUpfront(layout, sliceRange(layout, layout.centralOffset, layout.totalSize - 1), none)).toEqual([0, 2]);
    expect(crcsNeededUpfront(layout, sliceRange(layout, layout.centralOffset, layout.totalSize - 1), (e) => e === 2)).toEqual([0]);
  });
});

describe('planCrc', () => {
  it('tracks from the start', () => {
    expect(planCrc(0, 10, 100, null)).toEqual({ kind: 'track', state: { length: 0, crc: 0 } });
  });
  it('uses a checkpoint at or past the resume point for free', () => {
    expect(planCrc(40, 100, 100, { length: 60, crc: 7 })).toEqual({ kind: 'track', state: { length: 60, crc: 7 } });
    expect(planCrc(40, 50, 100, { length: 40, crc: 7 })).toEqual({ kind: 'track', state: { length: 40, crc: 7 } });
  });
  it('fetches the gap from an earlier checkpoint only when the range reaches the end', () => {
    expect(planCrc(40, 100, 100, { length: 30, crc: 7 })).toEqual({ kind: 'prefix', state: { length: 30, crc: 7 } });
    expect(planCrc(40, 100, 100, null)).toEqual({ kind: 'prefix', state: { length: 0, crc: 0 } });
    expect(planCrc(40, 90, 100, { length: 30, crc: 7 })).toEqual({ kind: 'none' });
  });
  it('starts a CRC computed alone at the best checkpoint', () => {
    expect(crcStart(100, { length: 60, crc: 9 })).toEqual({ length: 60, crc: 9 });
    expect(crcStart(100, null)).toEqual({ length: 0, crc: 0 });
  });
});
