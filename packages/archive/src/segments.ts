// One ZIP packed by several packers (docs/segments.md): each segment is bytes [start, end) of
// the bin's planned ZIP, written as its own parts of the bin's one multipart upload; the
// finishing step writes the parts that need every CRC-32 and completes the upload.
import { freeChunk } from '@ap/fetch';
import { completeNumberedUpload, partSizeFor, putNumberedPart, sendPartsOf, type ObjectInfo, type UploadedPart } from '@ap/storage';
import { crc32Combine, partOf, planPackSegments, sliceRange, type CrcCheckpoint, type EntryMac, type PackSegment, type PackSegmentPlan, type ZipLayout } from '@ap/zip';
import type { CrcStore } from './crc-store';
import { LayoutReader, layoutInputsOf, type CrcSink } from './layout-reader';
import type { PackDeps, PackTuning, ProgressReport } from './pack';
import type { BinFile } from './resume';

/** The CRC-32 of body bytes [from, to) of an entry, as if they were the whole body. */
export interface PartialCrc {
  entry: number;
  from: number;
  to: number;
  crc: number;
}

/** What a segment leaves for the finishing step. */
export interface SegmentResult {
  index: number;
  parts: UploadedPart[];
  crcs: PartialCrc[];
}

/** A segmented bin: its layout (every name and size known), its files in order, its upload. */
export interface SegmentedBin {
  jobId: string;
  zipId: string;
  key: string;
  uploadId: string;
  layout: ZipLayout;
  files: readonly BinFile[];
  plan: PackSegmentPlan;
}

/** The segments of a bin of this layout (parts sized as for any upload of it), or null when one packer packs it. */
export function segmentPlanOf(layout: ZipLayout, segmentBytes: number): PackSegmentPlan | null {
  return planPackSegments(layout, partSizeFor(layout.totalSize), segmentBytes);
}

/**
 * Writes segment `index`: its bodies fetched by range, its parts stored by number, except the
 * parts left to the finishing step (skipped, and those in `stored`: already in the upload). Its
 * bytes are those of the whole ZIP at the same offsets; each body in it is hashed from the
 * segment's start, so the finishing step can combine the CRC-32s.
 */
export async function packSegment(
  deps: Pick<PackDeps, 'store' | 'fetcher'>,
  bin: SegmentedBin,
  index: number,
  tuning: Pick<PackTuning, 'fetchConcurrency' | 'fetchBudgetBytes'>,
  { signal, progress, stored = [], onPart }: { signal: AbortSignal; progress?: ProgressReport; stored?: readonly UploadedPart[]; onPart?: (part: UploadedPart) => Promise<void> },
): Promise<SegmentResult> {
  const { layout, plan } = bin;
  const segment = plan.segments[index]!;
  // The central directory needs every CRC: it is the finishing step's.
  const streamEnd = Math.min(segment.end, layout.centralOffset);
  if (streamEnd <= segment.start) return { index, parts: [], crcs: [] };
  const tally = new SegmentCrcs(layout, bin.files, segment);
  const { inputs } = layoutInputsOf(bin.files);
  const known = new Map<number, number>();
  for (const entry of layout.entries) {
    const i = entry.index;
    // A body that began before the segment is hashed from the segment's start, as if its CRC were 0 there.
    inputs[i]!.checkpoint = entry.dataOffset < segment.start && entry.dataOffset + entry.size > segment.start ? { length: segment.start - entry.dataOffset, crc: 0 } : null;
    // A body all before the segment: its descriptor here is in a finishing part, rendered there.
    if (entry.size === 0 || entry.dataOffset + entry.size <= segment.start) known.set(i, 0);
  }
  const reader = new LayoutReader(deps.fetcher, { checkpointEvery: Number.MAX_SAFE_INTEGER, fetchAhead: { concurrency: tuning.fetchConcurrency, budgetBytes: tuning.fetchBudgetBytes } }, tally, bin.jobId, layout, inputs, known, signal);
  const finishing = new Set(plan.finishingParts);
  const done = new Set(stored.map((p) => p.partNumber));
  const parts: UploadedPart[] = [...stored.filter((p) => p.partNumber >= segment.firstPart && p.partNumber <= segment.lastPart)];
  const slices = sliceRange(layout, segment.start, streamEnd - 1);
  try {
    await reader.prepare(slices);
    // Copied into part buffers and not read again: each chunk's memory goes back then, not at a full GC.
    await sendPartsOf(counted(reader.bytes(slices), progress), plan.partSize, async (i, data) => {
      const partNumber = partOf(segment.start, plan.partSize) + i;
      if (finishing.has(partNumber)) return;
      // A part cut short by the stream's end holds the central directory: the finishing step's.
      if (data.length < plan.partSize) throw new Error(`segment ${index} ended inside part ${partNumber}`);
      if (done.has(partNumber)) return;
      const part = await putNumberedPart(deps.store, bin.key, bin.uploadId, partNumber, data, signal);
      parts.push(part);
      await onPart?.(part);
    }, { freeWrittenChunk: freeChunk });
  } finally {
    await reader.close();
  }
  return { index, parts: parts.sort((a, b) => a.partNumber - b.partNumber), crcs: tally.partials() };
}

