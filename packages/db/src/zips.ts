// The owner of the bins (zips): a bin is one ZIP of a job, with its status, its stored object,
// the multipart upload it is written to and the packer's lease on it. The row type and the
// named operations the services use on them, instead of each writing its own queries.
import type { Db, DbTx } from './client';
import type { Zip } from './generated/client';
import { deleteBinParts } from './zip-parts';
import { deleteBinSegments } from './zip-segments';

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

/** A plain stored job's single bin, created with the job (and again by a retry from scratch). */
export async function createSingleBin(tx: DbTx, bin: { id: string; jobId: string; filename: string; fileCount: number; attempt?: number }): Promise<void> {
  await tx.zip.create({ data: { ...bin, sequence: 1 } });
}

/** Every bin of a job, in sequence order. */
export function jobBins(db: DbTx, jobId: string): Promise<BinRow[]> {
  return db.zip.findMany({ where: { jobId }, orderBy: { sequence: 'asc' } });
}

/**
 * A bin with all a download link needs, read once per request: whether it may be served, its
 * stored object, and what building it needs of its job (archive options) and of the job's
 * owner (the stream cap and quota). Null when the bin is gone (its job deleted or retried from scratch).
 */
export function binForDownload(db: DbTx, zipId: string) {
  return db.zip.findUnique({
    where: { id: zipId },
    select: {
      id: true,
      jobId: true,
      sequence: true,
      filename: true,
      status: true,
      size: true,
      etag: true,
      objectKey: true,
      completedAt: true,
      updatedAt: true,
      job: {
        select: {
          id: true,
          status: true,
          mode: true,
          expiresAt: true,
          purgedAt: true,
          createdAt: true,
          compression: true,
          compressionLevel: true,
          encryptionMethod: true,
          encryptionPassword: true,
          encryptionSeed: true,
          format: true,
          destinationSourceId: true,
          destinationBucket: true,
          destinationPrefix: true,
          user: { select: { id: true, plan: true, overageEnabled: true } },
        },
      },
    },
  });
}

/** A bin as a download link reads it (`binForDownload`). */
export type DownloadBin = NonNullable<Awaited<ReturnType<typeof binForDownload>>>;

/** A retry from the last checkpoint: these bins wait to be packed again, under `attempt`. */
export async function rerunBins(tx: DbTx, zipIds: readonly string[], attempt: number): Promise<void> {
  await tx.zip.updateMany({ where: { id: { in: [...zipIds] } }, data: { status: 'pending', attempt, error: null, completedAt: null, leaseOwner: null, leaseExpiresAt: null, admittedAt: null, bytesDone: 0 } });
}

/** A retry from scratch: the job's bins go (their files are reset by the job_files owner). */
export async function deleteJobBins(tx: DbTx, jobId: string): Promise<void> {
  await tx.zip.deleteMany({ where: { jobId } });
}

/** Fails the job's bins still waiting or running, with `error` (fail_on_zip_error). */
export async function cancelOpenBins(tx: DbTx, jobId: string, error: string): Promise<void> {
  await tx.zip.updateMany({
    where: { jobId, status: { in: ['pending', 'processing'] } },
    data: { status: 'failed', error, leaseOwner: null, leaseExpiresAt: null },
  });
}

// ---- Fair share (docs/fair-share.md): bins admitted against their user's running-bins cap ----

/**
 * What counts against a user's cap (docs/fair-share.md): admitted, unfinished units under their
 * job's current attempt. A unit is a bin packed whole, or one segment of a segmented bin, or a
 * segmented bin whose segments are all in (its finishing step). One row per unit: its bin, its
 * segment (null: the bin itself), whether it runs, and its order.
 */
const ADMITTED_UNITS = `
  SELECT z.id AS zip_id, z.job_id, z.attempt, NULL::int AS segment, z.status = 'processing' AS running, z.admitted_at, j.created_at, z.sequence
    FROM zips z JOIN jobs j ON j.id = z.job_id
   WHERE j.user_id = $1::uuid AND z.admitted_at IS NOT NULL AND z.status IN ('pending', 'processing') AND z.attempt = j.attempt
     AND j.mode = 'stored' AND j.status IN ('pending', 'processing')
     AND (z.segment_bytes IS NULL OR NOT EXISTS (SELECT 1 FROM zip_segments s WHERE s.zip_id = z.id AND s.attempt = z.attempt AND s.status <> 'completed'))
  UNION ALL
  SELECT z.id, z.job_id, z.attempt, s.index, s.status = 'processing', s.admitted_at, j.created_at, z.sequence
    FROM zip_segments s JOIN zips z ON z.id = s.zip_id AND z.attempt = s.attempt JOIN jobs j ON j.id = z.job_id
   WHERE j.user_id = $1::uuid AND s.admitted_at IS NOT NULL AND s.status IN ('pending', 'processing') AND z.status = 'processing'
     AND z.segment_bytes IS NOT NULL AND z.attempt = j.attempt AND j.mode = 'stored' AND j.status IN ('pending', 'processing')`;

