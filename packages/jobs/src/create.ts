import { createSingleBin, insertJob, insertJobFiles, markJobEnqueued, type Db, type NewJobFileRow, type SplitStrategyName } from '@ap/db';
import type { WorkQueues } from '@ap/queue';
import type { ArchiveOptionColumns } from './archive-options';
import { enqueueSoon } from './enqueue-soon';
import { queueBinsOf, queuePrepare } from './fair-share';
import { isPrefixEntry } from '@ap/contract';
import { newZipId } from './ids';

/**
 * A job as admission made it (every limit checked, secrets sealed, names rendered): plain
 * values, written as they are.
 */
export interface NewJob {
  id: string;
  createdAt: Date;
  userId: string;
  mode: 'stored' | 'stream';
  /** In input order; request headers already sealed. */
  files: readonly NewJobFileRow[];
  /** The zip_filename as given (plain name or template). */
  zipFilename: string | null;
  /** The name of its one ZIP when it needs no preparing (needsPreparing), else null. */
  singleZipFilename: string | null;
  expiresIn: number;
  failOnUrlError: boolean;
  metadata: Record<string, string> | null;
  maxZipSizeBytes: number | null;
  splitStrategy: SplitStrategyName;
  allowOversizeZips: boolean;
  failOnZipError: boolean;
  /** Compression and encryption columns, the password sealed (archiveOptionColumns). */
  archiveOptions: ArchiveOptionColumns;
  /** Where a stored job's ZIPs are written (docs/private-sources.md#destination-buckets); null: our bucket. */
  destination: { sourceId: string; bucket: string; prefix: string } | null;
}

/**
 * Split and stream jobs probe their inputs first, and a job with prefix entries lists them
 * (docs/private-sources.md#prefix-entries); a plain stored job is one bin from the start.
 */
export const needsPreparing = (job: { mode: string; maxZipSizeBytes: bigint | number | null; prefixEntries: number }) =>
  job.mode === 'stream' || job.maxZipSizeBytes !== null || job.prefixEntries > 0;

/**
 * Writes the job, its files and (for plain stored jobs) its single ZIP in one transaction, then
 * enqueues it in the background. An enqueue that fails (or is skipped while Redis is down)
 * leaves `enqueued_at` null, and the reconciler picks it up.
 */
export async function createJob(db: Db, queues: WorkQueues, job: NewJob, onEnqueueError: (err: unknown) => void): Promise<void> {
  const prefixEntries = job.files.filter(isPrefixEntry).length;
  const preparing = needsPreparing({ ...job, prefixEntries });
  if (!preparing && job.singleZipFilename === null) throw new Error('a job that needs no preparing is created with the name of its ZIP');
  const zipId = preparing ? null : newZipId();
  await db.$transaction(async (tx) => {
    await insertJob(tx, {
      id: job.id,
      userId: job.userId,
      status: preparing ? 'preparing' : 'pending',
      mode: job.mode,
      zipFilename: job.zipFilename,
      expiresIn: job.expiresIn,
      failOnUrlError: job.failOnUrlError,
      metadata: job.metadata ?? undefined,
      maxZipSizeBytes: job.maxZipSizeBytes === null ? null : BigInt(job.maxZipSizeBytes),
      splitStrategy: job.splitStrategy,
      allowOversizeZips: job.allowOversizeZips,
      failOnZipError: job.failOnZipError,
      ...job.archiveOptions,
      urlCount: job.files.length,
      prefixEntries,
      destinationSourceId: job.destination?.sourceId ?? null,
      destinationBucket: job.destination?.bucket ?? null,
      destinationPrefix: job.destination?.prefix ?? null,
      zipCount: preparing ? 0 : 1,
      createdAt: job.createdAt,
      expiresAt: new Date(job.createdAt.getTime() + job.expiresIn * 1000),
    });
    if (zipId) await createSingleBin(tx, { id: zipId, jobId: job.id, filename: job.singleZipFilename!, fileCount: job.files.length });
    await insertJobFiles(tx, job.id, job.files, zipId);
  });
  await enqueueSoon(
    queues,
    async () => {
      if (zipId) await queueBinsOf(db, queues, job.userId);
      else await queuePrepare(db, queues, { jobId: job.id, attempt: 0 });
      await markJobEnqueued(db, job.id);
    },
    onEnqueueError,
  );
}
