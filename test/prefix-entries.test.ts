// Prefix entries end to end (docs/private-sources.md#prefix-entries): `s3://bucket/prefix/`
// listed while preparing (every page, key order, folder markers skipped), named below a folder,
// the plan's files-per-job limit applied after expansion, an empty prefix as a URL error, and a
// stream job's listing frozen at preparing time.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const CUSTOMER = { accessKeyId: 'PREFIXKEY1', secretAccessKey: 'prefix-secret-3c9e1d' };

let stack: Stack;
let customer: CustomerBucket;
let origin: Origin;
let proKey: string;
let freeKey: string;

/** 2,500 objects under photos/2024/ in nested folders (3 list pages), plus a folder marker and neighbours outside. */
const PHOTOS = Array.from({ length: 2500 }, (_, i) => {
  const n = String(i).padStart(4, '0');
  const key = i % 5 === 0 ? `photos/2024/${n}.jpg` : i % 5 === 1 ? `photos/2024/trip/${n}.jpg` : i % 5 === 2 ? `photos/2024/trip/day-${i % 7}/${n}.jpg` : `photos/2024/${n}-x/${n}.jpg`;
  return { key, body: bytesOf(i, 10 + (i % 50)) };
});
const inKeyOrder = <T extends { key: string }>(list: T[]) => [...list].sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));

async function putAll(objects: { key: string; body: Buffer }[]): Promise<void> {
  for (let i = 0; i < objects.length; i += 50) await Promise.all(objects.slice(i, i + 50).map((o) => customer.put(o.key, o.body)));
}

async function job(key: string, body: Record<string, unknown>, timeoutMs = 120_000) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { success: true, job_id: expect.any(String) } });
  return waitForJob(stack.url, key, res.body.job_id, ['completed', 'failed'], timeoutMs);
}

async function addSource(key: string): Promise<void> {
  const created = await call(stack.url, 'POST', '/sources', {
    key,
    body: { name: 'bucket', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey },
  });
  expect(created.status).toBe(201);
}

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER, 'prefix-data');
  await putAll([
    ...PHOTOS,
    { key: 'photos/2024/trip/', body: Buffer.alloc(0) }, // a folder marker: skipped
    { key: 'photos/2023/old.jpg', body: bytesOf(9, 100) },
    { key: 'photos/2024-other.jpg', body: bytesOf(8, 100) },
    { key: 'small/a.txt', body: bytesOf(1, 10) },
    { key: 'small/b/c.txt', body: bytesOf(2, 20) },
    ...Array.from({ length: 101 }, (_, i) => ({ key: `hundred-and-one/${i}.txt`, body: bytesOf(i, 5) })),
  ]);
  origin = await startOrigin();
  stack = await startStack();
  proKey = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  freeKey = (await createUser(stack.ctx, { plan: 'free' })).apiKey;
  await addSource(proKey);
  await addSource(freeKey);
}, 300_000);

afterAll(async () => {
  await stack.close();
  await Promise.all([customer.close(), origin.close()]);
});

