// Listing a prefix entry's objects (docs/private-sources.md#prefix-entries): ListObjectsV2,
// every page, in S3's key order; keys ending in "/" (folder markers) are skipped. Listing stops
// once more objects than `limit` are seen, so a prefix past the plan's limit is not read whole.
// The endpoint is the user's, so the loop is bounded whatever it answers
// (docs/guarantees.md#hardening-third-round-items-1-6): at most `maxPages` pages, at most
// `maxKeys` keys (folder markers included), the caller's deadline (`signal`), and a truncated
// page must bring a new continuation token and at least one key.
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
  /** `endsJob`: the listing itself misbehaved (not one URL's failure): the job fails with `error`. */
  | { ok: false; error: string; cause: FetchError; endsJob?: boolean };

export interface ListingBounds {
  /** Objects wanted at most; one more stops the listing (`overLimit`). */
  limit: number;
  signal?: AbortSignal | undefined;
  /** Pages asked for at most (PREFIX_LIST_PAGES). Default 1,000. */
  maxPages?: number | undefined;
}

export const LISTING_DID_NOT_PROGRESS = 'listing did not progress';
export const DEFAULT_LIST_PAGES = 1_000;

/** Keys listed at most, folder markers included: twice the objects wanted, and room for a folder tree's markers. */
export const maxListedKeys = (limit: number): number => 2 * limit + 1_000;

function endsJob(error: string, url: string): PrefixListing {
  const cause = new FetchError('other', error, { retryable: false, url });
  return { ok: false, error, cause, endsJob: true };
}

export async function listPrefixObjects(client: S3Client, url: string, options: ListingBounds, toError: (error: unknown) => FetchError): Promise<PrefixListing> {
  const location = parseS3Prefix(url);
  if (!location) {
    const cause = new FetchError('invalid-url', 'invalid s3:// prefix (it needs a bucket and ends in "/")', { retryable: false, url });
    return { ok: false, error: cause.userMessage, cause };
  }
  const maxPages = options.maxPages ?? DEFAULT_LIST_PAGES;
  const maxKeys = maxListedKeys(options.limit);
  const objects: ListedObject[] = [];
  const tokens = new Set<string>();
  let keys = 0;
  let ContinuationToken: string | undefined;
  try {
    for (let pages = 1; ; pages++) {
      options.signal?.throwIfAborted();
      const page = await client.send(new ListObjectsV2Command({ Bucket: location.bucket, Prefix: location.prefix, ContinuationToken }), { abortSignal: options.signal });
      const contents = page.Contents ?? [];
      keys += contents.length;
      for (const object of contents) {
        if (object.Key === undefined || !isListedObjectKey(object.Key)) continue;
        objects.push({ key: object.Key, size: object.Size ?? 0, etag: object.ETag ?? null, lastModified: object.LastModified?.toUTCString() ?? null });
        if (objects.length > options.limit) return { ok: true, ...location, objects, overLimit: true };
      }
      if (!page.IsTruncated) break;
      const next = page.NextContinuationToken;
      if (next === undefined || next === '' || tokens.has(next) || contents.length === 0) return endsJob(LISTING_DID_NOT_PROGRESS, url);
      if (keys > maxKeys) return endsJob(`${LISTING_DID_NOT_PROGRESS} (more than ${maxKeys} keys listed, ${objects.length} of them files)`, url);
      if (pages >= maxPages) return endsJob(`${LISTING_DID_NOT_PROGRESS} (stopped after ${maxPages} pages, PREFIX_LIST_PAGES)`, url);
      tokens.add(next);
      ContinuationToken = next;
    }
  } catch (thrown) {
    const cause = toError(thrown);
    cause.url ??= url;
    return { ok: false, error: cause.userMessage, cause };
  }
  return { ok: true, ...location, objects, overLimit: false };
}
