// Uploads the stand-in no longer holds, as S3 documents them: UploadPart, UploadPartCopy,
// CompleteMultipartUpload, ListParts and AbortMultipartUpload of an upload that was never
// started, was aborted or was completed answer NoSuchUpload (HTTP 404). s3rver keeps an upload as
// a folder holding its `key`; its putPart creates that folder anew for a part of any id, and its
// completion then fails reading `key` (a 500). Here an upload is held while its `key` file is
// there; a part that lands in an upload aborted meanwhile is removed and refused. ListParts (which
// s3rver lacks; the patched route hands it to this controller) lists the stored parts by number.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { noSuchUpload, objectControllers, S3Error, uploadDirectory, type S3rverContext, type S3rverStore } from './s3rver-internals';

const MAX_PARTS_LISTED = 1000;

interface UploadStore extends S3rverStore {
  abortUpload(bucket: string, uploadId: string): Promise<boolean>;
}

/** Installs the rules on `store` (outermost: after the other stand-in wrappers) and the ListParts controller. */
export function refuseUploadsNotHeld(s3rverStore: S3rverStore): void {
  const store = s3rverStore as UploadStore;
  (objectControllers as Record<string, (ctx: S3rverContext) => Promise<void>>).listParts = listParts;
  const putPart = store.putPart.bind(store);
  const putObjectMultipart = store.putObjectMultipart.bind(store);
  const abortUpload = store.abortUpload.bind(store);

  store.putPart = async (bucket: string, uploadId: string, partNumber: string, content: Readable) => {
    const dir = await heldUpload(store, bucket, uploadId);
    // Aborted while the part came in, s3rver fails writing beside it (ENOENT: a 500).
    const stored = await putPart(bucket, uploadId, partNumber, content).catch(async (err: unknown) => {
      if (await isHeld(dir)) throw err;
      return null;
    });
    if (!stored || !(await isHeld(dir))) {
      // Aborted while the part came in: what putPart wrote goes with the upload.
      await fs.rm(dir, { recursive: true, force: true });
      throw noSuchUpload(uploadId);
    }
    return stored;
  };
  store.putObjectMultipart = async (bucket, uploadId, parts) => {
    await heldUpload(store, bucket, uploadId);
    return putObjectMultipart(bucket, uploadId, parts);
  };
  store.abortUpload = async (bucket, uploadId) => {
    const dir = uploadDirectory(store, bucket, uploadId);
    const held = await isHeld(dir);
    // A folder without `key` (a stray part's) goes too; the upload itself was gone.
    return (await abortUpload(bucket, uploadId)) && held;
  };
}

/** The folder of an upload the stand-in holds; NoSuchUpload otherwise. */
async function heldUpload(store: S3rverStore, bucket: string, uploadId: string | undefined): Promise<string> {
  const dir = uploadDirectory(store, bucket, uploadId);
  if (!(await isHeld(dir))) throw noSuchUpload(uploadId ?? '');
  return dir;
}

async function isHeld(dir: string): Promise<boolean> {
  return fs.access(path.join(dir, 'key')).then(
    () => true,
    () => false,
  );
}

/** ListParts (API_ListParts): the upload's parts in number order, `max-parts` (at most 1,000) after `part-number-marker`. */
async function listParts(ctx: S3rverContext): Promise<void> {
  const uploadId = ctx.query.uploadId ?? '';
  const dir = await heldUpload(ctx.store, ctx.params.bucket, uploadId);
  const maxParts = Math.min(MAX_PARTS_LISTED, integerParam(ctx.query['max-parts'], 'max-parts', MAX_PARTS_LISTED));
  const marker = integerParam(ctx.query['part-number-marker'], 'part-number-marker', 0);
  const numbers = (await fs.readdir(dir))
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((n) => n > marker)
    .sort((a, b) => a - b);
  const listed = numbers.slice(0, maxParts);
  const parts = await Promise.all(
    listed.map(async (n) => {
      const file = path.join(dir, String(n));
      const [md5, stat] = await Promise.all([fs.readFile(`${file}.md5`, 'utf8'), fs.stat(file)]);
      return { PartNumber: n, LastModified: stat.mtime.toISOString(), ETag: JSON.stringify(md5), Size: stat.size };
    }),
  );
  const truncated = numbers.length > listed.length;
  ctx.body = {
    ListPartsResult: {
      Bucket: ctx.params.bucket,
      Key: ctx.params.key,
      UploadId: uploadId,
      PartNumberMarker: marker,
      ...(truncated ? { NextPartNumberMarker: listed.at(-1) } : {}),
      MaxParts: maxParts,
      IsTruncated: truncated,
      ...(parts.length > 0 ? { Part: parts } : {}),
    },
  };
}

function integerParam(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: value });
  return Number(value);
}
