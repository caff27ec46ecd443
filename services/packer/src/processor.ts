import type { Processor } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Readable } from 'node:stream';
import yazl from 'yazl';
import { PLANS, deriveEntryName, createEntryNameDeduper } from '@ap/contract';
import { FetchError, type OpenedBody } from '@ap/fetch';
import { settleJob } from '@ap/jobs';
import type { PackPayload } from '@ap/queue';
import type { ServiceContext } from '@ap/runtime';
import { YAZL_ENTRY_OPTIONS, ZipSizer } from '@ap/zip';

const HEARTBEAT_MS = 15_000;
/** The next file's request starts when the current one has less than this left to stream. */
const PREFETCH_WHEN_REMAINING = 8 * 1024 * 1024;

export const ARCHIVE_TOO_LARGE = "archive exceeds the plan's per-archive limit";

/** A failure that retrying the bin cannot fix: the bin fails at once. */
class BinFailure extends UnrecoverableError {}

/**
 * The bin failed because of its URLs (one with fail_on_url_error true, or all of them): the
 * failures are reported under their URLs (job_files), and the bin itself needs no message.
 */
class UrlFailure extends BinFailure {
  constructor(readonly failures: { position: number; error: string }[]) {
    super(failures.map((f) => f.error).join('; '));
  }
}

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

interface BinFile {
  position: number;
  url: string;
  filename: string | null;
  size: bigint | null;
  entryName: string | null;
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
  const files: BinFile[] = await db.jobFile.findMany({
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
  const uploaded = store.upload(key, zipfile.outputStream as unknown as Readable, { contentType: 'application/zip', signal: abort.signal });
  // An upload that fails stops the fetches at once (instead of waiting on a stalled pipe).
  uploaded.catch((err: unknown) => abort.abort(err));

  const packaged: { position: number; entryName: string; size: number }[] = [];
  const urlErrors: { position: number; error: string }[] = [];
  const names = createEntryNameDeduper();
  // The archive's exact size so far: the plan's per-archive limit is enforced before each body.
  const sizer = new ZipSizer();

  const open = (file: BinFile): Promise<OpenedBody | FetchError> =>
    fetcher
      .openBody(file.url, { expectedSize: file.size === null ? undefined : Number(file.size), signal: abort.signal })
      .catch((err: unknown) => (err instanceof FetchError ? err : Promise.reject(err)));

  try {
    let next = files.length ? open(files[0]!) : null;
    for (let i = 0; i < files.length; i++) {
      const file = files[i]!;
      const opened = await next!;
      next = null;
      if (abort.signal.aborted) throw abort.signal.reason;
      const startNext = () => {
        if (next === null && i + 1 < files.length) next = open(files[i + 1]!);
      };
      if (opened instanceof FetchError) {
        if (job.failOnUrlError) throw new UrlFailure([{ position: file.position, error: opened.userMessage }]);
        urlErrors.push({ position: file.position, error: opened.userMessage });
        startNext();
        continue;
      }
      const size = file.size !== null ? Number(file.size) : opened.size;
      const entryName = names.take(
        file.entryName ??
          deriveEntryName({ givenFilename: file.filename, contentDisposition: opened.contentDisposition, finalUrl: opened.finalUrl, index: file.position + 1 }),
      );
      if (size !== null && sizer.totalWith(Buffer.byteLength(entryName), size) > archiveLimit) {
        opened.stream.destroy();
        throw new BinFailure(ARCHIVE_TOO_LARGE);
      }
      const body = await streamEntry(zipfile, opened, entryName, size, job.createdAt, startNext);
      if (abort.signal.aborted) throw abort.signal.reason;
      if (body.error) {
        // The entry's bytes are already in the archive: the bin must start over. With
        // fail_on_url_error false the URL is recorded as failed first, so the next attempt skips it.
        if (!job.failOnUrlError) {
          await db.jobFile.update({ where: { jobId_position: { jobId: job.id, position: file.position } }, data: { error: body.error } });
        }
        throw job.failOnUrlError ? new UrlFailure([{ position: file.position, error: body.error }]) : new Error(`${file.url}: ${body.error}`);
      }
      sizer.add(Buffer.byteLength(entryName), body.bytes);
      if (sizer.total() > archiveLimit) throw new BinFailure(ARCHIVE_TOO_LARGE);
      packaged.push({ position: file.position, entryName, size: body.bytes });
    }
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

/**
 * Adds one body to the archive and resolves when it has streamed through, with the byte count
 * or the error that cut it short. Starts the next request once little is left of this one.
 */
function streamEntry(
  zipfile: yazl.ZipFile,
  opened: OpenedBody,
  entryName: string,
  size: number | null,
  mtime: Date,
  startNext: () => void,
): Promise<{ bytes: number; error: string | null }> {
  return new Promise((resolve) => {
    const stream = opened.stream;
    let bytes = 0;
    let settled = false;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      startNext();
      resolve({ bytes, error });
    };
    stream.once('error', (err: unknown) => finish(err instanceof FetchError ? err.userMessage : (err as Error).message));
    if (size !== null && size <= PREFETCH_WHEN_REMAINING) startNext();
    // Lazy: yazl asks for the stream when the entry's turn comes; the byte counter is attached
    // right after yazl's pipe, so no chunk can flow before yazl listens.
    zipfile.addReadStreamLazy(entryName, YAZL_ENTRY_OPTIONS(mtime, size), (cb) => {
      cb(null, stream);
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (size !== null && size - bytes <= PREFETCH_WHEN_REMAINING) startNext();
      });
      stream.once('end', () => finish(null));
    });
  });
}
