// Conditional requests in the stand-in, as S3 documents them. GetObject and HeadObject: a false
// If-Match or If-Unmodified-Since is 412 PreconditionFailed (s3rver itself answers If-None-Match
// and If-Modified-Since with 304, and ignored the other two). UploadPartCopy: the same four as
// `x-amz-copy-source-if-*`, where a false one of any is 412 (s3-upload-part-copy.ts).
// A true If-Match makes If-Unmodified-Since moot, a false If-None-Match fails whatever
// If-Modified-Since says; a date that is not an HTTP date is ignored; Last-Modified has whole seconds.
import { objectControllers, S3Error, type S3rverContext } from './s3rver-internals';

const unquoted = (etag: string) => etag.trim().replace(/^"|"$/g, '');

/** Whether an If-Match / If-None-Match list (`*`, or ETags, comma-separated) names `etag`. */
function namesEtag(list: string, etag: string): boolean {
  return list.split(',').some((tag) => tag.trim() === '*' || unquoted(tag) === unquoted(etag));
}

/** Seconds since the epoch of an HTTP date; null when it is not one. */
function httpDateSeconds(value: string | undefined): number | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

type Headers = S3rverContext['headers'];

/** The condition (S3's name for it) of `<prefix>if-match` / `<prefix>if-unmodified-since` that does not hold, or null. */
export function failedMatch(headers: Headers, prefix: string, etag: string, lastModified: string): string | null {
  const ifMatch = headers[`${prefix}if-match`];
  if (ifMatch !== undefined) return namesEtag(ifMatch, etag) ? null : `${prefix}If-Match`;
  const since = httpDateSeconds(headers[`${prefix}if-unmodified-since`]);
  return since !== null && (httpDateSeconds(lastModified) ?? 0) > since ? `${prefix}If-Unmodified-Since` : null;
}

/** The condition of `<prefix>if-none-match` / `<prefix>if-modified-since` that does not hold, or null. */
export function failedNoneMatch(headers: Headers, prefix: string, etag: string, lastModified: string): string | null {
  const ifNoneMatch = headers[`${prefix}if-none-match`];
  if (ifNoneMatch !== undefined) return namesEtag(ifNoneMatch, etag) ? `${prefix}If-None-Match` : null;
  const since = httpDateSeconds(headers[`${prefix}if-modified-since`]);
  return since !== null && (httpDateSeconds(lastModified) ?? 0) <= since ? `${prefix}If-Modified-Since` : null;
}

export function preconditionFailed(condition: string): Error {
  return new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: condition });
}

let installed = false;

/** GetObject and HeadObject answer If-Match and If-Unmodified-Since (wrapping the controller installed before). */
export function enableGetObjectConditions(): void {
  if (installed) return;
  installed = true;
  const { getObject } = { ...objectControllers };
  objectControllers.getObject = async (ctx) => {
    if (ctx.headers['if-match'] !== undefined || ctx.headers['if-unmodified-since'] !== undefined) {
      // A missing object is s3rver's NoSuchKey, as before.
      const metadata = await ctx.store.getMetadata(ctx.params.bucket, ctx.params.key).catch(() => null);
      const failed = metadata && failedMatch(ctx.headers, '', metadata.etag, metadata['last-modified']);
      if (failed) throw preconditionFailed(failed);
    }
    await getObject(ctx);
  };
}
