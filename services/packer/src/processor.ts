import type { Processor } from 'bullmq';
import { UnrecoverableError, WaitingError } from 'bullmq';
import { archiveFormatOf, PLANS } from '@ap/contract';
import {
  binFilesWithAccess,
  binProgress,
  CANCELLED_BY_FAIL_FAST,
  deflateLevelOf,
  gzipLevelOf,
  DESTINATION_ACCESS_DENIED,
  destinationBlocked,
  isAccessRefusal,
  settleJob,
  STORED_QUOTA_USED_UP,
  storedQuotaExceeded,
  zipEncryptionOf,
} from '@ap/jobs';
import { binWithJob, failedFiles, markBinCompleted, markBinFailed, recordEntries, recordFileErrors } from '@ap/db';
import { wordedError } from '@ap/fetch';
import type { PackPayload } from '@ap/queue';
import { metrics, type ServiceContext } from '@ap/service-kit';
import { assembleInStore, BinFailure, dropRecordedUpload, packBinIntoStore, UrlFailure, type BinFile, type BinToPack, type ProgressReport } from '@ap/archive';
import { BinBusy, binLease, deferWhileBusy, holdLease, LeaseLost } from './lease';
import { binTarget, packTuning, queueNextBins, removeIfDeleted, type BinWithJob, type EventQueues } from './target';
import { handToFleet, packBinSegment } from './fleet';
import { countRead, serverCopySettings } from './fleet-server-copy';

export interface PackerOptions {
  /**
   * Fires when the packer shuts down: a bin in progress is handed back (its recorded parts
   * kept, its lease released, its queue message back to waiting) so that another packer
   * resumes it at once instead of after the lease and the queue lock run out.
   */
  stopping?: AbortSignal;
  /** Where a finished job's webhook deliveries are queued. */
  queues?: EventQueues;
}

export function createPackerProcessor(ctx: ServiceContext, options: PackerOptions = {}): Processor<PackPayload> {
  const { stopping, queues } = options;
  return async (message, token) => {
    const attempts = message.opts.attempts ?? 1;
    try {
      if (stopping?.aborted) throw stopping.reason;
      if (message.data.segment !== undefined) await packBinSegment(ctx, { ...message.data, segment: message.data.segment }, { stopping, queues });
      else await packBin(ctx, message.data, { stopping, queues });
    } catch (err) {
      if (err instanceof BinBusy) return deferWhileBusy(message, token, err);
      if (stopping?.aborted) {
        // Whatever the abort made the bin throw, it is not the bin's failure: no attempt is spent.
        await message.moveToWait(token);
        ctx.log.info({ jobId: message.data.jobId, zipId: message.data.zipId }, 'bin handed back for another packer (shutting down)');
        throw new WaitingError();
      }
      if (err instanceof LeaseLost) {
        await abortCancelledUpload(ctx, message.data);
        ctx.log.info({ jobId: message.data.jobId, zipId: message.data.zipId }, 'bin left to its new state or holder');
        return;
      }
      const final = err instanceof BinFailure || err instanceof UnrecoverableError || message.attemptsMade + 1 >= attempts;
      if (final) await failBin(ctx, message.data, err, queues);
      // A bin failure is final: the queue is told not to retry it.
      throw err instanceof BinFailure ? new UnrecoverableError(err.message) : err;
    }
  };
}

async function failBin(ctx: ServiceContext, payload: PackPayload, err: unknown, queues?: EventQueues): Promise<void> {
  const failed = await ctx.db.$transaction(async (tx) => {
    // A URL failure is listed under its URL (job_files); the bin itself then needs no message.
    // Our own failures are worded; anything else is shown by its kind only, and logged whole.
    const error = err instanceof UrlFailure ? null : err instanceof BinFailure ? err.message : wordedError(err);
    const marked = await markBinFailed(tx, payload, error);
    if (marked && err instanceof UrlFailure) await recordFileErrors(tx, payload.jobId, err.failures);
    return marked;
  });
  if (failed) {
    if (!(err instanceof BinFailure)) ctx.log.warn({ jobId: payload.jobId, zipId: payload.zipId, err }, 'bin failed');
    metrics.binsTotal.inc({ result: 'failed' });
    await abortUnresumableUpload(ctx, payload, err);
    await settleJob(ctx.db, payload.jobId, { queues });
    await queueNextBins(ctx, payload.jobId, queues);
  }
}

