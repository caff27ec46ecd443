// Faults: retries both ways and SSRF refusals. Faults of the workers (a packer killed mid-bin, a
// bin delivered twice, work lost from Redis) are in worker-faults.test.ts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeFaultSuite, postJob, startFaultSuite, CAP, MB, type FaultSuite } from './fault-fixtures';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

let suite: FaultSuite;
let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  suite = await startFaultSuite();
  ({ stack, origin, key } = suite);
});
afterAll(() => closeFaultSuite(suite));

const createJob = (body: Record<string, unknown>, base = stack.url, apiKey = key) => postJob(body, base, apiKey);

describe('retry', () => {
  it('from a checkpoint re-runs only the failed bins; from scratch re-runs everything', async () => {
    const first = bytesOf(41, 70 * MB);
    const second = bytesOf(42, 70 * MB);
    origin.set('/retry/1', { body: first });
    origin.set('/retry/2', { body: second, truncateAt: 5 * MB });
    const jobId = await createJob({
      files: [{ url: `${origin.url}/retry/1` }, { url: `${origin.url}/retry/2` }],
      max_zip_size_bytes: CAP,
      fail_on_zip_error: false,
    });
    const failed = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 120_000);
    // The first bin survives; with fail_on_url_error true the second fails, and no bin completed... except bin 1.
    expect(failed.zips.map((z: any) => z.status)).toEqual(['completed', 'failed']);
    expect(failed.status).toBe('completed');

    // Completed jobs cannot be retried.
    const notFailed = await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key, body: {} });
    expect(notFailed.status).toBe(400);
    expect(notFailed.body.error.code).toBe('INVALID_REQUEST');

    // Make it a failed job to retry (as fail_on_zip_error true would have).
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { status: 'failed' } });
    origin.set('/retry/2', { body: second });
    const bin1Before = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId, sequence: 1 } });
    const sentBefore = origin.bytesSent.get('/retry/1');
    const retried = await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key, body: { from_checkpoint: true } });
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ success: true, job_id: jobId });
    const done = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 120_000);
    expect(done.status).toBe('completed');
    expect(done.zips.map((z: any) => z.status)).toEqual(['completed', 'completed']);
    expect(origin.bytesSent.get('/retry/1')).toBe(sentBefore); // bin 1 was not fetched again
    const bin1After = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId, sequence: 1 } });
    expect(bin1After.completedAt).toEqual(bin1Before.completedAt);
    const entries = await readZip((await download(done.zips[1].download_url)).body);
    expect(entries.map((e) => e.sha256)).toEqual([sha256(second)]);

    // From scratch: objects deleted, probing again, both files fetched again.
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { status: 'failed' } });
    const oldKeys = (await stack.ctx.db.zip.findMany({ where: { jobId } })).map((z) => z.objectKey!);
    const scratch = await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key, body: { from_checkpoint: false } });
    expect(scratch.status).toBe(200);
    for (const k of oldKeys) expect(await stack.ctx.store.head(k)).toBeNull();
    const again = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 120_000);
    expect(again.status).toBe('completed');
    expect(origin.bytesSent.get('/retry/1')).toBe(sentBefore! + first.length);
    expect(again.zips.map((z: any) => z.id)).not.toEqual(done.zips.map((z: any) => z.id));
  }, 240_000);

  it('answers 404 for unknown or foreign jobs and 400 for bad bodies', async () => {
    const other = await createUser(stack.ctx);
    const jobId = await createJob({ files: [{ url: `${origin.url}/nothing-here` }] });
    await waitForJob(stack.url, key, jobId);
    expect((await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key: other.apiKey, body: {} })).status).toBe(404);
    expect((await call(stack.url, 'POST', '/jobs/00000000-0000-4000-8000-000000000000/retry', { key, body: {} })).status).toBe(404);
    expect((await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key, body: { from_checkpoint: 'yes' } })).status).toBe(400);
  });
});

describe('SSRF guard (ALLOW_PRIVATE_URLS=false)', () => {
  it('refuses loopback in every spelling, before connecting', async () => {
    const strict = await startStack({ ALLOW_PRIVATE_URLS: 'false' });
    const seen: string[] = [];
    const target = http.createServer((req, res) => {
      seen.push(req.url!);
      res.end('secret');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
    const port = (target.address() as AddressInfo).port;
    try {
      const strictKey = (await createUser(strict.ctx)).apiKey;
      const urls = [
        `http://127.0.0.1:${port}/a`,
        `http://127.1:${port}/b`,
        `http://2130706433:${port}/c`,
        `http://0x7f000001:${port}/d`,
        `http://[::1]:${port}/e`,
        `http://localhost.:${port}/f`,
        `http://[::ffff:127.0.0.1]:${port}/g`,
        'http://169.254.169.254/latest/meta-data/',
      ];
      const jobId = await createJob({ files: urls.map((url) => ({ url })), fail_on_url_error: false }, strict.url, strictKey);
      const job = await waitForJob(strict.url, strictKey, jobId);
      expect(job.status).toBe('failed');
      expect(job.errors).toHaveLength(urls.length);
      for (const e of job.errors) expect(e.error).toMatch(/blocked/i);
      expect(seen).toEqual([]);
    } finally {
      target.close();
      await strict.close();
    }
  });
});
