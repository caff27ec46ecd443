// Prefix entries (docs/private-sources.md#prefix-entries): `s3://<bucket>/<prefix>/` stands for
// every object under the prefix, each named by its key below the prefix inside one folder.
import { parseS3Prefix } from './private-sources';

/** Whether a file entry is a prefix entry (an s3:// URL ending in "/", read with a source). */
export const isPrefixEntry = (entry: { url: string; sourceId?: string | null; source?: string | null }): boolean =>
  (entry.sourceId ?? entry.source ?? null) !== null && parseS3Prefix(entry.url) !== null;

/** The folder a prefix's objects go in: the entry's filename, else the prefix's last segment, else the bucket. */
export function prefixFolder(url: string, filename: string | null | undefined): string {
  if (filename) return filename;
  const location = parseS3Prefix(url);
  if (!location) throw new Error(`not a prefix entry: ${url}`);
  const segments = location.prefix.split('/').filter(Boolean);
  return segments.at(-1) ?? location.bucket;
}

/** Whether a listed key becomes an entry: keys ending in "/" are folder markers, skipped. */
export const isListedObjectKey = (key: string): boolean => !key.endsWith('/');

/**
 * The name of a listed object's entry, before the usual name rules and de-duplication: its key
 * below the prefix, inside the folder.
 */
export const listedEntryName = (folder: string, prefix: string, key: string): string => `${folder}/${key.slice(prefix.length)}`;

/** The s3:// URL of one listed object (what its row and its errors name). */
export const listedObjectUrl = (bucket: string, key: string): string => `s3://${bucket}/${key}`;
