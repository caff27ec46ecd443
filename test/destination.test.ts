// Destination buckets end to end (docs/private-sources.md#destination-buckets): a stored job's
// ZIPs written into the customer's bucket with the source's credentials, `zips[].location`, the
// download link served from there, the object left in place at expiry, an unwritable
// destination failing worded, a destination on a private address refused unless allowed, and
// `destination` refused on stream jobs.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { BinFailure } from '@ap/archive';
import { destinationStore, sweepExpired } from '@ap/jobs';
import { packBin } from '@ap/packer';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const CUSTOMER = { accessKeyId: 'DESTKEY1', secretAccessKey: 'dest-secret-71be0c' };

let stack: Stack;
let customer: CustomerBucket;
let client: S3Client;
let origin: Origin;
let key: string;
let monitor: net.Socket;
const seen: string[] = [];
const http = bytesOf(41, 70_001);
const object = bytesOf(42, 120_003);

async function job(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { success: true, job_id: expect.any(String) } });
  const done = await waitForJob(stack.url, key, res.body.job_id);
  seen.push(JSON.stringify(done));
  return done;
}

async function customerObject(objectKey: string): Promise<Buffer> {
  const out = await client.send(new GetObjectCommand({ Bucket: customer.bucket, Key: objectKey }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'dest-data');
  await customer.put('in/object.bin', object);
  client = new S3Client({ endpoint: customer.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CUSTOMER, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  origin = await startOrigin();
  stack = await startStack({ LOG_LEVEL: 'debug' });
  // Every log line of the services in this process, and every Redis command (payloads included).
  const log = stack.ctx.log as unknown as Record<symbol, unknown>;
  const streamSym = Object.getOwnPropertySymbols(log).find((s) => s.description === 'pino.stream')!;
  log[streamSym] = { write: (line: string) => seen.push(line) };
  const redisUrl = new URL(process.env.REDIS_URL!);
  monitor = net.connect(Number(redisUrl.port || 6379), redisUrl.hostname);
  monitor.on('data', (chunk: Buffer) => seen.push(chunk.toString('latin1')));
  monitor.write('MONITOR\r\n');
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  for (const [name, secret] of [['bucket', CUSTOMER.secretAccessKey], ['wrong-secret', 'not-the-secret-00']] as const) {
    const created = await call(stack.url, 'POST', '/sources', {
      key,
      body: { name, type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: secret },
    });
    expect(created.status).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  monitor.destroy();
  client.destroy();
  await stack.close();
  await Promise.all([customer.close(), origin.close()]);
});

const files = () => [{ url: origin.set('/page.bin', { body: http }) }, { url: `s3://${customer.bucket}/in/object.bin`, source: 'bucket' }];
const entries = [
  { name: 'page.bin', size: http.length, sha256: sha256(http) },
  { name: 'object.bin', size: object.length, sha256: sha256(object) },
];

describe('a destination bucket', () => {
  it('receives a stored job\'s ZIP under its prefix; location names it, the link serves it, nothing stays in our bucket, expiry leaves it', async () => {
    const done = await job({ files: files(), zip_filename: 'export-{date}.zip', destination: { source: 'bucket', bucket: customer.bucket, prefix: 'exports/' } });
    expect(done.status).toBe('completed');
    const objectKey = `exports/${done.zips[0].filename}`;
    expect(done.zips[0].filename).toMatch(/^export-\d{4}-\d{2}-\d{2}\.zip$/);
    expect(done.zips[0].location).toBe(`s3://${customer.bucket}/${objectKey}`);
    const inBucket = await customerObject(objectKey);
    expect(await readZip(inBucket)).toEqual(entries);
    const served = await download(done.download_url);
    expect(served.body.equals(inBucket)).toBe(true);
    expect(await stack.ctx.store.head(objectKey)).toBeNull();
    expect(await stack.ctx.store.head(`jobs/${done.id}/${done.zips[0].id}.zip`)).toBeNull();

    await stack.ctx.db.job.update({ where: { id: done.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await sweepExpired(stack.ctx.db, stack.ctx.store, stack.ctx.log, { secrets: stack.ctx.secrets, allowPrivate: stack.ctx.config.ALLOW_PRIVATE_URLS });
    expect((await customerObject(objectKey)).equals(inBucket)).toBe(true);
    expect((await download(done.download_url)).status).not.toBe(200);
  });

  it('receives each ZIP of a split job, named by its template', async () => {
    const done = await job({ files: files(), max_zip_size_bytes: 104_857_600, zip_filename: 'part-{n}-of-{total}.zip', destination: { source: 'bucket', bucket: customer.bucket } });
    expect(done.status).toBe('completed');
    expect(done.zips.map((z: { filename: string; location: string }) => [z.filename, z.location])).toEqual([['part-1-of-1.zip', `s3://${customer.bucket}/part-1-of-1.zip`]]);
    expect(await readZip(await customerObject('part-1-of-1.zip'))).toEqual(entries);
  });

  it('fails the bin, worded, when the credentials cannot write it', async () => {
    const failed = await job({ files: [{ url: origin.set('/p2.bin', { body: http }) }], destination: { source: 'wrong-secret', bucket: customer.bucket } });
    expect(failed.status).toBe('failed');
    expect(failed.errors).toEqual([{ url: '', error: 'destination: access denied' }]);
  });

  it('is refused, worded, where its endpoint is a private address and ALLOW_PRIVATE_URLS is not true (as a source is): nothing written', async () => {
    const host = new URL(customer.endpoint).host; // 127.0.0.1:<port>
    const hint = '(set ALLOW_PRIVATE_URLS=true for development)';
    // The run's stacks allow private addresses (the stand-ins are on loopback): a packer that does not, on a stack of its own.
    const noWorkers = await startStack({}, { workers: false });
    try {
      const created = await call(noWorkers.url, 'POST', '/jobs', { key, body: { files: files(), destination: { source: 'bucket', bucket: customer.bucket, prefix: 'private/' } } });
      expect(created.status).toBe(201);
      const zip = await noWorkers.ctx.db.zip.findFirstOrThrow({ where: { jobId: created.body.job_id } });
      const strict = { ...noWorkers.ctx, config: { ...noWorkers.ctx.config, ALLOW_PRIVATE_URLS: false } };
      const refused = await packBin(strict, { jobId: created.body.job_id, zipId: zip.id, attempt: zip.attempt }).then(() => null, (err: unknown) => err);
      expect(refused).toBeInstanceOf(BinFailure);
      expect((refused as Error).message).toBe(`destination: endpoint ${host} refused, a loopback address ${hint}`);
      const listed = await client.send(new ListObjectsV2Command({ Bucket: customer.bucket, Prefix: 'private/' }));
      expect(listed.KeyCount).toBe(0);
      // A name for a private address is refused as well; downloads read through the same check.
      const named = await call(stack.url, 'POST', '/sources', {
        key,
        body: { name: 'by-name', type: 's3', region: 'us-east-1', endpoint: customer.endpoint.replace('127.0.0.1', 'localhost'), force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey },
      });
      expect(named.status).toBe(201);
      const byName = { destinationSourceId: named.body.source.id, destinationBucket: customer.bucket, destinationPrefix: null };
      await expect(destinationStore(stack.ctx.db, stack.ctx.secrets, byName, { allowPrivate: false })).rejects.toThrow(`destination: endpoint localhost:${new URL(customer.endpoint).port} refused, resolves to a loopback address ${hint}`);
      expect(await destinationStore(stack.ctx.db, stack.ctx.secrets, byName, { allowPrivate: true })).not.toBeNull();
    } finally {
      await noWorkers.close();
    }
  });

  it('leaves no secret of its source in responses, logs or Redis', () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const text of seen) expect(text.includes(CUSTOMER.secretAccessKey) || text.includes('not-the-secret-00')).toBe(false);
  });

  it('is refused on stream jobs and with an unknown source: 400', async () => {
    const stream = await call(stack.url, 'POST', '/jobs', { key, body: { files: files(), mode: 'stream', destination: { source: 'bucket', bucket: customer.bucket } } });
    expect(stream.status).toBe(400);
    const unknown = await call(stack.url, 'POST', '/jobs', { key, body: { files: files(), destination: { source: 'nope', bucket: customer.bucket } } });
    expect(unknown.status).toBe(400);
  });
});
