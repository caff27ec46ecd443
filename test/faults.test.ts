// Faults: retries both ways, SSRF refusals, a packer killed mid-bin, a bin packed twice, work
// lost from Redis.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { reconcile } from '@ap/jobs';
import { packBin } from '@ap/packer';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const CAP = 104_857_600;
const MB = 1_000_000;

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

async function createJob(body: Record<string, unknown>, base = stack.url, apiKey = key): Promise<string> {
  const res = await call(base, 'POST', '/jobs', { key: apiKey, body });
  expect(res.status).toBe(201);
  return res.body.job_id;
}

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

describe('worker faults', () => {
  it('a packer killed mid-bin: the bin is picked up again and the job completes with a correct ZIP', async () => {
    // A slow origin keeps the bin in flight long enough to kill the worker.
    const body = bytesOf(51, 8 * MB);
    let served = 0;
    const slow = http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      if (req.method === 'HEAD') return void res.end();
      let offset = 0;
      const tick = setInterval(() => {
        if (offset >= body.length || res.destroyed) {
          clearInterval(tick);
          served++;
          return void res.end();
        }
        res.write(body.subarray(offset, offset + 256 * 1024));
        offset += 256 * 1024;
      }, 20);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow.bin`;

    // Only the child process packs at first.
    const noWorkers = await startStack({}, { workers: false });
    const child = spawn(process.execPath, ['--import', 'tsx', 'services/packer/src/main.ts'], {
      cwd: new URL('../', import.meta.url).pathname,
      env: { ...process.env, PUBLIC_BASE_URL: noWorkers.url, REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '2000' },
      stdio: 'ignore',
    });
    try {
      const jobId = await createJob({ files: [{ url }] }, noWorkers.url);
      await waitForJob(noWorkers.url, key, jobId, ['processing'], 30_000);
      await new Promise((r) => setTimeout(r, 500));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const midway = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
      expect(midway.status).toBe('processing');

      const rescue = await startStack({ WORKER_LOCK_MS: '2000', REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX });
      try {
        const job = await waitForJob(rescue.url, key, jobId, ['completed', 'failed'], 60_000);
        expect(job.status).toBe('completed');
        const entries = await readZip((await download(job.download_url)).body);
        expect(entries).toEqual([{ name: 'slow.bin', size: body.length, sha256: sha256(body) }]);
      } finally {
        await rescue.close();
      }
    } finally {
      child.kill('SIGKILL');
      slow.closeAllConnections();
      slow.close();
      await noWorkers.close();
    }
  }, 120_000);

  it('a bin processed twice at once (at-least-once delivery) ends with one correct object and correct counts', async () => {
    const noWorkers = await startStack({}, { workers: false });
    try {
      const files = [bytesOf(53, 300_000), bytesOf(54, 7), bytesOf(55, 40_000)];
      const jobId = await createJob({ files: files.map((body, i) => ({ url: origin.set(`/twice/${i}.bin`, { body }) })) }, noWorkers.url);
      const zip = await noWorkers.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
      const payload = { jobId, zipId: zip.id, attempt: zip.attempt };
      await Promise.all([packBin(noWorkers.ctx, payload), packBin(noWorkers.ctx, payload)]);
      const job = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
      expect(job).toMatchObject({ status: 'completed', file_count: 3, zip_count: 1 });
      expect(job.zips[0]).toMatchObject({ status: 'completed', file_count: 3 });
      const first = await download(job.download_url);
      expect(first.body.length).toBe(job.zips[0].size);
      expect((await readZip(first.body)).map((e) => e.sha256)).toEqual(files.map(sha256));
      // A late third delivery changes nothing.
      await packBin(noWorkers.ctx, payload);
      const again = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
      expect(again.zips[0]).toEqual(job.zips[0]);
      expect((await download(again.download_url)).body.equals(first.body)).toBe(true);
    } finally {
      await noWorkers.close();
    }
  }, 60_000);

  it('work lost from Redis is put back by the reconciler from Postgres', async () => {
    const noWorkers = await startStack({}, { workers: false });
    try {
      const body = bytesOf(52, 1234);
      const jobId = await createJob({ files: [{ url: origin.set('/lost.bin', { body }) }] }, noWorkers.url);
      // Simulate a Redis restart that lost the queue: drop every waiting message.
      await noWorkers.ctx.queues.pack.obliterate({ force: true });
      await noWorkers.ctx.db.zip.updateMany({ where: { jobId }, data: { updatedAt: new Date(Date.now() - 10 * 60_000) } });
      expect(await noWorkers.ctx.queues.pack.count()).toBe(0);
      const report = await reconcile(noWorkers.ctx.db, noWorkers.ctx.queues);
      expect(report.packs).toBe(1);
      // Workers on the same queues now find the work again.
      const workers = await startStack({ REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX });
      try {
        const job = await waitForJob(workers.url, key, jobId);
        expect(job.status).toBe('completed');
        expect((await readZip((await download(job.download_url)).body))[0]!.sha256).toBe(sha256(body));
      } finally {
        await workers.close();
      }
    } finally {
      await noWorkers.close();
    }
  }, 60_000);
});
