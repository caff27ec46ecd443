// A big bin packed by the fleet (docs/segments.md#the-fleet): the packer that takes the bin cuts
// it into segments and hands them out through fair share; each segment is a pack message of its
// own, under its own lease; the packer whose segment completes last finishes the bin. Postgres
// holds every step, so a packer killed anywhere, or a Redis that lost its queues, loses nothing.
import { findFetchError } from '@ap/fetch';
import {
  binSegments,
  binWithJob,
  completeSegment,
  deleteBinParts,
  markBinCompleted,
  recordBinPart,
  recordEntries,
  recordFileErrors,
  recordPlannedSize,
  segmentBin,
  unsegmentBin,
  type SegmentRow,
} from '@ap/db';
import { binFilesWithAccess, segmentProgress, settleJob } from '@ap/jobs';
import type { PackPayload } from '@ap/queue';
import { metrics, type ServiceContext } from '@ap/service-kit';
import {
  bodyBudgetBesideParts,
  finishSegmentedBin,
  isUploadGone,
  objectsForServerCopy,
  packSegment,
  readSegmentCrcs,
  plannedSizeOf,
  probedFiles,
  recordedParts,
  segmentedUpload,
  segmentedUploadLayout,
  segmentKindOf,
  segmentsOf,
  UrlFailure,
  type BinFile,
  type FleetBin,
  type PartialCrc,
  type SegmentedBin,
  type SegmentKind,
} from '@ap/archive';
import { startNumberedUpload } from '@ap/storage';
import { assembleFromSegments, countRead, serverCopyCut } from './fleet-server-copy';
import { binLease, holdLease, LeaseLost, segmentLease, type Lease } from './lease';
import { binTarget, packTuning, queueNextBins, removeIfDeleted, type BinTarget, type BinWithJob, type EventQueues } from './target';

/** A single-ZIP bin of at most this many files per probe slot is probed before packing (a few round trips). */
const PROBE_ROUNDS = 4;

export interface FleetOptions {
  stopping?: AbortSignal;
  queues?: EventQueues;
}

/**
 * Whether a bin's bytes can be cut: plain stored ZIP entries only (docs/segments.md#what-is-segmented).
 * A tar, or an archive ending with a manifest, is packed whole by one packer for now (no segments,
 * no server-side assembly).
 */
function cuttable(zip: BinWithJob): boolean {
  const job = zip.job;
  return job.compression !== 'deflate' && job.encryptionMethod === null && (job.format ?? 'zip') === 'zip' && !job.manifest;
}

/**
 * Called by the packer that holds a bin's lease, before it packs the bin whole. True when the
 * bin is the fleet's (segmented now or before; the delivery has nothing more to do), false
 * when this packer packs it whole. A single-ZIP bin is probed first when it has few files, which
 * also gives it a predicted size (its progress).
 */
