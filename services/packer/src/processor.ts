import type { Processor } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Readable } from 'node:stream';
import { newZipFile } from '@ap/zip';
import { PLANS } from '@ap/contract';
import { objectKeyFor, settleJob, type WorkQueues } from '@ap/jobs';
import type { PackPayload } from '@ap/queue';
import type { ServiceContext } from '@ap/runtime';
import { partSizeFor, type ObjectInfo } from '@ap/storage';
import { UrlFailure, writeArchive, type ArchiveResult } from './archive';
import { CrcStore } from './crc-store';
import { BinBusy, BinLease, deferWhileBusy, LeaseLost, renewEvery } from './lease';
import { dropRecordedUpload, resumeUpload, uploadPlan, UploadRecorder, type BinFile, type UploadPlan } from './resume';

/** Where a finished job's webhook deliveries are queued (without it, the reconciler queues them). */
type EventQueues = Pick<WorkQueues, 'webhook'>;

export function createPackerProcessor(ctx: ServiceContext, queues?: EventQueues): Processor<PackPayload> {
  return async (message, token) => {
    const attempts = message.opts.attempts ?? 1;
    try {
      await packBin(ctx, message.data, queues);
    } catch (err) {
      if (err instanceof BinBusy) return deferWhileBusy(message, token, err);
      if (err instanceof LeaseLost) {
        ctx.log.info({ jobId: message.data.jobId, zipId: message.data.zipId }, 'bin left to its new state or holder');
        return;
      }
      const final = err instanceof UnrecoverableError || message.attemptsMade + 1 >= attempts;
      if (final) await failBin(ctx, message.data, err, queues);
      throw err;
    }
  };
}

async function failBin(ctx: ServiceContext, payload: PackPayload, err: unknown, queues?: EventQueues): Promise<void> {
  const failed = await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.zip.updateMany({
      where: { id: payload.zipId, attempt: payload.attempt, status: { in: ['pending', 'processing'] } },
      // A URL failure is listed under its URL (job_files); the bin itself then needs no message.
      data: { status: 'failed', error: err instanceof UrlFailure ? null : err instanceof Error ? err.message : String(err), leaseOwner: null, leaseExpiresAt: null },
    });
    if (count && err instanceof UrlFailure) {
      for (const f of err.failures) {
        await tx.jobFile.update({ where: { jobId_position: { jobId: payload.jobId, position: f.position } }, data: { error: f.error } });
      }
    }
    return count > 0;
  });
  if (failed) await settleJob(ctx.db, payload.jobId, { queues });
}

/**
 * Builds one ZIP bin: fetches its files in order (the next request starting before the current
 * body ends), streams them uncompressed through yazl straight into an S3 multipart upload, and
 * records the outcome. One packer holds a bin at a time (lease.ts: a second delivery gets
 * BinBusy); should a stalled holder still write after losing its lease, the ZIP's bytes are a
 * pure function of the job, the object key is fixed, and its final record needs the lease.
 */
