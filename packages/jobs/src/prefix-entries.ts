// Prefix entries listed while preparing (docs/private-sources.md#prefix-entries): each
// `s3://bucket/prefix/` entry becomes one file row per object under it, in key order, in the
// entry's place; the rows are numbered again from 0 (sealed request headers of other entries
// re-sealed for their new position). The listing is what the job packs from then on: stream
// downloads and retries read the same objects. An empty prefix, or one that cannot be listed,
// stays one row with its URL error.
import { isPrefixEntry, listedEntryName, listedObjectUrl, prefixFolder } from '@ap/contract';
import { filesAsGiven, replaceJobFiles, type Db, type NewJobFileRow } from '@ap/db';
import type { Fetcher } from '@ap/fetch';
import type { SecretBox } from '@ap/secrets';
import { fileAccessOf, fileHeadersPlace } from './file-access';

export const NO_OBJECTS_UNDER_PREFIX = 'no objects under this prefix';
export const prefixPastLimitError = (limit: number) => `prefix expands past the plan's limit of ${limit} files`;

/** What the listing said of an object: its probe, so it is not asked again. */
export interface ListedProbe {
  size: number;
  etag: string | null;
  lastModified: string | null;
}

export type PrefixExpansion =
  /** By (new) position: the listed objects' probes, and the prefix entries that failed. */
  | { ok: true; listed: Map<number, ListedProbe>; failedPrefixes: Map<number, string> }
  /** The job fails with this job-level error. */
  | { ok: false; error: string }
  /** The job left preparing (or this attempt) meanwhile: nothing written. */
  | { ok: false; error: null };

export async function expandPrefixEntries(
  deps: { db: Db; secrets: Pick<SecretBox, 'open' | 'seal'>; fetcher: Pick<Fetcher, 'listPrefix'> },
  job: { id: string; attempt: number },
  /** The plan's files-per-job limit, applied after expansion. */
  limit: number,
  /** The preparing deadline, and PREFIX_LIST_PAGES. */
  bounds: { signal?: AbortSignal | undefined; maxPages?: number | undefined } = {},
): Promise<PrefixExpansion> {
  const { db, secrets, fetcher } = deps;
  const rows = await filesAsGiven(db, job.id);
  const prefixRows = rows.filter(isPrefixEntry);
  if (prefixRows.length === 0) return { ok: true, listed: new Map(), failedPrefixes: new Map() };
  const access = await fileAccessOf(db, secrets, job.id, prefixRows);

  // One prefix after another, each listed only as far as the limit left allows.
  let files = rows.length - prefixRows.length;
  const listings = new Map<number, Awaited<ReturnType<Fetcher['listPrefix']>>>();
  for (const row of prefixRows) {
    const listing = await fetcher.listPrefix(row.url, {
      access: access.get(row.position)!,
      limit: Math.max(0, limit - files),
      ...(bounds.signal ? { signal: bounds.signal } : {}),
      ...(bounds.maxPages !== undefined ? { maxPages: bounds.maxPages } : {}),
    });
    if (!listing.ok && listing.endsJob) return { ok: false, error: listing.error };
    if (listing.ok && (listing.overLimit || files + listing.objects.length > limit)) return { ok: false, error: prefixPastLimitError(limit) };
    if (listing.ok) files += listing.objects.length;
    listings.set(row.position, listing);
  }

  const next: NewJobFileRow[] = [];
  const listed = new Map<number, ListedProbe>();
  const failedPrefixes = new Map<number, string>();
  for (const row of rows) {
    const listing = listings.get(row.position);
    if (listing?.ok && listing.objects.length > 0) {
      const folder = prefixFolder(row.url, row.filename);
      for (const object of listing.objects) {
        listed.set(next.length, { size: object.size, etag: object.etag, lastModified: object.lastModified });
        next.push({ url: listedObjectUrl(listing.bucket, object.key), filename: listedEntryName(folder, listing.prefix, object.key), sourceId: row.sourceId });
      }
      continue;
    }
    if (listing) failedPrefixes.set(next.length, listing.ok ? NO_OBJECTS_UNDER_PREFIX : listing.error);
    const position = next.length;
    const sealedHeaders = row.headers && position !== row.position ? secrets.seal(secrets.open(row.headers, fileHeadersPlace(job.id, row.position)), fileHeadersPlace(job.id, position)) : row.headers;
    next.push({ url: row.url, filename: row.filename, sourceId: row.sourceId, sealedHeaders, headerNames: row.headerNames ? row.headerNames.split(',') : [] });
  }

  const written = await db.$transaction(async (tx) => {
    const { count } = await tx.job.updateMany({ where: { id: job.id, status: 'preparing', attempt: job.attempt }, data: { updatedAt: new Date() } });
    if (count === 0) return false;
    await replaceJobFiles(tx, job.id, next);
    return true;
  });
  return written ? { ok: true, listed, failedPrefixes } : { ok: false, error: null };
}
