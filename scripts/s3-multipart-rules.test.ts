import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, S3Client, UploadPartCommand, type CompletedPart } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EMBEDDED_S3_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from './embedded';
import { S3_MULTIPART_LIMITS } from './s3-multipart-rules';
import { refusal } from '../test/s3-refusal';

const Bucket = 'rules';
const MIN = S3_MULTIPART_LIMITS.minPartSize;
let dir: string;
let s3: EmbeddedS3;
let client: S3Client;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ap-s3-rules-'));
  s3 = await startEmbeddedS3(dir, Bucket);
  client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: EMBEDDED_S3_CREDENTIALS });
});

afterAll(async () => {
  client.destroy();
  await s3.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A new multipart upload with `sizes` uploaded as parts 1..n; what CompleteMultipartUpload would list. */
async function uploadWithParts(sizes: number[]): Promise<{ key: string; uploadId: string; parts: CompletedPart[]; bytes: Buffer }> {
  const key = `obj-${randomBytes(4).toString('hex')}`;
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: key }));
  const bodies = sizes.map((n) => randomBytes(n));
  const parts = await Promise.all(
    bodies.map(async (Body, i) => {
      const out = await client.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber: i + 1, Body }));
      return { PartNumber: i + 1, ETag: out.ETag! };
    }),
  );
  return { key, uploadId: UploadId!, parts, bytes: Buffer.concat(bodies) };
}

const complete = (key: string, uploadId: string, parts: CompletedPart[]) =>
  client.send(new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));

describe('the embedded S3 holds multipart uploads to real S3 rules', () => {
  it('accepts parts of at least 5 MiB and a shorter last one, listed in order with their ETags', async () => {
    const { key, uploadId, parts, bytes } = await uploadWithParts([MIN, MIN, 1234]);
    const done = await complete(key, uploadId, parts);
    expect(done.ETag).toMatch(/-3"$/);
    const object = await client.send(new GetObjectCommand({ Bucket, Key: key }));
    expect(Buffer.from(await object.Body!.transformToByteArray()).equals(bytes)).toBe(true);
  });

  it('accepts a single part of any size', async () => {
    const { key, uploadId, parts } = await uploadWithParts([10]);
    await expect(complete(key, uploadId, parts)).resolves.toBeDefined();
  });

  it('refuses a part smaller than 5 MiB that is not the last: EntityTooSmall', async () => {
    const { key, uploadId, parts } = await uploadWithParts([MIN, MIN - 1, 10]);
    expect(await refusal(complete(key, uploadId, parts))).toEqual(['EntityTooSmall', 400]);
  });

  it('refuses part numbers outside 1..10,000 at UploadPart: InvalidArgument', async () => {
    const { key, uploadId } = await uploadWithParts([]);
    for (const PartNumber of [0, S3_MULTIPART_LIMITS.maxParts + 1]) {
      expect(await refusal(client.send(new UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber, Body: Buffer.from('x') })))).toEqual([
        'InvalidArgument',
        400,
      ]);
    }
    await expect(client.send(new UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber: S3_MULTIPART_LIMITS.maxParts, Body: Buffer.from('x') }))).resolves.toBeDefined();
  });

  it('refuses a completion list out of ascending order, or naming a part twice: InvalidPartOrder', async () => {
    const { key, uploadId, parts } = await uploadWithParts([MIN, 10]);
    expect(await refusal(complete(key, uploadId, [parts[1]!, parts[0]!]))).toEqual(['InvalidPartOrder', 400]);
    expect(await refusal(complete(key, uploadId, [parts[0]!, parts[0]!, parts[1]!]))).toEqual(['InvalidPartOrder', 400]);
  });

  it('refuses a listed part whose ETag does not match, or that was never uploaded: InvalidPart', async () => {
    const { key, uploadId, parts } = await uploadWithParts([MIN, 10]);
    expect(await refusal(complete(key, uploadId, [parts[0]!, { PartNumber: 2, ETag: parts[0]!.ETag }]))).toEqual(['InvalidPart', 400]);
    expect(await refusal(complete(key, uploadId, [...parts, { PartNumber: 3, ETag: parts[1]!.ETag }]))).toEqual(['InvalidPart', 400]);
    // Refused completions leave the upload as it was: the right list still completes it.
    await expect(complete(key, uploadId, parts)).resolves.toBeDefined();
  });
});