/**
 * A failed bin's parts leave the bucket's upload area now, unless a retry from checkpoint would
 * resume them (a resumable record in our own bucket, and a failure a retry can get past); those
 * go when the job expires (sweepExpired), and the bucket's lifecycle rule catches anything else
 * after 7 days.
 */
async function abortUnresumableUpload(ctx: ServiceContext, payload: PackPayload, err: unknown): Promise<void> {
  const zip = await binWithJob(ctx.db, payload.zipId);
  if (!zip?.uploadId) return;
  const retryCannotFix = err instanceof BinFailure && !(err instanceof UrlFailure);
  // A customer's destination keeps no parts of ours for a retry: a retry there starts over.
  if (zip.uploadLayout !== null && !retryCannotFix && zip.job.destinationSourceId === null) return;
  await abortUpload(ctx, payload, zip, zip.uploadId);
}

/**
 * A bin cancelled while it packed (fail-fast: another bin of its job failed) drops its
 * multipart upload at once, rather than when the job expires (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse: a cancelled bin aborts its upload). A bin taken over or reset by a retry keeps it.
 */
async function abortCancelledUpload(ctx: ServiceContext, payload: PackPayload): Promise<void> {
  const zip = await binWithJob(ctx.db, payload.zipId).catch(() => null);
  if (!zip?.uploadId || zip.status !== 'failed' || zip.error !== CANCELLED_BY_FAIL_FAST) return;
  await abortUpload(ctx, payload, zip, zip.uploadId);
}

/** Inside S3 where the destination's source reaches every object (docs/private-sources.md#server-side-assembly), else through the packer. */
async function packIntoTarget(ctx: ServiceContext, target: { store: ServiceContext['store']; destination: boolean }, bin: BinToPack, destinationSourceId: string | null, run: { signal: AbortSignal; progress: ProgressReport }) {
  const copy = { ...bin, destinationSourceId: target.destination ? destinationSourceId : null };
  // Server-side assembly lays out ZIPs only: a tar is packed by this packer (docs/archive-options.md#formats-and-contents).
  const assembled = (bin.format ?? 'zip') !== 'zip' || bin.manifest ? null : await assembleInStore({ store: target.store, log: ctx.log }, copy, serverCopySettings(ctx.config), { ...run, onCopied: (n) => metrics.bytesCopiedServerSideTotal.inc(n), onRead: countRead });
  return assembled ?? packBinIntoStore({ ...ctx, store: target.store }, bin, packTuning(ctx.config), run);
}

async function abortUpload(ctx: ServiceContext, payload: PackPayload, zip: BinWithJob, uploadId: string): Promise<void> {
  const target = await binTarget(ctx, zip).catch(() => null);
  if (!target) return; // a destination whose source is gone: its lifecycle rule, not ours
  const { store, key } = target;
  await dropRecordedUpload(ctx.db, store, zip, key).catch((abortErr: unknown) =>
    ctx.log.warn({ zipId: payload.zipId, err: (abortErr as Error).message }, 'multipart upload of a failed bin not aborted; the lifecycle rule will'),
  );
  // A part still in flight when the upload was aborted may land after it: S3 says to abort again.
  setTimeout(() => void store.abortUpload(key, uploadId).catch(() => undefined), AGAIN_AFTER_MS).unref();
}

/** When a failed bin's upload is aborted a second time (S3: parts in flight may outlive the first). */
const AGAIN_AFTER_MS = 2_000;

/**
 * Builds one ZIP bin: fetches its files in order (the next request starting before the current
 * body ends), streams them uncompressed through yazl straight into an S3 multipart upload, and
 * records the outcome. One packer holds a bin at a time (lease.ts: a second delivery gets
 * BinBusy); should a stalled holder still write after losing its lease, the ZIP's bytes are a
 * pure function of the job, the object key is fixed, and its final record needs the lease.
 */
