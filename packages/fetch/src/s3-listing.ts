// Listing a prefix entry's objects (docs/private-sources.md#prefix-entries): ListObjectsV2,
// every page, in S3's key order; keys ending in "/" (folder markers) are skipped. Listing stops
// once more objects than `limit` are seen, so a prefix past the plan's limit is not read whole.
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { isListedObjectKey, parseS3Prefix } from '@ap/contract';
import { FetchError } from './errors';

export interface ListedObject {
  key: string;
  size: number;
  etag: string | null;
  lastModified: string | null;
}

export type PrefixListing =
  | { ok: true; bucket: string; prefix: string; objects: ListedObject[]; overLimit: boolean }
  | { ok: false; error: string; cause: FetchError };

export async function listPrefixObjects(
  client: S3Client,
  url: string,
  options: { limit: number; signal?: AbortSignal | undefined },
  toError: (error: unknown) => FetchError,
): Promise<PrefixListing> {
  const location = parseS3Prefix(url);
  if (!location) {
    const cause = new FetchError('invalid-url', 'invalid s3:// prefix (it needs a bucket and ends in "/")', { retryable: false, url });
    return { ok: false, error: cause.userMessage, cause };
  }
  const objects: ListedObject[] = [];
  let ContinuationToken: string | undefined;
  try {
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: location.bucket, Prefix: location.prefix, ContinuationToken }), { abortSignal: options.signal });
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !isListedObjectKey(object.Key)) continue;
        objects.push({ key: object.Key, size: object.Size ?? 0, etag: object.ETag ?? null, lastModified: object.LastModified?.toUTCString() ?? null });
        if (objects.length > options.limit) return { ok: true, ...location, objects, overLimit: true };
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  } catch (thrown) {
    const cause = toError(thrown);
    cause.url ??= url;
    return { ok: false, error: cause.userMessage, cause };
  }
  return { ok: true, ...location, objects, overLimit: false };
}
