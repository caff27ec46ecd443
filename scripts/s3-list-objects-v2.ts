// ListObjectsV2 in the stand-in, as S3 documents it (API_ListObjectsV2): keys in UTF-8 binary
// order; `max-keys` (default and cap 1,000) counts keys and common prefixes together;
// `IsTruncated` with an opaque `NextContinuationToken` that the next request passes as
// `continuation-token` (then `start-after` is ignored); `prefix` and `delimiter` as usual.
// s3rver walks its folders in file-name order, which differs from key order where a key's
// character sorts before `/` ("a-b" comes before "a/c" in S3), and counts no common prefix.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { bucketControllers, S3Error, type S3rverContext, type S3rverStore } from './s3rver-internals';

export const LIST_MAX_KEYS = 1000;
const OBJECT_SUFFIX = '._S3rver_object';

let installed = false;

/** Answers `list-type=2` requests with S3's paging; other listings stay s3rver's. */
export function enableListObjectsV2(): void {
  if (installed) return;
  installed = true;
  const getBucket = bucketControllers.getBucket;
  bucketControllers.getBucket = (ctx) => (ctx.query['list-type'] === '2' ? listObjectsV2(ctx) : getBucket(ctx));
}

type Entry = { key: string } | { commonPrefix: string };

async function listObjectsV2(ctx: S3rverContext): Promise<void> {
  const { query } = ctx;
  const bucket = ctx.params.bucket;
  if (query['encoding-type'] !== undefined && query['encoding-type'] !== 'url') {
    throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', { ArgumentName: 'encoding-type', ArgumentValue: query['encoding-type'] });
  }
  const maxKeys = parseMaxKeys(query['max-keys']);
  const prefix = query.prefix ?? '';
  const delimiter = query.delimiter ?? '';
  const token = query['continuation-token'];
  const after = token !== undefined ? decodeToken(token, bucket) : (query['start-after'] ?? '');

  const entries: Entry[] = [];
  let truncated = false;
  let lastPrefix: string | null = null;
  for (const key of await sortedKeys(ctx.store, bucket, prefix)) {
    if (byteCompare(key, after) <= 0) continue;
    const cut = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    const entry: Entry = cut === -1 ? { key } : { commonPrefix: key.slice(0, cut + delimiter.length) };
    if ('commonPrefix' in entry) {
      if (entry.commonPrefix === lastPrefix || byteCompare(entry.commonPrefix, after) <= 0) continue;
      lastPrefix = entry.commonPrefix;
    }
    if (entries.length === maxKeys) {
      truncated = maxKeys > 0;
      break;
    }
    entries.push(entry);
  }

  const encode = query['encoding-type'] === 'url' ? (s: string) => encodeURIComponent(s).replace(/%2F/g, '/') : (s: string) => s;
  const contents = await Promise.all(
    entries.flatMap((entry) =>
      'key' in entry
        ? [
            ctx.store.getMetadata(bucket, entry.key).then((metadata) => ({
              Key: encode(entry.key),
              LastModified: new Date(metadata['last-modified']).toISOString(),
              ETag: metadata.etag,
              Size: Number(metadata['content-length']),
              StorageClass: 'STANDARD',
            })),
          ]
        : [],
    ),
  );
  const last = entries.at(-1);
  ctx.body = {
    ListBucketResult: {
      '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
      Name: bucket,
      Prefix: encode(prefix),
      ...(token !== undefined ? { ContinuationToken: token } : query['start-after'] !== undefined ? { StartAfter: encode(query['start-after']) } : {}),
      ...(truncated && last ? { NextContinuationToken: encodeToken(bucket, 'key' in last ? last.key : last.commonPrefix) } : {}),
      KeyCount: entries.length,
      MaxKeys: maxKeys,
      ...(delimiter ? { Delimiter: encode(delimiter) } : {}),
      ...(query['encoding-type'] === 'url' ? { EncodingType: 'url' } : {}),
      IsTruncated: truncated,
      Contents: contents,
      CommonPrefixes: entries.flatMap((entry) => ('commonPrefix' in entry ? [{ Prefix: encode(entry.commonPrefix) }] : [])),
    },
  };
}

function parseMaxKeys(value: string | undefined): number {
  if (value === undefined) return LIST_MAX_KEYS;
  if (!/^\d+$/.test(value) || Number(value) > 2147483647) {
    throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', { ArgumentName: 'max-keys', ArgumentValue: value });
  }
  return Math.min(LIST_MAX_KEYS, Number(value));
}

/** Opaque to clients, as S3's are; bound to the bucket it was issued for. */
function encodeToken(bucket: string, after: string): string {
  return Buffer.from(JSON.stringify({ bucket, after })).toString('base64');
}

function decodeToken(token: string, bucket: string): string {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { bucket?: unknown; after?: unknown };
    if (decoded.bucket === bucket && typeof decoded.after === 'string') return decoded.after;
  } catch {
    // fall through to S3's answer for a token it did not issue
  }
  throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', { ArgumentName: 'continuation-token' });
}

function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Every key under `prefix`, in S3's order (only folders that can hold such keys are read). */
async function sortedKeys(store: S3rverStore, bucket: string, prefix: string): Promise<string[]> {
  const root = store.getBucketPath(bucket);
  const keys: string[] = [];
  const visit = async (dir: string, keyDir: string): Promise<void> => {
    for (const dirent of await fs.readdir(dir, { withFileTypes: true })) {
      if (dirent.isDirectory() && dirent.name.startsWith('._S3rver_')) continue; // s3rver's own (uploads)
      if (dirent.isDirectory()) {
        const sub = `${keyDir}${dirent.name}/`;
        if (sub.startsWith(prefix) || prefix.startsWith(sub)) await visit(path.join(dir, dirent.name), sub);
      } else if (dirent.name.endsWith(OBJECT_SUFFIX)) {
        const key = keyDir + dirent.name.slice(0, -OBJECT_SUFFIX.length);
        if (key.startsWith(prefix)) keys.push(key);
      }
    }
  };
  await visit(root, '');
  return keys.sort(byteCompare);
}
