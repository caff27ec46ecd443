// An object assembled inside S3 (docs/private-sources.md#server-side-assembly): a multipart
// upload whose parts are either bytes the caller makes or ranges of other objects (UploadPartCopy).
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, S3Client, UploadPartCommand, UploadPartCopyCommand } from '@aws-sdk/client-s3';
import type { ObjectInfo } from './object-types';

export interface ObjectRef {
  bucket: string;
  key: string;
  /**
   * Copy or read the object only while it has this ETag (the one its size and CRC were learned
   * with): S3 answers 412 PreconditionFailed once it changed, instead of other bytes.
   */
  etag?: string;
}

/** An ETag as the If-Match headers take it: quoted. */
export const quotedEtag = (etag: string): string => (etag.startsWith('"') ? etag : `"${etag}"`);

export interface ObjectChecksum extends ObjectInfo {
  /** The object's full-object CRC-32 (a composite checksum of a multipart upload is not one): null when S3 has none. */
  crc32: number | null;
}

/** A part of an assembly: bytes the caller makes, or bytes [start, end] of an object copied by S3. */
export type AssemblyPart =
  | { kind: 'upload'; length: number; bytes(): Promise<Buffer> }
  | { kind: 'copy'; source: ObjectRef; start: number; end: number };

/** Writes `key` of `Bucket` from `parts`, `concurrency` at a time; the completed upload's ETag. */
export async function assembleObject(
  client: S3Client,
  Bucket: string,
  key: string,
  parts: readonly AssemblyPart[],
  options: { contentType?: string; concurrency: number; signal?: AbortSignal; onPart?(index: number): void },
): Promise<string | undefined> {
  const created = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType: options.contentType ?? 'application/octet-stream' }));
  const UploadId = created.UploadId!;
  const etags: string[] = new Array<string>(parts.length);
  const send = async (index: number): Promise<void> => {
    const part = parts[index]!;
    const PartNumber = index + 1;
    const abortSignal = options.signal;
    if (part.kind === 'upload') {
      const Body = await part.bytes();
      etags[index] = (await client.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber, Body, ContentLength: Body.length }), { abortSignal })).ETag ?? '';
    } else {
      const out = await client.send(
        new UploadPartCopyCommand({
          Bucket,
          Key: key,
          UploadId,
          PartNumber,
          CopySource: `${part.source.bucket}/${part.source.key.split('/').map(encodeURIComponent).join('/')}`,
          CopySourceRange: `bytes=${part.start}-${part.end}`,
          ...(part.source.etag !== undefined ? { CopySourceIfMatch: quotedEtag(part.source.etag) } : {}),
        }),
        { abortSignal },
      );
      etags[index] = out.CopyPartResult?.ETag ?? '';
    }
    options.onPart?.(index);
  };
  try {
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (next < parts.length && !failed) {
        await send(next++).catch((err: unknown) => {
          failed = true;
          throw err;
        });
      }
    };
    // Every part in flight has ended before the upload is aborted (a part landing after the abort is an error of its own).
    const ended = await Promise.allSettled(Array.from({ length: Math.min(options.concurrency, parts.length) }, worker));
    const failure = ended.find((e) => e.status === 'rejected');
    if (failure) throw failure.reason;
    const done = await client.send(
      new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } }),
    );
    return done.ETag;
  } catch (err) {
    await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId })).catch(() => undefined);
    throw err;
  }
}
