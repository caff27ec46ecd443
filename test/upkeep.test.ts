// Upkeep runs once per interval across all replicas (docs/fair-share.md#fair-share-under-load): a
// BullMQ job scheduler on the maintenance queue, however many preparers run it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QueueEvents } from 'bullmq';
import { startMaintenance } from '@ap/jobs';
import { createRedis, QUEUES } from '@ap/queue';
import { startStack, type Stack } from './stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({}, { workers: false });
});
afterAll(async () => {
  await stack.close();
});

describe('upkeep', () => {
  it('runs one pass per interval with three replicas, not one per replica', async () => {
    const INTERVAL_MS = 400;
    const connection = createRedis(process.env.REDIS_URL!);
    const events = new QueueEvents(QUEUES.maintenance, { connection, prefix: stack.ctx.config.REDIS_PREFIX });
    await events.waitUntilReady();
    let passes = 0;
    events.on('completed', () => passes++);
    // Scoped to no job: the passes do nothing to other test files' work in the shared database.
    const replicas = await Promise.all([1, 2, 3].map(() => startMaintenance(stack.ctx, stack.ctx.queues, { intervalMs: INTERVAL_MS, scope: { jobIds: [] } })));
    try {
      await new Promise((r) => setTimeout(r, 10 * INTERVAL_MS));
    } finally {
      await Promise.all(replicas.map((stop) => stop()));
      await events.close();
      connection.disconnect();
    }
    // About ten intervals passed: one pass each (three replicas on timers would make about thirty).
    expect(passes).toBeGreaterThanOrEqual(6);
    expect(passes).toBeLessThanOrEqual(12);
  }, 30_000);
});
