import type { Processor } from 'bullmq';
import { UnrecoverableError, WaitingError } from 'bullmq';
import type { Readable } from 'node:stream';
import { newZipOutput, type ZipEncryption } from '@ap/zip';
import { PLANS } from '@ap/contract';
import { freeChunk } from '@ap/fetch';
import {
  BinProgress,
  binFilesWithAccess,
  CANCELLED_BY_FAIL_FAST,
  deflateLevelOf,
  DESTINATION_ACCESS_DENIED,
  destinationKey,
  destinationStore,
  isAccessRefusal,
  objectKeyFor,
  queueBinsOf,
  settleJob,
  zipEncryptionOf,
} from '@ap/jobs';
import { binWithJob, markBinCompleted, markBinFailed, recordEntries, recordFileErrors, resetBinFilesForRepack } from '@ap/db';
import type { PackPayload, WorkQueues } from '@ap/queue';
import { metrics, type ServiceContext } from '@ap/service-kit';
import { partBufferBytes, partSizeFor, type ObjectInfo } from '@ap/storage';
import { BinFailure, CrcStore, dropRecordedUpload, resumeUpload, uploadPlan, UploadRecorder, UrlFailure, writeArchive, type ArchiveResult, type BinFile, type UploadPlan } from '@ap/archive';
import { BinBusy, BinLease, deferWhileBusy, LeaseLost, renewEvery } from './lease';

/**
 * Where a finished job's webhook deliveries are queued, and where the user's next bin goes once
 * this one ends (without them, upkeep does both).
 */
type EventQueues = Pick<WorkQueues, 'webhook' | 'pack' | 'planConcurrentBins'>;

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
      await packBin(ctx, message.data, { stopping, queues });
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
    const error = err instanceof UrlFailure ? null : err instanceof Error ? err.message : String(err);
    const marked = await markBinFailed(tx, payload, error);
    if (marked && err instanceof UrlFailure) await recordFileErrors(tx, payload.jobId, err.failures);
    return marked;
  });
  if (failed) {
    metrics.binsTotal.inc({ result: 'failed' });
    await abortUnresumableUpload(ctx, payload, err);
    await settleJob(ctx.db, payload.jobId, { queues });
    await queueNextBins(ctx, payload.jobId, queues);
  }
}

/** A bin ended: the user's cap has room for their next one (and fail-fast may have freed more). */
async function queueNextBins(ctx: ServiceContext, jobId: string, queues: EventQueues | undefined): Promise<void> {
  if (!queues) return;
  try {
    const job = await ctx.db.job.findUnique({ where: { id: jobId }, select: { userId: true } });
    if (job) await queueBinsOf(ctx.db, queues, job.userId);
  } catch (err) {
    // Upkeep admits it within one interval.
    ctx.log.warn({ jobId, err }, 'could not queue the next bins of the user');
  }
}

/**
 * A failed bin's parts leave the bucket's upload area now, unless a retry from checkpoint would
 * resume them (a resumable record, and a failure a retry can get past); those go when the job
 * expires (sweepExpired), and the bucket's lifecycle rule catches anything else after 7 days.
 */
async function abortUnresumableUpload(ctx: ServiceContext, payload: PackPayload, err: unknown): Promise<void> {
  const zip = await binWithJob(ctx.db, payload.zipId);
  if (!zip?.uploadId) return;
  const retryCannotFix = err instanceof BinFailure && !(err instanceof UrlFailure);
  if (zip.uploadLayout !== null && !retryCannotFix) return;
  await abortUpload(ctx, payload, zip, zip.uploadId);
}

/**
 * A bin cancelled while it packed (fail-fast: another bin of its job failed) drops its
 * multipart upload at once, rather than when the job expires (decisions.md "Hostile origins and
 * outages": a cancelled bin aborts its upload). A bin taken over or reset by a retry keeps it.
 */
async function abortCancelledUpload(ctx: ServiceContext, payload: PackPayload): Promise<void> {
  const zip = await binWithJob(ctx.db, payload.zipId).catch(() => null);
  if (!zip?.uploadId || zip.status !== 'failed' || zip.error !== CANCELLED_BY_FAIL_FAST) return;
  await abortUpload(ctx, payload, zip, zip.uploadId);
}

