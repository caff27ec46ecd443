import { randomUUID } from 'node:crypto';
import { createSingleBin, insertJobFiles, type Db } from '@ap/db';
import { enqueue, type WorkQueues } from '@ap/queue';
import { enqueueSoon } from './enqueue-soon';
import type { Compression } from '@ap/contract';
import { archiveOptionColumns, type SealFor } from './archive-options';
import { queueBinsOf } from './fair-share';
import type { SecretBox } from '@ap/secrets';
import { headerNamesOf, isPrefixEntry } from '@ap/contract';
import { fileHeadersPlace } from './file-access';
import { newZipId } from './ids';

export interface NewJob {
  userId: string;
  mode: 'stored' | 'stream';
  /** `headers` are sealed before they are stored; `sourceId` reads an s3:// URL. */
  files: { url: string; filename?: string | null; headers?: Record<string, string> | undefined; sourceId?: string | null }[];
  zipFilename: string | null;
  expiresIn: number;
  failOnUrlError: boolean;
  metadata: Record<string, string> | null;
  maxZipSizeBytes: number | null;
  splitStrategy: 'preserve-order' | 'ffd';
  allowOversizeZips: boolean;
  failOnZipError: boolean;
  compression: Compression;
  compressionLevel: number | null;
  /** The password goes in sealed: `seal` is the caller's, bound to the password. */
  encryption: { method: 'aes-256'; seal: SealFor } | null;
  /** Where a stored job's ZIPs are written (docs/private-sources.md#destination-buckets); null: our bucket. */
  destination?: { sourceId: string; bucket: string; prefix: string } | null;
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
export async function createJob(
  db: Db,
  queues: WorkQueues,
  input: NewJob,
  onEnqueueError: (err: unknown) => void,
  /** Names the single ZIP of a job that needs no preparing step (templates know the job id and date). */
  singleZipFilename: (jobId: string, createdAt: Date) => string,
  /** Seals files' request headers (needed only when a file has some). */
  secrets?: Pick<SecretBox, 'seal'>,
): Promise<string> {
  const id = randomUUID();
  const createdAt = new Date();
  const prefixEntries = input.files.filter(isPrefixEntry).length;
  const preparing = needsPreparing({ ...input, prefixEntries });
  const zipId = preparing ? null : newZipId();
  const zipFilename = zipId ? singleZipFilename(id, createdAt) : null;
  await db.$transaction(async (tx) => {
    await tx.job.create({
      data: {
        id,
        userId: input.userId,
        status: preparing ? 'preparing' : 'pending',
        mode: input.mode,
        zipFilename: input.zipFilename,
        expiresIn: input.expiresIn,
        failOnUrlError: input.failOnUrlError,
        metadata: input.metadata ?? undefined,
        maxZipSizeBytes: input.maxZipSizeBytes === null ? null : BigInt(input.maxZipSizeBytes),
        splitStrategy: input.splitStrategy === 'ffd' ? 'ffd' : 'preserve_order',
        allowOversizeZips: input.allowOversizeZips,
        failOnZipError: input.failOnZipError,
        ...archiveOptionColumns(id, input),
        urlCount: input.files.length,
        prefixEntries,
        destinationSourceId: input.destination?.sourceId ?? null,
        destinationBucket: input.destination?.bucket ?? null,
        destinationPrefix: input.destination?.prefix ?? null,
        zipCount: preparing ? 0 : 1,
        createdAt,
        expiresAt: new Date(createdAt.getTime() + input.expiresIn * 1000),
      },
    });
    if (zipId) {
      await createSingleBin(tx, { id: zipId, jobId: id, filename: zipFilename!, fileCount: input.files.length });
    }
    const rows = input.files.map((f, position) => {
      if (!f.headers || Object.keys(f.headers).length === 0) return { url: f.url, filename: f.filename ?? null, sourceId: f.sourceId ?? null };
      if (!secrets) throw new Error('files with request headers need the secrets box to seal them');
      return { url: f.url, filename: f.filename ?? null, sealedHeaders: secrets.seal(JSON.stringify(f.headers), fileHeadersPlace(id, position)), headerNames: headerNamesOf(f.headers) };
    });
    await insertJobFiles(tx, id, rows, zipId);
  });
  await enqueueSoon(
    queues,
    async () => {
      if (zipId) await queueBinsOf(db, queues, input.userId);
      else await enqueue.prepare(queues, { jobId: id, attempt: 0 });
      await db.job.update({ where: { id }, data: { enqueuedAt: new Date() } });
    },
    onEnqueueError,
  );
  return id;
}