/**
 * Completes a segmented bin once every segment is in (`segments`: their parts, but the finishing
 * ones, and their partial CRCs): each entry's CRC-32 combined from its segments' partial ones, the finishing parts written (their body bytes fetched again by
 * range: at most a part's worth per part), then the upload completed with every part.
 */
export async function finishSegments(
  deps: Pick<PackDeps, 'store' | 'fetcher'>,
  bin: SegmentedBin,
  segments: { parts: readonly UploadedPart[]; crcs: readonly PartialCrc[] },
  tuning: Pick<PackTuning, 'fetchConcurrency' | 'fetchBudgetBytes'>,
  { signal, progress, crcStore }: { signal: AbortSignal; progress?: ProgressReport; crcStore?: CrcStore },
): Promise<ObjectInfo> {
  const { layout, plan } = bin;
  const crcs = combinedCrcs(layout, segments.crcs);
  for (const [entry, crc] of crcs) crcStore?.crc(bin.jobId, bin.files[entry]!.position, crc);
  const parts = [...segments.parts];
  const { inputs } = layoutInputsOf(bin.files);
  // One reader over every finishing part, so their bodies' ranges are fetched ahead together
  // (FETCH_CONCURRENCY connections within the budget), not one part after another, which held
  // the fleet's speedups down (bench/figures.md#one-archive-many-packers-pnpm-benchfleet).
  const wanted = plan.finishingParts.map((partNumber) => ({ partNumber, start: (partNumber - 1) * plan.partSize, end: Math.min(partNumber * plan.partSize, layout.totalSize) }));
  const slices = contiguousRuns(plan.finishingParts).flatMap((run) => sliceRange(layout, (run[0]! - 1) * plan.partSize, Math.min(run[run.length - 1]! * plan.partSize, layout.totalSize) - 1));
  const reader = new LayoutReader(deps.fetcher, { checkpointEvery: Number.MAX_SAFE_INTEGER, fetchAhead: { concurrency: tuning.fetchConcurrency, budgetBytes: tuning.fetchBudgetBytes } }, NO_CRCS, bin.jobId, layout, inputs, new Map(crcs), signal);
  let written = 0;
  try {
    await reader.prepare(slices);
    written = await sendPartsOf(reader.bytes(slices), plan.partSize, async (i, data) => {
      const part = wanted[i];
      if (!part || data.length !== part.end - part.start) throw new Error(`the finishing parts' bytes do not end where part ${part?.partNumber ?? i + 1} ends`);
      parts.push(await putNumberedPart(deps.store, bin.key, bin.uploadId, part.partNumber, data, signal));
      progress?.add(Math.max(0, part.end - Math.max(part.start, layout.centralOffset)));
    }, { freeWrittenChunk: freeChunk });
  } finally {
    await reader.close();
  }
  if (written !== wanted.length) throw new Error(`the finishing step wrote ${written} of its ${wanted.length} parts`);
  const numbers = new Set(parts.map((p) => p.partNumber));
  if (numbers.size !== plan.partCount) throw new Error(`segmented upload has ${numbers.size} of its ${plan.partCount} parts`);
  return completeNumberedUpload(deps.store, bin.key, bin.uploadId, parts);
}

