// Operations (docs/operations.md#restarts-and-shutdown): a packer sent SIGTERM hands its bin back and another packer
// finishes it from the recorded parts at once; work Redis lost is put back on the queue by the
// reconciler within an interval.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createPackerProcessor } from '@ap/packer';
import { startMaintenance } from '@ap/jobs';
import { createWorker, type Worker } from '@ap/queue';
import { spawnService } from '../scripts/services';
import { call, createUser, download, waitForJob } from './helpers';
import { startGatedOrigin } from './gated-origin';
import { bytesOf, sha256 } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';
import { endChild } from './private-redis';

const MB = 1_000_000;

let stack: Stack;
let key: string;

beforeAll(async () => {
  // No workers of its own: each test says who packs.
  stack = await startStack({}, { workers: false });
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
});

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function createJob(body: Record<string, unknown>): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return res.body.job_id;
}

const workerErrors: string[] = [];

function packer(concurrency = 2): Worker {
  const { ctx } = stack;
  const worker = createWorker('pack', createPackerProcessor(ctx), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: 5_000, log: ctx.log });
  // After the flush BullMQ reports the messages it no longer finds (as the services log them).
  worker.on('error', (err) => workerErrors.push(err.message));
  return worker;
}

describe('a packer sent SIGTERM mid-bin', () => {
  it('hands the bin back: a second packer finishes it from the recorded parts within 15 s', async () => {
    // Parts are 8 MiB: with the second file held at its middle, parts 1 and 2 are stored.
    const bodies = { '/0.bin': bytesOf(71, 12 * MB), '/1.bin': bytesOf(72, 20 * MB), '/2.bin': bytesOf(73, 3 * MB) };
    const origin = await startGatedOrigin(bodies, { '/1.bin': 10 * MB });
    // The packer as deployed, with the default 30 s lock and lease: a hand-off that waited for
    // either to run out could not finish within 15 s.
    const child = spawnService('packer', { ...process.env, PUBLIC_BASE_URL: stack.url, REDIS_PREFIX: stack.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '30000' }, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    let second: Worker | undefined;
    try {
      const jobId = await createJob({ files: Object.keys(bodies).map((p) => ({ url: origin.url + p })) });
      const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
      await until(async () => (await stack.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 2, 'the first packer stored two parts', 60_000);
      // The second packer is idle meanwhile: the bin's message is the first one's.
      second = packer();
      const before = new Map(origin.served);
      const firstHolder = (await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } })).leaseOwner;
      expect(firstHolder).not.toBeNull();

      const signalled = Date.now();
      child.kill('SIGTERM');
      const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      const exitedAfter = Date.now() - signalled;
      expect({ exit, stderr }).toEqual({ exit: { code: 0, signal: null }, stderr: '' });
      expect(exitedAfter).toBeLessThan(10_000);
      // Handed back: the first packer's lease released, its recorded parts kept.
      const handed = await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } });
      expect(handed.leaseOwner).not.toBe(firstHolder);
      expect(handed.uploadId).not.toBeNull();
      expect(await stack.ctx.db.zipPart.count({ where: { zipId: zip.id } })).toBeGreaterThanOrEqual(2);
      origin.open();

      const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 15_000);
      expect(Date.now() - signalled).toBeLessThan(15_000);
      expect(job.status).toBe('completed');
      const entries = await readZip((await download(job.download_url)).body);
      expect(entries).toEqual(Object.entries(bodies).map(([p, b]) => ({ name: p.slice(1), size: b.length, sha256: sha256(b) })));
      // Resumed after the recorded parts: nothing of the first file fetched again.
      expect((origin.served.get('/0.bin') ?? 0) - (before.get('/0.bin') ?? 0)).toBe(0);
    } finally {
      await endChild(child, 'SIGKILL');
      await second?.close();
      await origin.close();
    }
  }, 120_000);
});

describe('Redis losing its data mid-job', () => {
  it('the reconciler puts the lost work back and every job completes', async () => {
    const bodies = { '/a.bin': bytesOf(81, 6 * MB), '/b.bin': bytesOf(82, 2 * MB) };
    const origin = await startGatedOrigin(bodies, { '/a.bin': 3 * MB });
    const worker = packer(1);
    let stopMaintenance: (() => Promise<void>) | undefined;
    try {
      // Job A's bin is being packed (held mid-body); job B's message waits behind it.
      const jobA = await createJob({ files: [{ url: `${origin.url}/a.bin` }] });
      await until(async () => (await stack.ctx.db.zip.count({ where: { jobId: jobA, status: 'processing' } })) === 1, 'job A is being packed', 30_000);
      const jobB = await createJob({ files: [{ url: `${origin.url}/b.bin` }] });
      expect(await stack.ctx.queues.pack.getJobCountByTypes('waiting', 'prioritized')).toBe(1);

      // Every key of this stack's queues is gone, as after a Redis restart without persistence.
      const redis = new Redis(process.env.REDIS_URL!);
      const keys = await redis.keys(`${stack.ctx.config.REDIS_PREFIX}:*`);
      expect(keys.length).toBeGreaterThan(0);
      await redis.del(...keys);
      await redis.quit();
      const flushed = Date.now();
      origin.open();
      // Scoped to these jobs: other test files' unfinished work shares the database, not these queues.
      stopMaintenance = await startMaintenance(stack.ctx, stack.ctx.queues, { scope: { jobIds: [jobA, jobB] } });

      for (const jobId of [jobA, jobB]) {
        const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 60_000);
        expect(job.status).toBe('completed');
        const entries = await readZip((await download(job.download_url)).body);
        const [path, body] = jobId === jobA ? ['/a.bin', bodies['/a.bin']] : ['/b.bin', bodies['/b.bin']];
        expect(entries).toEqual([{ name: path.slice(1), size: body.length, sha256: sha256(body) }]);
      }
      // Within one maintenance interval (10 s) of the loss, plus the packing itself.
      expect(Date.now() - flushed).toBeLessThan(30_000);
    } finally {
      await stopMaintenance?.();
      await worker.close();
      await origin.close();
    }
  }, 120_000);
});