export async function packBin(ctx: ServiceContext, payload: PackPayload, queues?: EventQueues): Promise<void> {
  const { db, store, log } = ctx;
  const zip = await db.zip.findUnique({ where: { id: payload.zipId }, include: { job: true } });
  if (!zip || zip.attempt !== payload.attempt || zip.job.attempt !== payload.attempt) return; // superseded by a retry
  if (zip.status === 'completed' || zip.status === 'failed') return;
  const job = zip.job;
  if (job.status === 'failed' || job.status === 'completed') return;

  const lease = new BinLease(db, { zipId: zip.id, attempt: payload.attempt }, ctx.config.WORKER_LOCK_MS);
  if (!(await lease.acquire())) return;
  await settleJob(db, job.id, { queues });

  // Files whose failure an earlier attempt recorded (fail_on_url_error false) are skipped.
  const files: BinFile[] = await db.jobFile.findMany({
    where: { zipId: zip.id, error: null },
    orderBy: { position: 'asc' },
    select: { position: true, url: true, filename: true, size: true, entryName: true, etag: true, lastModified: true, crc32: true, crcPrefix: true, crcPrefixLen: true },
  });
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

  const key = objectKeyFor(job.id, zip.id);
  const partSize = partSizeFor(zip.plannedSize !== null ? Number(zip.plannedSize) : archiveLimit);
  const plan = uploadPlan(split, files, job.createdAt, partSize);

  try {
    let packed: PackedBin | null = null;
    if (plan && zip.uploadId && zip.uploadLayout === plan.id) {
      const bin = { zipId: zip.id, jobId: job.id, key, uploadId: zip.uploadId, mtime: job.createdAt, archiveLimit };
      const resumed = await resumeUpload(ctx, bin, files, plan, abort.signal);
      if (resumed) packed = { object: resumed.object, urlErrors: [], packaged: resumed.entries };
    }
    if (!packed) {
      // An upload left by a worker that may still be running (a duplicate delivery) is only
      // forgotten; the bucket's lifecycle rule removes abandoned parts.
      await dropRecordedUpload(db, zip.status === 'processing' ? null : store, zip, key);
      packed = await packFromStart(ctx, { zipId: zip.id, key, job, files, archiveLimit, partSize, plan }, abort);
    }
    const { object, packaged, urlErrors } = packed;

    const now = new Date();
    const recorded = await db.$transaction(async (tx) => {
      const { count } = await tx.zip.updateMany({
        where: { id: zip.id, attempt: payload.attempt, status: 'processing', leaseOwner: lease.owner },
        data: {
          status: 'completed',
          size: BigInt(object.size),
          etag: object.etag,
          objectKey: key,
          fileCount: packaged.length,
          completedAt: now,
          uploadId: null,
          uploadLayout: null,
          leaseOwner: null,
          leaseExpiresAt: null,
        },
      });
      if (count === 0) return false;
      await tx.$executeRaw`
        UPDATE job_files AS f SET entry_name = u.entry_name, size = u.size
          FROM unnest(${packaged.map((p) => p.position)}::int[], ${packaged.map((p) => p.entryName)}::text[], ${packaged.map((p) => String(p.size))}::bigint[])
               AS u(position, entry_name, size)
         WHERE f.job_id = ${job.id}::uuid AND f.position = u.position`;
      for (const e of urlErrors) {
        await tx.jobFile.update({ where: { jobId_position: { jobId: job.id, position: e.position } }, data: { error: e.error } });
      }
      await tx.zipPart.deleteMany({ where: { zipId: zip.id } });
      return true;
    });
    // The object is the same bytes its new holder writes; its record is theirs to make.
    if (!recorded) throw new LeaseLost();
    log.info({ jobId: job.id, zipId: zip.id, size: object.size, files: packaged.length }, 'bin packed');
    await settleJob(db, job.id, { queues });
  } catch (err) {
    abort.abort(err);
    await lease.release().catch(() => undefined);
    throw err instanceof Error ? err : new Error(String(err));
  } finally {
    clearInterval(heartbeat);
  }
}

interface PackedBin {
  object: ObjectInfo;
  packaged: ArchiveResult['packaged'];
  urlErrors: ArchiveResult['urlErrors'];
}

/** Streams the bin's files through yazl into a new multipart upload, recorded when resumable. */
async function packFromStart(
  ctx: ServiceContext,
  bin: { zipId: string; key: string; job: { id: string; createdAt: Date; failOnUrlError: boolean }; files: BinFile[]; archiveLimit: number; partSize: number; plan: UploadPlan | null },
  abort: AbortController,
): Promise<PackedBin> {
  const { db, fetcher, store, log } = ctx;
  const { job } = bin;
  // What an earlier attempt recorded for a resume no longer applies. A single-ZIP bin's names
  // and sizes come from the responses, not from those records.
  const asWritten = bin.plan?.kind === 'as-written';
  await db.jobFile.updateMany({
    where: { zipId: bin.zipId, error: null },
    data: { crc32: null, crcPrefix: null, crcPrefixLen: null, ...(asWritten ? { entryName: null, size: null, etag: null, lastModified: null } : {}) },
  });
  const files = asWritten ? bin.files.map((f) => ({ ...f, entryName: null, size: null })) : bin.files;
  const crcStore = new CrcStore(db, log);
  const recorder = bin.plan ? new UploadRecorder(db, crcStore, bin.zipId, job.id, files, bin.plan) : undefined;
  const zipfile = newZipFile();
  const uploaded = store.upload(bin.key, zipfile.outputStream as unknown as Readable, {
    contentType: 'application/zip',
    partSize: bin.partSize,
    signal: abort.signal,
    multipart: recorder,
  });
  // An upload that fails stops the fetches at once (instead of waiting on a stalled pipe).
  uploaded.catch((err: unknown) => abort.abort(err));
  try {
    const { packaged, urlErrors } = await writeArchive(zipfile, files, {
      fetcher,
      mtime: job.createdAt,
      failOnUrlError: job.failOnUrlError,
      archiveLimit: bin.archiveLimit,
      signal: abort.signal,
      observer: recorder,
      // The entry's bytes are already in the archive: the bin must start over. With
      // fail_on_url_error false the URL is recorded as failed first, so the next attempt skips it.
      onBrokenBody: async (file, error) => {
        await db.jobFile.update({ where: { jobId_position: { jobId: job.id, position: file.position } }, data: { error } });
      },
    });
    zipfile.end();
    const object = await uploaded;
    // No record may land after the bin's completion clears them.
    await recorder?.settled();
    return { object, packaged, urlErrors };
  } catch (err) {
    abort.abort(err);
    (zipfile.outputStream as unknown as Readable).destroy();
    await uploaded.catch(() => undefined);
    throw err;
  } finally {
    await crcStore.flush();
  }
}
