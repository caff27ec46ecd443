// A bin assembled inside S3, in segments (docs/segments.md#assembled-inside-s3-in-segments): the
// only bytes its packer has to read are the objects without a full-object CRC32 checksum, for
// their CRC-32s. Each segment reads the bodies in its byte range of the ZIP (ranged GETs, the
// bytes go nowhere) and leaves their partial CRCs; the finishing step assembles the ZIP with
// UploadPartCopy (assembleInStore) from the combined CRCs, reading nothing more.
import { parseS3Url } from '@ap/contract';
import { mapLimit } from '@ap/fetch';
import type { ObjectRef, ObjectStore } from '@ap/storage';
import { crc32Combine, type ZipLayout } from '@ap/zip';
import type { ProgressReport } from './pack';
import { crcFromStart, type PartialCrc, type SegmentedBin } from './segments';
import { readRangeCrc, sameEtag } from './server-copy';

/** Bytes read per ranged GET of a CRC segment; its pieces are read `concurrency` at once. */
const PIECE_BYTES = 8 * 1024 * 1024;

/** Body bytes of an entry inside a segment's range: [from, to) of the object. */
interface BodyRange {
  entry: number;
  from: number;
  to: number;
}

/** The bodies (or their parts) in bytes [start, end) of the ZIP. */
function bodiesIn(layout: ZipLayout, start: number, end: number): BodyRange[] {
  const ranges: BodyRange[] = [];
  for (const e of layout.entries) {
    const from = Math.max(0, start - e.dataOffset);
    const to = Math.min(e.size, end - e.dataOffset);
    if (to > from) ranges.push({ entry: e.index, from, to });
  }
  return ranges;
}

/**
 * Segment `index` of a bin assembled inside S3: the CRC-32 of each body part in its range, read
 * by range, for the objects S3 has no full-object CRC32 for; an object with one gets it from
 * the segment holding its first byte. An object no longer as recorded (size, ETag) is left out:
 * the finishing step finds it changed and the bin is packed through the packer.
 */
export async function readSegmentCrcs(
  deps: { store: ObjectStore },
  bin: SegmentedBin,
  index: number,
  settings: { concurrency: number },
  { signal, progress, onRead }: { signal: AbortSignal; progress?: ProgressReport; onRead?: (bytes: number) => void },
): Promise<PartialCrc[]> {
  const segment = bin.plan.segments[index]!;
  const bodies = bodiesIn(bin.layout, segment.start, Math.min(segment.end, bin.layout.centralOffset));
  const refOf = (entry: number): ObjectRef => {
    const file = bin.files[entry]!;
    const location = parseS3Url(file.url);
    if (!location) throw new Error(`file ${file.position} of a bin assembled inside S3 is not an object`);
    return { ...location, ...(file.etag !== null ? { etag: file.etag } : {}) };
  };
  const heads = await mapLimit(bodies, settings.concurrency, (b) => deps.store.headChecksum(refOf(b.entry)));
  const partials: PartialCrc[] = [];
  const toRead: (BodyRange & { ref: ObjectRef })[] = [];
  bodies.forEach((b, i) => {
    const head = heads[i];
    const file = bin.files[b.entry]!;
    if (!head || head.size !== Number(file.size) || (file.etag !== null && !sameEtag(head.etag, file.etag))) return;
    if (head.crc32 === null) toRead.push({ ...b, ref: refOf(b.entry) });
    else if (b.from === 0) partials.push({ entry: b.entry, from: 0, to: head.size, crc: head.crc32 });
  });
  // Every piece of every body at once, `concurrency` in flight: many small objects read as fast as few big ones.
  const pieces = toRead.flatMap((b) =>
    Array.from({ length: Math.ceil((b.to - b.from) / PIECE_BYTES) }, (_, i) => ({ body: b, from: b.from + i * PIECE_BYTES, to: Math.min(b.to, b.from + (i + 1) * PIECE_BYTES) })),
  );
  const crcs = await mapLimit(pieces, settings.concurrency, async (p) => {
    signal.throwIfAborted();
    const crc = await readRangeCrc(deps.store, p.body.ref, p.from, p.to, 1, onRead);
    progress?.add(p.to - p.from);
    return crc;
  });
  for (const b of toRead) {
    let crc = 0;
    pieces.forEach((p, i) => {
      if (p.body === b) crc = p.from === b.from ? crcs[i]! : crc32Combine(crc, crcs[i]!, p.to - p.from);
    });
    partials.push({ entry: b.entry, from: b.from, to: b.to, crc: crc >>> 0 });
  }
  return partials;
}

/** The CRC-32 of each entry whose body the partial CRCs cover end to end (an entry left out by a segment is not). */
export function crcsOfSegments(layout: ZipLayout, partials: readonly PartialCrc[]): Map<number, number> {
  const crcs = new Map<number, number>();
  for (const entry of layout.entries) {
    const { crc, covered } = crcFromStart(partials.filter((p) => p.entry === entry.index));
    if (entry.size > 0 && covered === entry.size) crcs.set(entry.index, crc);
  }
  return crcs;
}