export async function handToFleet(ctx: ServiceContext, zip: BinWithJob, target: BinTarget, files: BinFile[], archiveLimit: number, lease: Lease, { stopping, queues }: FleetOptions): Promise<boolean> {
  if (!cuttable(zip)) return false;
  const { db } = ctx;
  const bin = { zipId: zip.id, attempt: zip.attempt };
  if (zip.segmentBytes !== null) {
    const segments = await binSegments(db, bin);
    if (segments.length > 0 && segments.every((s) => s.status === 'completed')) {
      // A packer stopped while finishing, or whose finishing delivery was lost: finished here.
      await finishBin(ctx, zip, { bin: await segmentedBinOf(ctx, zip, target), target }, segments, lease, { stopping, queues });
      return true;
    }
    if (segments.length > 0) {
      // Lost queue messages (a Redis loss): fair share queues the segments again.
      await lease.release();
      await queueNextBins(ctx, zip.jobId, queues);
      return true;
    }
  }
  const split = zip.job.maxZipSizeBytes !== null;
  const fleetBin: FleetBin = { jobId: zip.jobId, zipId: zip.id, key: target.key, mtime: zip.job.createdAt, files };
  const segmentBytes = ctx.config.SEGMENT_BYTES;
  // Assembled inside S3: segments only where the packer would read more than two segments' worth for CRC-32s.
  const objects = target.destination ? objectsForServerCopy(files, zip.job.destinationSourceId) : null;
  const kind: SegmentKind = objects ? 'server-copy' : 'packer';
  if (objects) {
    // Sizes known (a split bin, listed prefixes): a bin of at most two segments is not looked at further.
    if (files.every((f) => f.size !== null) && files.reduce((n, f) => n + Number(f.size), 0) <= 2 * segmentBytes) return false;
    const cut = await serverCopyCut(ctx, target, files, objects);
    if (!cut || cut.bytesToRead <= 2 * segmentBytes) return false;
    fleetBin.files = cut.files;
  } else if (!split) {
    if (files.length > PROBE_ROUNDS * ctx.config.PROBE_CONCURRENCY) return false;
    const probed = await probedFiles(ctx, fleetBin, packTuning(ctx.config), stopping ?? new AbortController().signal);
    if (!probed) return false;
    fleetBin.files = probed;
  }
  const planned = segmentsOf(fleetBin, segmentBytes, '');
  // Packed whole: a single-ZIP bin now shows its predicted size (its progress).
  if (!split) await recordPlannedSize(db, bin, planned?.layout.totalSize ?? plannedSizeOf(fleetBin));
  if (!planned || planned.layout.totalSize > archiveLimit) return false;
  const layoutId = segmentedUploadLayout(planned.layout, fleetBin.files, segmentBytes, kind);
  const uploadId = await segmentedUpload(target.store, target.key, { id: zip.uploadId, layout: zip.uploadLayout }, layoutId);
  await db.$transaction(async (tx) => {
    if (uploadId !== zip.uploadId) await deleteBinParts(tx, zip.id);
    // Names, sizes and validators as probed: what every segment's packer lays out.
    if (!split) await recordEntries(tx, zip.jobId, entriesOf(planned).map((e, i) => ({ ...e, etag: planned.files[i]!.etag, lastModified: planned.files[i]!.lastModified })));
    const keepCompleted = uploadId === zip.uploadId;
    await segmentBin(tx, bin, { uploadId, uploadLayout: layoutId, segmentBytes, plannedSize: planned.layout.totalSize, count: planned.plan.segments.length, keepCompleted });
  });
  ctx.log.info({ jobId: zip.jobId, zipId: zip.id, segments: planned.plan.segments.length, size: planned.layout.totalSize, kind }, 'bin handed to the fleet in segments');
  await queueNextBins(ctx, zip.jobId, queues);
  return true;
}

/**
 * Packs one segment of a segmented bin under its own lease, from the parts already recorded
 * for it; the packer whose segment is the bin's last finishes the bin.
 */
export async function packBinSegment(ctx: ServiceContext, payload: PackPayload & { segment: number }, { stopping, queues }: FleetOptions): Promise<void> {
  const { db } = ctx;
  const zip = await binWithJob(db, payload.zipId);
  if (!zip || zip.attempt !== payload.attempt || zip.job.attempt !== payload.attempt) return;
  if (zip.status !== 'processing' || zip.segmentBytes === null || zip.uploadId === null) return;
  const segment = { zipId: zip.id, index: payload.segment, attempt: payload.attempt };
  const lease = segmentLease(db, segment, ctx.config.WORKER_LOCK_MS);
  if (!(await lease.acquire())) return;
  const held = holdLease(lease, ctx.config.WORKER_LOCK_MS, stopping);
  const progress = segmentProgress(db, segment);
  let bin: SegmentedBin | null = null;
  let target: BinTarget | null = null;
  try {
    target = await binTarget(ctx, zip);
    bin = await segmentedBinOf(ctx, zip, target);
    const result =
      segmentKindOf(zip.uploadLayout) === 'server-copy'
        ? { crcs: await readSegmentCrcs({ store: target.store }, bin, payload.segment, { concurrency: ctx.config.FETCH_CONCURRENCY }, { signal: held.signal, progress, onRead: countRead }) }
        : await packSegment({ store: target.store, fetcher: ctx.fetcher }, bin, payload.segment, segmentTuning(ctx, bin), {
            signal: held.signal,
            progress,
            stored: await recordedParts(db, zip.id, bin.uploadId),
            onPart: async (part) => void (await recordBinPart(db, zip.id, bin!.uploadId, part, bin!.plan.partSize)),
          });
    const range = bin.plan.segments[payload.segment]!;
    await progress.stop();
    const done = await completeSegment(db, segment, lease.owner, { bytesDone: range.end - range.start, crcs: result.crcs });
    if (!done) throw new LeaseLost();
    metrics.segmentsTotal.inc({ result: 'completed' });
    if (!done.last) return void (await queueNextBins(ctx, zip.jobId, queues));
    held.stop();
    const finishing = binLease(db, { zipId: zip.id, attempt: zip.attempt }, ctx.config.WORKER_LOCK_MS);
    // Another delivery of the bin (upkeep) may be finishing it already.
    if (!(await finishing.acquire().catch(() => false))) return;
    await finishBin(ctx, zip, { bin, target }, await binSegments(db, { zipId: zip.id, attempt: zip.attempt }), finishing, { stopping, queues });
  } catch (err) {
    held.abort(err);
    await lease.release().catch(() => undefined);
    if (stopping?.aborted || err instanceof LeaseLost) throw err;
    if (bin && target && isUploadGone(err)) {
      await startUploadOver(ctx, zip, { bin, target }, queues);
      throw new LeaseLost();
    }
    metrics.segmentsTotal.inc({ result: 'failed' });
    const failure = bin ? urlFailureOf(bin, err) : null;
    if (failure && target && !zip.job.failOnUrlError) {
      await skipFailedUrl(ctx, zip, target, failure, queues);
      throw new LeaseLost();
    }
    throw failure ? new UrlFailure([failure]) : err;
  } finally {
    held.stop();
    await progress.stop();
  }
}

