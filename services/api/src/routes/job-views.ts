// Database rows -> the contract's job shapes (api.md "Job (read, full form)", "list item", "ZIP entry").
import { foldersOf, gzipLevelOf, hasDestination, zipLocation } from '@ap/jobs';
import { ARCHIVE_EXTENSIONS, archiveFormatOf, COMPRESSION_LEVEL_DEFAULT, jobOutcome, jobProgress, renderZipFilenames, zipProgress, type JobListItemView, type JobView } from '@ap/contract';
import { splitStrategyOf, type JobFileView, type JobListRow, type JobWithBins } from '@ap/db';
import { iso } from '../http/serialize';

// A job's files are read on their own (@ap/db jobFileViews) rather than as a nested include:
// Prisma's include costs about twice the CPU for the same rows, and a job may hold tens of
// thousands of files that a client polling the job reads on every poll.
type FullRow = JobWithBins & { files: JobFileView[] };

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

export function jobFull(job: FullRow, ctx: ViewContext): JobView {
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
    files: job.files.map((f) => ({ url: f.url, filename: f.filename, ...(f.headerNames ? { header_names: f.headerNames.split(',') } : {}) })),
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
