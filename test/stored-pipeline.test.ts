// End to end on the real stack: API -> Redis -> preparer/packers -> S3 -> signed downloads,
// with a local origin, every archive checked by unzip -t, Python's zipfile and yauzl.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { signDownloadToken } from '@ap/tokens';
import { sweepExpired } from '@ap/jobs';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const MB = 1_000_000;
const CAP = 104_857_600;

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

async function createJob(body: Record<string, unknown>, apiKey = key): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key: apiKey, body });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { success: true, job_id: expect.any(String) } });
  return res.body.job_id;
}

async function fetchZip(downloadUrl: string) {
  const res = await download(downloadUrl);
  expect(res.status).toBe(200);
  return { res, entries: await readZip(res.body) };
}

describe('stored single ZIP', () => {
  it('packs the files in order with derived, sanitised and de-duplicated names', async () => {
    const a = bytesOf(1, 1000);
    const b = bytesOf(2, 200_000);
    const c = bytesOf(3, 0);
    const d = bytesOf(4, 5000);
    const e = bytesOf(5, 777);
    const urls = [
      origin.set('/docs/report%20final.pdf', { body: a }),
      origin.set('/dl', { body: b, contentDisposition: `attachment; filename="fallback.bin"; filename*=UTF-8''r%C3%A9sum%C3%A9.bin` }),
      origin.set('/empty.txt', { body: c }),
      origin.set('/moved', { body: d, redirectTo: '/final/target.dat' }),
      origin.set('/x/', { body: e }),
    ];
    origin.set('/final/target.dat', { body: d });
    const jobId = await createJob({
      files: [
        { url: urls[0] },
        { url: urls[1] },
        { url: urls[2], filename: 'folder/empty.txt' },
        { url: urls[3] },
        { url: urls[4] },
        { url: urls[2], filename: 'folder/empty.txt' },
      ],
      zip_filename: 'bundle.zip',
    });
    const job = await waitForJob(stack.url, key, jobId);
    expect(job.status).toBe('completed');
    expect(job).toMatchObject({ url_count: 6, file_count: 6, zip_count: 1, multi_zip: false, zip_filename: 'bundle.zip' });
    expect(job.zips).toHaveLength(1);
    const zip = job.zips[0];
    expect(zip).toMatchObject({ sequence: 1, status: 'completed', filename: 'bundle.zip', file_count: 6 });
    expect(zip.id).toMatch(/^zip_/);
    // Legacy fields mirror zips[0].
    expect(job.zip_size).toBe(zip.size);
    expect(job.download_url).toBe(zip.download_url);
    expect(job.total_size).toBe(zip.size);
    expect(job.errors).toBeUndefined();
    expect(job.completed_at).toEqual(expect.any(String));

    const { res, entries } = await fetchZip(zip.download_url);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-length')).toBe(String(zip.size));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="bundle.zip"; filename*=UTF-8''bundle.zip`);
    expect(res.body.length).toBe(zip.size);
    expect(entries).toEqual([
      { name: 'report final.pdf', size: a.length, sha256: sha256(a) },
      { name: 'résumé.bin', size: b.length, sha256: sha256(b) },
      { name: 'folder/empty.txt', size: 0, sha256: sha256(c) },
      { name: 'target.dat', size: d.length, sha256: sha256(d) },
      { name: 'x', size: e.length, sha256: sha256(e) },
      { name: 'folder/empty (1).txt', size: 0, sha256: sha256(c) },
    ]);
  });

  it('records URL errors and skips them when fail_on_url_error is false', async () => {
    const good = bytesOf(10, 4096);
    const jobId = await createJob({
      files: [
        { url: origin.set('/ok.bin', { body: good }) },
        { url: `${origin.url}/missing.bin` },
        { url: origin.set('/short.bin', { body: bytesOf(11, 100_000), truncateAt: 1000 }) },
      ],
      fail_on_url_error: false,
    });
    const job = await waitForJob(stack.url, key, jobId);
    expect(job.status).toBe('completed');
    expect(job.url_count).toBe(3);
    expect(job.file_count).toBe(1);
    expect(job.errors).toEqual([
      { url: `${origin.url}/missing.bin`, error: expect.stringContaining('404') },
      { url: `${origin.url}/short.bin`, error: expect.stringMatching(/shorter|closed|aborted|premature/i) },
    ]);
    expect(job.zips[0].errors).toEqual(job.errors);
    const { entries } = await fetchZip(job.download_url);
    expect(entries).toEqual([{ name: 'ok.bin', size: good.length, sha256: sha256(good) }]);
  });

  it('fails the job on a URL error when fail_on_url_error is true', async () => {
    const jobId = await createJob({ files: [{ url: origin.set('/fine.bin', { body: bytesOf(12, 10) }) }, { url: `${origin.url}/gone.bin` }] });
    const job = await waitForJob(stack.url, key, jobId);
    expect(job.status).toBe('failed');
    expect(job.download_url).toBeNull();
    expect(job.zips[0]).toMatchObject({ status: 'failed', download_url: null, size: null });
    const gone = { url: `${origin.url}/gone.bin`, error: expect.stringContaining('404') };
    expect(job.errors).toEqual([gone]);
    expect(job.zips[0].errors).toEqual([gone]);
  });
});