/** A segment's reach: the fetch budget is its memory, its two part buffers included, as a whole bin's is. */
function segmentTuning(ctx: ServiceContext, bin: SegmentedBin) {
  return { fetchConcurrency: ctx.config.FETCH_CONCURRENCY, fetchBudgetBytes: bodyBudgetBesideParts(ctx.config.FETCH_BUDGET_BYTES, bin.plan.partSize) };
}

/** The segmented bin as its records describe it: every packer of it lays out the same ZIP. */
async function segmentedBinOf(ctx: ServiceContext, zip: BinWithJob, target: BinTarget): Promise<SegmentedBin> {
  const files = await binFilesWithAccess(ctx.db, ctx.secrets, zip.jobId, zip.id);
  const bin = segmentsOf({ jobId: zip.jobId, zipId: zip.id, key: target.key, mtime: zip.job.createdAt, files }, Number(zip.segmentBytes), zip.uploadId!);
  if (!bin || segmentedUploadLayout(bin.layout, files, Number(zip.segmentBytes), segmentKindOf(zip.uploadLayout)) !== zip.uploadLayout) {
    throw new Error('the segmented bin no longer matches its recorded layout');
  }
  return bin;
}

/** The bin's entries as its ZIP holds them. */
function entriesOf(bin: SegmentedBin): { position: number; entryName: string; size: number }[] {
  return bin.files.map((f, i) => ({ position: f.position, entryName: bin.layout.entries[i]!.name.toString('utf8'), size: Number(f.size) }));
}

/** A URL of the bin that failed for good (the fetcher's retries spent), as the bin's failure lists it. */
function urlFailureOf(bin: SegmentedBin, err: unknown): { position: number; error: string } | null {
  const fetchError = findFetchError(err);
  if (!fetchError?.url) return null;
  const file = bin.files.find((f) => f.url === fetchError.url);
  return file ? { position: file.position, error: fetchError.userMessage } : null;
}

/**
 * fail_on_url_error false: the URL is listed as failed and the bin is packed again without it
 * (its layout changed, so its segments and their upload go); the bin's next delivery re-plans it.
 */
async function skipFailedUrl(ctx: ServiceContext, zip: BinWithJob, target: BinTarget, failure: { position: number; error: string }, queues: EventQueues | undefined): Promise<void> {
  await ctx.db.$transaction(async (tx) => {
    await recordFileErrors(tx, zip.jobId, [failure]);
    await unsegmentBin(tx, zip.id);
  });
  if (zip.uploadId) await target.store.abortUpload(target.key, zip.uploadId).catch(() => undefined);
  ctx.log.info({ jobId: zip.jobId, zipId: zip.id }, 'a URL of a segmented bin failed; the bin is packed again without it');
  await queueNextBins(ctx, zip.jobId, queues);
}