async function abortUpload(ctx: ServiceContext, payload: PackPayload, zip: NonNullable<Awaited<ReturnType<typeof binWithJob>>>, uploadId: string): Promise<void> {
  const key = objectKeyFor(payload.jobId, payload.zipId);
  await dropRecordedUpload(ctx.db, ctx.store, zip, key).catch((abortErr: unknown) =>
    ctx.log.warn({ zipId: payload.zipId, err: (abortErr as Error).message }, 'multipart upload of a failed bin not aborted; the lifecycle rule will'),
  );
  // A part still in flight when the upload was aborted may land after it: S3 says to abort again.
  setTimeout(() => void ctx.store.abortUpload(key, uploadId).catch(() => undefined), AGAIN_AFTER_MS).unref();
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
  const { db, store, log } = ctx;
  const zip = await binWithJob(db, payload.zipId);
  if (!zip || zip.attempt !== payload.attempt || zip.job.attempt !== payload.attempt) return; // superseded by a retry
  if (zip.status === 'completed' || zip.status === 'failed') return;
  const job = zip.job;
  if (job.status === 'failed' || job.status === 'completed') return;

  // A destination bucket (docs/private-sources.md#destination-buckets): the same upload, into the customer's store.
  const destination = await destinationStore(db, ctx.secrets, job);

  const lease = new BinLease(db, { zipId: zip.id, attempt: payload.attempt }, ctx.config.WORKER_LOCK_MS);
  if (!(await lease.acquire())) return;
  const started = process.hrtime.bigint();
  await settleJob(db, job.id, { queues });

  // Files whose failure an earlier attempt recorded (fail_on_url_error false) are skipped.
  const files: BinFile[] = await binFilesWithAccess(db, ctx.secrets, job.id, zip.id);
  const split = job.maxZipSizeBytes !== null;
  const archiveLimit = split ? Number.POSITIVE_INFINITY : PLANS[(await db.user.findUniqueOrThrow({ where: { id: job.userId }, select: { plan: true } })).plan].storedArchiveBytes;

  const abort = new AbortController();
  // Renewing the lease is also how a cancelled (fail-fast) or superseded (retry) bin is noticed.
  const heartbeat = setInterval(() => {
    void lease
      .renew()
      .then((held) => held || abort.abort(new LeaseLost()))
      .catch(() => undefined);
  }, renewEvery(ctx.config.WORKER_LOCK_MS));
  const handBack = () => abort.abort(stopping?.reason);
  stopping?.addEventListener('abort', handBack, { once: true });
  if (stopping?.aborted) handBack(); // stopped while the lease was being taken

  const key = destination ? destinationKey(job, zip.filename) : objectKeyFor(job.id, zip.id);
  const target: ServiceContext = destination ? { ...ctx, store: destination } : ctx;
  const partSize = partSizeFor(zip.plannedSize !== null ? Number(zip.plannedSize) : archiveLimit);
  const encryption = zipEncryptionOf(job, zip.sequence, ctx.secrets.open);
  const deflateLevel = deflateLevelOf(job);
  const plan = uploadPlan(split, files, job.createdAt, partSize, { encryption, deflate: deflateLevel !== null });
  const fetchBudget = bodyBudgetBesideParts(ctx.config.FETCH_BUDGET_BYTES, partSize);

  try {
    let packed: PackedBin | null = null;
    if (plan && zip.uploadId && zip.uploadLayout === plan.id) {
      const bin = { zipId: zip.id, jobId: job.id, key, uploadId: zip.uploadId, mtime: job.createdAt, archiveLimit };
      const resumed = await resumeUpload({ ...target, config: { ...ctx.config, FETCH_BUDGET_BYTES: fetchBudget } }, bin, files, plan, abort.signal);
      if (resumed) packed = { object: resumed.object, urlErrors: [], packaged: resumed.entries };
    }
    if (!packed) {
      // An upload left by a worker that may still be running (a duplicate delivery) is only
      // forgotten; the bucket's lifecycle rule removes abandoned parts.
      await dropRecordedUpload(db, zip.status === 'processing' ? null : target.store, zip, key);
      packed = await packFromStart(target, { zipId: zip.id, attempt: payload.attempt, key, job, files, archiveLimit, partSize, plan, fetchBudget, encryption, deflateLevel }, abort);
    }
    const { object, packaged, urlErrors } = packed;

    const now = new Date();
    const recorded = await db.$transaction(async (tx) => {
      const bin = { zipId: zip.id, attempt: payload.attempt, leaseOwner: lease.owner };
      if (!(await markBinCompleted(tx, bin, { size: object.size, etag: object.etag, objectKey: key, fileCount: packaged.length, completedAt: now }))) return false;
      await recordEntries(tx, job.id, packaged);
      await recordFileErrors(tx, job.id, urlErrors);
      return true;
    });
    // The object is the same bytes its new holder writes; its record is theirs to make.
    if (!recorded) throw new LeaseLost();
    log.info({ jobId: job.id, zipId: zip.id, size: object.size, files: packaged.length }, 'bin packed');
    metrics.binsTotal.inc({ result: 'completed' });
    metrics.binDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    await settleJob(db, job.id, { queues });
    await queueNextBins(ctx, job.id, queues);
  } catch (err) {
    abort.abort(err);
    await lease.release().catch(() => undefined);
    if (destination && (isAccessRefusal(err) || isAccessRefusal((err as { cause?: unknown }).cause))) throw new BinFailure(DESTINATION_ACCESS_DENIED);
    throw err instanceof Error ? err : new Error(String(err));
  } finally {
    clearInterval(heartbeat);
    stopping?.removeEventListener('abort', handBack);
  }
}