describe('prefix entries', () => {
  it('list every page in key order, skip folder markers, and name each object by its key below the prefix in a folder', async () => {
    const listsBefore = customer.requests.filter((r) => r.includes('list-type=2')).length;
    const http = bytesOf(77, 1234);
    const after = origin.set('/after.bin', { body: http });
    const done = await job(proKey, {
      files: [
        { url: `s3://${customer.bucket}/photos/2024/`, source: 'bucket' },
        { url: after },
        { url: `s3://${customer.bucket}/small/`, source: 'bucket', filename: 'given/folder' },
      ],
    });
    expect({ status: done.status, errors: done.errors ?? [], url_count: done.url_count, file_count: done.file_count }).toEqual({ status: 'completed', errors: [], url_count: 3, file_count: 2503 });
    const lists = customer.requests.filter((r) => r.includes('list-type=2')).length - listsBefore;
    expect(lists).toBe(3 + 1); // 2,500 keys (and a folder marker) in three pages; small/ in one
    const entries = await readZip((await download(done.download_url)).body);
    expect(entries).toEqual([
      ...inKeyOrder(PHOTOS).map((o) => ({ name: `2024/${o.key.slice('photos/2024/'.length)}`, size: o.body.length, sha256: sha256(o.body) })),
      { name: 'after.bin', size: http.length, sha256: sha256(http) },
      { name: 'given/folder/a.txt', size: 10, sha256: sha256(bytesOf(1, 10)) },
      { name: 'given/folder/b/c.txt', size: 20, sha256: sha256(bytesOf(2, 20)) },
    ]);
  }, 240_000);

  it('apply the plan\'s files-per-job limit after expansion: 101 objects on the free plan fail the job, worded', async () => {
    const failed = await job(freeKey, { files: [{ url: `s3://${customer.bucket}/hundred-and-one/`, source: 'bucket' }] });
    expect({ status: failed.status, errors: failed.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: "prefix expands past the plan's limit of 100 files" }] });
    const fits = await job(freeKey, { files: [{ url: `s3://${customer.bucket}/small/`, source: 'bucket' }], max_zip_size_bytes: 104_857_600 });
    expect({ status: fits.status, file_count: fits.file_count }).toEqual({ status: 'completed', file_count: 2 });
  });

  it('treat an empty prefix as a URL error, per fail_on_url_error', async () => {
    const empty = { url: `s3://${customer.bucket}/nothing-here/`, source: 'bucket' };
    const strict = await job(proKey, { files: [empty, { url: `s3://${customer.bucket}/small/`, source: 'bucket' }] });
    expect(strict.status).toBe('failed');
    expect(strict.errors).toEqual([
      { url: empty.url, error: 'no objects under this prefix' },
      { url: '', error: '1 of 3 URLs could not be fetched' },
    ]);
    const lenient = await job(proKey, { files: [empty, { url: `s3://${customer.bucket}/small/`, source: 'bucket' }], fail_on_url_error: false });
    expect({ status: lenient.status, url_count: lenient.url_count, file_count: lenient.file_count }).toEqual({ status: 'completed', url_count: 2, file_count: 2 });
    expect(lenient.errors).toEqual([{ url: empty.url, error: 'no objects under this prefix' }]);
    expect((await readZip((await download(lenient.download_url)).body)).map((e) => e.name)).toEqual(['small/a.txt', 'small/b/c.txt']);
  });

  it('list a prefix again on a retry when it was empty, keeping the objects listed before', async () => {
    const later = { url: `s3://${customer.bucket}/later/`, source: 'bucket' };
    const failed = await job(proKey, { files: [{ url: `s3://${customer.bucket}/small/`, source: 'bucket' }, later] });
    expect(failed.errors).toEqual([
      { url: later.url, error: 'no objects under this prefix' },
      { url: '', error: '1 of 3 URLs could not be fetched' },
    ]);
    await customer.put('later/arrived.txt', bytesOf(6, 60));
    expect((await call(stack.url, 'POST', `/jobs/${failed.id}/retry`, { key: proKey, body: {} })).status).toBe(200);
    const done = await waitForJob(stack.url, proKey, failed.id);
    expect({ status: done.status, url_count: done.url_count, file_count: done.file_count }).toEqual({ status: 'completed', url_count: 2, file_count: 3 });
    expect((await readZip((await download(done.download_url)).body)).map((e) => e.name)).toEqual(['small/a.txt', 'small/b/c.txt', 'later/arrived.txt']);
  });

  it('freeze a stream job\'s listing at preparing time', async () => {
    await putAll([
      { key: 'live/one.txt', body: bytesOf(3, 30) },
      { key: 'live/two.txt', body: bytesOf(4, 40) },
    ]);
    const done = await job(proKey, { files: [{ url: `s3://${customer.bucket}/live/`, source: 'bucket' }], mode: 'stream' });
    expect({ status: done.status, url_count: done.url_count, file_count: done.file_count }).toEqual({ status: 'completed', url_count: 1, file_count: 2 });
    await customer.put('live/three.txt', bytesOf(5, 50));
    const zip = await download(done.zips[0].download_url);
    expect((await readZip(zip.body)).map((e) => e.name)).toEqual(['live/one.txt', 'live/two.txt']);
  });

  it('refuse an s3:// prefix without a source, like any s3:// URL', async () => {
    const res = await call(stack.url, 'POST', '/jobs', { key: proKey, body: { files: [{ url: `s3://${customer.bucket}/photos/` }] } });
    expect(res.status).toBe(400);
  });
});
