// GET /download/:token is limited per ZIP (DOWNLOAD_RATE_LIMIT): one more request in the
// minute is 429 RATE_LIMITED with Retry-After, other ZIPs' links are not affected, and refused
// tokens are not counted. A link whose job is gone answers 404 NOT_FOUND.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const LIMIT = 3;

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  stack = await startStack({ DOWNLOAD_RATE_LIMIT: String(LIMIT) });
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

async function storedJob(name: string): Promise<{ id: string; url: string }> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: origin.set(`/limit/${name}`, { body: bytesOf(name.length, 2000) }) }] } });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, key, res.body.job_id, ['completed']);
  return { id: job.job_id ?? res.body.job_id, url: job.zips[0].download_url };
}

describe('downloads of one ZIP', () => {
  it(`answers request ${LIMIT + 1} in a minute 429 RATE_LIMITED with Retry-After, while another ZIP's link still downloads`, async () => {
    const a = await storedJob('a.bin');
    const b = await storedJob('bb.bin');
    for (let i = 0; i < LIMIT; i++) expect((await download(a.url)).status).toBe(200);
    const refused = await download(a.url);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('content-disposition')).toBeNull();
    expect(JSON.parse(refused.body.toString())).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
    expect((await download(b.url)).status).toBe(200);
    // A refused token counts against nothing and stays a 403.
    for (let i = 0; i < LIMIT + 1; i++) expect((await download(`${b.url}x`)).status).toBe(403);
    expect((await download(b.url)).status).toBe(200);
  });

  it('answers 404 NOT_FOUND once the job is gone', async () => {
    const c = await storedJob('ccc.bin');
    await stack.ctx.db.job.delete({ where: { id: c.id } });
    const gone = await download(c.url);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.body.toString())).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });
});