describe('downloads', () => {
  let zipUrl: string;
  let full: Buffer;
  let etag: string;

  beforeAll(async () => {
    const jobId = await createJob({ files: [{ url: origin.set('/range.bin', { body: bytesOf(20, 300_000) }) }], zip_filename: 'Ünïcödé "name".zip' });
    const job = await waitForJob(stack.url, key, jobId);
    zipUrl = job.download_url;
    const res = await download(zipUrl);
    full = res.body;
    etag = res.headers.get('etag')!;
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="_n_c_d_ _name_.zip"; filename*=UTF-8''%C3%9Cn%C3%AFc%C3%B6d%C3%A9%20%22name%22.zip`,
    );
  });

  it('serves byte ranges, suffix ranges and If-Range', async () => {
    const part = await download(zipUrl, { range: 'bytes=100-199' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 100-199/${full.length}`);
    expect(part.body.equals(full.subarray(100, 200))).toBe(true);

    const suffix = await download(zipUrl, { range: 'bytes=-22' });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(full.subarray(full.length - 22))).toBe(true);

    const open = await download(zipUrl, { range: `bytes=${full.length - 5}-` });
    expect(open.body.equals(full.subarray(full.length - 5))).toBe(true);

    const matching = await download(zipUrl, { range: 'bytes=0-9', 'if-range': etag });
    expect(matching.status).toBe(206);
    const stale = await download(zipUrl, { range: 'bytes=0-9', 'if-range': '"something-else"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(full)).toBe(true);

    const unsatisfiable = await download(zipUrl, { range: `bytes=${full.length}-` });
    expect(unsatisfiable.status).toBe(416);
    expect(unsatisfiable.headers.get('content-range')).toBe(`bytes */${full.length}`);
  });

  it('refuses tampered tokens with 403 INVALID_TOKEN and expired ones with 403 EXPIRED_TOKEN, no API key needed', async () => {
    const token = zipUrl.split('/download/')[1]!;
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    for (const bad of [flipped, 'garbage', `${token}x`, token.split('.').reverse().join('.')]) {
      const res = await call(stack.url, 'GET', `/download/${bad}`);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ success: false, error: { code: 'INVALID_TOKEN', message: expect.any(String) } });
    }
    const zipId = (await stack.ctx.db.zip.findFirstOrThrow({ where: { objectKey: { not: null } }, orderBy: { createdAt: 'desc' } })).id;
    const expired = signDownloadToken({ zipId, expiresAt: new Date(Date.now() - 1000) }, stack.ctx.config.DOWNLOAD_TOKEN_SECRET);
    const res = await call(stack.url, 'GET', `/download/${expired}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('EXPIRED_TOKEN');
    const otherSecret = signDownloadToken({ zipId, expiresAt: new Date(Date.now() + 60_000) }, 'x'.repeat(40));
    expect((await call(stack.url, 'GET', `/download/${otherSecret}`)).body.error.code).toBe('INVALID_TOKEN');
  });

  it('answers an object that cannot be read with the JSON error envelope, not with the head of the ZIP it meant to send', async () => {
    const jobId = await createJob({ files: [{ url: origin.set('/lost.bin', { body: bytesOf(22, 1000) }) }] });
    const job = await waitForJob(stack.url, key, jobId);
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    await stack.ctx.store.deleteMany([zip.objectKey!]);
    const res = await call(stack.url, 'GET', `/download/${job.download_url.split('/download/')[1]}`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('content-disposition')).toBeNull();
    expect(res.headers.get('etag')).not.toBe(`"${zip.etag}"`);
    expect(res.body).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'internal error' } });
  });

  it('after expires_at: links answer EXPIRED_TOKEN, download_url is null, the sweeper deletes the object, the status stays', async () => {
    const jobId = await createJob({ files: [{ url: origin.set('/expiring.bin', { body: bytesOf(21, 1000) }) }] });
    const job = await waitForJob(stack.url, key, jobId);
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    expect(await stack.ctx.store.head(zip.objectKey!)).not.toBeNull();
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await call(stack.url, 'GET', `/download/${job.download_url.split('/download/')[1]}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('EXPIRED_TOKEN');
    const after = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
    expect(after.status).toBe('completed');
    expect(after.download_url).toBeNull();
    expect(after.zips[0].download_url).toBeNull();
    expect(await sweepExpired(stack.ctx.db, stack.ctx.store, stack.ctx.log, { secrets: stack.ctx.secrets, allowPrivate: stack.ctx.config.ALLOW_PRIVATE_URLS })).toBeGreaterThanOrEqual(1);
    expect(await stack.ctx.store.head(zip.objectKey!)).toBeNull();
    expect((await stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId } })).purgedAt).not.toBeNull();
  });
});