export async function packBin(ctx: ServiceContext, payload: PackPayload, { stopping, queues }: PackerOptions = {}): Promise<void> {
  const { db, log } = ctx;
  const zip = await binWithJob(db, payload.zipId);
  if (!zip || zip.attempt !== payload.attempt || zip.job.attempt !== payload.attempt) return; // superseded by a retry
  if (zip.status === 'completed' || zip.status === 'failed') return;
  const job = zip.job;
  if (job.status === 'failed' || job.status === 'completed') return;

  // Jobs queued while under the stored quota are checked again as each bin starts: those
  // that completed meanwhile may have used it up (a destination's ZIPs are not charged).
  const user = await db.user.findUniqueOrThrow({ where: { id: job.userId }, select: { id: true, plan: true, overageEnabled: true } });
  if (zip.status === 'pending' && job.destinationSourceId === null) {
    if (!user.overageEnabled && (await storedQuotaExceeded(db, user))) throw new BinFailure(STORED_QUOTA_USED_UP);
  }

  const target = await binTarget(ctx, zip);

  const lease = binLease(db, { zipId: zip.id, attempt: payload.attempt }, ctx.config.WORKER_LOCK_MS);
  if (!(await lease.acquire())) return;
  const started = process.hrtime.bigint();
  await settleJob(db, job.id, { queues });

  // Files whose failure an earlier attempt recorded (fail_on_url_error false) are skipped.
  const files: BinFile[] = await binFilesWithAccess(db, ctx.secrets, job.id, zip.id);
  const split = job.maxZipSizeBytes !== null;
  // Split bins too: one file over max_zip_size_bytes (allow_oversize_zips) is its own bin, and must stay within the plan.
  const archiveLimit = PLANS[user.plan].storedArchiveBytes;

  // A big bin goes to the fleet in segments; this delivery then has nothing more to do.
  try {
    if (await handToFleet(ctx, zip, target, files, archiveLimit, lease, { stopping, queues })) return;
  } catch (err) {
    await lease.release().catch(() => undefined);
    throw err;
  }

  // Renewing the lease is also how a cancelled (fail-fast) or superseded (retry) bin is noticed.
  const held = holdLease(lease, ctx.config.WORKER_LOCK_MS, stopping);

  const { key } = target;
  // The ZIP's bytes written so far (bytes_done), recorded about once a second.
  const progress = binProgress(db, { zipId: zip.id, attempt: payload.attempt });
  try {
    const bin: BinToPack = {
      zipId: zip.id,
      jobId: job.id,
      key,
      mtime: job.createdAt,
      failOnUrlError: job.failOnUrlError,
      split,
      // A single-ZIP bin's parts are sized by the plan's limit on every attempt, so a resume's plan matches.
      plannedSize: split && zip.plannedSize !== null ? Number(zip.plannedSize) : null,
      archiveLimit,
      files,
      encryption: zipEncryptionOf(job, zip.sequence, ctx.secrets.open),
      deflateLevel: deflateLevelOf(job),
      format: archiveFormatOf(job.format),
      gzipLevel: gzipLevelOf(job),
      // The first archive also lists the URLs left out while preparing.
      manifest: job.manifest ? { leftOut: zip.sequence === 1 ? (await failedFiles(db, job.id)).filter((f) => f.zipId === null).map((f) => ({ url: f.url, error: f.error! })) : [] } : null,
      recordedUpload: { id: zip.uploadId, layout: zip.uploadLayout, mayBeInUse: zip.status === 'processing' },
    };
    const packed = await packIntoTarget(ctx, target, bin, zip.job.destinationSourceId, { signal: held.signal, progress }).finally(() => progress.stop());
    const { object, packaged, urlErrors } = packed;

    const now = new Date();
    const recorded = await db.$transaction(async (tx) => {
      const bin = { zipId: zip.id, attempt: payload.attempt, leaseOwner: lease.owner };
      if (!(await markBinCompleted(tx, bin, { size: object.size, etag: object.etag, objectKey: key, fileCount: packaged.length, completedAt: now }))) return false;
      await recordEntries(tx, job.id, packaged);
      await recordFileErrors(tx, job.id, urlErrors);
      return true;
    });
    // The object is the same bytes its new holder writes; its record is theirs to make (and
    // a deleted job's, nobody's: it goes).
    if (!recorded) {
      await removeIfDeleted(ctx, zip.id, target);
      throw new LeaseLost();
    }
    log.info({ jobId: job.id, zipId: zip.id, size: object.size, files: packaged.length }, 'bin packed');
    metrics.binsTotal.inc({ result: 'completed' });
    metrics.binDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    await settleJob(db, job.id, { queues });
    await queueNextBins(ctx, job.id, queues);
  } catch (err) {
    held.abort(err);
    await lease.release().catch(() => undefined);
    if (target.destination && (isAccessRefusal(err) || isAccessRefusal((err as { cause?: unknown }).cause))) throw new BinFailure(DESTINATION_ACCESS_DENIED);
    const refused = target.destination ? destinationBlocked(err, { allowPrivate: ctx.config.ALLOW_PRIVATE_URLS }) : null;
    if (refused) throw new BinFailure(refused.message);
    throw err instanceof Error ? err : new Error(String(err));
  } finally {
    held.stop();
  }
}
