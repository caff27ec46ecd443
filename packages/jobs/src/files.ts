// The owner of a job's file rows (job_files) and of the bins they belong to (zips, with their
// upload parts): row types and the named operations the services use on them, instead of each
// service selecting its own shape and writing raw SQL.
// Also where a bin's layout is computed from its rows, and an entry's name from what a
// response or probe said about its file.
import { deriveEntryName } from '@ap/contract';
import type { Db, Zip } from '@ap/db';
import type { UploadedPart } from '@ap/storage';
import { planZip, type CrcCheckpoint, type ZipLayout } from '@ap/zip';

/** Db, or the client of a transaction on it. */
export type DbTx = Db | Parameters<Parameters<Db['$transaction']>[0]>[0];

/** A job's file as job_files holds it. */
export interface JobFileRow {
  /** 0-based input position. */
  position: number;
  url: string;
  /** The name the client gave, if any. */
  filename: string | null;
  /** Probed (or, for a single-ZIP bin, written) size; null when not known. */
  size: bigint | null;
  /** Validators seen when it was probed or written. */
  etag: string | null;
  lastModified: string | null;
  /** Name of its entry in its ZIP (derived, sanitised, de-duplicated); null until known. */
  entryName: string | null;
  /** CRC-32 of the body once learned (stored signed: read `>>> 0`). */
  crc32: number | null;
  /** Resume checkpoint while the CRC is not known: CRC-32 of the first crcPrefixLen bytes. */
  crcPrefix: number | null;
  crcPrefixLen: bigint | null;
  /** Request headers, sealed (file-access.ts opens them); null when none. */
  headers: string | null;
  /** The source an s3:// URL is read with. */
  sourceId: string | null;
  zipId: string | null;
  /** Why its URL failed; null when fine. */
  error: string | null;
}

/** A file of a bin, as the packer and stream downloads read it: its bin is known, its URL did not fail. */
export type BinFileRow = Omit<JobFileRow, 'zipId' | 'error'>;

/** A file as the job's views show it. */
export type JobFileView = Pick<JobFileRow, 'url' | 'filename' | 'error' | 'zipId'> & { headerNames: string | null };

const BIN_FILE_SELECT = {
  position: true,
  url: true,
  filename: true,
  size: true,
  etag: true,
  lastModified: true,
  entryName: true,
  crc32: true,
  crcPrefix: true,
  crcPrefixLen: true,
  headers: true,
  sourceId: true,
} as const;

/** A file as inserted: its sealed headers (and their names) or its source, when it has them. */
export interface NewJobFileRow {
  url: string;
  filename?: string | null;
  sealedHeaders?: string | null;
  headerNames?: readonly string[];
  sourceId?: string | null;
}

/** A job's files as created: in input order, all in `zipId` when the bin is known up front. */
export async function insertJobFiles(tx: DbTx, jobId: string, files: readonly NewJobFileRow[], zipId: string | null): Promise<void> {
  // One statement for any number of files (20,000 rows in a few tens of ms). Header names are
  // HTTP tokens (no commas): stored joined.
  await tx.$executeRaw`
    INSERT INTO job_files (job_id, position, url, filename, zip_id, headers, header_names, source_id)
    SELECT ${jobId}::uuid, f.position - 1, f.url, f.filename, ${zipId}, f.headers, f.header_names, f.source_id
      FROM unnest(${files.map((f) => f.url)}::text[], ${files.map((f) => f.filename ?? null)}::text[], ${files.map((f) => f.sealedHeaders ?? null)}::text[],
                  ${files.map((f) => (f.headerNames?.length ? f.headerNames.join(',') : null))}::text[], ${files.map((f) => f.sourceId ?? null)}::uuid[])
           WITH ORDINALITY AS f(url, filename, headers, header_names, source_id, position)`;
}

/** Every file of a job, to probe: in input order. */
export function filesToProbe(db: DbTx, jobId: string): Promise<Pick<JobFileRow, 'position' | 'url' | 'filename' | 'headers' | 'sourceId'>[]> {
  return db.jobFile.findMany({ where: { jobId }, orderBy: { position: 'asc' }, select: { position: true, url: true, filename: true, headers: true, sourceId: true } });
}

/** What preparing learned of a file: its probe, entry name, failure and bin. */
export type ProbedFileRecord = Pick<JobFileRow, 'position' | 'etag' | 'lastModified' | 'entryName' | 'error' | 'zipId'> & { size: number | null };

