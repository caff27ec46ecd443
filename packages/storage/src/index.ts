import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';

export interface StorageConfig {
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

export interface ObjectInfo {
  size: number;
  etag: string;
}

export interface ObjectRead extends ObjectInfo {
  body: Readable;
  /** Bytes in this response (the range length for a ranged read). */
  contentLength: number;
}

/** The one storage interface the services use; S3 (MinIO, s3rver, AWS) is its only backend. */
export interface ObjectStore {
  readonly bucket: string;
  ensureBucket(): Promise<void>;
  ping(): Promise<void>;
  upload(key: string, body: Readable, options?: { contentType?: string; partSize?: number; signal?: AbortSignal }): Promise<ObjectInfo>;
  read(key: string, range?: { start: number; end: number }): Promise<ObjectRead>;
  head(key: string): Promise<ObjectInfo | null>;
  deleteMany(keys: string[]): Promise<void>;
  readonly client: S3Client;
}

export function createS3Client(config: StorageConfig): S3Client {
  return new S3Client({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    // Without these the SDK sends stream bodies aws-chunked, which some S3 servers store verbatim.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

const unquote = (etag: string | undefined) => (etag ?? '').replace(/^"|"$/g, '');

const MIN_PART_SIZE = 8 * 1024 * 1024;
const MAX_PARTS = 10_000;

/**
 * Part size for a multipart upload of at most `maxBytes`: small, to keep memory flat, but
 * large enough that S3's 10,000-part limit is never reached (a 500 GB archive needs ~52 MiB).
 */
export function partSizeFor(maxBytes: number): number {
  return Math.max(MIN_PART_SIZE, Math.ceil(maxBytes / (MAX_PARTS - 100) / 1024 / 1024) * 1024 * 1024);
}

export function createObjectStore(config: StorageConfig): ObjectStore {
  const client = createS3Client(config);
  const Bucket = config.bucket;
  return {
    bucket: Bucket,
    client,
    async ensureBucket() {
      try {
        await client.send(new HeadBucketCommand({ Bucket }));
      } catch {
        await client.send(new CreateBucketCommand({ Bucket })).catch((err: { name?: string }) => {
          if (err.name !== 'BucketAlreadyOwnedByYou' && err.name !== 'BucketAlreadyExists') throw err;
        });
      }
    },
    async ping() {
      await client.send(new HeadBucketCommand({ Bucket }));
    },
    async upload(key, body, options = {}) {
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body: body, ContentType: options.contentType ?? 'application/octet-stream' },
        partSize: options.partSize ?? MIN_PART_SIZE,
        // Each part in flight is a buffer of partSize (twice, while it is assembled): two in
        // flight keep the uploader busy and memory at a few parts per bin.
        queueSize: 2,
        leavePartsOnError: false,
      });
      options.signal?.addEventListener('abort', () => void upload.abort().catch(() => undefined), { once: true });
      const result = await upload.done();
      const head = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
      return { size: Number(head.ContentLength ?? 0), etag: unquote(result.ETag ?? head.ETag) };
    },
    async read(key, range) {
      const out = await client.send(
        new GetObjectCommand({ Bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
      const contentLength = Number(out.ContentLength ?? 0);
      const total = out.ContentRange ? Number(out.ContentRange.split('/')[1]) : contentLength;
      return { body: out.Body as Readable, contentLength, size: total, etag: unquote(out.ETag) };
    },
    async head(key) {
      try {
        const out = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        return { size: Number(out.ContentLength ?? 0), etag: unquote(out.ETag) };
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) return null;
        throw err;
      }
    },
    async deleteMany(keys) {
      for (let i = 0; i < keys.length; i += 1000) {
        const chunk = keys.slice(i, i + 1000);
        await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }));
      }
    },
  };
}
