// Server-side assembly in segments (docs/segments.md#assembled-inside-s3-in-segments): a big bin
// whose objects lack CRC32 checksums is cut into CRC-only segments that two packer processes
// read at once; the finishing step assembles it inside S3. Its ZIP is the one-packer ZIP byte
// for byte, and each object byte without a checksum is read once, by one of the two packers.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { binFilesWithAccess } from '@ap/jobs';
import { crc32 } from '@ap/zip';
import { crc32Base64 } from '../scripts/s3-checksums';
import { freePort } from '../scripts/embedded';
import { spawnService } from '../scripts/services';
import { postJob, until } from './fault-fixtures';
import { call, createUser, waitForJob } from './helpers';
import { onePackerZip } from './one-packer-zip';
import { bytesOf, sha256 } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const CUSTOMER = { accessKeyId: 'SEGCOPYKEY', secretAccessKey: 'seg-copy-secret-71c0' };
const MiB = 1024 * 1024;
/** Segments of 64 MiB (the size a stricter minimum still admits): the ZIP of about 205 MiB is cut into 4. */
const SEGMENT_BYTES = String(64 * MiB);
// 145 MiB without a checksum (over two segments' worth, so the bin is cut), 60 MiB with one, small ones of both.
const objects = [
  { key: 'big/a.bin', body: bytesOf(11, 40 * MiB + 5), crc: true },
  { key: 'big/n1.bin', body: bytesOf(12, 50 * MiB + 3), crc: false },
  { key: 'big/small-1.txt', body: bytesOf(13, 1_001), crc: false },
  { key: 'big/n2.bin', body: bytesOf(14, 50 * MiB), crc: false },
  { key: 'big/small-2.txt', body: bytesOf(15, 333), crc: true },
  { key: 'big/n3.bin', body: bytesOf(16, 45 * MiB + 77), crc: false },
  { key: 'big/b.bin', body: bytesOf(17, 20 * MiB), crc: true },
];
const withoutChecksum = objects.filter((o) => !o.crc).reduce((n, o) => n + o.body.length, 0);

let stack: Stack;
let customer: CustomerBucket;
let client: S3Client;
let apiKey: string;
const packers: { child: ChildProcess; port: number }[] = [];

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'seg-copy-data');
  client = new S3Client({ endpoint: customer.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CUSTOMER, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  for (const o of objects) await client.send(new PutObjectCommand({ Bucket: customer.bucket, Key: o.key, Body: o.body, ...(o.crc ? { ChecksumCRC32: crc32Base64(crc32(o.body)) } : {}) }));
  stack = await startStack({ SEGMENT_BYTES }, { workers: false });
  apiKey = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  const created = await call(stack.url, 'POST', '/sources', {
    key: apiKey,
    body: { name: 'bucket', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey },
  });
  expect(created.status).toBe(201);
  // Two packer processes of one slot each: the segments are shared between them.
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const env = { ...process.env, PUBLIC_BASE_URL: stack.url, REDIS_PREFIX: stack.ctx.config.REDIS_PREFIX, HEALTH_PORT: String(port), SEGMENT_BYTES, PACKER_CONCURRENCY: '1' };
    packers.push({ child: spawnService('packer', env, { stdio: 'ignore' }), port });
  }
  for (const p of packers) await until(() => fetch(`http://127.0.0.1:${p.port}/metrics`).then((r) => r.ok, () => false), 'the packer answers', 60_000);
}, 180_000);

afterAll(async () => {
  await Promise.all(packers.map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : (p.child.once('exit', r), p.child.kill('SIGTERM'))))));
  client.destroy();
  await stack.close();
  await customer.close();
});

