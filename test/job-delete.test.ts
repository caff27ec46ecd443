// DELETE /jobs/:id (docs/api-hardening.md#deleting-a-job): the job, its bins and objects go at
// once; every download link of it is refused; usage records stay; a bin being packed is let go.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { objectKeyFor } from '@ap/jobs';
import { call, createUser, download, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

let stack: Stack;
let origin: Origin;
beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

const notFound = { success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } };

describe('DELETE /jobs/:id', () => {
  it('deletes a completed job: its links are refused at once, it reads as 404, its objects are gone, its usage stays', async () => {
    const { apiKey, userId } = await createUser(stack.ctx);
    const created = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: origin.set('/del/a.bin', { body: bytesOf(1, 5_000) }) }] } });
    const done = await waitForJob(stack.url, apiKey, created.body.job_id);
    expect(done.status).toBe('completed');
    const link: string = done.zips[0].download_url;
    expect((await download(link)).status).toBe(200);
    const objectKeys = (await stack.ctx.db.zip.findMany({ where: { jobId: done.id } })).map((z) => z.objectKey!);
    expect(objectKeys).toHaveLength(1);
    const usageBefore = await stack.ctx.db.usageRecord.count({ where: { userId, jobId: done.id } });
    expect(usageBefore).toBeGreaterThan(0);

    const deleted = await call(stack.url, 'DELETE', `/jobs/${done.id}`, { key: apiKey });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, message: expect.any(String) });

    // The download route finds no bin for the link any more: the ZIP is gone (404), not the link invalid.
    const gone = await download(link);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.body.toString('utf8')).error.code).toBe('NOT_FOUND');
    expect(await call(stack.url, 'GET', `/jobs/${done.id}`, { key: apiKey })).toMatchObject({ status: 404, body: notFound });
    expect((await call(stack.url, 'GET', '/jobs', { key: apiKey })).body.jobs.map((j: { id: string }) => j.id)).not.toContain(done.id);
    for (const key of objectKeys) expect(await stack.ctx.store.head(key)).toBeNull();
    expect(await stack.ctx.db.usageRecord.count({ where: { userId, jobId: done.id } })).toBe(usageBefore);
    expect(await call(stack.url, 'DELETE', `/jobs/${done.id}`, { key: apiKey })).toMatchObject({ status: 404, body: notFound });
  });

  it("another user's job, an unknown id and a malformed one are 404, and the job stays", async () => {
    const owner = await createUser(stack.ctx);
    const other = await createUser(stack.ctx);
    const created = await call(stack.url, 'POST', '/jobs', { key: owner.apiKey, body: { files: [{ url: origin.set('/del/b.bin', { body: bytesOf(2, 100) }) }] } });
    const jobId: string = created.body.job_id;
    for (const path of [`/jobs/${jobId}`, '/jobs/6f1c1f5e-8d0c-4a44-9b1e-2d7c1b7e9a01', '/jobs/not-a-uuid']) {
      const res = await call(stack.url, 'DELETE', path, { key: other.apiKey });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: notFound });
    }
    expect((await call(stack.url, 'GET', `/jobs/${jobId}`, { key: owner.apiKey })).status).toBe(200);
    await waitForJob(stack.url, owner.apiKey, jobId);
  });

  it('deletes a job whose bin is being packed: the packer lets go, and no object of it is left', async () => {
    const { apiKey } = await createUser(stack.ctx);
    const url = origin.set('/del/stalled.bin', { body: bytesOf(3, 200_000), stallFirstGetAt: 50_000 });
    const created = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url }] } });
    const jobId: string = created.body.job_id;
    await until(async () => (await stack.ctx.db.zip.count({ where: { jobId, status: 'processing' } })) > 0, 'the bin is being packed');
    const zipIds = (await stack.ctx.db.zip.findMany({ where: { jobId } })).map((z) => z.id);
    expect((await call(stack.url, 'DELETE', `/jobs/${jobId}`, { key: apiKey })).status).toBe(200);
    expect((await call(stack.url, 'GET', `/jobs/${jobId}`, { key: apiKey })).status).toBe(404);
    // The packer's next lease renewal finds no bin, so it lets go; nothing of the job is left.
    expect(await stack.ctx.db.zip.count({ where: { jobId } })).toBe(0);
    expect(await stack.ctx.db.job.count({ where: { id: jobId } })).toBe(0);
    // The stack still packs other jobs.
    const next = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: origin.set('/del/after.bin', { body: bytesOf(4, 1_000) }) }] } });
    expect((await waitForJob(stack.url, apiKey, next.body.job_id)).status).toBe('completed');
    for (const zipId of zipIds) expect(await stack.ctx.store.head(objectKeyFor(jobId, zipId))).toBeNull();
  });
});
