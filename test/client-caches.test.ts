// Hardening 3, item 4 (docs/guarantees.md#hardening-third-round-items-1-6): the caches of S3
// clients (sources: 256, destinations: 64) drop their oldest entry when full and never destroy
// it: its agents are shared by every request in flight. Filling a cache past its size while
// another tenant's upload and downloads run cuts none of them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createSource } from '@ap/db';
import { destinationStore, sourceSecretPlace } from '@ap/jobs';
import { createUser } from './helpers';
import { bytesOf } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';

const CUSTOMER = { accessKeyId: 'CACHEKEY1', secretAccessKey: 'cache-secret-71d0' };
const BIG = bytesOf(44, 12 * 1024 * 1024);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let stack: Stack;
let customer: CustomerBucket;
let userId: string;

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'cache-data');
  await customer.put('big.bin', BIG);
  stack = await startStack();
  userId = (await createUser(stack.ctx, { plan: 'pro' })).userId;
});
afterAll(async () => {
  await stack.close();
  await customer.close();
});

/** A source row of the customer's bucket (a distinct id: a distinct cached client). */
async function addSource(): Promise<string> {
  const id = randomUUID();
  const created = await createSource(
    stack.ctx.db,
    userId,
    { id, name: id, type: 's3', region: 'us-east-1', endpoint: customer.endpoint, forcePathStyle: true, accessKeyId: CUSTOMER.accessKeyId, sealedSecretAccessKey: stack.ctx.secrets.seal(CUSTOMER.secretAccessKey, sourceSecretPlace(id)) },
    10_000,
  );
  expect(created.ok).toBe(true);
  return id;
}

const rules = { allowPrivate: true };
const destination = (sourceId: string) => ({ destinationSourceId: sourceId, destinationBucket: customer.bucket, destinationPrefix: '' });

/** Reads a body: its first chunk now, the rest once `go` resolves. */
async function readPaused(body: Readable, go: Promise<void>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const first = await new Promise<Buffer>((resolve, reject) => {
    body.once('error', reject);
    body.once('data', (chunk: Buffer) => {
      body.pause();
      resolve(chunk);
    });
  });
  chunks.push(first);
  await go;
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('hardening 3, item 4: client caches never cut shared connections', () => {
  it('filling the source and destination client caches past their sizes cuts no upload or download in flight', async () => {
    let fill!: () => void;
    const filled = new Promise<void>((resolve) => (fill = resolve));

    // Tenant 1: a file read through a source (the fetcher's S3 client cache).
    const s3 = { sourceId: 'tenant-1', region: 'us-east-1', endpoint: customer.endpoint, forcePathStyle: true, ...CUSTOMER };
    const opened = await stack.ctx.fetcher.openBody(`s3://${customer.bucket}/big.bin`, { access: { s3 } });
    const sourceDownload = readPaused(opened.stream, filled);

    // Tenant 2: an upload to and a download from a destination bucket (the destination store cache).
    const store = (await destinationStore(stack.ctx.db, stack.ctx.secrets, destination(await addSource()), rules))!;
    // A PutObject whose body is still being sent: its request stays open across the filling.
    const uploadBody = new PassThrough();
    uploadBody.write(BIG.subarray(0, 1024 * 1024));
    const upload = store.client.send(new PutObjectCommand({ Bucket: customer.bucket, Key: 'uploaded.bin', Body: uploadBody, ContentLength: BIG.length }));
    const read = await store.read('big.bin');
    const destinationDownload = readPaused(read.body as Readable, filled);

    // Past both caches' sizes: 257 source clients, 65 destination stores.
    for (let i = 0; i < 257; i++) {
      const other = { ...s3, sourceId: `filler-${i}` };
      expect(await stack.ctx.fetcher.probe(`s3://${customer.bucket}/big.bin`, { access: { s3: other } })).toMatchObject({ ok: true, size: BIG.length });
    }
    for (let i = 0; i < 65; i++) expect(await destinationStore(stack.ctx.db, stack.ctx.secrets, destination(await addSource()), rules)).not.toBeNull();

    fill();
    uploadBody.end(BIG.subarray(1024 * 1024));
    expect(sha(await sourceDownload)).toBe(sha(BIG));
    expect(sha(await destinationDownload)).toBe(sha(BIG));
    await upload;
    const back = await store.read('uploaded.bin');
    const chunks: Buffer[] = [];
    for await (const chunk of back.body as Readable) chunks.push(chunk as Buffer);
    expect(sha(Buffer.concat(chunks))).toBe(sha(BIG));
  }, 120_000);
});