/** Each entry's CRC-32 from the partial CRCs of its bytes, which must cover its body end to end. */
export function combinedCrcs(layout: ZipLayout, partials: readonly PartialCrc[]): Map<number, number> {
  const byEntry = new Map<number, PartialCrc[]>();
  for (const p of partials) byEntry.set(p.entry, [...(byEntry.get(p.entry) ?? []), p]);
  const crcs = new Map<number, number>();
  for (const entry of layout.entries) {
    if (entry.size === 0) {
      crcs.set(entry.index, 0);
      continue;
    }
    const { crc, covered } = crcFromStart(byEntry.get(entry.index) ?? []);
    if (covered !== entry.size) throw new Error(`the segments' CRCs of entry ${entry.index} cover ${covered} of its ${entry.size} bytes`);
    crcs.set(entry.index, crc);
  }
  return crcs;
}

/** The CRC-32 of an entry's bytes from its partial CRCs, and how far from its start they reach without a gap. */
export function crcFromStart(pieces: readonly PartialCrc[]): { crc: number; covered: number } {
  let covered = 0;
  let crc = 0;
  for (const p of [...pieces].sort((a, b) => a.from - b.from)) {
    if (p.from !== covered) break;
    crc = covered === 0 ? p.crc : crc32Combine(crc, p.crc, p.to - p.from);
    covered = p.to;
  }
  return { crc: crc >>> 0, covered };
}

/** The chunks as they are, each counted in the bin's progress as it passes. */
async function* counted(chunks: AsyncIterable<Buffer>, progress: ProgressReport | undefined): AsyncIterable<Buffer> {
  for await (const chunk of chunks) {
    progress?.add(chunk.length);
    yield chunk;
  }
}

function contiguousRuns(parts: readonly number[]): number[][] {
  const runs: number[][] = [];
  for (const p of parts) {
    const run = runs[runs.length - 1];
    if (run && run[run.length - 1] === p - 1) run.push(p);
    else runs.push([p]);
  }
  return runs;
}

/** A finishing run knows every CRC: nothing is learned. */
const NO_CRCS: CrcSink = {
  crc: () => undefined,
  checkpoint: () => undefined,
  mac: () => undefined,
  macCheckpoint: () => undefined,
  macCheckpointOf: () => null,
  flush: async () => undefined,
  forget: async () => undefined,
};

/** A segment's CRC-32s: each body it streams, hashed from where the segment starts in it. */
class SegmentCrcs implements CrcSink {
  private readonly byPosition = new Map<number, number>();
  private readonly tallies = new Map<number, PartialCrc>();

  constructor(
    private readonly layout: ZipLayout,
    files: readonly BinFile[],
    private readonly segment: PackSegment,
  ) {
    files.forEach((f, i) => this.byPosition.set(f.position, i));
  }

  crc(_jobId: string, position: number, crc: number): void {
    this.note(position, { length: this.layout.entries[this.byPosition.get(position)!]!.size, crc });
  }

  checkpoint(_jobId: string, position: number, state: CrcCheckpoint): void {
    this.note(position, state);
  }

  mac(): void {
    throw new Error('an encrypted bin is not segmented');
  }

  macCheckpoint(): void {
    throw new Error('an encrypted bin is not segmented');
  }

  macCheckpointOf(): { length: number; mac: EntryMac } | null {
    return null;
  }

  async flush(): Promise<void> {}

  async forget(): Promise<void> {}

  partials(): PartialCrc[] {
    return [...this.tallies.values()];
  }

  private note(position: number, state: CrcCheckpoint): void {
    const entry = this.byPosition.get(position)!;
    const from = Math.max(0, this.segment.start - this.layout.entries[entry]!.dataOffset);
    const held = this.tallies.get(entry);
    if (!held || state.length > held.to) this.tallies.set(entry, { entry, from, to: state.length, crc: state.crc >>> 0 });
  }
}
