// Server-side assembly end to end (docs/private-sources.md#server-side-assembly): a stored job
// whose objects and destination share a source is written inside the S3 stand-in with
// UploadPartCopy, byte-equal to the ZIP packed through the packer; a service refusing
// UploadPartCopy gets the same bytes through the packer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { crc32, planZip } from '@ap/zip';
import { crc32Base64 } from '../scripts/s3-checksums';
import { call, createUser, waitForJob } from './helpers';
import { bytesOf, sha256 } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';
import { readWithEveryReader } from './reader-matrix';
import { readZip } from './zip-readers';

const CUSTOMER = { accessKeyId: 'COPYKEY1', secretAccessKey: 'copy-secret-5e21aa' };
const MiB = 1024 * 1024;

let stack: Stack;
let customer: CustomerBucket;
let client: S3Client;
let key: string;
// Three large objects with CRC32 checksums, one without, small ones with and without.
const objects = [
  { key: 'in/a.bin', body: bytesOf(1, 20 * MiB + 3), crc: true },
  { key: 'in/small-1.txt', body: bytesOf(2, 1_001), crc: true },
  { key: 'in/b.bin', body: bytesOf(3, 20 * MiB), crc: true },
  { key: 'in/sub/c.bin', body: bytesOf(4, 20 * MiB + 77), crc: true },
  { key: 'in/no-crc.bin', body: bytesOf(5, 18 * MiB + 5), crc: false },
  { key: 'in/small-2.txt', body: bytesOf(6, 333), crc: false },
];

async function job(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return waitForJob(stack.url, key, res.body.job_id, ['completed', 'failed'], 120_000);
}