/** Records every file's probe result and bin, in one statement. */
export async function recordProbedFiles(tx: DbTx, jobId: string, files: readonly ProbedFileRecord[]): Promise<void> {
  await tx.$executeRaw`
    UPDATE job_files AS f
       SET size = u.size, etag = u.etag, last_modified = u.last_modified, entry_name = u.entry_name, error = u.error, zip_id = u.zip_id
      FROM unnest(
             ${files.map((f) => f.position)}::int[],
             ${files.map((f) => (f.size === null ? null : String(f.size)))}::bigint[],
             ${files.map((f) => f.etag)}::text[],
             ${files.map((f) => f.lastModified)}::text[],
             ${files.map((f) => f.entryName)}::text[],
             ${files.map((f) => f.error)}::text[],
             ${files.map((f) => f.zipId)}::text[]
           ) AS u(position, size, etag, last_modified, entry_name, error, zip_id)
     WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
}

/** The files of a bin whose URL has not failed, in archive order. */
export function binFiles(db: DbTx, zipId: string): Promise<BinFileRow[]> {
  return db.jobFile.findMany({ where: { zipId, error: null }, orderBy: { position: 'asc' }, select: BIN_FILE_SELECT });
}

/** A job's files as its views show them, in input order. */
export function jobFileViews(db: DbTx, jobId: string): Promise<JobFileView[]> {
  return db.jobFile.findMany({ where: { jobId }, orderBy: { position: 'asc' }, select: { url: true, filename: true, error: true, zipId: true, headerNames: true } });
}

/** URLs that failed, with why: listed under their URLs in the job's view. */
export async function recordFileErrors(tx: DbTx, jobId: string, failures: readonly { position: number; error: string }[]): Promise<void> {
  for (const f of failures) {
    await tx.jobFile.update({ where: { jobId_position: { jobId, position: f.position } }, data: { error: f.error } });
  }
}

/**
 * Entries as they went into a ZIP: name and size, and the validators of the responses they came
 * from when given (given by none, the probed ones stay). One statement for 10,000 small files.
 */
export async function recordEntries(
  tx: DbTx,
  jobId: string,
  entries: readonly { position: number; entryName: string; size: number; etag?: string | null; lastModified?: string | null }[],
): Promise<void> {
  if (entries.length === 0) return;
  const positions = entries.map((e) => e.position);
  const names = entries.map((e) => e.entryName);
  const sizes = entries.map((e) => String(e.size));
  if (entries.every((e) => e.etag === undefined && e.lastModified === undefined)) {
    await tx.$executeRaw`
      UPDATE job_files AS f SET entry_name = u.entry_name, size = u.size
        FROM unnest(${positions}::int[], ${names}::text[], ${sizes}::bigint[]) AS u(position, entry_name, size)
       WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
    return;
  }
  await tx.$executeRaw`
    UPDATE job_files AS f SET entry_name = u.name, size = u.size, etag = u.etag, last_modified = u.last_modified
      FROM unnest(${positions}::int[], ${names}::text[], ${sizes}::bigint[],
                  ${entries.map((e) => e.etag ?? null)}::text[], ${entries.map((e) => e.lastModified ?? null)}::text[]) AS u(position, name, size, etag, last_modified)
     WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
}

/**
 * A bin packed again from its start: what an earlier attempt recorded for a resume (CRCs,
 * checkpoints) no longer applies; an as-written bin's names, sizes and validators come from the
 * new responses.
 */
export async function resetBinFilesForRepack(db: DbTx, zipId: string, asWritten: boolean): Promise<void> {
  await db.jobFile.updateMany({
    where: { zipId, error: null },
    data: { crc32: null, crcPrefix: null, crcPrefixLen: null, ...(asWritten ? { entryName: null, size: null, etag: null, lastModified: null } : {}) },
  });
}

/** Learned CRC-32s, in one statement; a file's checkpoint goes with it. Stored `crc | 0`. */
export async function recordCrcs(db: DbTx, crcs: readonly { jobId: string; position: number; crc: number }[]): Promise<void> {
  if (crcs.length === 0) return;
  await db.$executeRaw`
    UPDATE job_files AS f SET crc32 = v.crc, crc_prefix = NULL, crc_prefix_length = NULL
    FROM unnest(${crcs.map((c) => c.jobId)}::uuid[], ${crcs.map((c) => c.position)}::int[], ${crcs.map((c) => c.crc | 0)}::int[]) AS v(job_id, position, crc)
    WHERE f.job_id = v.job_id AND f.position = v.position`;
}

/** A resume checkpoint of a body whose CRC is not known, only ever moved forward. */
export async function recordCrcCheckpoint(db: DbTx, jobId: string, position: number, state: CrcCheckpoint): Promise<void> {
  // Only forward: a later, shorter disconnect must not undo a longer checkpoint.
  await db.$executeRaw`
    UPDATE job_files SET crc_prefix = ${state.crc | 0}, crc_prefix_length = ${BigInt(state.length)}
    WHERE job_id = ${jobId}::uuid AND position = ${position} AND crc32 IS NULL
      AND (crc_prefix_length IS NULL OR crc_prefix_length < ${BigInt(state.length)})`;
}

/** A retry from the last checkpoint: the files of the bins run again are no longer failed. */
export async function clearFileErrors(tx: DbTx, jobId: string, zipIds: readonly string[]): Promise<void> {
  await tx.jobFile.updateMany({ where: { jobId, zipId: { in: [...zipIds] } }, data: { error: null } });
}

/** A retry from scratch: the files are as created, in no bin. */
export async function resetJobFiles(tx: DbTx, jobId: string): Promise<void> {
  await tx.jobFile.updateMany({
    where: { jobId },
    // A re-probe may find changed files: no CRC or checkpoint of the old bytes may survive.
    data: { zipId: null, size: null, etag: null, lastModified: null, entryName: null, crc32: null, crcPrefix: null, crcPrefixLen: null, error: null },
  });
}

/** Every file of the job goes into the one bin `zipId` (a plain stored job's single ZIP). */
export async function assignJobFilesToBin(tx: DbTx, jobId: string, zipId: string): Promise<void> {
  await tx.jobFile.updateMany({ where: { jobId }, data: { zipId } });
}

/** The ZIP layout of a bin whose files all have their entry name and size. */
export function layoutOfFiles(files: readonly Pick<JobFileRow, 'entryName' | 'size'>[], mtime: Date): ZipLayout {
  return planZip(
    files.map((f) => ({ name: f.entryName!, size: Number(f.size) })),
    { mtime },
  );
}

/**
 * A file's entry name (before de-duplication) from what its probe or response said: the name
 * the client gave, else the response's Content-Disposition, else the final URL, else by position.
 */
export function entryNameOf(file: Pick<JobFileRow, 'position' | 'filename'>, seen: { contentDisposition?: string | null; finalUrl: string }): string {
  return deriveEntryName({ givenFilename: file.filename, contentDisposition: seen.contentDisposition, finalUrl: seen.finalUrl, index: file.position + 1 });
}

// ---- The bins (zips rows) the files belong to, and their upload parts (zip_parts) ----

/** A bin as `zips` holds it. */
export type BinRow = Zip;

/** A bin laid out while preparing. */
export interface NewBin {
  id: string;
  sequence: number;
  filename: string;
  fileCount: number;
  /** Its exact ZIP size; null when a file's size is unknown. */
  plannedSize: number | null;
}

/**
 * The bins preparing laid out, under the job's attempt. A stream job's bins are complete at
 * once (built at download time), `completedAt` then being when the layout was made.
 */
export async function createBins(tx: DbTx, jobId: string, attempt: number, bins: readonly NewBin[], streamCompletedAt: Date | null): Promise<void> {
  await tx.zip.createMany({
    data: bins.map((b) => ({
      id: b.id,
      jobId,
      sequence: b.sequence,
      filename: b.filename,
      fileCount: b.fileCount,
      plannedSize: b.plannedSize === null ? null : BigInt(b.plannedSize),
      attempt,
      ...(streamCompletedAt ? { status: 'completed' as const, size: b.plannedSize === null ? null : BigInt(b.plannedSize), completedAt: streamCompletedAt } : {}),
    })),
  });
}

/** A bin with its job, as the packer reads it before packing. */
export function binWithJob(db: DbTx, zipId: string) {
  return db.zip.findUnique({ where: { id: zipId }, include: { job: true } });
}

/** A bin under this attempt, not yet ended, fails; false when it had already ended or moved on. */
export async function markBinFailed(tx: DbTx, bin: { zipId: string; attempt: number }, error: string | null): Promise<boolean> {
  const { count } = await tx.zip.updateMany({
    where: { id: bin.zipId, attempt: bin.attempt, status: { in: ['pending', 'processing'] } },
    data: { status: 'failed', error, leaseOwner: null, leaseExpiresAt: null },
  });
  return count > 0;
}

/**
 * A bin packed by the holder of its lease is complete, its upload records cleared; false when
 * the lease was no longer `leaseOwner`'s (its record is the new holder's to make).
 */
export async function markBinCompleted(
  tx: DbTx,
  bin: { zipId: string; attempt: number; leaseOwner: string },
  object: { size: number; etag: string; objectKey: string; fileCount: number; completedAt: Date },
): Promise<boolean> {
  const { count } = await tx.zip.updateMany({
    where: { id: bin.zipId, attempt: bin.attempt, status: 'processing', leaseOwner: bin.leaseOwner },
    data: {
      status: 'completed',
      size: BigInt(object.size),
      etag: object.etag,
      objectKey: object.objectKey,
      fileCount: object.fileCount,
      completedAt: object.completedAt,
      uploadId: null,
      uploadLayout: null,
      leaseOwner: null,
      leaseExpiresAt: null,
    },
  });
  if (count > 0) await tx.zipPart.deleteMany({ where: { zipId: bin.zipId } });
  return count > 0;
}

/**
 * Takes a bin's lease (pending, or processing under a lease that ran out) and marks it
 * processing; times are the database's. False when it is not to be packed under this attempt
 * or another holder's lease runs.
 */
export async function takeBinLease(db: DbTx, bin: { zipId: string; attempt: number }, owner: string, leaseMs: number): Promise<boolean> {
  const taken = await db.$executeRaw`
    UPDATE zips SET status = 'processing', error = NULL, lease_owner = ${owner},
           lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
     WHERE id = ${bin.zipId} AND attempt = ${bin.attempt} AND status IN ('pending', 'processing')
       AND (lease_owner IS NULL OR lease_expires_at < now())`;
  return taken > 0;
}

/** How long another holder's lease on the bin still runs; null when no one holds it under this attempt. */
export async function binLeaseRemainingMs(db: DbTx, bin: { zipId: string; attempt: number }): Promise<number | null> {
  const [held] = await db.$queryRaw<{ remaining_ms: number }[]>`
    SELECT GREATEST(0, EXTRACT(EPOCH FROM lease_expires_at - now()) * 1000)::float8 AS remaining_ms
      FROM zips
     WHERE id = ${bin.zipId} AND attempt = ${bin.attempt} AND status = 'processing' AND lease_owner IS NOT NULL`;
  return held ? held.remaining_ms : null;
}

/** Extends `owner`'s lease on the bin; false when the bin is no longer theirs. */
export async function renewBinLease(db: DbTx, bin: { zipId: string; attempt: number }, owner: string, leaseMs: number): Promise<boolean> {
  const renewed = await db.$executeRaw`
    UPDATE zips SET lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
     WHERE id = ${bin.zipId} AND attempt = ${bin.attempt} AND status = 'processing' AND lease_owner = ${owner}`;
  return renewed > 0;
}

/** Gives up `owner`'s lease on the bin, so the next delivery can take it at once. */
export async function releaseBinLease(db: DbTx, zipId: string, owner: string): Promise<void> {
  await db.zip.updateMany({ where: { id: zipId, leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null } });
}

/** The multipart upload a bin is written to, and what its bytes follow (null: not resumable). */
export async function recordBinUpload(db: DbTx, zipId: string, uploadId: string, uploadLayout: string | null): Promise<void> {
  await db.zip.update({ where: { id: zipId }, data: { uploadId, uploadLayout } });
}

/** The bin's upload goes on, but can no longer be resumed (its records stopped being complete). */
export async function markBinUploadNotResumable(db: DbTx, zipId: string): Promise<void> {
  await db.zip.update({ where: { id: zipId }, data: { uploadLayout: null } });
}

/** Forgets the bin's upload and its recorded parts. */
export async function forgetBinUpload(db: DbTx, zipId: string): Promise<void> {
  await db.zipPart.deleteMany({ where: { zipId } });
  await db.zip.update({ where: { id: zipId }, data: { uploadId: null, uploadLayout: null } });
}

/** A stored part of the bin's upload (number, ETag, size and where it starts). */
export function recordBinPart(db: DbTx, zipId: string, uploadId: string, part: UploadedPart, partSize: number) {
  const row = { etag: part.etag, size: BigInt(part.size), offset: BigInt((part.partNumber - 1) * partSize) };
  return db.zipPart.upsert({
    where: { zipId_uploadId_partNumber: { zipId, uploadId, partNumber: part.partNumber } },
    create: { zipId, uploadId, partNumber: part.partNumber, ...row },
    update: row,
  });
}

/** The recorded parts of the bin's upload, by part number. */
export function binUploadParts(db: DbTx, zipId: string, uploadId: string) {
  return db.zipPart.findMany({ where: { zipId, uploadId }, orderBy: { partNumber: 'asc' } });
}