/** Units waiting for admission, oldest job first: bins not yet started, segments of segmented bins. */
const WAITING_UNITS = `
  SELECT z.id AS zip_id, NULL::int AS segment, j.created_at, j.id AS job_id, z.sequence
    FROM zips z JOIN jobs j ON j.id = z.job_id
   WHERE j.user_id = $1::uuid AND z.admitted_at IS NULL AND z.status = 'pending' AND z.attempt = j.attempt
     AND j.mode = 'stored' AND j.status IN ('pending', 'processing')
  UNION ALL
  SELECT s.zip_id, s.index, j.created_at, j.id, z.sequence
    FROM zip_segments s JOIN zips z ON z.id = s.zip_id AND z.attempt = s.attempt JOIN jobs j ON j.id = z.job_id
   WHERE j.user_id = $1::uuid AND s.admitted_at IS NULL AND s.status = 'pending' AND z.status = 'processing'
     AND z.segment_bytes IS NOT NULL AND z.attempt = j.attempt AND j.mode = 'stored' AND j.status IN ('pending', 'processing')`;

/** An admitted unit (a bin, or one segment of it) and its rank among its user's admitted units (1 = the user's next). */
export interface AdmittedBin {
  zipId: string;
  jobId: string;
  attempt: number;
  /** The segment, for a segmented bin's segment; null for a bin (packed whole, or finished after its segments). */
  segment: number | null;
  rank: number;
}

/**
 * Admits the user's oldest waiting units while the user has fewer than `capOf(plan)` admitted
 * and unfinished (one admission at a time per user: a transaction-scoped advisory lock), and
 * returns every admitted, unfinished unit with its rank (running ones first, then by admission).
 */
export async function admitBins(db: Db, userId: string, capOf: (plan: string) => number): Promise<AdmittedBin[]> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('admit-bins:' || ${userId}))`;
    const [user] = await tx.$queryRaw<{ plan: string }[]>`SELECT plan::text AS plan FROM users WHERE id = ${userId}::uuid`;
    if (!user) return [];
    await tx.$executeRawUnsafe(
      `WITH admitted AS (
         SELECT zip_id, segment FROM (${WAITING_UNITS}) w
          ORDER BY created_at, job_id, sequence, segment NULLS FIRST
          LIMIT GREATEST(0, $2::int - (SELECT count(*) FROM (${ADMITTED_UNITS}) a))
       ), bins AS (
         UPDATE zips SET admitted_at = now() WHERE id IN (SELECT zip_id FROM admitted WHERE segment IS NULL)
       )
       UPDATE zip_segments s SET admitted_at = now() FROM admitted a
        WHERE a.segment IS NOT NULL AND s.zip_id = a.zip_id AND s.index = a.segment`,
      userId,
      capOf(user.plan),
    );
    const rows = await tx.$queryRawUnsafe<{ zip_id: string; job_id: string; attempt: number; segment: number | null; rank: bigint }[]>(
      `SELECT zip_id, job_id, attempt, segment,
              row_number() OVER (ORDER BY running DESC, admitted_at, created_at, sequence, segment NULLS FIRST) AS rank
         FROM (${ADMITTED_UNITS}) a`,
      userId,
    );
    return rows.map((r) => ({ zipId: r.zip_id, jobId: r.job_id, attempt: r.attempt, segment: r.segment, rank: Number(r.rank) }));
  });
}

/** Raises a running bin's `bytes_done` (never lowers it: a restarted bin does not go backwards). */
export async function recordBinProgress(db: DbTx, bin: { zipId: string; attempt: number }, bytesDone: number): Promise<void> {
  await db.$executeRaw`
    UPDATE zips SET bytes_done = ${bytesDone}::bigint
     WHERE id = ${bin.zipId} AND attempt = ${bin.attempt} AND status = 'processing' AND bytes_done < ${bytesDone}::bigint`;
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
  if (count > 0) {
    await deleteBinParts(tx, bin.zipId);
    await deleteBinSegments(tx, bin.zipId);
  }
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
       AND admitted_at IS NOT NULL AND (lease_owner IS NULL OR lease_expires_at < now())`;
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

/** A single-ZIP bin's predicted size, once its files are probed (its progress). */
export async function recordPlannedSize(db: DbTx, bin: { zipId: string; attempt: number }, plannedSize: number): Promise<void> {
  await db.zip.updateMany({ where: { id: bin.zipId, attempt: bin.attempt, status: 'processing' }, data: { plannedSize: BigInt(plannedSize) } });
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
  await deleteBinParts(db, zipId);
  await db.zip.update({ where: { id: zipId }, data: { uploadId: null, uploadLayout: null } });
}

