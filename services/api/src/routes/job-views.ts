// Database rows -> the contract's job shapes (docs/api.md#job-full-form, #job-list-item, #zip-entry).
import { foldersOf, gzipLevelOf, hasDestination, zipLocation } from '@ap/jobs';
import { ARCHIVE_EXTENSIONS, archiveFormatOf, COMPRESSION_LEVEL_DEFAULT, jobOutcome, jobProgress, renderZipFilenames, zipProgress, type GetJobResponse, type JobListItemView, type JobView } from '@ap/contract';
import type { Response } from 'express';
import { once } from 'node:events';
import { splitStrategyOf, type JobFileView, type JobListRow, type JobWithBins } from '@ap/db';
import { iso } from '../http/serialize';

// A job's files are read on their own (@ap/db jobFileViewPages) rather than as a nested include:
// Prisma's include costs about twice the CPU for the same rows, and a job may hold tens of
// thousands of files that a client polling the job reads on every poll.
type FullRow = JobWithBins & { files: Iterable<Pick<JobFileView, 'url' | 'error' | 'zipId'>> };

/** Where the files go in the serialised job: replaced by the pages as they are read. */
const FILES_PLACE = '\u0000files';
const FILES_MARK = `"files":${JSON.stringify(FILES_PLACE)}`;

const fileView = (f: JobFileView) => ({ url: f.url, filename: f.filename, ...(f.headerNames ? { header_names: f.headerNames.split(',') } : {}) });

/**
 * The full job form written as its files are read (docs/operations.md#memory-per-process): the
 * job without its files is serialised, and the files array is written page by page in its place,
 * so a 20,000-file job's answer is never held whole. `failed` are the job's failed files (its
 * `errors`); `pages` its files in input order.
 */
export async function writeJobFull(res: Response, job: JobWithBins, failed: FullRow['files'], pages: AsyncIterable<JobFileView[]>, ctx: ViewContext): Promise<void> {
  const view = jobFull({ ...job, files: failed }, ctx);
  const shape = { success: true, job: { ...view, files: [] } } satisfies GetJobResponse;
  // The files keep their place after the status; nothing a user wrote comes before them.
  const { id, status, ...rest } = view;
  const text = JSON.stringify({ ...shape, job: { id, status, files: FILES_PLACE, ...rest } });
  const at = text.indexOf(FILES_MARK);
  res.status(200).type('application/json');
  let written = 0;
  const write = async (chunk: string) => {
    if (!res.write(chunk)) await once(res, 'drain');
  };
  await write(`${text.slice(0, at)}"files":[`);
  for await (const page of pages) {
    await write(page.map((f) => `${written++ === 0 ? '' : ','}${JSON.stringify(fileView(f))}`).join(''));
  }
  res.end(`]${text.slice(at + FILES_MARK.length)}`);
}

export interface ViewContext {
  now: Date;
  downloadUrl(zipId: string, expiresAt: Date): string;
}

const num = (v: bigint | number | null | undefined) => (v === null || v === undefined ? null : Number(v));

/** Until the layout is known, the name the first ZIP will have. */
function firstZipName(job: { id: string; zipFilename: string | null; createdAt: Date; format: string }, first: { filename: string } | undefined): string {
  if (first) return first.filename;
  const extension = ARCHIVE_EXTENSIONS[archiveFormatOf(job.format)];
  const rendered = renderZipFilenames({ template: job.zipFilename, jobId: job.id, createdAt: job.createdAt, total: 1, extension });
  return rendered.ok ? rendered.names[0]! : `archive-${job.id}${extension}`;
}

export function jobListItem(job: JobListRow): JobListItemView {
  const first = job.zips[0];
  return {
    id: job.id,
    status: job.status,
    url_count: job.urlCount,
    file_count: job.fileCount,
    zip_filename: firstZipName(job, first),
    zip_size: num(first?.size),
    multi_zip: job.maxZipSizeBytes !== null,
    zip_count: job.zipCount,
    total_size: Number(job.totalSize),
    max_zip_size_bytes: num(job.maxZipSizeBytes),
    fail_on_url_error: job.failOnUrlError,
    created_at: iso(job.createdAt),
    completed_at: job.completedAt ? iso(job.completedAt) : null,
    expires_at: iso(job.expiresAt),
    format: archiveFormatOf(job.format),
    progress: jobProgress(job.status, job.zips.map((z) => zipProgress(z, job.mode === 'stream'))),
  };
}

/** The full job form; `files` need only be the failed ones (the form's `files` are written by writeJobFull). */
export function jobFull(job: FullRow, ctx: ViewContext): Omit<JobView, 'files'> {
  const multiZip = job.maxZipSizeBytes !== null;
  const downloadable = job.status === 'completed' && job.expiresAt > ctx.now;
  const { errors, zips } = jobOutcome({
    files: job.files,
    zips: job.zips,
    jobError: job.error,
    downloadUrl: (z) => (downloadable && z.status === 'completed' ? ctx.downloadUrl(z.id, job.expiresAt) : null),
    stream: job.mode === 'stream',
  });
  const first = zips[0];
  return {
    id: job.id,
    status: job.status,
    url_count: job.urlCount,
    file_count: job.fileCount,
    zip_filename: firstZipName(job, job.zips[0]),
    zip_size: multiZip ? null : (first?.size ?? null),
    fail_on_url_error: job.failOnUrlError,
    download_url: multiZip ? null : (first?.download_url ?? null),
    metadata: (job.metadata as Record<string, string> | null) ?? null,
    created_at: iso(job.createdAt),
    completed_at: job.completedAt ? iso(job.completedAt) : null,
    expires_at: iso(job.expiresAt),
    multi_zip: multiZip,
    max_zip_size_bytes: num(job.maxZipSizeBytes),
    split_strategy: splitStrategyOf(job),
    fail_on_zip_error: job.failOnZipError,
    compression: job.compression === 'deflate' ? 'deflate' : 'store',
    compression_level: job.compression === 'deflate' ? (job.compressionLevel ?? COMPRESSION_LEVEL_DEFAULT) : gzipLevelOf(job),
    // The method only: the password is never read back.
    encryption: job.encryptionMethod === 'aes-256' ? { method: 'aes-256' } : null,
    format: archiveFormatOf(job.format),
    folders: foldersOf(job),
    manifest: job.manifest,
    zip_count: job.zipCount,
    total_size: Number(job.totalSize),
    // docs/private-sources.md#destination-buckets: where each ZIP is in the customer's bucket.
    zips: hasDestination(job) ? zips.map((z, i) => ({ ...z, location: z.status === 'completed' ? zipLocation(job, job.zips[i]!.objectKey) : null })) : zips,
    ...(errors.length ? { errors } : {}),
    progress: jobProgress(job.status, zips),
  };
}
