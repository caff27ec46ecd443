// One ZIP packed by several packers (docs/segments.md): its bytes cut into contiguous ranges
// aligned to the upload's parts. Pure arithmetic over a layout; the archive engine runs it.
import type { ZipLayout } from './layout';

/** S3's most parts in one multipart upload. */
export const MAX_UPLOAD_PARTS = 10_000;

/** Bytes [start, end) of the ZIP, written as parts firstPart..lastPart (1-based) of its upload. */
export interface PackSegment {
  index: number;
  start: number;
  end: number;
  firstPart: number;
  lastPart: number;
}

export interface PackSegmentPlan {
  partSize: number;
  segments: PackSegment[];
  /** Parts of the ZIP, all segments together. */
  partCount: number;
  /**
   * Parts no segment can write alone, written by the finishing step once every CRC is known:
   * those holding a data descriptor of an entry whose body is not all in the part's segment,
   * and those holding the central directory and end records.
   */
  finishingParts: number[];
}

/**
 * The segments of a ZIP (parts of `partSize`, which S3 takes: at least 5 MiB) of this layout, or null when it is packed by one packer: an encrypted
 * layout (docs/segments.md#what-is-segmented), or one of at most `segmentBytes` x 2.
 */
export function planPackSegments(layout: ZipLayout, partSize: number, segmentBytes: number): PackSegmentPlan | null {
  if (layout.encryption || layout.totalSize <= segmentBytes * 2) return null;
  const partCount = Math.ceil(layout.totalSize / partSize);
  if (partCount > MAX_UPLOAD_PARTS) throw new RangeError(`${partCount} parts of ${partSize} bytes exceed S3's ${MAX_UPLOAD_PARTS}`);
  const partsPerSegment = Math.max(1, Math.floor(segmentBytes / partSize));
  const segments: PackSegment[] = [];
  for (let first = 1; first <= partCount; first += partsPerSegment) {
    const last = Math.min(partCount, first + partsPerSegment - 1);
    segments.push({ index: segments.length, start: (first - 1) * partSize, end: Math.min(last * partSize, layout.totalSize), firstPart: first, lastPart: last });
  }
  return { partSize, segments, partCount, finishingParts: finishingPartsOf(layout, partSize, segments) };
}

/** The part number (1-based) holding byte `offset`. */
export const partOf = (offset: number, partSize: number) => Math.floor(offset / partSize) + 1;

function finishingPartsOf(layout: ZipLayout, partSize: number, segments: readonly PackSegment[]): number[] {
  const parts = new Set<number>();
  const segmentOf = (offset: number) => segments[Math.floor(offset / (segments[0]!.end - segments[0]!.start))]!;
  const mark = (from: number, length: number) => {
    for (let p = partOf(from, partSize); p <= partOf(from + length - 1, partSize); p++) parts.add(p);
  };
  for (const entry of layout.entries) {
    if (entry.size === 0) continue; // its CRC is 0, known to every segment
    const length = descriptorBytes(layout, entry.index);
    // A descriptor's bytes may fall in two segments: the later one must have streamed the whole body.
    if (entry.dataOffset < segmentOf(entry.descriptorOffset + length - 1).start) mark(entry.descriptorOffset, length);
  }
  mark(layout.centralOffset, layout.totalSize - layout.centralOffset);
  return [...parts].sort((a, b) => a - b);
}

function descriptorBytes(layout: ZipLayout, entry: number): number {
  const placed = layout.entries[entry]!;
  const next = layout.entries[entry + 1];
  return (next ? next.offset : layout.centralOffset) - placed.descriptorOffset;
}