async function customerObject(objectKey: string): Promise<Buffer> {
  const out = await client.send(new GetObjectCommand({ Bucket: customer.bucket, Key: objectKey }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

/**
 * The ZIP with its entries' times zeroed: each job's ZIP carries the job's creation time,
 * every other byte is a function of the objects.
 */
function withoutTimes(zip: Buffer): Buffer {
  const layout = planZip(objects.map((o) => ({ name: o.key.split('/').pop()!, size: o.body.length })), { mtime: new Date(0) });
  expect(zip.length).toBe(layout.totalSize);
  const out = Buffer.from(zip);
  for (const s of layout.segments) {
    // The local header's DOS time, and its extended timestamp's Unix time (the first extra field's).
    if (s.kind === 'header') {
      const time = s.start + 30 + out.readUInt16LE(s.start + 26) + 5;
      out.fill(0, s.start + 10, s.start + 14).fill(0, time, time + 4);
    }
    // The central record's DOS time, and its extended timestamp's Unix time (its last 4 bytes).
    if (s.kind === 'central') out.fill(0, s.start + 12, s.start + 16).fill(0, s.start + s.length - 4, s.start + s.length);
  }
  return out;
}

const files = (source: string) => objects.map((o) => ({ url: `s3://${customer.bucket}/${o.key}`, source }));

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'copy-data');
  client = new S3Client({ endpoint: customer.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CUSTOMER, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  for (const o of objects) await client.send(new PutObjectCommand({ Bucket: customer.bucket, Key: o.key, Body: o.body, ...(o.crc ? { ChecksumCRC32: crc32Base64(crc32(o.body)) } : {}) }));
  stack = await startStack();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  // Two sources of the same credentials: a destination through the second shares no source with the objects.
  for (const name of ['bucket', 'other']) {
    const created = await call(stack.url, 'POST', '/sources', {
      key,
      body: { name, type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey },
    });
    expect(created.status).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  client.destroy();
  await stack.close();
  await customer.close();
});

describe('server-side assembly', () => {
  let throughPacker: Buffer;

  it('writes the same bytes as the packer, uploading only records and one pad', async () => {
    customer.uploadedPartBytes = 0;
    const packed = await job({ files: files('bucket'), zip_filename: 'packed.zip', destination: { source: 'other', bucket: customer.bucket, prefix: 'out/' } });
    expect(packed.status).toBe('completed');
    throughPacker = await customerObject('out/packed.zip');
    expect(customer.uploadedPartBytes).toBeGreaterThanOrEqual(throughPacker.length);
    expect(withoutTimes(throughPacker).equals(throughPacker)).toBe(false);

    customer.uploadedPartBytes = 0;
    const copied = await job({ files: files('bucket'), zip_filename: 'packed.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'copied/' } });
    expect(copied.status).toBe('completed');
    const inS3 = await customerObject('copied/packed.zip');
    expect(withoutTimes(inS3).equals(withoutTimes(throughPacker))).toBe(true);
    const entries = objects.map((o) => ({ name: o.key.split('/').pop()!, size: o.body.length, sha256: sha256(o.body) }));
    expect(await readZip(inS3)).toEqual(entries);
    // The reader matrix over the server-assembled ZIP (test/reader-matrix.ts).
    expect(await readWithEveryReader(inS3, { kind: 'store', expected: entries, mtime: new Date(copied.created_at as string) })).toEqual({});
    // One 5 MiB pad object and the records: no byte of a copied body.
    expect(customer.uploadedPartBytes).toBeLessThan(5 * MiB + 64 * 1024);
    // The intermediate objects are gone.
    const left = await client.send(new ListObjectsV2Command({ Bucket: customer.bucket, Prefix: 'copied/' }));
    expect((left.Contents ?? []).map((o) => o.Key)).toEqual(['copied/packed.zip']);
  }, 300_000);

  it("assembles a split job's bin inside S3 too: the ETags preparing recorded (quoted) match the objects' heads", async () => {
    customer.uploadedPartBytes = 0;
    const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: files('bucket'), max_zip_size_bytes: 1024 * MiB, destination: { source: 'bucket', bucket: customer.bucket, prefix: 'split/' } } });
    expect(res.status).toBe(201);
    expect((await waitForJob(stack.url, key, res.body.job_id, ['completed', 'failed'], 120_000)).status).toBe('completed');
    const row = await stack.ctx.db.jobFile.findFirstOrThrow({ where: { jobId: res.body.job_id as string, position: 0 } });
    expect(row.etag).toMatch(/^"/);
    expect(customer.uploadedPartBytes).toBeLessThan(5 * MiB + 64 * 1024);
  }, 300_000);

  it('packs through the packer, the same bytes, where UploadPartCopy is refused', async () => {
    customer.refuseCopies = true;
    try {
      const done = await job({ files: files('bucket'), zip_filename: 'packed.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'refused/' } });
      expect(done.status).toBe('completed');
      expect(customer.copiesRefused).toBeGreaterThan(0);
      expect(withoutTimes(await customerObject('refused/packed.zip')).equals(withoutTimes(throughPacker))).toBe(true);
    } finally {
      customer.refuseCopies = false;
    }
  }, 300_000);

  it('fails a copy whose object changed after it was looked at (412), and packs the bin through the packer: never a ZIP of other bytes than its CRCs', async () => {
    // Without the ETag on each copy, the new bytes would be copied under the old object's CRC-32.
    const changed = objects[2]!; // in/b.bin, copied
    const other = bytesOf(33, changed.body.length); // the same size
    customer.beforeCopy = async (copySource) => {
      if (!copySource.includes('b.bin')) return;
      customer.beforeCopy = null;
      await client.send(new PutObjectCommand({ Bucket: customer.bucket, Key: changed.key, Body: other, ChecksumCRC32: crc32Base64(crc32(other)) }));
    };
    customer.uploadedPartBytes = 0;
    try {
      const done = await job({ files: files('bucket'), zip_filename: 'packed.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'changed/' } });
      expect(customer.beforeCopy).toBeNull(); // the object changed mid-assembly
      expect(done.status).toBe('completed');
      const zip = await customerObject('changed/packed.zip');
      // Packed through the packer (every byte uploaded), as the object is now: each CRC checked by three readers.
      expect(customer.uploadedPartBytes).toBeGreaterThanOrEqual(zip.length);
      expect(await readZip(zip)).toEqual(objects.map((o) => ({ name: o.key.split('/').pop(), size: o.body.length, sha256: sha256(o === changed ? other : o.body) })));
    } finally {
      customer.beforeCopy = null;
      await client.send(new PutObjectCommand({ Bucket: customer.bucket, Key: changed.key, Body: changed.body, ChecksumCRC32: crc32Base64(crc32(changed.body)) }));
    }
  }, 300_000);
});
