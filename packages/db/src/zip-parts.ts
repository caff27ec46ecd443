// The owner of a bin upload's stored parts (zip_parts): what a resume continues after.
import type { DbTx } from './client';

/** A stored part of the bin's upload (number, ETag, size and where it starts). */
export function recordBinPart(db: DbTx, zipId: string, uploadId: string, part: { partNumber: number; etag: string; size: number }, partSize: number) {
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

/** Drops every recorded part of the bin (its upload completed or was forgotten). */
export async function deleteBinParts(db: DbTx, zipId: string): Promise<void> {
  await db.zipPart.deleteMany({ where: { zipId } });
}
