import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  ListPartsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  S3Client,
  UploadPartCommand,
  CreateMultipartUploadCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PART_BUFFERS, PARTS_IN_FLIGHT, PartCutter, partBuffers, releasePart, sendPartsOf } from './parts';
import type { ObjectInfo, UploadedPart } from './object-types';
export type { ObjectInfo, UploadedPart } from './object-types';
import { assembleObject, quotedEtag, type AssemblyPart, type ObjectChecksum, type ObjectRef } from './assembly';
export type { AssemblyPart, ObjectChecksum, ObjectRef } from './assembly';
export { quotedEtag } from './assembly';

export { PartBufferPool, PartCutter, partBufferBytes, partBuffers, releasePart, sendPartsOf } from './parts';
export { completeNumberedUpload, putNumberedPart, startNumberedUpload } from './numbered-parts';

export interface StorageConfig {
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
  /** The HTTP(S) agents requests go through (a customer's bucket: @ap/fetch's guarded agents); default: the SDK's. */
  agents?: { http: HttpAgent; https: HttpsAgent };
}

export interface ObjectRead extends ObjectInfo {
  body: Readable;
  /** Bytes in this response (the range length for a ranged read). */
  contentLength: number;
}

/**
 * Follows a multipart upload so it can be resumed: its id when created, each part once stored.
 * Notifications only: the upload does not wait on them (recording a part must not hold one of
 * the parts in flight). With hooks the parts are left in place when the upload fails. A body
 * smaller than one part goes up in a single PUT, with no hooks called.
 */
export interface MultipartHooks {
  onStart(uploadId: string): void;
  onPart(uploadId: string, part: UploadedPart): void;
}

export interface UploadOptions {
  contentType?: string;
  partSize?: number;
  signal?: AbortSignal;
  multipart?: MultipartHooks;
  /**
   * Called with each of the body's chunks once it is copied into a part, for a body whose
   * chunks are not used again: @ap/fetch's `freeChunk` frees their memory then, so the bytes of
   * a long-buffered source do not wait for a full GC.
   */
  freeReadChunk?: (chunk: Buffer) => void;
}

export interface ResumeOptions {
  uploadId: string;
  partSize: number;
  /** Parts 1..n already stored, in order; the body continues at n * partSize. */
  stored: UploadedPart[];
  /** The object's remaining bytes. */
  body: AsyncIterable<Buffer>;
  signal?: AbortSignal;
  onPart?(part: UploadedPart): Promise<void>;
}

/**
 * The store would not continue the multipart upload: it no longer holds it (aborted, expired:
 * NoSuchUpload, 404) or failed on it. A resume is an optimisation, so the
 * caller starts the object over instead of retrying.
 */
export class ResumeRefused extends Error {}

/** The one storage interface the services use; S3 (MinIO, s3rver, AWS) is its only backend. */
export interface ObjectStore {
  readonly bucket: string;
  ensureBucket(): Promise<void>;
  ping(): Promise<void>;
  upload(key: string, body: Readable, options?: UploadOptions): Promise<ObjectInfo>;
  /** Continues a multipart upload after its stored parts, then completes it. */
  resumeUpload(key: string, options: ResumeOptions): Promise<ObjectInfo>;
  /** Best effort: some S3 servers (s3rver) refuse it, and bucket lifecycle rules clean up after. */
  abortUpload(key: string, uploadId: string): Promise<void>;
  read(key: string, range?: { start: number; end: number }): Promise<ObjectRead>;
  head(key: string): Promise<ObjectInfo | null>;
  deleteMany(keys: string[]): Promise<void>;
  /** HeadObject with checksum mode of an object these credentials reach, in any bucket; null: no such object. */
  headChecksum(source: ObjectRef): Promise<ObjectChecksum | null>;
  /** A range of an object in any bucket these credentials reach (while it has `source.etag`, when given). */
  readFrom(source: ObjectRef, range: { start: number; end: number }): Promise<ObjectRead>;
  /** A multipart upload of parts sent or copied inside S3 (UploadPartCopy), in order; aborted on failure. */
  assemble(key: string, parts: readonly AssemblyPart[], options: { contentType?: string; concurrency: number; signal?: AbortSignal; onPart?(index: number): void }): Promise<ObjectInfo>;
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
    // A store that went away mid-request is an error of that request (retried by the SDK, then
    // the bin's), never a wait without end: no connection in 5 s, or no byte moving for 30 s.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000, ...(config.agents ? { httpAgent: config.agents.http, httpsAgent: config.agents.https } : {}) },
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
  const followed = followMultipartUploads(client);
  releasePartsWhenAnswered(client);

