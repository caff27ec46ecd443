// Redis goes away (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): a private redis-server this file
// starts, kills and starts again. The API keeps answering from Postgres within 1 s; a job
// created meanwhile waits as `pending` and completes once the reconciler has enqueued it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { reconcile } from '@ap/jobs';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startPrivateRedis, type PrivateRedis } from './private-redis';
import { startStack, type Stack } from './stack';

let redis: PrivateRedis;
let stack: Stack;
let origin: Origin;


beforeAll(async () => {
  redis = await startPrivateRedis();
  stack = await startStack({ REDIS_URL: redis.url, UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '5' });
  origin = await startOrigin();
  // BullMQ prints a queue's connection errors to the console when nobody listens: expected here.
  for (const queue of [stack.ctx.queues.prepare, stack.ctx.queues.pack, stack.ctx.queues.webhook]) queue.on('error', () => undefined);
});
afterAll(async () => {
  await redis.start();
  await stack.close();
  await origin.close();
  await redis.kill();
});

/** The call and how long it took. */
async function timed(method: string, path: string, options: Parameters<typeof call>[3] = {}) {
  const started = Date.now();
  const res = await call(stack.url, method, path, options);
  return { res, ms: Date.now() - started };
}

describe('while Redis is down', () => {
  it('the API answers every request within 1 s, and a job created then completes once Redis is back', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    expect((await call(stack.url, 'GET', '/usage', { key })).status).toBe(200);
    await redis.kill();
    await until(() => stack.ctx.redis.status !== 'ready', 'the API sees Redis gone', 15_000);

    const answers = [
      await timed('GET', '/jobs', { key }),
      await timed('GET', '/usage', { key }),
      await timed('GET', '/jobs/stats', { key }),
      await timed('POST', '/jobs', { key, body: { files: [{ url: origin.set('/during-outage.bin', { body: bytesOf(5, 50_000) }) }] } }),
    ];
    for (const { res, ms } of answers) expect({ status: res.status, within1s: ms < 1000 }).toEqual({ status: res.status < 300 ? res.status : 200, within1s: true });
    const jobId = answers[3]!.res.body.job_id as string;
    const created = await timed('GET', `/jobs/${jobId}`, { key });
    expect(created.ms).toBeLessThan(1000);
    expect(created.res.body.job.status).toBe('pending');
    // The limit on unknown keys still holds, counted in this process.
    const unknown: number[] = [];
    for (let i = 0; i < 7; i++) {
      const { res, ms } = await timed('GET', '/jobs', { key: `azk_unknown_${i}`, headers: { 'x-forwarded-for': '192.0.2.44' } });
      expect(ms).toBeLessThan(1000);
      unknown.push(res.status);
    }
    expect(unknown).toEqual([401, 401, 401, 401, 401, 429, 429]);

    await redis.start();
    await until(() => stack.ctx.redis.status === 'ready', 'the API sees Redis back', 15_000);
    // The reconciler's pass (every 10 s in the preparer), for this job, as if its grace period had passed.
    await reconcile(stack.ctx.db, stack.ctx.queues, new Date(Date.now() + 10 * 60_000), { jobIds: [jobId] });
    const done = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
  });
});
