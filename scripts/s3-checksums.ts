// CRC32 checksums in the stand-in, as S3 documents them (Checking object integrity, S3 user
// guide): `x-amz-checksum-crc32` on PutObject and UploadPart is checked against the bytes received
// (BadDigest when they differ) and stored; a multipart upload created with
// `x-amz-checksum-algorithm: CRC32` needs a checksum on every uploaded part (a part of another
// upload may carry one too, as the SDK sends by default: checked, not kept) and gets an object
// checksum at completion, FULL_OBJECT (the CRC32 of all bytes) or COMPOSITE (the CRC32 of the
// parts' CRC32s, "-<parts>"); HeadObject and GetObject return it with `x-amz-checksum-mode:
// ENABLED` (not on a ranged GET). s3rver itself ignores every checksum header.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { pipeline, Transform, type Readable } from 'node:stream';
import { crc32, crc32Combine } from '@ap/zip';
import { noSuchUpload, objectControllers, S3Error, uploadDirectory, type S3rverContext, type S3rverStore } from './s3rver-internals';

export type ChecksumType = 'FULL_OBJECT' | 'COMPOSITE';
export interface StoredChecksum {
  type: ChecksumType;
  /** Base64 of the big-endian CRC32, with "-<parts>" for a composite one. */
  value: string;
}

const OTHER_ALGORITHMS = ['crc32c', 'crc64nvme', 'sha1', 'sha256'];

/** Base64 of a CRC32 as S3 writes it (4 bytes, big-endian). */
export function crc32Base64(crc: number): string {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(crc >>> 0);
  return bytes.toString('base64');
}

/** Counts and CRCs the bytes passing through. */
export class Crc32Meter extends Transform {
  crc = 0;
  size = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.crc = crc32(chunk, this.crc);
    this.size += chunk.length;
    this.push(chunk);
    done();
  }
}

/** Installs the checksum rules on s3rver's controllers (once per process) and on `store`. */
export function enforceChecksums(store: S3rverStore): void {
  installControllers();
  const deleteObject = store.deleteObject.bind(store);
  const copyObject = store.copyObject.bind(store);
  const putObjectMultipart = store.putObjectMultipart.bind(store);

  store.deleteObject = async (bucket, key) => {
    await writeChecksum(store, bucket, key, null);
    return deleteObject(bucket, key);
  };
  // CopyObject keeps the source's checksum, as S3 does when no new algorithm is asked for.
  store.copyObject = async (srcBucket, srcKey, destBucket, destKey, replacement) => {
    const checksum = await readChecksum(store, srcBucket, srcKey);
    const result = await copyObject(srcBucket, srcKey, destBucket, destKey, replacement);
    await writeChecksum(store, destBucket, destKey, checksum);
    return result;
  };
  store.putObjectMultipart = async (bucket, uploadId, parts) => {
    const dir = uploadDirectory(store, bucket, uploadId);
    const [upload, key] = await Promise.all([uploadChecksum(dir), fs.readFile(path.join(dir, 'key'), 'utf8')]);
    let checksum: StoredChecksum | null = null;
    if (upload) {
      const partCrcs = await Promise.all(parts.map((part) => partCrc(dir, part.number)));
      checksum = objectChecksum(upload, partCrcs);
      const expected = expectedAtCompletion.get(uploadId);
      if (expected !== undefined && upload === 'FULL_OBJECT' && expected !== checksum.value) throw badDigest();
    }
    const result = await putObjectMultipart(bucket, uploadId, parts);
    await writeChecksum(store, bucket, key, checksum);
    completed.set(uploadId, checksum);
    return result;
  };
}

/** The x-amz-checksum-crc32 value a completion request carries, by upload id, for the store step. */
const expectedAtCompletion = new Map<string, string>();
/** The checksum a completion stored, by upload id, for the controller's response. */
const completed = new Map<string, StoredChecksum | null>();

