// Every sub-range of small archives, built from its plan (records rendered, bodies sliced,
// CRC-32s computed upfront or learned on the way), equals the same bytes of the whole archive
// as the writer writes it: for the smallest archives every (start, end) pair, for larger ones every
// pair of offsets around each record and body boundary, under each state of CRC knowledge the
// engine meets (nothing known, all known, checkpoints, a mix). The ZIP64 archives (a body past
// 4 GiB, more than 65,534 entries) are compared with their layout's records, which
// format.test.ts shows equal to the writer's byte for byte.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { crc32, crc32Combine } from './crc32';
import { planZip, renderSegment, type Segment, type ZipLayout } from './layout';
import { buildRange, extendCheckpoint, planRange, type BodySource, type KnownCrcs } from './range';
import type { CrcCheckpoint } from './stream-plan';
import { renderWhole, writerArchive, zerosCrc as zerosCrcUncached } from './testing';

const MTIME = new Date('2026-11-25T18:00:00Z');

/** CRC-32s of zero runs, each computed once (a 4 GiB body's is asked for by thousands of ranges). */
const zeroRuns = new Map<number, number>();
function zerosCrc(n: number): number {
  let crc = zeroRuns.get(n);
  if (crc === undefined) zeroRuns.set(n, (crc = zerosCrcUncached(n)));
  return crc;
}

/** A body held in memory, or `zeros` zero bytes never held whole. */
type Body = { bytes: Buffer } | { zeros: number };
const sizeOf = (b: Body) => ('bytes' in b ? b.bytes.length : b.zeros);

/** The bodies as a source that counts the bytes read from it (what an origin would send). */
function sourceOf(bodies: readonly Body[]): BodySource & { readBytes: number } {
  return {
    readBytes: 0,
    read(entry, from, to) {
      const body = bodies[entry]!;
      if (!(from >= 0 && to > from && to <= sizeOf(body))) throw new RangeError(`entry ${entry}: read ${from}-${to} of ${sizeOf(body)}`);
      this.readBytes += to - from;
      return 'bytes' in body ? body.bytes.subarray(from, to) : Buffer.alloc(to - from);
    },
    crc(entry, from, to) {
      const body = bodies[entry]!;
      this.readBytes += to - from.length;
      if ('bytes' in body) return crc32(body.bytes.subarray(from.length, to), from.crc);
      return crc32Combine(from.crc, zerosCrc(to - from.length), to - from.length);
    },
  };
}

const crcOfBody = (b: Body) => ('bytes' in b ? crc32(b.bytes) : zerosCrc(b.zeros));

function prefixCheckpoint(body: Body, length: number): CrcCheckpoint {
  return { length, crc: 'bytes' in body ? crc32(body.bytes.subarray(0, length)) : zerosCrc(length) };
}

/** What the engine may know before a range: nothing, everything, checkpoints, or a mix. */
interface Knowledge {
  name: string;
  crcs: Map<number, number>;
  checkpoints: Map<number, CrcCheckpoint>;
}

function knowledgeStates(bodies: readonly Body[]): Knowledge[] {
  const all = new Map(bodies.map((b, i) => [i, crcOfBody(b)]));
  const at = (fraction: number) => new Map(bodies.map((b, i) => [i, prefixCheckpoint(b, Math.floor(sizeOf(b) * fraction))]));
  return [
    { name: 'nothing known', crcs: new Map(), checkpoints: new Map() },
    { name: 'all CRCs known', crcs: all, checkpoints: new Map() },
    { name: 'checkpoints at half of each body', crcs: new Map(), checkpoints: at(0.5) },
    {
      name: 'every other CRC known, the rest checkpointed at one byte',
      crcs: new Map([...all].filter(([i]) => i % 2 === 0)),
      checkpoints: new Map(bodies.map((b, i) => [i, prefixCheckpoint(b, Math.min(1, sizeOf(b)))] as const).filter(([i]) => i % 2 === 1)),
    },
  ];
}

const knownOf = (k: { crcs: ReadonlyMap<number, number>; checkpoints: ReadonlyMap<number, CrcCheckpoint> }): KnownCrcs => ({
  has: (e) => k.crcs.has(e),
  checkpoint: (e) => k.checkpoints.get(e) ?? null,
});