describe('auto-split', () => {
  // Sizes chosen so that the strategies differ: preserve-order -> [A] [B] [C, D]; ffd -> [B, D] [A, C]
  // (A + B and B + C over the cap, B + D under it by ~3 MB), in as few bytes as that takes.
  const A = bytesOf(31, 10 * MB);
  const B = bytesOf(32, 97 * MB);
  const C = bytesOf(33, 12 * MB);
  const D = bytesOf(34, 5 * MB);
  let files: { url: string; filename: string }[];
  beforeAll(() => {
    files = [
      { url: origin.set('/split/a', { body: A }), filename: 'a.bin' },
      { url: origin.set('/split/b', { body: B, noHead: true }), filename: 'b.bin' },
      { url: origin.set('/split/c', { body: C }), filename: 'c.bin' },
      { url: origin.set('/split/d', { body: D }), filename: 'd.bin' },
    ];
  });

  it('preserve-order fills bins in input order, each ZIP within the cap, with plain-name numbering', async () => {
    const jobId = await createJob({ files, max_zip_size_bytes: CAP, zip_filename: 'photos.tar.gz' });
    const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 120_000);
    expect(job.status).toBe('completed');
    expect(job).toMatchObject({ multi_zip: true, zip_count: 3, zip_size: null, download_url: null, max_zip_size_bytes: CAP, split_strategy: 'preserve-order', file_count: 4 });
    expect(job.zips.map((z: any) => [z.sequence, z.filename, z.file_count])).toEqual([
      [1, 'photos.tar_1.gz', 1],
      [2, 'photos.tar_2.gz', 1],
      [3, 'photos.tar_3.gz', 2],
    ]);
    expect(job.zip_filename).toBe('photos.tar_1.gz');
    const contents = [];
    for (const z of job.zips) {
      expect(z.size).toBeLessThanOrEqual(CAP);
      const { res, entries } = await fetchZip(z.download_url);
      expect(res.body.length).toBe(z.size);
      contents.push(entries.map((e) => [e.name, e.sha256]));
    }
    expect(contents).toEqual([[['a.bin', sha256(A)]], [['b.bin', sha256(B)]], [['c.bin', sha256(C)], ['d.bin', sha256(D)]]]);
    expect(job.total_size).toBe(job.zips.reduce((s: number, z: any) => s + z.size, 0));
    // The origin without HEAD was probed with a ranged GET, not downloaded twice.
    expect(origin.requests.some((r) => r.path === '/split/b' && r.method === 'GET' && r.range === 'bytes=0-0')).toBe(true);
  }, 180_000);

  it('ffd minimises bins and renders templates', async () => {
    const jobId = await createJob({ files, max_zip_size_bytes: CAP, split_strategy: 'ffd', zip_filename: 'part-{n}-of-{total}.zip' });
    const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 120_000);
    expect(job.status).toBe('completed');
    expect(job.zips.map((z: any) => z.filename)).toEqual(['part-1-of-2.zip', 'part-2-of-2.zip']);
    const contents = [];
    for (const z of job.zips) {
      expect(z.size).toBeLessThanOrEqual(CAP);
      contents.push((await fetchZip(z.download_url)).entries.map((e) => e.name));
    }
    expect(contents).toEqual([['b.bin', 'd.bin'], ['a.bin', 'c.bin']]);
  }, 180_000);

  it('gives an oversize file its own ZIP when allowed, and fails the job when not', async () => {
    const big = bytesOf(35, CAP + 1);
    const small = bytesOf(36, 10);
    const oversize = [
      { url: origin.set('/split/small1', { body: small }), filename: 's1' },
      { url: origin.set('/split/big', { body: big }), filename: 'big.bin' },
      { url: origin.set('/split/small2', { body: small }), filename: 's2' },
    ];
    const refused = await createJob({ files: oversize, max_zip_size_bytes: CAP, allow_oversize_zips: false });
    const failed = await waitForJob(stack.url, key, refused);
    expect(failed.status).toBe('failed');
    expect(failed.zips).toEqual([]);
    expect(failed.errors).toEqual([{ url: `${origin.url}/split/big`, error: expect.stringMatching(/larger than|exceeds/i) }]);

    const allowed = await createJob({ files: oversize, max_zip_size_bytes: CAP });
    const job = await waitForJob(stack.url, key, allowed, ['completed', 'failed'], 120_000);
    expect(job.status).toBe('completed');
    expect(job.zips.map((z: any) => z.file_count)).toEqual([1, 1, 1]);
    expect(job.zips[1].size).toBeGreaterThan(CAP);
    const names = [];
    for (const z of job.zips) names.push((await fetchZip(z.download_url)).entries.map((e) => e.name));
    expect(names).toEqual([['s1'], ['big.bin'], ['s2']]);
  }, 180_000);
});
