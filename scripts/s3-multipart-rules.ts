// Real S3's multipart rules, enforced in front of s3rver's store. s3rver takes any part number,
// any part size, and a completion list in any order with any ETags (it sorts the list and joins
// whatever part files it finds), so an upload that AWS would refuse passes every test against
// it. These checks answer as S3 does (same error codes, HTTP 400) at the same steps:
// UploadPart checks the part number, CompleteMultipartUpload checks the list.
import { promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** S3's limits (docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html). */
export const S3_MULTIPART_LIMITS = { minPartSize: 5 * 1024 * 1024, maxParts: 10_000 } as const;

type S3ErrorClass = new (code: string, message: string, detail?: Record<string, string>) => Error;
const S3Error = createRequire(import.meta.url)('s3rver/lib/models/error.js') as S3ErrorClass;

interface CompletedPart {
  number: number;
  /** Unquoted, as s3rver's controller passes it on. */
  etag: string;
}

/** The parts of s3rver's filesystem store these checks wrap. */
interface MultipartStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putPart(bucket: string, uploadId: string, partNumber: string, content: unknown): Promise<{ size: number; md5: string }>;
  putObjectMultipart(bucket: string, uploadId: string, parts: CompletedPart[]): Promise<{ size: number; md5: string }>;
}

/** Makes `store` (an s3rver instance's store) refuse what real S3 refuses in a multipart upload. */
export function enforceMultipartRules(store: MultipartStore): void {
  const putPart = store.putPart.bind(store);
  const putObjectMultipart = store.putObjectMultipart.bind(store);

  store.putPart = (bucket, uploadId, partNumber, content) => {
    checkPartNumber(String(partNumber));
    return putPart(bucket, uploadId, partNumber, content);
  };

  store.putObjectMultipart = async (bucket, uploadId, parts) => {
    const uploadDir = path.join(store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
    await checkCompletion(uploadDir, parts);
    return putObjectMultipart(bucket, uploadId, parts);
  };
}

function checkPartNumber(value: string): void {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > S3_MULTIPART_LIMITS.maxParts) {
    throw new S3Error('InvalidArgument', `Part number must be an integer between 1 and ${S3_MULTIPART_LIMITS.maxParts}, inclusive`, {
      ArgumentName: 'partNumber',
      ArgumentValue: value,
    });
  }
}

async function checkCompletion(uploadDir: string, parts: readonly CompletedPart[]): Promise<void> {
  for (const part of parts) checkPartNumber(String(part.number));
  for (let i = 1; i < parts.length; i++) {
    if (parts[i]!.number <= parts[i - 1]!.number) {
      throw new S3Error('InvalidPartOrder', 'The list of parts was not in ascending order. The parts list must be specified in order by part number.');
    }
  }
  const stored = await Promise.all(parts.map((part) => storedPart(uploadDir, part.number)));
  parts.forEach((part, i) => {
    if (stored[i] === null || stored[i]!.etag !== part.etag) {
      throw new S3Error(
        'InvalidPart',
        "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        { UploadId: path.basename(uploadDir), PartNumber: String(part.number), ETag: part.etag },
      );
    }
  });
  stored.slice(0, -1).forEach((part, i) => {
    if (part!.size < S3_MULTIPART_LIMITS.minPartSize) {
      throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', {
        PartNumber: String(parts[i]!.number),
        ProposedSize: String(part!.size),
        MinSizeAllowed: String(S3_MULTIPART_LIMITS.minPartSize),
      });
    }
  });
}

/** A stored part's ETag (its MD5, as s3rver keeps it beside the part) and size; null when not uploaded. */
async function storedPart(uploadDir: string, partNumber: number): Promise<{ etag: string; size: number } | null> {
  const file = path.join(uploadDir, String(partNumber));
  try {
    const [etag, stat] = await Promise.all([fs.readFile(`${file}.md5`, 'utf8'), fs.stat(file)]);
    return { etag, size: stat.size };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