/** Offsets within `spread` bytes of every segment boundary (and of the archive's ends). */
function boundaryOffsets(layout: ZipLayout, spread: number, extra: number[] = []): number[] {
  const points = new Set<number>(extra);
  for (const s of layout.segments) {
    for (const edge of [s.start, s.start + s.length]) {
      for (let d = -spread; d <= spread; d++) if (edge + d >= 0 && edge + d < layout.totalSize) points.add(edge + d);
    }
  }
  return [...points].sort((a, b) => a - b);
}

/** Each entry's descriptor and central record (the records holding its CRC-32), by entry. */
const crcRecords = new WeakMap<ZipLayout, Segment[][]>();
function crcRecordsOf(layout: ZipLayout): Segment[][] {
  let records = crcRecords.get(layout);
  if (!records) {
    records = layout.entries.map(() => []);
    for (const s of layout.segments) if (s.kind === 'descriptor' || s.kind === 'central') records[s.entry]!.push(s);
    crcRecords.set(layout, records);
  }
  return records;
}

/** How many body bytes [start, end] holds: counted over the data segments, found by binary search. */
const dataSegments = new WeakMap<ZipLayout, Segment[]>();
function bodyBytesWithin(layout: ZipLayout, start: number, end: number): number {
  let data = dataSegments.get(layout);
  if (!data) dataSegments.set(layout, (data = layout.segments.filter((s) => s.kind === 'data')));
  let lo = 0;
  let hi = data.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (data[mid]!.start + data[mid]!.length <= start) lo = mid + 1;
    else hi = mid;
  }
  let n = 0;
  for (let i = lo; i < data.length && data[i]!.start <= end; i++) n += Math.min(end + 1, data[i]!.start + data[i]!.length) - Math.max(start, data[i]!.start);
  return n;
}

/**
 * Builds [start, end] under every knowledge state and checks it against `expected`, the CRCs
 * it learned and the checkpoints it reached against the bodies, and that it read no body byte
 * it did not need: with every CRC known, exactly the body bytes in the range.
 */
function checkRange(layout: ZipLayout, bodies: readonly Body[], states: Knowledge[], start: number, end: number, expected: Buffer): void {
  const bodyBytesInRange = bodyBytesWithin(layout, start, end);
  for (const state of states) {
    const plan = planRange(layout, start, end, knownOf(state));
    const source = sourceOf(bodies);
    const built = buildRange(layout, plan, source, state.crcs);
    if (!built.bytes.equals(expected)) throw new Error(`${state.name}: bytes ${start}-${end} differ from the whole archive's`);
    for (const [e, crc] of built.learned) if (crc !== crcOfBody(bodies[e]!)) throw new Error(`${state.name}: ${start}-${end} learned a wrong CRC for entry ${e}`);
    for (const [e, cp] of built.checkpoints) {
      if (cp.crc !== prefixCheckpoint(bodies[e]!, cp.length).crc) throw new Error(`${state.name}: ${start}-${end} reached a wrong checkpoint for entry ${e}`);
    }
    // A CRC is computed upfront only for an entry whose descriptor or central record is in the range.
    const records = crcRecordsOf(layout);
    for (const { entry } of plan.upfront) {
      const inRange = (s: { start: number; length: number }) => s.start <= end && s.start + s.length > start;
      if (!records[entry]!.some(inRange) || layout.entries[entry]!.size === 0 || state.crcs.has(entry)) {
        throw new Error(`${state.name}: ${start}-${end} computes entry ${entry}'s CRC for nothing`);
      }
    }
    if (state.name === 'all CRCs known' && (plan.upfront.length > 0 || source.readBytes !== bodyBytesInRange)) {
      throw new Error(`all CRCs known: ${start}-${end} read ${source.readBytes} body bytes, ${bodyBytesInRange} are in the range`);
    }
  }
}

