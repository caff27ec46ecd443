// Hardening, third round (docs/guarantees.md#hardening-third-round-items-7-12): DELETE /jobs/:id
// wins every race with a bin completing its upload, and the multipart uploads a job started in
// a customer's destination bucket are aborted when the job is deleted, fails or expires.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateMultipartUploadCommand, ListObjectsV2Command, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { sweepExpired } from '@ap/jobs';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';

const CUSTOMER = { accessKeyId: 'RACEKEY1', secretAccessKey: 'race-secret-5d21aa' };

let stack: Stack;
let customer: CustomerBucket;
let client: S3Client;
let origin: Origin;
let key: string;

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'race-data');
  client = new S3Client({ endpoint: customer.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CUSTOMER, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  origin = await startOrigin();
  stack = await startStack();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  const source = { name: 'bucket', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey };
  expect((await call(stack.url, 'POST', '/sources', { key, body: source })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  customer.beforeRequest = null;
  client.destroy();
  await stack.close();
  await Promise.all([customer.close(), origin.close()]);
});

const destination = (prefix: string) => ({ source: 'bucket', bucket: customer.bucket, prefix });

async function objectsUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: customer.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((o) => o.Key!);
}

async function createJob(body: Record<string, unknown>): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return res.body.job_id;
}

async function noUploadsLeft(): Promise<string[]> {
  for (let waited = 0; customer.uploadsInProgress().length > 0 && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  return customer.uploadsInProgress();
}

describe('hardening 3, item 7: delete wins every race', () => {
  it('leaves no ZIP behind when the job is deleted while its bin completes the upload', async () => {
    let deleted!: () => void;
    const jobDeleted = new Promise<void>((resolve) => (deleted = resolve));
    let completing!: () => void;
    const completionHeld = new Promise<void>((resolve) => (completing = resolve));
    // The ZIP's final write (PutObject of a one-part ZIP, or CompleteMultipartUpload) waits until the job is deleted.
    customer.beforeRequest = async (method, url) => {
      const final = url.startsWith(`/${customer.bucket}/race/`) && ((method === 'PUT' && !url.includes('partNumber=')) || (method === 'POST' && url.includes('uploadId=')));
      if (!final) return;
      completing();
      await jobDeleted;
    };
    try {
      const jobId = await createJob({ files: [{ url: origin.set('/race/a.bin', { body: bytesOf(701, 30_000) }) }], destination: destination('race/') });
      await completionHeld;
      expect((await call(stack.url, 'DELETE', `/jobs/${jobId}`, { key })).status).toBe(200);
      deleted();
      // The packer finds its bin gone as it records the completion, and removes what it wrote.
      await until(async () => (await objectsUnder('race/')).length === 0, 'the ZIP written after the delete is removed', 10_000);
      expect(await stack.ctx.db.zip.count({ where: { jobId } })).toBe(0);
    } finally {
      customer.beforeRequest = null;
    }
  });

  it('aborts the multipart upload a bin started in the destination when the job is deleted', async () => {
    const url = origin.set('/race/stalled.bin', { body: bytesOf(702, 14_000_000), stallFirstGetAt: 12_000_000, etag: '"s1"' });
    const jobId = await createJob({ files: [{ url }], destination: destination('deleted/') });
    await until(async () => (await stack.ctx.db.zip.findFirst({ where: { jobId } }))?.uploadId != null && customer.uploadsInProgress().length > 0, 'parts stored in the destination');
    expect((await call(stack.url, 'DELETE', `/jobs/${jobId}`, { key })).status).toBe(200);
    expect(await noUploadsLeft()).toEqual([]);
    expect(await objectsUnder('deleted/')).toEqual([]);
  });

  it('aborts it when the job fails, even where a retry could have resumed it', async () => {
    const jobId = await createJob({
      files: [{ url: origin.set('/race/known.bin', { body: bytesOf(703, 40_000_000), etag: '"k1"' }) }, { url: origin.set('/race/gone.bin', { body: Buffer.alloc(0), status: 404 }) }],
      destination: destination('failed/'),
    });
    expect((await waitForJob(stack.url, key, jobId)).status).toBe('failed');
    // In our own bucket this upload is kept for a retry from checkpoint (hostile-origins.test.ts).
    const partsSent = customer.requests.filter((r) => r.startsWith(`PUT /${customer.bucket}/failed/`) && r.includes('partNumber='));
    expect(partsSent.length).toBeGreaterThan(0);
    expect(await noUploadsLeft()).toEqual([]);
  });

  it('aborts one left recorded when the job expires', async () => {
    const jobId = await createJob({ files: [{ url: origin.set('/race/small.bin', { body: bytesOf(704, 1_000) }) }], destination: destination('expired/') });
    expect((await waitForJob(stack.url, key, jobId)).status).toBe('completed');
    // A bin of it left an upload recorded (as a packer cut off mid-bin leaves one).
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    const started = await client.send(new CreateMultipartUploadCommand({ Bucket: customer.bucket, Key: `expired/${zip.filename}` }));
    await client.send(new UploadPartCommand({ Bucket: customer.bucket, Key: `expired/${zip.filename}`, UploadId: started.UploadId, PartNumber: 1, Body: bytesOf(705, 1_000) }));
    await stack.ctx.db.zip.update({ where: { id: zip.id }, data: { uploadId: started.UploadId! } });
    expect(customer.uploadsInProgress()).toContain(started.UploadId);
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await sweepExpired(stack.ctx.db, stack.ctx.store, stack.ctx.log, { secrets: stack.ctx.secrets, allowPrivate: stack.ctx.config.ALLOW_PRIVATE_URLS });
    expect(customer.uploadsInProgress()).not.toContain(started.UploadId);
    // The completed ZIP is the customer's: it stays.
    expect(await objectsUnder('expired/')).toEqual([`expired/${zip.filename}`]);
  });
});