/** Writes the parts that need every CRC-32 and completes the bin, under the bin's lease. */
async function finishBin(
  ctx: ServiceContext,
  zip: BinWithJob,
  { bin, target }: { bin: SegmentedBin; target: BinTarget },
  segments: readonly SegmentRow[],
  lease: Lease,
  { stopping, queues }: FleetOptions,
): Promise<void> {
  const { db } = ctx;
  const held = holdLease(lease, ctx.config.WORKER_LOCK_MS, stopping);
  try {
    const partials = segments.flatMap((s) => (s.crcs ?? []) as unknown as PartialCrc[]);
    const object =
      segmentKindOf(zip.uploadLayout) === 'server-copy'
        ? await finishServerCopyBin(ctx, zip, { bin, target }, partials, held.signal, queues)
        : await finishSegmentedBin({ ...ctx, store: target.store }, bin, partials, segmentTuning(ctx, bin), { signal: held.signal });
    const completed = await db.$transaction(async (tx) => {
      const record = { zipId: zip.id, attempt: zip.attempt, leaseOwner: lease.owner };
      const packaged = entriesOf(bin);
      if (!(await markBinCompleted(tx, record, { size: object.size, etag: object.etag, objectKey: target.key, fileCount: packaged.length, completedAt: new Date() }))) return false;
      await recordEntries(tx, zip.jobId, packaged);
      return true;
    });
    if (!completed) {
      await removeIfDeleted(ctx, zip.id, target);
      throw new LeaseLost();
    }
    ctx.log.info({ jobId: zip.jobId, zipId: zip.id, size: object.size, segments: segments.length }, 'segmented bin finished');
    metrics.binsTotal.inc({ result: 'completed' });
    await settleJob(db, zip.jobId, { queues });
    await queueNextBins(ctx, zip.jobId, queues);
  } catch (err) {
    held.abort(err);
    await lease.release().catch(() => undefined);
    if (!stopping?.aborted && isUploadGone(err)) {
      await startUploadOver(ctx, zip, { bin, target }, queues);
      throw new LeaseLost();
    }
    throw err;
  } finally {
    held.stop();
  }
}

/**
 * The bin assembled inside S3 from its segments' CRC-32s. Where S3 will not after all (an
 * object changed, a copy refused), its segments are made the packer's (the same layout and
 * upload) and queued again: the bin is written through the packers, which report a changed
 * object as for any bin.
 */
async function finishServerCopyBin(ctx: ServiceContext, zip: BinWithJob, { bin, target }: { bin: SegmentedBin; target: BinTarget }, partials: readonly PartialCrc[], signal: AbortSignal, queues: EventQueues | undefined) {
  const object = await assembleFromSegments(ctx, zip, { bin, target }, partials, signal);
  if (object) {
    // The recorded upload held no part: S3 assembled the ZIP in an upload of its own.
    await target.store.abortUpload(target.key, bin.uploadId).catch(() => undefined);
    return object;
  }
  const segmentBytes = Number(zip.segmentBytes);
  await ctx.db.$transaction((tx) =>
    segmentBin(tx, { zipId: zip.id, attempt: zip.attempt }, { uploadId: bin.uploadId, uploadLayout: segmentedUploadLayout(bin.layout, bin.files, segmentBytes), segmentBytes, plannedSize: bin.layout.totalSize, count: bin.plan.segments.length, keepCompleted: false }),
  );
  ctx.log.info({ jobId: zip.jobId, zipId: zip.id }, 'a bin cut for assembly inside S3 is packed by the packers in segments instead');
  await queueNextBins(ctx, zip.jobId, queues);
  throw new LeaseLost();
}

/**
 * The bin's multipart upload is gone (aborted, expired): its parts with it. The bin starts a new
 * upload and every segment is written again (their CRC-32s are the same, their parts are not
 * kept); of several packers finding it gone at once, the first replaces it.
 */
async function startUploadOver(ctx: ServiceContext, zip: BinWithJob, { bin, target }: { bin: SegmentedBin; target: BinTarget }, queues: EventQueues | undefined): Promise<void> {
  const uploadId = await startNumberedUpload(target.store, target.key);
  const replaced = await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.zip.updateMany({ where: { id: zip.id, attempt: zip.attempt, status: 'processing', uploadId: bin.uploadId }, data: { uploadId } });
    if (count === 0) return false;
    await deleteBinParts(tx, zip.id);
    const segmentBytes = Number(zip.segmentBytes);
    await segmentBin(tx, { zipId: zip.id, attempt: zip.attempt }, { uploadId, uploadLayout: zip.uploadLayout!, segmentBytes, plannedSize: bin.layout.totalSize, count: bin.plan.segments.length, keepCompleted: false });
    return true;
  });
  if (!replaced) {
    await target.store.abortUpload(target.key, uploadId).catch(() => undefined);
    return;
  }
  ctx.log.warn({ jobId: zip.jobId, zipId: zip.id, lost: bin.uploadId }, 'the multipart upload of a segmented bin is gone: its segments start over in a new one');
  await queueNextBins(ctx, zip.jobId, queues);
}