/**
 * Bytes of bodies a bin may fetch ahead. The fetch budget is the memory of the archive being
 * written (spec "Fetching many files"): the upload's part buffers are in it, the bodies get the
 * rest, but never less than a quarter of it (parts of 52 MiB, for a 500 GB archive, would
 * otherwise leave nothing). With the defaults: 64 MiB - 2 x 8 or 10 MiB parts = 48 or 44 MiB.
 */
export function bodyBudgetBesideParts(fetchBudget: number, partSize: number): number {
  return Math.max(fetchBudget - partBufferBytes(partSize), Math.floor(fetchBudget / 4));
}

interface PackedBin {
  object: ObjectInfo;
  packaged: ArchiveResult['packaged'];
  urlErrors: ArchiveResult['urlErrors'];
}

/** Streams the bin's files through yazl into a new multipart upload, recorded when resumable. */
async function packFromStart(
  ctx: ServiceContext,
  bin: {
    zipId: string;
    attempt: number;
    key: string;
    job: { id: string; createdAt: Date; failOnUrlError: boolean };
    files: BinFile[];
    archiveLimit: number;
    partSize: number;
    plan: UploadPlan | null;
    fetchBudget: number;
    encryption: ZipEncryption | null;
    deflateLevel: number | null;
  },
  abort: AbortController,
): Promise<PackedBin> {
  const { db, fetcher, store, log } = ctx;
  const { job } = bin;
  // What an earlier attempt recorded for a resume no longer applies. A single-ZIP bin's names
  // and sizes come from the responses, not from those records.
  const asWritten = bin.plan?.kind === 'as-written';
  await resetBinFilesForRepack(db, bin.zipId, asWritten);
  const files = asWritten ? bin.files.map((f) => ({ ...f, entryName: null, size: null })) : bin.files;
  const crcStore = new CrcStore(db, log);
  const recorder = bin.plan ? new UploadRecorder(db, crcStore, bin.zipId, job.id, files, bin.plan) : undefined;
  const zipfile = newZipOutput(bin.encryption);
  // The ZIP's bytes are counted as they leave for the upload (progress, written about once a
  // second); a listener, not a stream in between, so no chunk waits in another buffer.
  const progress = new BinProgress(db, { zipId: bin.zipId, attempt: bin.attempt });
  const output = zipfile.outputStream as unknown as Readable;
  output.on('data', (chunk: Buffer) => progress.add(chunk.length));
  const uploaded = store.upload(bin.key, output, {
    contentType: 'application/zip',
    partSize: bin.partSize,
    signal: abort.signal,
    multipart: recorder,
    // Nothing uses the archive's chunks once they are in a part: the bodies fetched ahead
    // leave the packer's memory as they are uploaded, not at V8's next full GC.
    freeReadChunk: freeChunk,
  });
  // An upload that fails stops the fetches at once (instead of waiting on a stalled pipe).
  uploaded.catch((err: unknown) => abort.abort(err));
  try {
    const { packaged, urlErrors } = await writeArchive(zipfile, files, {
      fetcher,
      mtime: job.createdAt,
      failOnUrlError: job.failOnUrlError,
      archiveLimit: bin.archiveLimit,
      deflateLevel: bin.deflateLevel,
      aes: bin.encryption !== null,
      signal: abort.signal,
      observer: recorder,
      fetchAhead: { concurrency: ctx.config.FETCH_CONCURRENCY, budgetBytes: bin.fetchBudget },
      // The entry's bytes are already in the archive: the bin must start over. With
      // fail_on_url_error false the URL is recorded as failed first, so the next attempt skips it.
      onBrokenBody: async (file, error) => {
        await recordFileErrors(db, job.id, [{ position: file.position, error }]);
      },
    });
    zipfile.end();
    const object = await uploaded;
    // No record may land after the bin's completion clears them.
    await recorder?.settled();
    return { object, packaged, urlErrors };
  } catch (err) {
    abort.abort(err);
    output.destroy();
    await uploaded.catch(() => undefined);
    // The upload's id is on the bin's row before the bin is failed (and its upload aborted).
    await recorder?.settled();
    throw err;
  } finally {
    await progress.stop();
    await crcStore.flush();
  }
}
