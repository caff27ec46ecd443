// The parts of s3rver (3.7.1, patched) that the stand-in's S3 behaviour modules extend: its error
// type, its controllers (routes look them up on the module at each request, so a replaced export
// answers every later request), and the store methods they call.
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';

const requireS3rver = createRequire(import.meta.url);

type S3ErrorClass = new (code: string, message: string, detail?: Record<string, string>) => Error;
export const S3Error = requireS3rver('s3rver/lib/models/error.js') as S3ErrorClass;

/** The Koa context s3rver's controllers take (the parts used here). */
export interface S3rverContext {
  method: string;
  status: number;
  body: unknown;
  req: IncomingMessage | Readable;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  params: { bucket: string; key: string };
  store: S3rverStore;
  set(name: string, value: string): void;
}

export type Controller = (ctx: S3rverContext) => Promise<void>;

export interface StoredMetadata {
  'content-length': string;
  'last-modified': string;
  etag: string;
}

export interface S3rverStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  getBucketPath(bucket: string): string;
  getBucket(bucket: string): Promise<unknown>;
  getMetadata(bucket: string, key: string): Promise<StoredMetadata>;
  putPart(bucket: string, uploadId: string, partNumber: string, content: Readable): Promise<{ md5: string }>;
  deleteObject(bucket: string, key: string): Promise<void>;
  copyObject(srcBucket: string, srcKey: string, destBucket: string, destKey: string, replacementMetadata?: unknown): Promise<unknown>;
  putObjectMultipart(bucket: string, uploadId: string, parts: Array<{ number: number; etag: string }>): Promise<{ size: number; md5: string }>;
}

export const objectControllers = requireS3rver('s3rver/lib/controllers/object.js') as Record<
  'putObject' | 'uploadPart' | 'uploadPartCopy' | 'getObject' | 'initiateMultipartUpload' | 'completeMultipartUpload',
  Controller
>;
export const bucketControllers = requireS3rver('s3rver/lib/controllers/bucket.js') as Record<'getBucket', Controller>;

/** The folder s3rver keeps an upload's parts in (s3rver's upload ids are hex; anything else names no upload). */
export function uploadDirectory(store: S3rverStore, bucket: string, uploadId: string | undefined): string {
  if (!uploadId || !/^[0-9a-f]+$/.test(uploadId)) throw noSuchUpload(uploadId ?? '');
  return path.join(store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
}

export function noSuchUpload(uploadId: string): Error {
  return new S3Error(
    'NoSuchUpload',
    'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
    { UploadId: uploadId },
  );
}
