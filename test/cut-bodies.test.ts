// A body cut midway is continued, not failed: an origin whose first GET of a
// file closes the connection at 50%, or stalls there past the idle timeout, still gives a job
// with the right bytes, stored, split and stream; the continuation is a ranged GET from the
// last byte received, carrying the validator.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  // A short idle timeout, so a stall costs a second, not 30. One body at a time: fetched ahead,
  // a body waiting for its turn past half the idle timeout is let go and continued from where it
  // was held (packages/fetch/src/ahead.test.ts tests that), so on a busy machine the first GET
  // here could end before the origin's cut or stall, which is what these tests are about.
  stack = await startStack({ FETCH_IDLE_TIMEOUT_MS: '1000', FETCH_CONCURRENCY: '1' });
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

const MB = 1_000_000;

/** A cut file, a stalled file and a whole one under `prefix`, with what the ZIP must hold. */
function misbehavingFiles(prefix: string, seed: number) {
  const cut = bytesOf(seed, 2 * MB);
  const stalled = bytesOf(seed + 1, 1.5 * MB);
  const fine = bytesOf(seed + 2, 30_000);
  const files = [
    { url: origin.set(`/${prefix}/cut.bin`, { body: cut, etag: `"${prefix}-cut"`, cutFirstGetAt: cut.length / 2 }) },
    { url: origin.set(`/${prefix}/stalled.bin`, { body: stalled, etag: `"${prefix}-stalled"`, stallFirstGetAt: stalled.length / 2 }) },
    { url: origin.set(`/${prefix}/fine.bin`, { body: fine }) },
  ];
  const expected = [
    { name: 'cut.bin', size: cut.length, sha256: sha256(cut) },
    { name: 'stalled.bin', size: stalled.length, sha256: sha256(stalled) },
    { name: 'fine.bin', size: fine.length, sha256: sha256(fine) },
  ];
  return { files, expected };
}

function continuations(prefix: string) {
  return origin.requests.filter((r) => r.path.startsWith(`/${prefix}/`) && r.method === 'GET' && r.range !== undefined && r.range !== 'bytes=0-0').map((r) => `${r.path} ${r.range}`);
}

async function createJob(body: Record<string, unknown>): Promise<any> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return waitForJob(stack.url, key, res.body.job_id, ['completed', 'failed'], 90_000);
}

describe('a body cut midway is continued', () => {
  it('stored single ZIP', async () => {
    const { files, expected } = misbehavingFiles('stored', 500);
    const job = await createJob({ files, fail_on_url_error: true });
    expect(job.status).toBe('completed');
    expect(job.file_count).toBe(3);
    const zip = await download(job.download_url);
    expect(await readZip(zip.body)).toEqual(expected);
    expect(continuations('stored')).toEqual(['/stored/cut.bin bytes=1000000-1999999', '/stored/stalled.bin bytes=750000-1499999']);
    // On the validator the first response carried: a changed object would be a 412.
    expect(origin.requests.filter((r) => r.path.startsWith('/stored/') && r.range).map((r) => r.ifMatch)).toEqual(['"stored-cut"', '"stored-stalled"']);
  });

  it('split job', async () => {
    const { files, expected } = misbehavingFiles('split', 600);
    const job = await createJob({ files, fail_on_url_error: true, max_zip_size_bytes: 104_857_600 });
    expect(job.status).toBe('completed');
    expect(job.zips).toHaveLength(1);
    const zip = await download(job.zips[0].download_url);
    expect(await readZip(zip.body)).toEqual(expected);
    expect(continuations('split')).toEqual(['/split/cut.bin bytes=1000000-1999999', '/split/stalled.bin bytes=750000-1499999']);
  });

  it('stream download', async () => {
    const { files, expected } = misbehavingFiles('stream', 700);
    const job = await createJob({ files, mode: 'stream' });
    expect(job.status).toBe('completed');
    const zip = await download(job.download_url);
    expect(zip.status).toBe(200);
    expect(Number(zip.headers.get('content-length'))).toBe(zip.body.length);
    expect(await readZip(zip.body)).toEqual(expected);
    expect(continuations('stream')).toEqual(['/stream/cut.bin bytes=1000000-1999999', '/stream/stalled.bin bytes=750000-1499999']);
  });
});
