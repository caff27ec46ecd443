import type { Processor } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Readable } from 'node:stream';
import yazl from 'yazl';
import { PLANS } from '@ap/contract';
import { settleJob } from '@ap/jobs';
import type { PackPayload } from '@ap/queue';
import type { ServiceContext } from '@ap/runtime';
import { partSizeFor } from '@ap/storage';
import { BinFailure, UrlFailure, writeArchive, type ArchiveFile } from './archive';

const HEARTBEAT_MS = 15_000;

export function objectKeyFor(jobId: string, zipId: string): string {
  return `jobs/${jobId}/${zipId}.zip`;
}

export function createPackerProcessor(ctx: ServiceContext): Processor<PackPayload> {
  return async (message) => {
    const attempts = message.opts.attempts ?? 1;
    try {
      await packBin(ctx, message.data);
    } catch (err) {
      const final = err instanceof UnrecoverableError || message.attemptsMade + 1 >= attempts;
      if (final) await failBin(ctx, message.data, err);
      throw err;
    }
  };
}

async function failBin(ctx: ServiceContext, payload: PackPayload, err: unknown): Promise<void> {
  const failed = await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.zip.updateMany({
      where: { id: payload.zipId, attempt: payload.attempt, status: { in: ['pending', 'processing'] } },
      // A URL failure is listed under its URL (job_files); the bin itself then needs no message.
      data: { status: 'failed', error: err instanceof UrlFailure ? null : err instanceof Error ? err.message : String(err) },
    });
    if (count && err instanceof UrlFailure) {
      for (const f of err.failures) {
        await tx.jobFile.update({ where: { jobId_position: { jobId: payload.jobId, position: f.position } }, data: { error: f.error } });
      }
    }
    return count > 0;
  });
  if (failed) await settleJob(ctx.db, payload.jobId);
}

/**
 * Builds one ZIP bin: fetches its files in order (the next request starting before the current
 * body ends), streams them uncompressed through yazl straight into an S3 multipart upload, and
 * records the outcome. Processing a bin twice is harmless: the ZIP's bytes are a pure function
 * of the job, the object key is fixed, and every write sets rather than adds.
 */
export async function packBin(ctx: ServiceContext, payload: PackPayload): Promise<void> {
  const { db, fetcher, store, log } = ctx;
  const zip = await db.zip.findUnique({ where: { id: payload.zipId }, include: { job: true } });
  if (!zip || zip.attempt !== payload.attempt || zip.job.attempt !== payload.attempt) return; // superseded by a retry
  if (zip.status === 'completed' || zip.status === 'failed') return;
  const job = zip.job;
  if (job.status === 'failed' || job.status === 'completed') return;

  const claimed = await db.zip.updateMany({
    where: { id: zip.id, attempt: payload.attempt, status: { in: ['pending', 'processing'] } },
    data: { status: 'processing', error: null },
  });
  if (!claimed.count) return;
  await settleJob(db, job.id);

  // Files whose failure an earlier attempt recorded (fail_on_url_error false) are skipped.
  const files: ArchiveFile[] = await db.jobFile.findMany({
    where: { zipId: zip.id, error: null },
    orderBy: { position: 'asc' },
    select: { position: true, url: true, filename: true, size: true, entryName: true },
  });
  const split = job.maxZipSizeBytes !== null;
  const archiveLimit = split ? Number.POSITIVE_INFINITY : PLANS[(await db.user.findUniqueOrThrow({ where: { id: job.userId }, select: { plan: true } })).plan].storedArchiveBytes;

  const abort = new AbortController();
  const heartbeat = setInterval(() => {
    void db.zip
      .findUnique({ where: { id: zip.id }, select: { status: true, attempt: true } })
      .then(async (row) => {
        if (!row || row.status !== 'processing' || row.attempt !== payload.attempt) abort.abort(new BinFailure('bin was cancelled'));
        else await db.zip.update({ where: { id: zip.id }, data: { updatedAt: new Date() } });
      })
      .catch(() => undefined);
  }, HEARTBEAT_MS);

  const zipfile = new yazl.ZipFile();
  const key = objectKeyFor(job.id, zip.id);
  const largest = zip.plannedSize !== null ? Number(zip.plannedSize) : archiveLimit;
  const uploaded = store.upload(key, zipfile.outputStream as unknown as Readable, { contentType: 'application/zip', partSize: partSizeFor(largest), signal: abort.signal });
  // An upload that fails stops the fetches at once (instead of waiting on a stalled pipe).
  uploaded.catch((err: unknown) => abort.abort(err));

  try {
    const { packaged, urlErrors } = await writeArchive(zipfile, files, {
      fetcher,
      mtime: job.createdAt,
      failOnUrlError: job.failOnUrlError,
      archiveLimit,
      signal: abort.signal,
      // The entry's bytes are already in the archive: the bin must start over. With
      // fail_on_url_error false the URL is recorded as failed first, so the next attempt skips it.
      onBrokenBody: async (file, error) => {
        await db.jobFile.update({ where: { jobId_position: { jobId: job.id, position: file.position } }, data: { error } });
      },
    });
    if (packaged.length === 0) throw new UrlFailure(urlErrors);
    zipfile.end();
    const object = await uploaded;

    const now = new Date();
    await db.$transaction(async (tx) => {
      await tx.$executeRaw`
        UPDATE job_files AS f SET entry_name = u.entry_name, size = u.size
          FROM unnest(${packaged.map((p) => p.position)}::int[], ${packaged.map((p) => p.entryName)}::text[], ${packaged.map((p) => String(p.size))}::bigint[])
               AS u(position, entry_name, size)
         WHERE f.job_id = ${job.id}::uuid AND f.position = u.position`;
      for (const e of urlErrors) {
        await tx.jobFile.update({ where: { jobId_position: { jobId: job.id, position: e.position } }, data: { error: e.error } });
      }
      await tx.zip.updateMany({
        where: { id: zip.id, attempt: payload.attempt, status: 'processing' },
        data: { status: 'completed', size: BigInt(object.size), etag: object.etag, objectKey: key, fileCount: packaged.length, completedAt: now },
      });
    });
    log.info({ jobId: job.id, zipId: zip.id, size: object.size, files: packaged.length }, 'bin packed');
    await settleJob(db, job.id);
  } catch (err) {
    abort.abort(err);
    (zipfile.outputStream as unknown as Readable).destroy();
    await uploaded.catch(() => undefined);
    throw err instanceof Error ? err : new Error(String(err));
  } finally {
    clearInterval(heartbeat);
  }
}
