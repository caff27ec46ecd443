// A bin assembled inside S3 handed to the fleet (docs/segments.md#assembled-inside-s3-in-segments):
// its segments read only the objects S3 has no CRC32 checksum for, for their CRC-32s, and the
// finishing step assembles it with UploadPartCopy from those CRCs.
import { quotedEtag, type ObjectInfo, type ObjectRef } from '@ap/storage';
import { metrics, type ServiceContext } from '@ap/service-kit';
import { assembleInStore, crcsOfSegments, headsAsRecorded, serverCopyEntries, type BinFile, type PartialCrc, type SegmentedBin } from '@ap/archive';
import type { BinTarget, BinWithJob } from './target';

/** The server-side assembly settings of this packer. */
export function serverCopySettings(config: ServiceContext['config']) {
  return { minBytes: config.SERVER_COPY_MIN_BYTES, concurrency: config.FETCH_CONCURRENCY };
}

/** Object bytes read for CRC-32s count as fetched bytes, as a packed body's do. */
export const countRead = (bytes: number): void => void metrics.bytesFetchedTotal.inc({ service: 'packer' }, bytes);

/**
 * The bin's files named and sized from their objects (as assembleInStore names them) and the
 * bytes the packer would read for CRC-32s (objects without a full-object CRC32 checksum); null
 * when an object is not as recorded (the bin is then packed whole, which reports it).
 */
export async function serverCopyCut(ctx: ServiceContext, target: BinTarget, files: readonly BinFile[], refs: readonly ObjectRef[]): Promise<{ files: BinFile[]; bytesToRead: number } | null> {
  const heads = await headsAsRecorded(target.store, refs, files, ctx.config.FETCH_CONCURRENCY);
  if (!heads) return null;
  const entries = serverCopyEntries(files, refs, heads);
  return {
    // ETags as the fetcher records and checks them (quoted), for packer segments should S3 refuse the copies.
    files: files.map((f, i) => ({ ...f, entryName: entries[i]!.entryName, size: BigInt(heads[i]!.size), etag: f.etag ?? quotedEtag(heads[i]!.etag) })),
    bytesToRead: heads.reduce((n, h) => n + (h.crc32 === null ? h.size : 0), 0),
  };
}

/**
 * Assembles the bin inside S3 with the CRC-32s its segments read (reading nothing again); null
 * when it cannot be assembled there after all (an object changed, a copy refused).
 */
export async function assembleFromSegments(ctx: ServiceContext, zip: BinWithJob, { bin, target }: { bin: SegmentedBin; target: BinTarget }, partials: readonly PartialCrc[], signal: AbortSignal): Promise<ObjectInfo | null> {
  const copyBin = { key: target.key, mtime: zip.job.createdAt, files: [...bin.files], encryption: null, deflateLevel: null, destinationSourceId: zip.job.destinationSourceId };
  const packed = await assembleInStore({ store: target.store, log: ctx.log }, copyBin, serverCopySettings(ctx.config), {
    signal,
    progress: { add: () => undefined }, // the segments counted the bin's bytes
    onCopied: (n) => metrics.bytesCopiedServerSideTotal.inc(n),
    onRead: countRead,
    crcsRead: crcsOfSegments(bin.layout, partials),
  });
  return packed?.object ?? null;
}
