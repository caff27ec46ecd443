// Upkeep survives Redis losing its data (docs/guarantees.md#redis-loses-its-data): the upkeep
// schedule lives in Redis, so a restart without persistence or a FLUSHALL removes it; each
// replica creates it again when its connection comes back and checks it every interval, so lost
// work is queued again within one interval of Redis answering.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { startMaintenance } from '@ap/jobs';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startPrivateRedis, type PrivateRedis } from './private-redis';
import { startStack, type Stack } from './stack';

const INTERVAL_MS = 1_000;
/** A job created while Redis was away is left alone this long after its commit (UNENQUEUED_AFTER_MS). */
const ENQUEUE_GRACE_MS = 5_000;

let redis: PrivateRedis;
let stack: Stack;
let origin: Origin;
let stopMaintenance: () => Promise<void>;
/** The jobs this file's upkeep may touch (the database is shared with other test files). */
const scopedJobs: string[] = [];

beforeAll(async () => {
  redis = await startPrivateRedis();
  stack = await startStack({ REDIS_URL: redis.url });
  origin = await startOrigin();
  // BullMQ prints a queue's connection errors to the console when nobody listens: expected here.
  for (const queue of [stack.ctx.queues.prepare, stack.ctx.queues.pack, stack.ctx.queues.webhook]) queue.on('error', () => undefined);
  stopMaintenance = await startMaintenance(stack.ctx, stack.ctx.queues, { intervalMs: INTERVAL_MS, scope: { jobIds: scopedJobs } });
});
afterAll(async () => {
  await redis.start();
  await stopMaintenance();
  await stack.close();
  await origin.close();
  await redis.kill();
});

async function createJob(key: string, path: string): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: origin.set(path, { body: bytesOf(7, 40_000) }) }] } });
  expect(res.status).toBe(201);
  scopedJobs.push(res.body.job_id as string);
  return res.body.job_id as string;
}

describe('upkeep after Redis lost its data', () => {
  it('a job created while Redis was down completes once Redis restarts empty, with no service restarted', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    await redis.kill();
    await until(() => stack.ctx.redis.status !== 'ready', 'the stack sees Redis gone', 15_000);
    const jobId = await createJob(key, '/created-during-outage.bin');
    await new Promise((r) => setTimeout(r, ENQUEUE_GRACE_MS));

    await redis.start();
    await until(() => stack.ctx.redis.status === 'ready', 'the stack sees Redis back', 15_000);
    // Queued within one interval, then a 40 kB bin to pack.
    const done = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 10 * INTERVAL_MS);
    expect(done.status).toBe('completed');
  }, 60_000);

  it('a job whose queue message FLUSHALL removed completes within one upkeep interval', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    // Nothing is taken from a paused queue, so the job's message waits in Redis when it is
    // flushed (the flush removes the pause with it).
    await stack.ctx.queues.pack.pause();
    const jobId = await createJob(key, '/flushed.bin');
    const admin = new Redis(redis.url);
    try {
      await until(async () => (await stack.ctx.queues.pack.count()) === 1, 'the job is queued', 10_000);
      // Flushed twice: an upkeep pass running at the first flush may put the job back (into the
      // queue, paused again); two intervals later no pass of the lost schedule is in flight, so
      // after the second flush only a schedule created again brings the job back.
      await admin.flushall();
      await stack.ctx.queues.pack.pause();
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_MS));
      await admin.flushall();
    } finally {
      admin.disconnect();
    }
    const done = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 10 * INTERVAL_MS);
    expect(done.status).toBe('completed');
  }, 60_000);
});