async function writerWhole(names: string[], bodies: Buffer[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await writerArchive(
    names.map((name, i) => ({ name, body: { bytes: bodies[i]! }, declareSize: true })),
    MTIME,
    (c) => chunks.push(Buffer.from(c)),
  );
  return Buffer.concat(chunks);
}

async function smallArchive(entries: [string, number][]) {
  const bodies = entries.map(([, size]) => randomBytes(size));
  const layout = planZip(entries.map(([name, size]) => ({ name, size })), { mtime: MTIME });
  const whole = await writerWhole(entries.map(([name]) => name), bodies);
  expect(whole.length).toBe(layout.totalSize);
  return { layout, bodies: bodies.map((bytes) => ({ bytes })), whole };
}

describe('every sub-range of a planned ZIP', () => {
  it('an archive of no entries and the smallest archives: every (start, end) pair', async () => {
    for (const entries of [[], [['a', 3], ['e', 0]], [['é', 1]]] as [string, number][][]) {
      const { layout, bodies, whole } = await smallArchive(entries);
      const states = knowledgeStates(bodies);
      let pairs = 0;
      for (let start = 0; start < layout.totalSize; start++) {
        for (let end = start; end < layout.totalSize; end++, pairs++) checkRange(layout, bodies, states, start, end, whole.subarray(start, end + 1));
      }
      expect(pairs).toBe((layout.totalSize * (layout.totalSize + 1)) / 2);
    }
  });

  it('archives of several entries (empty ones, UTF-8 names, bodies of one byte): every pair around every boundary', async () => {
    const archives: [string, number][][] = [
      [['a.txt', 5], ['empty', 0], ['dir/ü-中.bin', 300], ['one', 1], ['empty2', 0], ['tail.bin', 40]],
      [['e1', 0], ['e2', 0], ['b', 64], ['e3', 0]],
      [['x', 0], ['y', 2], ['z', 0]],
      [['big', 5000], ['small', 2], ['mid', 700]],
    ];
    for (const entries of archives) {
      const { layout, bodies, whole } = await smallArchive(entries);
      const states = knowledgeStates(bodies);
      const offsets = boundaryOffsets(layout, 2, [Math.floor(layout.totalSize / 2)]);
      let pairs = 0;
      for (const start of offsets) {
        for (const end of offsets) if (end >= start) checkRange(layout, bodies, states, start, end, whole.subarray(start, end + 1)), pairs++;
      }
      expect(pairs).toBe((offsets.length * (offsets.length + 1)) / 2);
    }
  });

  it('a download resumed at any byte needs no body byte outside its range, given what the first part learned', async () => {
    const { layout, bodies, whole } = await smallArchive([['a.txt', 5], ['empty', 0], ['dir/ü.bin', 300], ['one', 1], ['tail.bin', 40]]);
    for (let k = 0; k < layout.totalSize - 1; k++) {
      const first = buildRange(layout, planRange(layout, 0, k, knownOf({ crcs: new Map(), checkpoints: new Map() })), sourceOf(bodies), new Map());
      const known = { crcs: first.learned, checkpoints: first.checkpoints };
      const plan = planRange(layout, k + 1, layout.totalSize - 1, knownOf(known));
      const source = sourceOf(bodies);
      const rest = buildRange(layout, plan, source, known.crcs);
      expect(Buffer.concat([first.bytes, rest.bytes]).equals(whole)).toBe(true);
      const bodyBytesAfterK = bodyBytesWithin(layout, k + 1, layout.totalSize - 1);
      expect({ k, upfront: plan.upfront, read: source.readBytes }).toEqual({ k, upfront: [], read: bodyBytesAfterK });
    }
  });

  it('ZIP64 by size: bodies of 4 GiB - 2 and 4 GiB - 1 (zeros, never held whole), every pair around every boundary', () => {
    const bodies: Body[] = [{ bytes: Buffer.from('abc') }, { zeros: 0xfffffffe }, { bytes: randomBytes(10) }, { zeros: 0xffffffff }, { bytes: Buffer.from('end') }];
    const names = ['small.txt', 'edge.bin', 'after-edge.txt', 'huge-ü.bin', 'tail.txt'];
    const layout = planZip(names.map((name, i) => ({ name, size: sizeOf(bodies[i]!) })), { mtime: MTIME });
    expect(layout.entries.map((e) => e.zip64)).toEqual([false, false, true, true, true]);
    const crcs = bodies.map(crcOfBody);
    // The whole archive's bytes in [start, end], from its segments in order (records as
    // format.test.ts shows the writer writes them, bodies as they are).
    const wholeRange = (start: number, end: number) => {
      const out: Buffer[] = [];
      let at = 0;
      for (const s of layout.segments) {
        expect(s.start).toBe(at);
        at += s.length;
        const from = Math.max(start, s.start);
        const to = Math.min(end + 1, s.start + s.length);
        if (to <= from) continue;
        const body = s.kind === 'data' ? bodies[s.entry]! : null;
        const bytes = body ? ('bytes' in body ? body.bytes.subarray(from - s.start, to - s.start) : Buffer.alloc(to - from)) : renderSegment(layout, s, (e) => crcs[e]!).subarray(from - s.start, to - s.start);
        out.push(bytes);
      }
      return Buffer.concat(out);
    };
    const states = knowledgeStates(bodies);
    const entryAt = (i: number, offset: number) => layout.entries[i]!.dataOffset + offset;
    const offsets = boundaryOffsets(layout, 2, [entryAt(1, 2 ** 31), entryAt(3, 2 ** 31), entryAt(3, 2 ** 32), 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1]);
    // A range holding most of a 4 GiB body is not built in memory; every other pair is.
    const maxLength = 1 << 20;
    let pairs = 0;
    for (const start of offsets) {
      for (const end of offsets) {
        if (end < start || end - start >= maxLength) continue;
        checkRange(layout, bodies, states, start, end, wholeRange(start, end));
        pairs++;
      }
    }
    expect(pairs).toBeGreaterThan(2000);
    // The central directory and end records alone need every CRC: learned without sending a body byte.
    const tail = planRange(layout, layout.centralOffset, layout.totalSize - 1, knownOf(states[0]!));
    expect(tail.upfront.map((u) => u.entry)).toEqual([0, 1, 2, 3, 4]);
    expect(layout.segments.at(-1)!.length).toBe(22 + 76);
  });

  it('ZIP64 by count: 65,536 entries, every pair around the last entries, the central directory and the end records', () => {
    const count = 65_536;
    const bodies: Body[] = Array.from({ length: count }, (_, i) => ({ bytes: Buffer.from([i & 0xff, (i >> 8) & 0xff].slice(0, 1 + (i % 2))) }));
    const layout = planZip(bodies.map((b, i) => ({ name: `f/${i}`, size: sizeOf(b) })), { mtime: MTIME });
    expect(layout.segments.at(-1)!.length).toBe(22 + 76);
    const whole = renderWhole(layout, bodies.map((b) => (b as { bytes: Buffer }).bytes));
    const states = knowledgeStates(bodies);
    const near = new Set<number>();
    const around = (x: number) => [-2, -1, 0, 1, 2].forEach((d) => x + d >= 0 && x + d < layout.totalSize && near.add(x + d));
    for (const i of [0, count - 2, count - 1]) {
      const e = layout.entries[i]!;
      [e.offset, e.dataOffset, e.descriptorOffset].forEach(around);
    }
    const centrals = layout.segments.filter((s) => s.kind === 'central');
    for (const s of [...centrals.slice(0, 2), ...centrals.slice(-2)]) around(s.start);
    const end = layout.segments.at(-1)!;
    // The ZIP64 end record (56), its locator (20) and the classic end record (22).
    [end.start, end.start + 56, end.start + 76, layout.totalSize - 1].forEach(around);
    const offsets = [...near].sort((a, b) => a - b);
    // Ranges from the first entries to the last hold all 65,536 entries: a few are built, the
    // rest of the pairs are the ones within the archive's tail or head.
    let pairs = 0;
    for (const start of offsets) {
      for (const stop of offsets) {
        if (stop < start || stop - start > 4096) continue;
        checkRange(layout, bodies, states, start, stop, whole.subarray(start, stop + 1));
        pairs++;
      }
    }
    expect(pairs).toBeGreaterThan(1000);
    for (const [start, stop] of [[0, layout.totalSize - 1], [layout.entries[1]!.dataOffset, layout.centralOffset + 10]] as const) {
      checkRange(layout, bodies, states.slice(0, 2), start, stop, whole.subarray(start, stop + 1));
    }
  }, 120_000);
});

describe('extendCheckpoint', () => {
  it('moves only over a chunk that covers its end', () => {
    const body = randomBytes(100);
    const at10 = { length: 10, crc: crc32(body.subarray(0, 10)) };
    expect(extendCheckpoint(at10, body.subarray(20, 30), 20)).toBe(at10);
    expect(extendCheckpoint(at10, body.subarray(0, 10), 0)).toBe(at10);
    expect(extendCheckpoint(at10, body.subarray(5, 50), 5)).toEqual({ length: 50, crc: crc32(body.subarray(0, 50)) });
    expect(extendCheckpoint(at10, body.subarray(10, 100), 10)).toEqual({ length: 100, crc: crc32(body) });
  });
});
