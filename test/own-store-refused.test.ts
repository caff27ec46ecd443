// Hardening 3, item 5 (docs/guarantees.md#hardening-third-round-items-1-6): the service's own
// store (S3_ENDPOINT host and port, S3_BUCKET) is never a user's source or destination, with
// ALLOW_PRIVATE_URLS=true as here; EKS Pod Identity addresses are refused always.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createSource } from '@ap/db';
import { classifyAddress } from '@ap/fetch';
import { sourceSecretPlace } from '@ap/jobs';
import { EMBEDDED_S3_CREDENTIALS } from '../scripts/embedded';
import { call, createUser, waitForJob } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

let stack: Stack;
let origin: Origin;

beforeAll(async () => {
  stack = await startStack({ ALLOW_PRIVATE_URLS: 'true' });
  origin = await startOrigin();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

/** A source on the store's endpoint with the store's own keys, as one made before the rule (or through a gap) would be. */
async function storeSource(userId: string, name: string): Promise<void> {
  const id = crypto.randomUUID();
  const created = await createSource(
    stack.ctx.db,
    userId,
    {
      id,
      name,
      type: 's3',
      region: 'us-east-1',
      endpoint: stack.ctx.config.S3_ENDPOINT!.replace('127.0.0.1', 'localhost'),
      forcePathStyle: true,
      accessKeyId: EMBEDDED_S3_CREDENTIALS.accessKeyId,
      sealedSecretAccessKey: stack.ctx.secrets.seal(EMBEDDED_S3_CREDENTIALS.secretAccessKey, sourceSecretPlace(id)),
    },
    20,
  );
  expect(created.ok).toBe(true);
}

describe('hardening 3, item 5: the service\'s own store is never a source or destination', () => {
  it('POST /sources with the store\'s endpoint (any spelling of its host and port) is a 400, with ALLOW_PRIVATE_URLS=true', async () => {
    const { apiKey } = await createUser(stack.ctx, { plan: 'pro' });
    const endpoint = stack.ctx.config.S3_ENDPOINT!;
    for (const spelling of [endpoint, endpoint.replace('127.0.0.1', 'localhost'), `${endpoint}/`]) {
      const res = await call(stack.url, 'POST', '/sources', {
        key: apiKey,
        body: { name: `own-${spelling.length}`, type: 's3', region: 'us-east-1', endpoint: spelling, force_path_style: true, access_key_id: 'A', secret_access_key: 'B' },
      });
      expect({ status: res.status, message: res.body.error?.message }).toEqual({ status: 400, message: "endpoint: source not allowed (it is the service's own store, refused always)" });
    }
  });

  it('a job reading the store through such a source, or writing to it as its destination, fails with "source not allowed"', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    await storeSource(user.userId, 'store');
    const key = 'someone-else/archive.zip';
    await stack.ctx.store.client.send(new PutObjectCommand({ Bucket: stack.ctx.config.S3_BUCKET, Key: key, Body: Buffer.from('not yours') }));
    const read = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files: [{ url: `s3://${stack.ctx.config.S3_BUCKET}/${key}`, source: 'store' }] } });
    expect(read.status).toBe(201);
    const readJob = await waitForJob(stack.url, user.apiKey, read.body.job_id);
    expect(readJob.status).toBe('failed');
    expect(JSON.stringify(readJob.errors)).toContain('source not allowed');

    const write = await call(stack.url, 'POST', '/jobs', {
      key: user.apiKey,
      body: { files: [{ url: origin.set('/a.bin', { body: Buffer.from('abc') }) }], destination: { source: 'store', bucket: stack.ctx.config.S3_BUCKET, prefix: 'planted/' } },
    });
    expect(write.status).toBe(201);
    const writeJob = await waitForJob(stack.url, user.apiKey, write.body.job_id);
    expect(writeJob.status).toBe('failed');
    expect(JSON.stringify(writeJob)).toContain('source not allowed');
  });

  it('refuses the EKS Pod Identity addresses always, as cloud metadata', () => {
    for (const address of ['169.254.170.23', 'fd00:ec2::23', 'fd00:0ec2:0:0:0:0:0:23']) {
      expect(classifyAddress(address)).toMatchObject({ allowed: false, label: 'cloud metadata' });
    }
  });
});
