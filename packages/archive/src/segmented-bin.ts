// A bin handed to the fleet (docs/segments.md): what the first packer decides (whether the bin is
// cut into segments, its layout, its upload) and what every segment's packer rebuilds from the
// records, so that all of them write parts of the same ZIP.
import type { Fetcher } from '@ap/fetch';
import type { Logger } from '@ap/log';
import { binUploadParts, type Db, type DbTx } from '@ap/db';
import { partSizeFor, startNumberedUpload, type ObjectInfo, type ObjectStore, type UploadedPart } from '@ap/storage';
import { layoutOfFiles, streamEtag, type ZipLayout } from '@ap/zip';
import { CrcStore } from './crc-store';
import type { PackTuning, ProgressReport } from './pack';
import { layOutAsWritten, type BinFile } from './resume';
import { finishSegments, segmentPlanOf, type PartialCrc, type SegmentedBin } from './segments';

/**
 * How a bin's segments write it: their parts of the bin's upload ('packer'), or only CRC-32s
 * of its objects, the bin assembled inside S3 by the finishing step ('server-copy').
 */
export type SegmentKind = 'packer' | 'server-copy';

const SEGMENT_KIND_WORDS: Record<SegmentKind, string> = { packer: 'segments', 'server-copy': 'server-copy-segments' };

/** How a segmented bin's upload is recorded (`zips.upload_layout`): part size, segment kind and size, and layout digest. */
export function segmentedUploadLayout(layout: ZipLayout, files: readonly BinFile[], segmentBytes: number, kind: SegmentKind = 'packer'): string {
  return `${partSizeFor(layout.totalSize)}/${SEGMENT_KIND_WORDS[kind]}/${segmentBytes}/${streamEtag(layout, files)}`;
}

/** The kind of segments a recorded upload layout says the bin has. */
export function segmentKindOf(uploadLayout: string | null): SegmentKind {
  return uploadLayout?.split('/')[1] === SEGMENT_KIND_WORDS['server-copy'] ? 'server-copy' : 'packer';
}

/** S3 no longer holds the multipart upload (aborted, expired by a lifecycle rule, completed). */
export function isUploadGone(err: unknown): boolean {
  return (err as { name?: string } | null)?.name === 'NoSuchUpload';
}

/** A bin as the fleet sees it: its job, its object, its files with every name and size known. */
export interface FleetBin {
  jobId: string;
  zipId: string;
  key: string;
  mtime: Date;
  files: readonly BinFile[];
}

/** The bin's layout and segments when it is worth cutting (every size known, over SEGMENT_BYTES x 2); else null. */
export function segmentsOf(bin: FleetBin, segmentBytes: number, uploadId: string): SegmentedBin | null {
  if (bin.files.length === 0 || bin.files.some((f) => f.entryName === null || f.size === null)) return null;
  const layout = layoutOfFiles(bin.files, bin.mtime, null);
  const plan = segmentPlanOf(layout, segmentBytes);
  return plan ? { jobId: bin.jobId, zipId: bin.zipId, key: bin.key, uploadId, layout, files: bin.files, plan } : null;
}

/** The size of the ZIP of these files (every name and size known). */
export function plannedSizeOf(bin: FleetBin): number {
  return layoutOfFiles(bin.files, bin.mtime, null).totalSize;
}

/**
 * The files of a single-ZIP bin named and sized by probing them (as the preparer would, or as
 * an earlier attempt recorded them); null when a size is unknown. A split bin's files were
 * settled while preparing.
 */
export async function probedFiles(
  deps: { fetcher: Fetcher },
  bin: FleetBin,
  tuning: Pick<PackTuning, 'probeConcurrency'>,
  signal: AbortSignal,
): Promise<BinFile[] | null> {
  const laid = await layOutAsWritten(deps, tuning.probeConcurrency, bin.files, bin.mtime, signal, null);
  return laid?.inputs ?? null;
}

/** The upload a segmented bin is written to: the recorded one when it follows the same layout (a retry resumes its parts), else a new one. */
export async function segmentedUpload(store: ObjectStore, key: string, recorded: { id: string | null; layout: string | null }, layoutId: string): Promise<string> {
  if (recorded.id && recorded.layout === layoutId) return recorded.id;
  if (recorded.id) await store.abortUpload(key, recorded.id).catch(() => undefined);
  return startNumberedUpload(store, key);
}

/** The parts of the bin's upload recorded so far (a segment resumes after them). */
export async function recordedParts(db: DbTx, zipId: string, uploadId: string): Promise<UploadedPart[]> {
  return (await binUploadParts(db, zipId, uploadId)).map((p) => ({ partNumber: p.partNumber, etag: p.etag, size: Number(p.size) }));
}

/**
 * Completes a segmented bin from its segments' records: every stored part but the finishing
 * ones (rewritten with every CRC known) and every partial CRC.
 */
export async function finishSegmentedBin(
  deps: { db: Db; store: ObjectStore; fetcher: Fetcher; log: Logger },
  bin: SegmentedBin,
  partials: readonly PartialCrc[],
  tuning: Pick<PackTuning, 'fetchConcurrency' | 'fetchBudgetBytes'>,
  { signal, progress }: { signal: AbortSignal; progress?: ProgressReport },
): Promise<ObjectInfo> {
  const finishing = new Set(bin.plan.finishingParts);
  const stored = (await recordedParts(deps.db, bin.zipId, bin.uploadId)).filter((p) => !finishing.has(p.partNumber));
  const crcStore = new CrcStore(deps.db, deps.log);
  const object = await finishSegments(deps, bin, { parts: stored, crcs: partials }, tuning, { signal, progress, crcStore });
  await crcStore.flush();
  return object;
}