let controllersInstalled = false;
function installControllers(): void {
  if (controllersInstalled) return;
  controllersInstalled = true;
  const { putObject, uploadPart, getObject, initiateMultipartUpload, completeMultipartUpload } = { ...objectControllers };

  objectControllers.putObject = async (ctx) => {
    const expected = givenCrc32(ctx);
    const meter = meterBody(ctx);
    await putObject(ctx);
    const { bucket, key } = ctx.params;
    if (expected !== undefined && expected !== meter.crc) {
      await ctx.store.deleteObject(bucket, key);
      throw badDigest();
    }
    await writeChecksum(ctx.store, bucket, key, expected === undefined ? null : { type: 'FULL_OBJECT', value: crc32Base64(expected) });
    if (expected !== undefined) ctx.set('x-amz-checksum-crc32', crc32Base64(expected));
  };

  objectControllers.uploadPart = async (ctx) => {
    const dir = uploadDirectory(ctx.store, ctx.params.bucket, ctx.query.uploadId);
    if (!(await exists(path.join(dir, 'key')))) throw noSuchUpload(ctx.query.uploadId ?? '');
    const upload = await uploadChecksum(dir);
    const expected = givenCrc32(ctx);
    if (upload && expected === undefined) {
      throw new S3Error('InvalidRequest', 'The upload was created using a crc32 checksum. The part upload request did not include a checksum.');
    }
    const meter = meterBody(ctx);
    await uploadPart(ctx);
    const partFile = path.join(dir, String(Number(ctx.query.partNumber)));
    if (expected !== undefined && expected !== meter.crc) {
      await Promise.all([fs.rm(partFile, { force: true }), fs.rm(`${partFile}.md5`, { force: true })]);
      throw badDigest();
    }
    await fs.writeFile(`${partFile}.crc32`, String(meter.crc));
    if (expected !== undefined) ctx.set('x-amz-checksum-crc32', crc32Base64(expected));
  };

  objectControllers.initiateMultipartUpload = async (ctx) => {
    const algorithm = ctx.headers['x-amz-checksum-algorithm'];
    const type = ctx.headers['x-amz-checksum-type'];
    if (algorithm !== undefined && algorithm.toUpperCase() !== 'CRC32') {
      if (OTHER_ALGORITHMS.includes(algorithm.toLowerCase())) throw new S3Error('NotImplemented', `The stand-in implements only CRC32 checksums, not ${algorithm}`);
      throw new S3Error('InvalidRequest', 'Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]');
    }
    if (type !== undefined && algorithm === undefined) {
      throw new S3Error('InvalidRequest', 'The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    }
    if (type !== undefined && type !== 'FULL_OBJECT' && type !== 'COMPOSITE') {
      throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-type header is invalid.');
    }
    await initiateMultipartUpload(ctx);
    if (algorithm !== undefined) {
      ctx.set('x-amz-checksum-algorithm', 'CRC32');
      ctx.set('x-amz-checksum-type', type ?? 'COMPOSITE');
    }
  };

  objectControllers.completeMultipartUpload = async (ctx) => {
    const uploadId = ctx.query.uploadId ?? '';
    const expected = givenCrc32(ctx);
    if (expected !== undefined) expectedAtCompletion.set(uploadId, crc32Base64(expected));
    try {
      await completeMultipartUpload(ctx);
    } finally {
      expectedAtCompletion.delete(uploadId);
    }
    const checksum = completed.get(uploadId);
    completed.delete(uploadId);
    const result = (ctx.body as { CompleteMultipartUploadResult?: Record<string, unknown> }).CompleteMultipartUploadResult;
    if (checksum && result) Object.assign(result, { ChecksumCRC32: checksum.value, ChecksumType: checksum.type });
  };

  objectControllers.getObject = async (ctx) => {
    await getObject(ctx);
    if (ctx.status !== 200 || ctx.headers['x-amz-checksum-mode']?.toUpperCase() !== 'ENABLED') return;
    const checksum = await readChecksum(ctx.store, ctx.params.bucket, ctx.params.key);
    if (checksum) {
      ctx.set('x-amz-checksum-crc32', checksum.value);
      ctx.set('x-amz-checksum-type', checksum.type);
    }
  };
}

/** The request's x-amz-checksum-crc32 as a number; refuses a malformed one and other algorithms' headers. */
function givenCrc32(ctx: S3rverContext): number | undefined {
  // A streamed (aws-chunked) body would be stored with its chunk framing: refuse it outright.
  if (ctx.headers['x-amz-content-sha256']?.startsWith('STREAMING-') || /aws-chunked/i.test(ctx.headers['content-encoding'] ?? '')) {
    throw new S3Error('NotImplemented', 'The stand-in does not accept aws-chunked bodies; send checksums as headers');
  }
  for (const name of OTHER_ALGORITHMS) {
    if (ctx.headers[`x-amz-checksum-${name}`] !== undefined) throw new S3Error('NotImplemented', `The stand-in implements only CRC32 checksums, not ${name}`);
  }
  const value = ctx.headers['x-amz-checksum-crc32'];
  if (value === undefined) return undefined;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== 4 || bytes.toString('base64') !== value) {
    throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-crc32 header is invalid.');
  }
  return bytes.readUInt32BE(0);
}

function meterBody(ctx: S3rverContext): Crc32Meter {
  const meter = new Crc32Meter();
  pipeline(ctx.req as Readable, meter, () => undefined);
  ctx.req = meter;
  return meter;
}

function badDigest(): Error {
  return new S3Error('BadDigest', 'The CRC32 you specified did not match the calculated checksum.');
}

/** The checksum type a multipart upload was created with, or null (s3rver keeps its request headers). */
async function uploadChecksum(uploadDir: string): Promise<ChecksumType | null> {
  let headers: Record<string, string>;
  try {
    headers = JSON.parse(await fs.readFile(path.join(uploadDir, 'metadata'), 'utf8')) as Record<string, string>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (headers['x-amz-checksum-algorithm'] === undefined) return null;
  return headers['x-amz-checksum-type'] === 'FULL_OBJECT' ? 'FULL_OBJECT' : 'COMPOSITE';
}

/** A stored part's CRC32 and size (from what UploadPart or UploadPartCopy recorded, else its bytes). */
export async function partCrc(uploadDir: string, partNumber: number): Promise<{ crc: number; size: number }> {
  const file = path.join(uploadDir, String(partNumber));
  const { size } = await fs.stat(file);
  try {
    return { crc: Number(await fs.readFile(`${file}.crc32`, 'utf8')), size };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return { crc: crc32(await fs.readFile(file)), size };
  }
}

function objectChecksum(type: ChecksumType, parts: Array<{ crc: number; size: number }>): StoredChecksum {
  if (type === 'FULL_OBJECT') {
    const crc = parts.reduce((acc, part) => crc32Combine(acc, part.crc, part.size), 0);
    return { type, value: crc32Base64(crc) };
  }
  const raw = Buffer.concat(parts.map((part) => Buffer.from(crc32Base64(part.crc), 'base64')));
  return { type, value: `${crc32Base64(crc32(raw))}-${parts.length}` };
}

function checksumFile(store: S3rverStore, bucket: string, key: string): string {
  return store.getResourcePath(bucket, key, 'checksum.json');
}

export async function readChecksum(store: S3rverStore, bucket: string, key: string): Promise<StoredChecksum | null> {
  try {
    return JSON.parse(await fs.readFile(checksumFile(store, bucket, key), 'utf8')) as StoredChecksum;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function writeChecksum(store: S3rverStore, bucket: string, key: string, checksum: StoredChecksum | null): Promise<void> {
  const file = checksumFile(store, bucket, key);
  if (checksum) await fs.writeFile(file, JSON.stringify(checksum));
  else await fs.rm(file, { force: true });
}

async function exists(file: string): Promise<boolean> {
  return fs.stat(file).then(
    () => true,
    () => false,
  );
}
