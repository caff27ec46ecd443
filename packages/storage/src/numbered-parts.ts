// One multipart upload written by several writers (docs/segments.md): each sends the parts it
// owns by number; one completes the upload with every part's ETag.
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, HeadObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ObjectInfo, UploadedPart } from './object-types';

/** The bucket a numbered upload writes to, and the client that reaches it (an ObjectStore is one). */
type ObjectStore = { client: S3Client; bucket: string };

/** Starts a multipart upload of `key`; its id is what every writer sends its parts to. */
export async function startNumberedUpload(store: ObjectStore, key: string, contentType = 'application/zip'): Promise<string> {
  const out = await store.client.send(new CreateMultipartUploadCommand({ Bucket: store.bucket, Key: key, ContentType: contentType }));
  if (!out.UploadId) throw new Error('the store started no multipart upload');
  return out.UploadId;
}

/** Stores one part by its number (a part sent again replaces the earlier one). */
export async function putNumberedPart(store: ObjectStore, key: string, uploadId: string, partNumber: number, data: Buffer, signal?: AbortSignal): Promise<UploadedPart> {
  const out = await store.client.send(new UploadPartCommand({ Bucket: store.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: data, ContentLength: data.length }), {
    abortSignal: signal,
  });
  return { partNumber, etag: out.ETag ?? '', size: data.length };
}

/** Completes the upload from every part, in ascending order as S3 requires. */
export async function completeNumberedUpload(store: ObjectStore, key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<ObjectInfo> {
  const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber).map((p) => ({ PartNumber: p.partNumber, ETag: p.etag }));
  const done = await store.client.send(new CompleteMultipartUploadCommand({ Bucket: store.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: sorted } }));
  const head = await store.client.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }));
  return { size: Number(head.ContentLength ?? 0), etag: (done.ETag ?? head.ETag ?? '').replace(/^"|"$/g, '') };
}