  const finish = async (Key: string, etag: string | undefined): Promise<ObjectInfo> => {
    const head = await client.send(new HeadObjectCommand({ Bucket, Key }));
    return { size: Number(head.ContentLength ?? 0), etag: unquote(etag ?? head.ETag) };
  };

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
      const parts = new PartCutter(options.partSize ?? MIN_PART_SIZE, PART_BUFFERS, partBuffers, { freeWrittenChunk: options.freeReadChunk });
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body: parts, ContentType: options.contentType ?? 'application/octet-stream' },
        partSize: parts.partSize,
        queueSize: PARTS_IN_FLIGHT,
        leavePartsOnError: options.multipart !== undefined,
      });
      if (options.multipart) followed.set(key, options.multipart);
      options.signal?.addEventListener('abort', () => void upload.abort().catch(() => undefined), { once: true });
      // A source that fails fails the upload (through the parts stream); an upload that fails
      // stops taking the source's bytes.
      const feeding = pipeline(body, parts);
      // Marked handled now: a failed part ends lib-storage's read of `parts`, which rejects
      // `feeding` while upload.done() still waits for the other parts (an unhandled rejection
      // when S3 went away mid-upload); it is still awaited below.
      feeding.catch(() => undefined);
      try {
        const result = await upload.done();
        await feeding;
        return await finish(key, result.ETag);
      } catch (err) {
        parts.destroy();
        await feeding.catch(() => undefined);
        // An upload created while this one failed is still told to its hooks (then aborted with
        // the bin), rather than left in the upload area unrecorded.
        await (upload as unknown as { createMultiPartPromise?: Promise<unknown> }).createMultiPartPromise?.catch(() => undefined);
        throw err;
      } finally {
        if (followed.get(key) === options.multipart) followed.delete(key);
      }
    },
    async resumeUpload(key, options) {
      const { uploadId: UploadId, partSize } = options;
      // A dropped upload (ListParts: NoSuchUpload) is found before any byte is fetched for it.
      await client.send(new ListPartsCommand({ Bucket, Key: key, UploadId, MaxParts: 1 })).catch((err: { name?: string; $metadata?: { httpStatusCode?: number } }) => {
        if (err.name === 'NoSuchUpload' || err.$metadata?.httpStatusCode === 404) throw refused(UploadId, err);
      });
      const parts = options.stored.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag }));
      // The same part cutting as a fresh upload, sent part by part after the stored ones.
      await sendPartsOf(options.body, partSize, async (index, data) => {
        const partNumber = options.stored.length + index + 1;
        try {
          const out = await client.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber: partNumber, Body: data, ContentLength: data.length }), {
            abortSignal: options.signal,
          });
          const part = { partNumber, etag: out.ETag ?? '', size: data.length };
          parts.push({ PartNumber: partNumber, ETag: part.etag });
          await options.onPart?.(part);
        } catch (err) {
          throw options.signal?.aborted ? err : refused(UploadId, err);
        }
      });
      parts.sort((a, b) => a.PartNumber - b.PartNumber);
      try {
        const done = await client.send(new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }));
        return await finish(key, done.ETag);
      } catch (err) {
        throw options.signal?.aborted ? err : refused(UploadId, err);
      }
    },
    async abortUpload(key, uploadId) {
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
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
      const out = await unlessMissing(client.send(new HeadObjectCommand({ Bucket, Key: key })));
      return out && { size: Number(out.ContentLength ?? 0), etag: unquote(out.ETag) };
    },
    async headChecksum(source) {
      const out = await unlessMissing(client.send(new HeadObjectCommand({ Bucket: source.bucket, Key: source.key, ChecksumMode: 'ENABLED' })));
      if (!out) return null;
      const fullObject = out.ChecksumCRC32 !== undefined && out.ChecksumType !== 'COMPOSITE' && !out.ChecksumCRC32.includes('-');
      return { size: Number(out.ContentLength ?? 0), etag: unquote(out.ETag), crc32: fullObject ? Buffer.from(out.ChecksumCRC32!, 'base64').readUInt32BE(0) : null };
    },
    async readFrom(source, range) {
      const out = await client.send(
        new GetObjectCommand({ Bucket: source.bucket, Key: source.key, Range: `bytes=${range.start}-${range.end}`, ...(source.etag !== undefined ? { IfMatch: quotedEtag(source.etag) } : {}) }),
      );
      const contentLength = Number(out.ContentLength ?? 0);
      return { body: out.Body as Readable, contentLength, size: out.ContentRange ? Number(out.ContentRange.split('/')[1]) : contentLength, etag: unquote(out.ETag) };
    },
    assemble: (key, parts, options) => assembleObject(client, Bucket, key, parts, options).then((etag) => finish(key, etag)),
    async deleteMany(keys) {
      for (let i = 0; i < keys.length; i += 1000) {
        const chunk = keys.slice(i, i + 1000);
        await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }));
      }
    },
  };
}

function refused(uploadId: string, err: unknown): ResumeRefused {
  const e = err as { name?: string; message?: string };
  return new ResumeRefused(`multipart upload ${uploadId} cannot be continued: ${e.name ?? 'Error'}: ${e.message ?? String(err)}`);
}

/** Gives each part's buffer back to its cutter once its request has ended (after any retries). */
function releasePartsWhenAnswered(client: S3Client): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } finally {
        releasePart((args.input as { Body?: unknown }).Body);
      }
    },
    { step: 'initialize', name: 'releasePartBuffers' },
  );
}

/**
 * lib-storage keeps its upload id and parts to itself; a client middleware sees them go by.
 * Uploads are followed by object key (one upload per key at a time in this process).
 */
function followMultipartUploads(client: S3Client): Map<string, MultipartHooks> {
  const followed = new Map<string, MultipartHooks>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as { Key?: string; UploadId?: string; PartNumber?: number; Body?: { byteLength?: number } };
      const hooks = input.Key === undefined ? undefined : followed.get(input.Key);
      if (hooks) {
        const output = result.output as { UploadId?: string; ETag?: string };
        if (context.commandName === 'CreateMultipartUploadCommand' && output.UploadId) hooks.onStart(output.UploadId);
        else if (context.commandName === 'UploadPartCommand' && input.UploadId && input.PartNumber) {
          hooks.onPart(input.UploadId, { partNumber: input.PartNumber, etag: output.ETag ?? '', size: input.Body?.byteLength ?? 0 });
        }
      }
      return result;
    },
    { step: 'initialize', name: 'followMultipartUploads' },
  );
  return followed;
}

/** A HEAD's answer, or null when the object is not there (S3 answers 404 NotFound). */
async function unlessMissing<T>(request: Promise<T>): Promise<T | null> {
  try {
    return await request;
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) return null;
    throw err;
  }
}
