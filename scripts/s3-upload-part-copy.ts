// UploadPartCopy in the stand-in, as S3 documents it (API_UploadPartCopy): a part of a multipart
// upload taken from a range of an existing object (`x-amz-copy-source: /<bucket>/<key>`, URL
// encoded; `x-amz-copy-source-range: bytes=first-last`, zero-based and inclusive, within the
// source, else the whole source). A copied part obeys the same rules as an uploaded one (part
// number 1..10,000 here, the 5 MiB minimum for all but the last part at completion), and one copy
// moves at most 5 GiB. The source conditions (`x-amz-copy-source-if-match`, `-if-none-match`,
// `-if-modified-since`, `-if-unmodified-since`) are checked as S3 documents them: one that does
// not hold is 412 PreconditionFailed, nothing copied. The answer is CopyPartResult with the
// part's ETag (and its CRC32 when the upload was created with that algorithm).
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { crc32Base64, Crc32Meter } from './s3-checksums';
import { failedMatch, failedNoneMatch, preconditionFailed } from './s3-conditions';
import { noSuchUpload, objectControllers, S3Error, uploadDirectory, type S3rverContext } from './s3rver-internals';

/** S3's largest copy source, whole or ranged (docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html). */
export const MAX_COPY_BYTES = 5 * 1024 ** 3;

let installed = false;

/** Answers UploadPartCopy (s3rver's patched route hands it to this controller). */
export function enableUploadPartCopy(): void {
  if (installed) return;
  installed = true;
  objectControllers.uploadPartCopy = uploadPartCopy;
}

async function uploadPartCopy(ctx: S3rverContext): Promise<void> {
  for (const name of Object.keys(ctx.headers)) {
    if (name.startsWith('x-amz-copy-source-server-side-encryption')) {
      throw new S3Error('NotImplemented', `The stand-in does not implement ${name}`);
    }
  }
  const { bucket: srcBucket, key: srcKey } = copySource(ctx.headers['x-amz-copy-source'] ?? '');
  const uploadId = ctx.query.uploadId ?? '';
  const dir = uploadDirectory(ctx.store, ctx.params.bucket, uploadId);
  const uploadHeaders = await fs.readFile(path.join(dir, 'metadata'), 'utf8').then(
    (text) => JSON.parse(text) as Record<string, string>,
    () => {
      throw noSuchUpload(uploadId);
    },
  );
  if (!(await ctx.store.getBucket(srcBucket))) {
    throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: srcBucket });
  }
  const metadata = await ctx.store.getMetadata(srcBucket, srcKey).catch(() => {
    throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: srcKey });
  });
  checkSourceConditions(ctx.headers, metadata.etag, metadata['last-modified']);
  const size = Number(metadata['content-length']);
  const [first, last] = copyRange(ctx.headers['x-amz-copy-source-range'], size);
  if (last - first + 1 > MAX_COPY_BYTES) {
    throw new S3Error('InvalidRequest', `The specified copy source is larger than the maximum allowable size for a copy source: ${MAX_COPY_BYTES}`);
  }

  const meter = new Crc32Meter();
  const source = size === 0 ? Readable.from([]) : createReadStream(ctx.store.getResourcePath(srcBucket, srcKey, 'object'), { start: first, end: last });
  pipeline(source, meter, () => undefined);
  // Through the store, so the part-number rule answers as for UploadPart.
  const { md5 } = await ctx.store.putPart(ctx.params.bucket, uploadId, ctx.query.partNumber ?? '', meter).catch((err: unknown) => {
    source.destroy();
    throw err;
  });
  await fs.writeFile(path.join(dir, `${Number(ctx.query.partNumber)}.crc32`), String(meter.crc));
  ctx.body = {
    CopyPartResult: {
      LastModified: new Date().toISOString(),
      ETag: JSON.stringify(md5),
      ...(uploadHeaders['x-amz-checksum-algorithm'] !== undefined ? { ChecksumCRC32: crc32Base64(meter.crc) } : {}),
    },
  };
}

/** `/bucket/key` or `bucket/key`, URL-encoded, with an optional `?versionId=` (not kept by the stand-in). */
function copySource(header: string): { bucket: string; key: string } {
  const [encoded, query] = header.split('?', 2);
  if (query !== undefined && query !== '') throw new S3Error('NotImplemented', 'The stand-in keeps no object versions');
  let decoded: string;
  try {
    decoded = decodeURIComponent(encoded!.replace(/^\//, ''));
  } catch {
    decoded = '';
  }
  const slash = decoded.indexOf('/');
  if (slash <= 0 || slash === decoded.length - 1) {
    throw new S3Error('InvalidArgument', 'Copy Source must mention the source bucket and key: sourcebucket/sourcekey', {
      ArgumentName: 'x-amz-copy-source',
      ArgumentValue: header,
    });
  }
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1) };
}

/** The inclusive byte range to copy: all of the source when no range is given. */
function copyRange(header: string | undefined, size: number): [number, number] {
  if (header === undefined) return [0, size - 1];
  const match = /^bytes=(\d+)-(\d+)$/.exec(header);
  if (!match || Number(match[1]) > Number(match[2])) {
    throw new S3Error(
      'InvalidArgument',
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy',
      { ArgumentName: 'x-amz-copy-source-range', ArgumentValue: header },
    );
  }
  const [first, last] = [Number(match[1]), Number(match[2])];
  if (last >= size) {
    throw new S3Error('InvalidArgument', `Range specified is not valid for source object of size: ${size}`, {
      ArgumentName: 'x-amz-copy-source-range',
      ArgumentValue: header,
    });
  }
  return [first, last];
}

/** The copy source's conditions, as API_UploadPartCopy documents them (s3-conditions.ts). */
function checkSourceConditions(headers: S3rverContext['headers'], etag: string, lastModified: string): void {
  const failed = failedMatch(headers, 'x-amz-copy-source-', etag, lastModified) ?? failedNoneMatch(headers, 'x-amz-copy-source-', etag, lastModified);
  if (failed) throw preconditionFailed(failed);
}
