// The owner of a segmented bin's segments (zip_segments, docs/segments.md): which segments a bin
// is cut into under its attempt, who holds each (a lease, as for bins), how far each got, and
// the partial CRC-32s each leaves for the finishing step.
import type { Db, DbTx } from './client';
import type { ZipSegment } from './generated/client';
import { deleteBinParts } from './zip-parts';

/** A segment as `zip_segments` holds it. */
export type SegmentRow = ZipSegment;

/** One segment of a bin under an attempt. */
export interface SegmentRef {
  zipId: string;
  index: number;
  attempt: number;
}

/**
 * The bin is packed in `count` segments of its upload from now on: the upload recorded, the
 * segments (of this attempt) pending, the bin's lease released (each segment has its own) and
 * its predicted size known (its progress). `keepCompleted` (the same upload and layout again: a
 * retry from checkpoint) keeps the segments an earlier attempt completed, with their CRCs.
 */
export async function segmentBin(
  tx: DbTx,
  bin: { zipId: string; attempt: number },
  plan: { uploadId: string; uploadLayout: string; segmentBytes: number; plannedSize: number; count: number; keepCompleted: boolean },
): Promise<void> {
  if (plan.keepCompleted) {
    await tx.zipSegment.deleteMany({ where: { zipId: bin.zipId, status: { not: 'completed' } } });
    await tx.zipSegment.updateMany({ where: { zipId: bin.zipId }, data: { attempt: bin.attempt, admittedAt: null } });
  } else {
    await tx.zipSegment.deleteMany({ where: { zipId: bin.zipId } });
  }
  await tx.zipSegment.createMany({ data: Array.from({ length: plan.count }, (_, index) => ({ zipId: bin.zipId, index, attempt: bin.attempt })), skipDuplicates: true });
  await tx.zip.update({
    where: { id: bin.zipId },
    data: { uploadId: plan.uploadId, uploadLayout: plan.uploadLayout, segmentBytes: BigInt(plan.segmentBytes), plannedSize: BigInt(plan.plannedSize), leaseOwner: null, leaseExpiresAt: null },
  });
}

/** The bin is packed whole again (its layout changed): its segments and their upload go. */
export async function unsegmentBin(tx: DbTx, zipId: string): Promise<void> {
  await tx.zipSegment.deleteMany({ where: { zipId } });
  await deleteBinParts(tx, zipId);
  await tx.zip.update({ where: { id: zipId }, data: { segmentBytes: null, uploadId: null, uploadLayout: null, bytesDone: 0 } });
}

/** The bin's segments under its current attempt, in order. */
export function binSegments(db: DbTx, bin: { zipId: string; attempt: number }): Promise<SegmentRow[]> {
  return db.zipSegment.findMany({ where: { zipId: bin.zipId, attempt: bin.attempt }, orderBy: { index: 'asc' } });
}

/**
 * Takes a segment's lease (pending, or processing under a lease that ran out) while its bin is
 * being packed under the same attempt; times are the database's.
 */
export async function takeSegmentLease(db: DbTx, seg: SegmentRef, owner: string, leaseMs: number): Promise<boolean> {
  const taken = await db.$executeRaw`
    UPDATE zip_segments s SET status = 'processing', lease_owner = ${owner},
           lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
      FROM zips z
     WHERE s.zip_id = ${seg.zipId} AND s.index = ${seg.index} AND s.attempt = ${seg.attempt}
       AND z.id = s.zip_id AND z.attempt = s.attempt AND z.status = 'processing'
       AND s.status IN ('pending', 'processing') AND s.admitted_at IS NOT NULL
       AND (s.lease_owner IS NULL OR s.lease_expires_at < now())`;
  return taken > 0;
}

