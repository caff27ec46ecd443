import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { planZip, renderSegment, sliceRange, zipSize, ZipSizer } from './layout';
import { bodyCrc, bodyLength, readWithYauzl, renderWhole, writerArchive, type TestBody } from './testing';

const MTIME = new Date('2026-11-23T10:11:13Z');
const ALPHABETS = ['abcdefghij', 'éèàüß', '中文字符', '😀🎉🦀', 'ab/cd/'];

function randomName(i: number): string {
  const alphabet = [...ALPHABETS[randomInt(ALPHABETS.length)]!];
  let name = `${i}-`;
  const length = randomInt(1, 40);
  for (let k = 0; k < length; k++) name += alphabet[randomInt(alphabet.length)];
  return name.replace(/\/+$/, '').replace(/\/\/+/g, '/') + '.bin';
}

async function writerBytes(entries: { name: string; body: TestBody; declareSize: boolean }[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await writerArchive(entries, MTIME, (c) => chunks.push(Buffer.from(c)));
  return Buffer.concat(chunks);
}

describe('ZIP layout', () => {
  it('renders exactly the bytes the writer writes, for many random archives', async () => {
    for (let round = 0; round < 60; round++) {
      const count = randomInt(0, 12);
      const entries = Array.from({ length: count }, (_, i) => ({
        name: randomName(i),
        body: { bytes: randomBytes(randomInt(0, 3) === 0 ? 0 : randomInt(1, 5000)) },
        declareSize: true,
      }));
      const expected = await writerBytes(entries);
      const layout = planZip(entries.map((e) => ({ name: e.name, size: bodyLength(e.body) })), { mtime: MTIME });
      const rendered = renderWhole(layout, entries.map((e) => e.body.bytes));
      expect(rendered.length).toBe(expected.length);
      expect(rendered.equals(expected)).toBe(true);
      expect(layout.totalSize).toBe(expected.length);
      expect(zipSize(entries.map((e) => ({ name: e.name, size: bodyLength(e.body) })))).toBe(expected.length);

      const read = await readWithYauzl(rendered);
      expect(read.map((r) => r.name)).toEqual(entries.map((e) => e.name));
      read.forEach((r, i) => expect(r.data.equals(entries[i]!.body.bytes)).toBe(true));
    }
  });

  it('serves any byte range as the same bytes of the whole archive', () => {
    const bodies = Array.from({ length: 7 }, (_, i) => randomBytes(i === 3 ? 0 : randomInt(1, 400)));
    const layout = planZip(bodies.map((b, i) => ({ name: `dir/é${i}.txt`, size: b.length })), { mtime: MTIME });
    const whole = renderWhole(layout, bodies);
    const crcs = bodies.map((b) => bodyCrc({ bytes: b }));
    const cuts = [0, 1, 29, 30, 31, layout.centralOffset - 1, layout.centralOffset, layout.centralOffset + 1, layout.totalSize - 22, layout.totalSize - 1];
    const ranges: [number, number][] = [];
    for (const a of cuts) for (const b of cuts) if (b >= a) ranges.push([a, b]);
    for (let i = 0; i < 300; i++) {
      const a = randomInt(layout.totalSize);
      ranges.push([a, randomInt(a, layout.totalSize)]);
    }
    for (const [start, end] of ranges) {
      const asked = new Set<number>();
      const part = Buffer.concat(
        sliceRange(layout, start, end).map(({ segment, from, length }) => {
          const bytes = segment.kind === 'data' ? bodies[segment.entry]! : renderSegment(layout, segment, (e) => (asked.add(e), crcs[e]!));
          return bytes.subarray(from, from + length);
        }),
      );
      expect(part.equals(whole.subarray(start, end + 1))).toBe(true);
      // A CRC is needed only by the descriptor and central record of its own entry.
      for (const e of asked) {
        const entry = layout.entries[e]!;
        const needed = (start <= entry.descriptorOffset + 15 && end >= entry.descriptorOffset) || end >= layout.centralOffset;
        expect(needed).toBe(true);
      }
    }
    expect(() => sliceRange(layout, 0, layout.totalSize)).toThrow(RangeError);
  });

  it('keeps the running size equal to the planned one', () => {
    const sizer = new ZipSizer();
    const entries: { name: string; size: number }[] = [];
    for (let i = 0; i < 50; i++) {
      const e = { name: randomName(i), size: randomInt(0, 2) ? randomInt(0, 1e6) : randomInt(0, 3) * 2 ** 31 + randomInt(1e6) };
      const predicted = sizer.totalWith(Buffer.byteLength(e.name), e.size);
      const dataOffset = sizer.nextDataOffset(Buffer.byteLength(e.name), e.size);
      sizer.add(Buffer.byteLength(e.name), e.size);
      entries.push(e);
      expect(sizer.total()).toBe(predicted);
      const layout = planZip(entries, { mtime: MTIME });
      expect(layout.totalSize).toBe(predicted);
      expect(layout.entries[i]!.dataOffset).toBe(dataOffset);
    }
    expect(zipSize([{ name: 'a', size: null }])).toBeNull();
  });

  it('writes ZIP64 records exactly as laid out across the 4 GiB boundary (bodies streamed, not stored)', async () => {
    // 0xfffffffe is the largest body without ZIP64; the next entry's offset then needs it,
    // and 0xffffffff needs it by size. About 8 GiB of zeros pass through the writer.
    const entries = [
      { name: 'small.txt', body: { bytes: Buffer.from('abc') } as TestBody, declareSize: true },
      { name: 'edge.bin', body: { zeros: 0xfffffffe } as TestBody, declareSize: true },
      { name: 'after-edge.txt', body: { bytes: Buffer.from('0123456789') } as TestBody, declareSize: true },
      { name: 'huge-ü.bin', body: { zeros: 0xffffffff } as TestBody, declareSize: true },
      { name: 'tail.txt', body: { bytes: Buffer.from('end') } as TestBody, declareSize: true },
    ];
    const layout = planZip(entries.map((e) => ({ name: e.name, size: bodyLength(e.body) })), { mtime: MTIME });
    expect(layout.entries.map((e) => e.zip64)).toEqual([false, false, true, true, true]);
    const crcs = entries.map((e) => bodyCrc(e.body));
    const records = layout.segments.filter((s) => s.kind !== 'data');
    const expected = records.map((s) => renderSegment(layout, s, (i) => crcs[i]!));
    const seen = records.map((s) => Buffer.alloc(s.length));
    const total = await writerArchive(entries, MTIME, (chunk, offset) => {
      const end = offset + chunk.length;
      records.forEach((s, i) => {
        const from = Math.max(offset, s.start);
        const to = Math.min(end, s.start + s.length);
        if (to > from) chunk.copy(seen[i]!, from - s.start, from - offset, to - offset);
      });
    });
    expect(total).toBe(layout.totalSize);
    records.forEach((s, i) => expect({ kind: s.kind, bytes: seen[i]!.toString('hex') }).toEqual({ kind: s.kind, bytes: expected[i]!.toString('hex') }));
    // The end records are the ZIP64 kind: the central directory starts past 4 GiB.
    expect(layout.segments.at(-1)!.length).toBe(22 + 76);
  }, 240_000);

  it('uses the ZIP64 end records for more than 65,534 entries', async () => {
    const count = 65_536;
    const entries = Array.from({ length: count }, (_, i) => ({ name: `f/${i}`, body: { bytes: Buffer.from([i & 0xff]) } as TestBody, declareSize: true }));
    const expected = await writerBytes(entries);
    const layout = planZip(entries.map((e) => ({ name: e.name, size: 1 })), { mtime: MTIME });
    const rendered = renderWhole(layout, entries.map((e) => (e.body as { bytes: Buffer }).bytes));
    expect(rendered.equals(expected)).toBe(true);
    expect(layout.segments.at(-1)!.length).toBe(22 + 76);
  }, 240_000);
});