/** Object bytes a packer has read (archive_bytes_fetched_total on its operations port). */
async function fetchedBy(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('archive_bytes_fetched_total{') && l.includes('service="packer"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('server-side assembly in segments', () => {
  it('reads the objects without a checksum in CRC-only segments shared by two packers, and assembles the one-packer ZIP inside S3', async () => {
    const before = await Promise.all(packers.map((p) => fetchedBy(p.port)));
    customer.uploadedPartBytes = 0;
    const files = objects.map((o) => ({ url: `s3://${customer.bucket}/${o.key}`, source: 'bucket' }));
    const jobId = await postJob({ files, zip_filename: 'big.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'seg/' } }, stack.url, apiKey);
    let layout: string | null = null;
    await until(async () => {
      layout = (await stack.ctx.db.zip.findFirst({ where: { jobId } }))?.uploadLayout ?? null;
      return layout !== null;
    }, 'the bin was cut', 60_000);
    expect(layout).toContain('/server-copy-segments/');
    const job = await waitForJob(stack.url, apiKey, jobId, ['completed', 'failed'], 240_000);
    expect(job.status).toBe('completed');

    const out = await client.send(new GetObjectCommand({ Bucket: customer.bucket, Key: 'seg/big.zip' }));
    const zip = Buffer.from(await out.Body!.transformToByteArray());
    const row = await stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId }, include: { zips: true } });
    const single = await onePackerZip(stack.ctx.fetcher, await binFilesWithAccess(stack.ctx.db, stack.ctx.secrets, jobId, row.zips[0]!.id), row.createdAt);
    expect(zip.length).toBe(single.length);
    expect(zip.equals(single)).toBe(true);
    expect(await readZip(zip)).toEqual(objects.map((o) => ({ name: o.key.split('/').pop(), size: o.body.length, sha256: sha256(o.body) })));
    // Assembled inside S3: one 5 MiB pad and the records uploaded, no body.
    expect(customer.uploadedPartBytes).toBeLessThan(5 * MiB + 64 * 1024);
    // Every byte without a checksum read once in all, by both packers (how much each depends on
    // which segments it took: the first one holds 24 MiB of such bytes, the others more).
    const read = (await Promise.all(packers.map((p) => fetchedBy(p.port)))).map((n, i) => n - before[i]!);
    expect(read.reduce((a, b) => a + b, 0)).toBe(withoutChecksum);
    for (const n of read) expect(n).toBeGreaterThan(0);
  }, 300_000);

  it('where S3 refuses the copies at the finishing step, the segments become packer segments: the same ZIP, written through the packers', async () => {
    customer.uploadedPartBytes = 0;
    customer.copiesRefused = 0;
    customer.refuseCopies = true;
    try {
      const files = objects.map((o) => ({ url: `s3://${customer.bucket}/${o.key}`, source: 'bucket' }));
      const jobId = await postJob({ files, zip_filename: 'refused.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'seg/' } }, stack.url, apiKey);
      const layouts = new Set<string>();
      const job = await (async () => {
        for (;;) {
          const zip = await stack.ctx.db.zip.findFirst({ where: { jobId } });
          if (zip?.uploadLayout) layouts.add(zip.uploadLayout.split('/')[1]!);
          if (zip?.status === 'completed' || zip?.status === 'failed') return waitForJob(stack.url, apiKey, jobId, ['completed', 'failed'], 10_000);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      expect(job.status).toBe('completed');
      expect(customer.copiesRefused).toBeGreaterThan(0);
      expect([...layouts].sort()).toEqual(['segments', 'server-copy-segments']);
      const out = await client.send(new GetObjectCommand({ Bucket: customer.bucket, Key: 'seg/refused.zip' }));
      const zip = Buffer.from(await out.Body!.transformToByteArray());
      const row = await stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId }, include: { zips: true } });
      expect(zip.equals(await onePackerZip(stack.ctx.fetcher, await binFilesWithAccess(stack.ctx.db, stack.ctx.secrets, jobId, row.zips[0]!.id), row.createdAt))).toBe(true);
      expect(customer.uploadedPartBytes).toBeGreaterThanOrEqual(zip.length);
    } finally {
      customer.refuseCopies = false;
    }
  }, 300_000);
});