/** How long another holder's lease on the segment still runs; null when no one holds it under this attempt. */
export async function segmentLeaseRemainingMs(db: DbTx, seg: SegmentRef): Promise<number | null> {
  const [held] = await db.$queryRaw<{ remaining_ms: number }[]>`
    SELECT GREATEST(0, EXTRACT(EPOCH FROM s.lease_expires_at - now()) * 1000)::float8 AS remaining_ms
      FROM zip_segments s JOIN zips z ON z.id = s.zip_id AND z.attempt = s.attempt AND z.status = 'processing'
     WHERE s.zip_id = ${seg.zipId} AND s.index = ${seg.index} AND s.attempt = ${seg.attempt}
       AND s.status = 'processing' AND s.lease_owner IS NOT NULL`;
  return held ? held.remaining_ms : null;
}

/** Extends `owner`'s lease; false when the segment is no longer theirs or its bin ended (fail-fast). */
export async function renewSegmentLease(db: DbTx, seg: SegmentRef, owner: string, leaseMs: number): Promise<boolean> {
  const renewed = await db.$executeRaw`
    UPDATE zip_segments s SET lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
      FROM zips z
     WHERE s.zip_id = ${seg.zipId} AND s.index = ${seg.index} AND s.attempt = ${seg.attempt} AND s.lease_owner = ${owner}
       AND s.status = 'processing' AND z.id = s.zip_id AND z.attempt = s.attempt AND z.status = 'processing'`;
  return renewed > 0;
}

/** Gives up `owner`'s lease on the segment, so the next delivery can take it at once. */
export async function releaseSegmentLease(db: DbTx, seg: SegmentRef, owner: string): Promise<void> {
  await db.zipSegment.updateMany({ where: { zipId: seg.zipId, index: seg.index, attempt: seg.attempt, leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null } });
}

/** Raises the segment's `bytes_done` and sets its bin's to the sum over its segments. */
export async function recordSegmentProgress(db: Db, seg: SegmentRef, bytesDone: number): Promise<void> {
  await db.$executeRaw`
    UPDATE zip_segments SET bytes_done = ${bytesDone}::bigint
     WHERE zip_id = ${seg.zipId} AND index = ${seg.index} AND attempt = ${seg.attempt} AND status = 'processing' AND bytes_done < ${bytesDone}::bigint`;
  await sumSegmentProgress(db, seg);
}

async function sumSegmentProgress(db: DbTx, seg: SegmentRef): Promise<void> {
  await db.$executeRaw`
    UPDATE zips SET bytes_done = (SELECT COALESCE(sum(bytes_done), 0) FROM zip_segments WHERE zip_id = ${seg.zipId} AND attempt = ${seg.attempt})
     WHERE id = ${seg.zipId} AND attempt = ${seg.attempt} AND status = 'processing'`;
}

/**
 * The segment is in (its parts stored, its partial CRCs kept). The bin's row is locked first,
 * so of two segments completing at once exactly one sees none left: `last` says this one was
 * the bin's last, whose packer finishes the bin. Null when the segment was no longer `owner`'s.
 */
export async function completeSegment(db: Db, seg: SegmentRef, owner: string, result: { bytesDone: number; crcs: unknown }): Promise<{ last: boolean } | null> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM zips WHERE id = ${seg.zipId} FOR UPDATE`;
    const { count } = await tx.zipSegment.updateMany({
      where: { zipId: seg.zipId, index: seg.index, attempt: seg.attempt, leaseOwner: owner, status: 'processing' },
      data: { status: 'completed', crcs: result.crcs as object, bytesDone: BigInt(result.bytesDone), leaseOwner: null, leaseExpiresAt: null },
    });
    if (count === 0) return null;
    await sumSegmentProgress(tx, seg);
    const open = await tx.zipSegment.count({ where: { zipId: seg.zipId, attempt: seg.attempt, status: { not: 'completed' } } });
    return { last: open === 0 };
  });
}

/** Drops the bin's segments (it completed: its record is the object). */
export async function deleteBinSegments(db: DbTx, zipId: string): Promise<void> {
  await db.zipSegment.deleteMany({ where: { zipId } });
}
